"""Evaluation options as a plain dict (stdlib only): the GPU worker reads these, `settings.py` (pydantic) mirrors them.

Kept apart from `settings.py` so that the worker process, which must import with torch + numpy alone, never
imports pydantic.
"""

from __future__ import annotations

import os
from typing import Any

DEFAULTS: dict[str, Any] = {
    # correctness
    "atol": 1e-2,  # CUDA Agent's tolerance; max errors are recorded so labels can be re-judged at 1e-4
    "rtol": 1e-2,
    "trials": 5,  # correctness trials, each on fresh random inputs from a secret seed
    "post_timing_trials": 2,  # correctness re-checked after timing, on new secret seeds
    "determinism": "exact",  # same inputs twice: "exact" (bitwise) | "tolerance" (allclose) | "off"
    "degenerate_check": True,  # reject tasks whose reference output barely depends on the input
    "kernel_launch_check": True,  # the candidate must launch at least one GPU kernel (CUPTI via torch.profiler)
    # what ModelNew.forward may call from torch (everything else in aten is blocked at dispatch)
    "allow_libraries": [],  # e.g. ["cublas", "cudnn"] as CUDA Agent allows
    "allow_torch_ops": [],  # extra aten op names, e.g. ["addmm"]
    # profiling
    "timing_trials": 30,  # timed calls kept (one more is run first and discarded)
    "timing_warmup": 5,  # at least this many warm-up calls ...
    "timing_warmup_ms": 250.0,  # ... and at least this much wall time of them (GPU clocks ramp up after idling)
    "timing_min_ms": 300.0,  # more timed calls for short kernels: until they add up to about this much GPU time ...
    "timing_max_trials": 3000,  # ... but no more calls than this
    "check_fraction": 0.25,  # share of timed calls whose output is checked against the reference (secret choice)
    "check_max_calls": 100,  # ... at most this many of them
    "l2_flush": True,
    "max_speedup": 10.0,  # speedups above this are suspicious
    "reject_excessive_speedup": True,
    "offstream_ratio": 0.5,  # stream-ordered time < ratio x device-synchronised time => work off the stream
    "offstream_min_ms": 0.05,
    "compile_mode": "default",  # torch.compile mode of the compile baseline
    "baselines": True,  # measure eager + torch.compile baselines (cached per task/GPU/torch/mode)
    "baseline_runs": 3,  # baseline processes per task (one after another); each figure is the lowest of their medians
    "margin": 0.05,  # rewards 2 and 3 need > 5% speedup
    # static checks
    "static_checks": True,
    "warnings_reject": False,  # treat warnings (precision casts) as violations
    "allow_triton": False,
    # resources
    "timeout_s": 600.0,  # one worker process (load + verify + profile)
    "baseline_timeout_s": 900.0,
    "compile_timeout_s": 900.0,
    "gpu_memory_fraction": 0.9,
    "cache_dir": None,  # builds, extension dirs, baselines; None: $OPFORGE_EVAL_CACHE or ~/.cache/opforge/eval
    "arch_list": None,  # TORCH_CUDA_ARCH_LIST; None: from the visible GPU, else $TORCH_CUDA_ARCH_LIST or 9.0
    "gpu_lock": None,  # lock file that serialises GPU measurement of concurrent evaluations on one GPU
}


def resolve(settings: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS overlaid with `settings`; unknown keys are an error (typos must not pass silently)."""
    out = dict(DEFAULTS)
    for k, v in (settings or {}).items():
        if k not in DEFAULTS:
            raise ValueError(f"unknown evaluation setting {k!r}; known: {', '.join(sorted(DEFAULTS))}")
        out[k] = v
    if out["cache_dir"] is None:
        out["cache_dir"] = os.environ.get("OPFORGE_EVAL_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "opforge", "eval")
    return out
