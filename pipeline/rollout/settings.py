from pydantic import BaseModel, Field


class RolloutSettings(BaseModel):
    """Agent rollouts (issue 3)."""

    model: str | None = Field(None, description="Model path or name; rollouts are skipped when unset.")
    backend: str = Field("vllm", description="vllm | openai | replay")
    max_turns: int = Field(200)
    max_context_tokens: int = Field(131072)
    samples_per_task: int = Field(1)
