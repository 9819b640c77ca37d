from pydantic import BaseModel, Field

from pipeline.validate.static import DEFAULT_ALLOWED_IMPORTS


class ValidateSettings(BaseModel):
    """Sandboxed execution filters (issue 8)."""

    timeout_s: float = Field(120.0, description="Wall-clock limit per candidate process.")
    memory_mb: int = Field(6144, description="Address-space limit (RLIMIT_AS) per candidate process, CPU runs.")
    gpu_memory_mb: int = Field(
        0,
        description="Address-space limit on GPU workers (0: none; CUDA maps huge "
        "virtual ranges, so RLIMIT_AS cannot be used there).",
    )
    check_compile: bool = Field(True, description="Run torch.compile and compare with eager.")
    runtime_window_ms: tuple[float, float] = Field((1.0, 100.0), description="Eager runtime window on the GPU.")
    atol: float = Field(1e-3, description="Absolute tolerance: compiled vs eager, train vs eval.")
    rtol: float = Field(1e-3, description="Relative tolerance: compiled vs eager, train vs eval.")
    det_atol: float = Field(1e-6, description="Absolute tolerance between two same-seed runs.")
    seed: int = Field(0, description="Seed for weights and inputs.")
    max_output_mb: float = Field(2048.0, description="Largest allowed output, MiB.")
    max_memory_mb: float | None = Field(None, description="Largest allowed peak memory, MiB (None: no check).")
    timing_trials: int = Field(10, description="Timed eager (and compiled) runs; the median is kept.")
    allowed_imports: list[str] = Field(
        default_factory=lambda: list(DEFAULT_ALLOWED_IMPORTS),
        description="Modules a candidate may import.",
    )
    enforce_imports: bool = Field(True, description="Reject disallowed imports statically (off: sandbox only).")
    run_all: bool = Field(False, description="Run compile and timing even after a filter failed (slower).")
    inductor_cache_dir: str | None = Field(
        None,
        description="TORCHINDUCTOR_CACHE_DIR for candidates; None: "
        "$TORCHINDUCTOR_CACHE_DIR or ~/.cache/opforge/inductor.",
    )
    threads: int = Field(1, description="Intra-op threads per candidate process.")
    trace_s: float = Field(
        10.0,
        description="A valid task's semantic trace for decontamination (docs/contamination.md), made after the "
        "checks in the same process, within this many seconds (and the time the process has left); 0: none.",
    )
    jobs_per_gpu: int = Field(
        4,
        ge=1,
        description="Candidates validated at once on one GPU (compilation and checks "
        "overlap; their timed regions take turns through a lock).",
    )
