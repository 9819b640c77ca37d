from pydantic import BaseModel, Field


class PublishSettings(BaseModel):
    """Publishing to a local Hub-layout folder and to the Hugging Face Hub (issue 4)."""

    repo_prefix: str | None = Field(None, description="org/name prefix on the Hub; local folder only when unset.")
    private: bool = Field(True)
    dry_run: bool = Field(False)
