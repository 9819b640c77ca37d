from pydantic import BaseModel, Field


class PublishSettings(BaseModel):
    """Publishing to a local Hub-layout folder and to the Hugging Face Hub (issue 4)."""

    repo_prefix: str | None = Field(None, description="org/name prefix on the Hub; local folder only when unset.")
    repo_id: str | None = Field(None, description="Full Hub repo id (org/name); overrides repo_prefix.")
    private: bool = Field(True, description="Create the Hub repo private.")
    dry_run: bool = Field(False, description="Print the upload plan, change nothing on the Hub.")
    tag: str | None = Field(None, description="Release tag on the Hub; default: the curation run id.")
    out_dir: str | None = Field(None, description="Local Hub-layout folder; default <data_root>/published/<run_id>.")
    max_shard_rows: int = Field(50_000, description="Rows per Parquet shard.")
    license: str = Field("apache-2.0", description="License id for the data card.")
    pretty_name: str = Field("opforge CUDA kernel agent datasets", description="Card title.")
    tags: list[str] = Field(
        default_factory=lambda: [
            "cuda",
            "gpu-kernels",
            "code",
            "agent",
            "tool-use",
            "reinforcement-learning",
            "synthetic",
        ]
    )
    allow_unsafe: bool = Field(
        False, description="Publish tasks validated with sandbox.mode=unsafe (outside the jail); refused otherwise."
    )
    card_template: str | None = Field(None, description="Path to a card template; default data_cards/dataset_card.md.")
