from pydantic import BaseModel, Field


class EvalSettings(BaseModel):
    """Kernel evaluation harness (issue 7). The GPU-side code receives these as a plain dict."""

    atol: float = Field(1e-2)
    rtol: float = Field(1e-2)
    trials: int = Field(5, description="Correctness trials on fresh random inputs.")
    margin: float = Field(0.05, description="Speedup margin for rewards 2 and 3.")
