from pydantic import BaseModel, Field


class ValidateSettings(BaseModel):
    """Sandboxed execution filters (issue 8)."""

    timeout_s: float = Field(120.0, description="Wall-clock limit per candidate process.")
    memory_mb: int = Field(4096, description="Address-space limit per candidate process.")
    check_compile: bool = Field(True, description="Run torch.compile and compare with eager.")
    runtime_window_ms: tuple[float, float] = Field((1.0, 100.0), description="Eager runtime window on the GPU.")
