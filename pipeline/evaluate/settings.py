from typing import Any, Optional

from pydantic import BaseModel, Field

from pipeline.evaluate.options import DEFAULTS


class EvalSettings(BaseModel):
    """Kernel evaluation harness (issue 7). The GPU-side code receives these as a plain dict (`as_worker_dict`);
    the defaults live in `pipeline.evaluate.options.DEFAULTS` so the worker needs no pydantic."""

    atol: float = Field(DEFAULTS["atol"], description="Absolute tolerance of the correctness check.")
    rtol: float = Field(DEFAULTS["rtol"], description="Relative tolerance of the correctness check.")
    trials: int = Field(DEFAULTS["trials"], description="Correctness trials on fresh random inputs.")
    post_timing_trials: int = Field(DEFAULTS["post_timing_trials"], description="Correctness trials after timing.")
    determinism: str = Field(DEFAULTS["determinism"], description="Same inputs twice: exact | tolerance | off.")
    degenerate_check: bool = Field(DEFAULTS["degenerate_check"], description="Reject input-independent outputs.")
    kernel_launch_check: bool = Field(DEFAULTS["kernel_launch_check"], description="Require >= 1 GPU kernel.")
    allow_libraries: list[str] = Field(list(DEFAULTS["allow_libraries"]),
                                       description="Torch library ops allowed in ModelNew.forward: cublas, cudnn.")
    allow_torch_ops: list[str] = Field(list(DEFAULTS["allow_torch_ops"]), description="Extra allowed aten ops.")
    timing_trials: int = Field(DEFAULTS["timing_trials"], description="Timed calls kept (first extra discarded).")
    timing_warmup: int = Field(DEFAULTS["timing_warmup"], description="Warm-up calls before timing (at least).")
    timing_warmup_ms: float = Field(DEFAULTS["timing_warmup_ms"],
                                    description="Warm-up wall time before timing (at least; GPU clocks ramp up).")
    timing_min_ms: float = Field(DEFAULTS["timing_min_ms"],
                                 description="More timed calls for short kernels, until they add up to this (ms).")
    timing_max_trials: int = Field(DEFAULTS["timing_max_trials"], description="Most timed calls of one run.")
    check_fraction: float = Field(DEFAULTS["check_fraction"], description="Share of timed outputs checked.")
    check_max_calls: int = Field(DEFAULTS["check_max_calls"], description="Most timed outputs checked.")
    l2_flush: bool = Field(DEFAULTS["l2_flush"], description="Flush L2 before every timed call.")
    max_speedup: float = Field(DEFAULTS["max_speedup"], description="Speedup above which a result is suspect.")
    reject_excessive_speedup: bool = Field(DEFAULTS["reject_excessive_speedup"],
                                           description="Reject (not only flag) speedups above max_speedup.")
    offstream_ratio: float = Field(DEFAULTS["offstream_ratio"], description="Off-stream work detector ratio.")
    offstream_min_ms: float = Field(DEFAULTS["offstream_min_ms"], description="Off-stream detector floor (ms).")
    compile_mode: str = Field(DEFAULTS["compile_mode"], description="torch.compile mode of the baseline.")
    baselines: bool = Field(DEFAULTS["baselines"], description="Measure eager and torch.compile baselines.")
    baseline_runs: int = Field(DEFAULTS["baseline_runs"], ge=1,
                               description="Baseline processes per task; each figure is the lowest of their medians.")
    margin: float = Field(DEFAULTS["margin"], description="Speedup margin for rewards 2 and 3.")
    static_checks: bool = Field(DEFAULTS["static_checks"], description="Run the static source checks.")
    warnings_reject: bool = Field(DEFAULTS["warnings_reject"], description="Treat static warnings as violations.")
    allow_triton: bool = Field(DEFAULTS["allow_triton"], description="Allow Triton kernels in solutions.")
    timeout_s: float = Field(DEFAULTS["timeout_s"], description="Wall-clock limit of one candidate process.")
    baseline_timeout_s: float = Field(DEFAULTS["baseline_timeout_s"], description="Limit of a baseline process.")
    compile_timeout_s: float = Field(DEFAULTS["compile_timeout_s"], description="Limit of one build.")
    gpu_memory_fraction: float = Field(DEFAULTS["gpu_memory_fraction"], description="Caching-allocator cap.")
    cache_dir: Optional[str] = Field(DEFAULTS["cache_dir"], description="Build/baseline cache; None: default.")
    arch_list: Optional[str] = Field(DEFAULTS["arch_list"], description="TORCH_CUDA_ARCH_LIST; None: per GPU.")
    gpu_lock: Optional[str] = Field(DEFAULTS["gpu_lock"], description="Lock file serialising GPU measurement.")

    def as_worker_dict(self) -> dict[str, Any]:
        return self.model_dump()
