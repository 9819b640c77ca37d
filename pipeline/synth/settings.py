from pydantic import BaseModel, Field


class SynthSettings(BaseModel):
    """Task synthesis (issue 8)."""

    n: int = Field(36, description="How many candidate tasks to compose.")
    composer: str = Field("programmatic", description="programmatic | llm")
    seed: int = Field(0, description="Seed for the composer; the same seed gives the same tasks.")
    op_mix: dict[int, float] = Field(
        default_factory=lambda: {1: 0.034, 2: 0.838, 3: 0.076, 4: 0.028, 5: 0.012},
        description="Share of tasks by number of fused operators (CUDA Agent's reported mix).",
    )
