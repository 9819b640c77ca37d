from pydantic import BaseModel, Field


class CurateSettings(BaseModel):
    """Trajectory filters and dataset building (issue 4)."""

    min_speedup_vs_compile: float = Field(1.05)
    validation_fraction: float = Field(0.1)
