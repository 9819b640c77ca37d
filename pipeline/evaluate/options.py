"""Evaluation options, defined once as a stdlib dataclass: the GPU worker reads them as a plain dict (`resolve`),
`settings.py` derives the pydantic section of the config from the same fields.

Kept apart from `settings.py` so that the worker process, which must import with torch + numpy alone, never
imports pydantic. A new knob is one field here (type, default, `doc`, optional bounds or choices).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from dataclasses import dataclass
from typing import Any, Optional


def _opt(default: Any, doc: str, **check: Any) -> Any:
    # check: ge / le (numbers) or choices (strings); read by `resolve` and by the pydantic model alike.
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda d=tuple(default): list(d), metadata={"doc": doc, **check})
    return dataclasses.field(default=default, metadata={"doc": doc, **check})


@dataclass
class EvalOptions:
    """Kernel evaluation harness: correctness, the op guard, profiling, static checks, resources."""

    # where the jailed reference and candidate processes run
    device: str = _opt(
        "cuda",
        "Device of the reference and candidate processes: cuda | cpu (cpu: protocol tests "
        "only; timed with the host clock).",
        choices=("cuda", "cpu"),
    )
    # correctness (docs/judge.md, "Tolerance")
    atol: float = _opt(
        1e-2,
        "KernelBench's absolute tolerance: its allclose verdict is recorded "
        "(details.kernelbench_ok) for comparison; it is not the verdict.",
        ge=0.0,
    )
    rtol: float = _opt(
        1e-2,
        "Relative tolerance: an element passes if |out - ref| <= atol_eff + rtol * |ref| (also KernelBench's rtol).",
        ge=0.0,
    )
    scale_atol: float = _opt(
        1e-2, "atol_eff = max(atol_floor, scale_atol * RMS of the reference output tensor).", ge=0.0
    )
    atol_floor: float = _opt(1e-9, "The smallest atol_eff (an all-zero reference output).", ge=0.0)
    input_variants: list[str] = _opt(
        ["base", "perturbed"],
        "Input distributions cycled over the correctness "
        "trials: base (get_inputs as drawn) and perturbed (every float input times "
        "an elementwise factor in [0.5, 1.5]; symmetric matrices as D A D, inputs within [-1, 1] kept there; a "
        "trial whose perturbed inputs the task refuses runs on its own, details.own_inputs).",
    )
    trials: int = _opt(5, "Correctness trials, each on fresh random inputs from a secret seed.", ge=1)
    post_timing_trials: int = _opt(2, "Correctness re-checked after timing, on new secret seeds.", ge=0)
    determinism: str = _opt(
        "exact",
        "Same inputs twice: exact (bitwise) | tolerance (the rule above) | off.",
        choices=("exact", "tolerance", "off"),
    )
    degenerate_check: bool = _opt(
        True,
        "Report a task whose reference output does not depend on its input "
        "(across the inputs drawn) as a task defect (reward 0 for a matching "
        "kernel: excluded, not punished).",
    )
    kernel_launch_check: bool = _opt(True, "The candidate must launch at least one GPU kernel (CUPTI).")
    # what ModelNew.forward may call from torch (everything else in aten is blocked at dispatch)
    allow_libraries: list[str] = _opt([], "Torch library ops allowed in ModelNew.forward: cublas, cudnn.")
    allow_torch_ops: list[str] = _opt([], "Extra allowed aten op names, e.g. addmm.")
    # profiling
    timing_trials: int = _opt(30, "Timed calls kept (one more is run first and discarded).", ge=1)
    timing_warmup: int = _opt(5, "Warm-up calls before timing (at least).", ge=0)
    timing_warmup_ms: float = _opt(250.0, "Warm-up wall time before timing, ms (at least; GPU clocks ramp up).")
    timing_min_ms: float = _opt(
        300.0, "More timed calls for short kernels, until they add up to this much GPU time (ms)."
    )
    timing_max_trials: int = _opt(3000, "Most timed calls of one run.", ge=1)
    timing_max_s: float = _opt(
        5.0,
        "Most wall time planned for the candidate's timed calls and the calibrator's null calls beside them, s "
        "(0: no limit): each is a round trip driven by the trusted side while the candidate holds the GPU alone "
        "(and commits its output: a hash of every byte), so short kernels with large outputs get fewer calls (never "
        "fewer than timing_trials; null calls: at most a fifth of the budget, at least 20), planned from the "
        "warm-up's wall time per call.",
        ge=0,
    )
    timing_precision: float = _opt(
        0.005,
        "The timed calls stop before their planned count once the median of the reported times is known to within "
        "this fraction (half the width of its ~95% confidence interval from order statistics, looked at every "
        "32 calls, after at least timing_trials calls and 20 of the calibrator's null calls); the run then ends at a "
        "secret random one of the next 32 calls, which is checked. Half the checked calls' positions are drawn "
        "denser early (uniform in log position), so a run stopped early has some, half uniform, so a run made in "
        "full has some late. 0: every planned call.",
        ge=0,
    )
    io_budget_mb: int = _opt(
        8192,
        "Most MiB of reference outputs written per evaluation: past it, the reference makes no more "
        "correctness trials, post-timing trials or checked timed calls beyond the first trial and two checked calls "
        "(the last and one at random); a KernelBench level-1 task moves up to 16 GiB per call. details.io_budget "
        "says what ran.",
        ge=1,
    )
    check_max_calls: int = _opt(
        16,
        "Timed calls whose output is checked against the reference (the last one and others at random "
        "positions; their seeds' reference outputs are made with the correctness trials').",
        ge=1,
    )
    check_leaves: int = _opt(
        256,
        "Leaves of 4 KiB per output tensor compared at a checked timed call: picked at random (and the first and "
        "last) with a secret seed, told to the candidate only after the call committed its output, each proven to "
        "be that output's by its leaf digest; a tensor of at most this many leaves is compared whole. 0: every "
        "checked output whole (the candidate writes it all, GiBs on large tasks).",
        ge=0,
    )
    calibration_calls: int = _opt(
        30, "No-op timed calls that calibrate the per-call overhead before candidate code is loaded.", ge=1
    )
    live_calibration_calls: int = _opt(
        200,
        "Null calls (at most; see timing_max_s) made during timing by a second process that never loads "
        "candidate code, at random points between the timed calls: the clock "
        "check's overhead is measured under the host's load of that moment "
        "(0: the calibration before load alone).",
        ge=0,
    )
    clock_slack_ms: float = _opt(
        0.2,
        "Reported GPU times may fall short of the trusted wall clock minus the "
        "calibrated overhead by max(clock_slack_ms, clock_slack_frac x median time, 4 standard errors of the "
        "median difference; 3 x the IQR for the calibration before load) (medians); more is time_inconsistent.",
        ge=0.0,
    )
    clock_slack_frac: float = _opt(0.15, "See clock_slack_ms.", ge=0.0)
    l2_flush: bool = _opt(True, "Flush L2 before every timed call.")
    max_speedup: float = _opt(10.0, "Speedup above which a result is suspect.")
    reject_excessive_speedup: bool = _opt(True, "Reject (not only flag) speedups above max_speedup.")
    offstream_ratio: float = _opt(
        0.5,
        "Stream-ordered time below ratio x device-synchronised time (less the null calls' synchronize gap) means "
        "work ran off the stream.",
    )
    offstream_min_ms: float = _opt(0.05, "Off-stream detector floor (ms).")
    compile_mode: str = _opt("default", "torch.compile mode of the compile baseline.")
    baselines: bool = _opt(True, "Measure eager and torch.compile baselines (cached per task/GPU/torch/mode).")
    baseline_runs: int = _opt(3, "Baseline processes per task; each figure is the lowest of their medians.", ge=1)
    margin: float = _opt(0.05, "Speedup margin for rewards 2 and 3 (> 5% faster).")
    # static checks
    static_checks: bool = _opt(True, "Run the static source checks.")
    warnings_reject: bool = _opt(False, "Treat static warnings (precision casts) as violations.")
    allow_triton: bool = _opt(False, "Allow Triton kernels in solutions.")
    # resources
    timeout_s: float = _opt(600.0, "Wall-clock limit of the candidate process's whole life (load, verify, profile).")
    start_timeout_s: float = _opt(120.0, "The candidate process's start (interpreter, torch) until it answers.")
    load_timeout_s: float = _opt(300.0, "Importing the solution and building ModelNew.")
    call_timeout_s: float = _opt(120.0, "One command to the candidate process (a correctness or timed call).")
    reference_timeout_s: float = _opt(300.0, "One reference process (inputs and reference outputs).")
    baseline_timeout_s: float = _opt(900.0, "Limit of a baseline process.")
    compile_timeout_s: float = _opt(900.0, "Limit of one build.")
    # nvcc's front end on torch's full headers peaks near 3 GB resident
    build_memory_mb: int = _opt(
        16384, "Address-space limit of each process of a build (compilers included; 0: none).", ge=0
    )
    slim_headers: bool = _opt(
        True,
        "Compile a single-file solution's CUDA sources with <torch/extension.h> read as <torch/types.h> first (about "
        "2.3x faster through nvcc), and with torch's own headers when that fails (docs/evaluate.md, "
        "'Builds of single-file solutions').",
    )
    gpu_memory_fraction: float = _opt(0.9, "Caching-allocator cap.", ge=0.0, le=1.0)
    cache_dir: Optional[str] = _opt(
        None, "Builds, extension dirs, baselines; None: $OPFORGE_EVAL_CACHE or ~/.cache/opforge/eval."
    )
    arch_list: Optional[str] = _opt(
        None, "TORCH_CUDA_ARCH_LIST; None: from the visible GPU, else $TORCH_CUDA_ARCH_LIST or 9.0."
    )
    gpu_lock: Optional[str] = _opt(
        None,
        "The GPU's lock file (pipeline.gpulock): timings hold it exclusive, other GPU work shared, so evaluations, "
        "validations and the LLM engine on one GPU never overlap a timing. None: the GPU's own "
        "(pipeline.gpulock.lock_path), the one they all take by default; 'off': no lock.",
    )
    keep_eval_dir: bool = _opt(
        False, "Keep each evaluation's directory (inputs, reference and candidate outputs) for debugging."
    )


FIELDS: tuple[dataclasses.Field, ...] = dataclasses.fields(EvalOptions)
TYPES: dict[str, Any] = typing.get_type_hints(EvalOptions)
DEFAULTS: dict[str, Any] = dataclasses.asdict(EvalOptions())


def _type_error(name: str, value: Any, tp: Any) -> str | None:
    """Why `value` does not fit the field's type or bounds (None: it fits). Stdlib only."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is typing.Union:  # Optional[X]
        return None if value is None else _type_error(name, value, next(a for a in args if a is not type(None)))
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    elif typing.get_origin(tp) is list:
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, args[0]) for v in value)
    else:
        ok = True
    if not ok:
        return f"evaluation setting {name!r} must be {getattr(tp, '__name__', tp)}, got {value!r}"
    check = next(f for f in FIELDS if f.name == name).metadata
    if "choices" in check and value not in check["choices"]:
        return f"evaluation setting {name!r} must be one of {', '.join(check['choices'])}, got {value!r}"
    if "ge" in check and value < check["ge"] or "le" in check and value > check["le"]:
        return f"evaluation setting {name!r} must lie in [{check.get('ge', '-inf')}, {check.get('le', 'inf')}]"
    return None


def resolve(settings: dict[str, Any] | None) -> dict[str, Any]:
    """DEFAULTS overlaid with `settings`, each value checked against its field; unknown keys are an error (typos
    must not pass silently)."""
    out = dict(DEFAULTS)
    for k, v in (settings or {}).items():
        if k not in DEFAULTS:
            import difflib

            near = difflib.get_close_matches(k, DEFAULTS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else f"; known: {', '.join(sorted(DEFAULTS))}"
            raise ValueError(f"unknown evaluation setting {k!r}{hint}")
        why = _type_error(k, v, TYPES[k])
        if why:
            raise ValueError(why)
        out[k] = list(v) if isinstance(v, tuple) else v
    if out["gpu_lock"] is None and out["device"] == "cuda":
        from pipeline.gpulock import lock_path

        out["gpu_lock"] = lock_path()
    elif out["gpu_lock"] == "off":
        out["gpu_lock"] = ""  # no lock; not None, which a second resolve (callers pass resolved settings) fills in
    if out["cache_dir"] is None:
        out["cache_dir"] = os.environ.get("OPFORGE_EVAL_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "opforge", "eval"
        )
    return out
