from pydantic import BaseModel, Field

from pipeline.llm.settings import LLMSettings


class SynthSettings(BaseModel):
    """Task synthesis (issue 8)."""

    n: int = Field(36, description="How many candidate tasks to compose.")
    composer: str = Field("programmatic", description="programmatic | llm")
    seed: int = Field(0, description="Seed for the composer; the same seed gives the same tasks.")
    seed_per_run: bool = Field(
        False,
        description="Derive the composer's seed from (seed, run_id), so every run "
        "draws new tasks (the nightly deployment sets it); the tasks of a "
        "run stay reproducible from its run id.",
    )
    op_mix: dict[int, float] = Field(
        default_factory=lambda: {1: 0.034, 2: 0.838, 3: 0.076, 4: 0.028, 5: 0.012},
        description="Share of tasks by number of fused operators (CUDA Agent's reported mix).",
    )
    size_profile: str = Field("auto", description="gpu | small | auto (gpu when validating on a GPU, else small).")
    target_ms: tuple[float, float] = Field(
        (2.0, 40.0),
        description="gpu profile: estimated eager-time window the sizes aim for (inside the filter's 1-100).",
    )
    max_tensor_mb: float | None = Field(
        None,
        description="gpu profile: largest tensor a composed task makes anywhere in its chain, MiB; None: the "
        "run's validate.max_output_mb (a task whose output is larger would only be dropped as output_too_large).",
    )
    catalog_path: str | None = Field(None, description="Seed operator Parquet cache; None: ~/.cache/opforge/.")
    llm_examples: int = Field(2, description="llm composer: example tasks shown in the prompt.")
    llm_temperature: float = Field(0.8, description="llm composer: sampling temperature.")
    llm_max_tokens: int = Field(1024, description="llm composer: max tokens per reply.")
    llm_retries: int = Field(
        2,
        ge=0,
        description="llm composer: further attempts after an unusable reply, each "
        "with the error fed back to the model.",
    )
    llm: LLMSettings = Field(default_factory=LLMSettings, description="llm composer: which model, served how.")
