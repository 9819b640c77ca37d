"""The rules a kernel must follow, stated once (stdlib only): the agent's system prompt
(`pipeline.rollout.prompts`), the output of `opforge eval` and docs/judge.md all print `rules_text`.

Generated from the checks themselves (`static_check.VIOLATIONS`, the judge's runtime reason codes) and from the
evaluation options in force, so a rejection is never a surprise.
"""

from __future__ import annotations

from typing import Any

from pipeline.evaluate.static_check import STRICT, VIOLATIONS

# Reason codes the judge itself produces at run time (beside the static names above).
RUNTIME_RULES: dict[str, str] = {
    "torch_op_in_forward": (
        "a torch compute op ran inside ModelNew.forward (seen at dispatch, from Python or C++), or a device tensor's "
        "data was copied to the host"
    ),
    "input_mutation": "the inputs were changed in place (where the task's own code leaves them as they are)",
    "uninitialized_output": "a wrong output holds memory the kernel never wrote",
    "result_caching": "an output reused from an earlier call (checked on timed calls the judge picks afterwards)",
    "output_commitment_mismatch": "a saved timed output differs from the one committed when the call returned",
    "time_inconsistent": "reported GPU times disagree with the judge's own clock (work hidden outside the timing)",
    "work_off_stream": "work launched outside the current CUDA stream",
    "no_kernel_launched": "ModelNew.forward launched no GPU kernel",
    "excessive_speedup": "a speedup above max_speedup (suspect; rejected by default)",
    "artifact_tampered": "the build artifact changed after it was built",
    "nondeterministic_output": "the same inputs gave different outputs (bitwise, by default)",
}


def _tolerance_line(s: dict[str, Any]) -> str:
    return (
        f"|out - ref| <= max({s['atol_floor']:g}, {s['scale_atol']:g} x RMS(ref)) + {s['rtol']:g} x |ref| "
        "elementwise per output tensor"
    )


def rules_text(settings: dict[str, Any] | None = None, *, compact: bool = False) -> str:
    """The rules as a markdown section (the options in force decide the library and tolerance lines). `compact`:
    the names only (the agent's system prompt, whose own rules section explains them)."""
    from pipeline.evaluate import options

    s = options.resolve(settings) if settings is not None else dict(options.DEFAULTS)
    libs = ", ".join(s["allow_libraries"]) or "none"
    if compact:
        static = ", ".join(n for n, (sev, _) in VIOLATIONS.items() if sev == STRICT)
        return (
            "## Reason codes of the judge (any one scores -1)\n"
            f"Static: {static}. At run time: {', '.join(RUNTIME_RULES)}. Libraries allowed: {libs}. "
            f"Correct: {_tolerance_line(s)}, on fresh secret inputs of two distributions."
        )
    lines = [
        "## What the judge rejects (any one scores the attempt -1)",
        "Forbidden in the solution (static checks on the source, before any build):",
    ]
    lines += [f"- `{name}`: {what}" for name, (sev, what) in VIOLATIONS.items() if sev == STRICT]
    lines += [
        (
            "- in particular: os / sys / pickle for files, the environment or sys.modules (`io_access`, "
            "`caller_introspection`); subprocess, threading, multiprocessing (`threads_or_processes`); ctypes "
            "(`raw_memory_access`); inspect, gc (`caller_introspection`); importlib, exec, eval (`dynamic_code`)"
        ),
        f"- library calls (cuBLAS, cuDNN) unless allowed; allowed libraries now: {libs}",
        (
            "Allowed in ModelNew.forward: allocations and views in method or function form (`torch.empty`, "
            "`torch.flatten`, `x.view`, `torch.transpose`, `torch.chunk`, ...), numpy arithmetic on shapes, "
            "`pathlib`/`os.path` for a build folder, calls of your compiled extensions however they are named"
        ),
        (
            "Checked on the built binary, before it loads (what it links to, whatever the source spelled): ATen "
            "kernels called directly (`at::cpu::`, `at::cuda::`, `at::native::`) or compute ops called from C++ "
            "(`torch_compute_op`); the dispatcher's mode or key state (`caller_introspection`); vendor libraries "
            "unless allowed (`library_call`); dlopen/dlsym (`dynamic_code`); fork, exec, threads "
            "(`threads_or_processes`); fopen, directories, dup2 (`io_access`); `syscall` instructions "
            "(`raw_memory_access`). Extensions are made by the build step only: one built while judged is refused"
        ),
        "Checked while it runs (in its own jailed process, without access to the reference or the judge):",
    ]
    lines += [f"- `{name}`: {what}" for name, what in RUNTIME_RULES.items()]
    lines += [
        (
            "Correct means: same output structure, shapes and dtypes, and "
            f"{_tolerance_line(s)}, on {s['trials']} fresh secret inputs (also a second, perturbed input "
            "distribution) and "
            "again after timing; tolerances scale with the output's magnitude (tiny outputs are judged at their own "
            "scale, so returning zeros fails), and outputs of at most 16 elements (a loss) are also judged within "
            "half their standard deviation across the inputs drawn (never tighter than 1e-3 of the value)."
        ),
        "Recorded, not rejected: `precision_cast` and `global_state` warnings.",
    ]
    return "\n".join(lines)
