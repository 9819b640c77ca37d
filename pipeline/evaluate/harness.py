"""`evaluate(task_code, solution_path)`: static checks -> compile (sealed) -> baselines (cached, written here
only) -> the judge (`pipeline.evaluate.judge`: a jailed reference process, a jailed candidate process, verdicts
computed here) -> violations, speedups, reward. Stdlib + torch only (runs inside GPU actors); never raises for
anything a candidate does.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.evaluate import artifacts, options
from pipeline.evaluate.build import CompileResult, resolve_arch_list
from pipeline.evaluate.result import EvalResult
from pipeline.evaluate.reward import reward as compute_reward
from pipeline.evaluate.static_check import check_solution_files, summarize, without_allowed_libraries
from pipeline.evaluate.workspace import check_protected, is_workspace, solution_files

MODES = ("verify", "profile", "full")


def _task_id(code: str) -> str:
    from pipeline.identity import task_id

    return task_id(code)


def cuda_device() -> str | None:
    """The name of the first visible GPU, or None on a machine without CUDA."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - a broken driver counts as no GPU
        return None
    return None


# Every option that changes how a baseline is timed is part of its cache key.
_TIMING_KEYS = (
    "timing_trials",
    "timing_warmup",
    "timing_warmup_ms",
    "timing_min_ms",
    "timing_max_trials",
    "l2_flush",
    "baseline_runs",
)


def baseline_key(task_code: str, device: str, settings: dict[str, Any]) -> str:
    import torch

    parts = [
        _task_id(task_code),
        device,
        torch.__version__,
        str(settings["compile_mode"]),
        "/".join(str(settings[k]) for k in _TIMING_KEYS),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def _complete(report: dict[str, Any]) -> bool:
    """A baseline process that finished, with an eager figure."""
    return report.get("stage") == "done" and report.get("eager_ms") is not None


def combine_baseline_runs(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One baseline from the reports of several baseline processes, timed one after another.

    Each figure (eager, torch.compile) is the lowest of the runs' medians, with the raw times of the run it came
    from. Why: on a shared host, contention from outside (measured on the H200: stream-ordered GPU times and host
    latency rising together for 1-3 s) only ever adds time, and a baseline is cached and divides the time of every
    candidate of its task, so one contended window would inflate all their speedups. The lowest median errs the
    other way (a speedup a little low), which a reward label can afford. `runs` keeps every run's figures."""
    ok = [r for r in reports if _complete(r)]
    # A run cut short after its eager figure (torch.compile crashed the process) still gives that figure, but the
    # baseline is then `complete` = False and not cached.
    usable = ok or [r for r in reports if r.get("eager_ms") is not None]
    first = (usable or reports or [{}])[0]
    data: dict[str, Any] = {
        "eager_ms": None,
        "compile_ms": None,
        "timing": {},
        "device": first.get("device"),
        "torch": first.get("torch"),
        "compile_error": (first.get("compile_error") or "")[-1500:],
        "reason": first.get("reason", ""),
        "sandbox": first.get("sandbox", {}),
        "runs": [
            {
                "eager_ms": r.get("eager_ms"),
                "compile_ms": r.get("compile_ms"),
                "stage": r.get("stage"),
                "reason": r.get("reason", ""),
                "compile_error": (r.get("compile_error") or "")[-300:],
                "started_at": ((r.get("timing") or {}).get("eager") or {}).get("started_at"),
                "alone": bool(r.get("alone")),
                "again_beside": r.get("again_beside"),
            }
            for r in reports
        ],
        "complete": bool(ok),
    }
    for fig, part in (("eager_ms", "eager"), ("compile_ms", "compile")):
        runs = [r for r in usable if r.get(fig) is not None]
        if not runs:
            continue
        best = min(runs, key=lambda r: r[fig])
        data[fig] = best[fig]
        data["timing"][part] = (best.get("timing") or {}).get(part)
        if part == "eager":
            data["timing"]["method"] = (best.get("timing") or {}).get("method")
        if part == "compile":
            data["timing"]["compile_seconds"] = (best.get("timing") or {}).get("compile_seconds")
            data["compile_error"] = ""  # another run's torch.compile failure stays in its `runs` entry
    return data


def measure_baselines(task_code: str, settings: dict[str, Any], arch_list: str, mode: str = "full") -> dict[str, Any]:
    """`baseline_runs` baseline processes, combined: the first alone (it fills the task's torch.compile cache), then
    the others side by side (they load what it compiled). Each timing holds the GPU's lock exclusive: separate
    windows in time. A first run that fails ends the series: the same task in a fresh process fails the same way."""
    from concurrent.futures import ThreadPoolExecutor

    from pipeline.evaluate.judge import said_out_of_memory
    from pipeline.evaluate.runner import run_job
    from pipeline.gpumemory import ROOM_WAIT_S, SLOTS, claimed, room_beside_others

    n = max(1, int(settings["baseline_runs"]))
    job = {"kind": "baseline", "task_code": task_code, "mode": mode}

    def run(slots: int) -> dict[str, Any]:
        with claimed(slots):
            return {**run_job(job, settings, timeout_s=float(settings["baseline_timeout_s"]), arch_list=arch_list)}

    def short_of_memory(r: dict[str, Any]) -> str | None:
        """The run's words where it ran out of GPU memory, else None."""
        sb = r.get("sandbox") or {}
        said = [r.get("reason"), r.get("error"), sb.get("error"), sb.get("stderr_tail")]
        return None if _complete(r) or not said_out_of_memory(*said) else " ".join(str(t) for t in said if t)

    def one(_: int = 0) -> dict[str, Any]:
        # A slot of the GPU's memory, like every judgement's (Judge.memory_claim); a run out of memory beside others
        # runs again beside them once the GPU has room for what it needed, else (or short again) with the GPU's
        # memory to itself: a baseline short of memory would cost correct kernels their speedup reward.
        r = run(1)
        words = short_of_memory(r)
        if words is None:
            return r
        room = room_beside_others(words, ROOM_WAIT_S)
        if room is not None:
            again = run(1)
            again["again_beside"] = room
            if short_of_memory(again) is None:
                return again
        r = run(SLOTS)
        r["alone"] = True
        if room is not None:
            r["again_beside"] = {**room, "short_again": True}
        return r

    reports = [one()]
    if n > 1 and _complete(reports[0]):
        with ThreadPoolExecutor(n - 1, thread_name_prefix="baseline") as pool:
            reports += list(pool.map(one, range(n - 1)))
    return combine_baseline_runs(reports)


def get_baselines(task_code: str, device: str, settings: dict[str, Any], arch_list: str) -> dict[str, Any]:
    """Eager and torch.compile timings of the reference, measured like candidates (`measure_baselines`); cached
    per (task hash, GPU name, torch version, compile mode, timing settings)."""
    key = baseline_key(task_code, device, settings)
    path = Path(settings["cache_dir"]) / "baselines" / f"{key}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            data["cached"] = True
            return data
        except ValueError:
            pass
    data = {"key": key, **measure_baselines(task_code, settings, arch_list), "cached": False}
    data["device"] = data.get("device") or device
    if data["complete"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    return data


def _baselines_in_background(task_code: str, s: dict[str, Any], arch: str):
    """A future of `get_baselines` (None where no baseline is measured: options, or no GPU here)."""
    if not (s["baselines"] and s["device"] == "cuda"):
        return None
    device = cuda_device()
    if device is None:
        return None
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1, thread_name_prefix="baselines")
    fut = pool.submit(get_baselines, task_code, device, s, arch)
    pool.shutdown(wait=False)  # the thread ends with its job; nobody waits for it on the early returns
    return fut


def static_review(task_code: str, path: Path, s: dict[str, Any], files: dict[str, str] | None = None):
    """(violations, warnings, findings) of the static checks and, for a workspace, the protected files."""
    files = solution_files(path) if files is None else files
    violations: list[str] = []
    warnings: list[str] = []
    findings = []
    if s["static_checks"]:
        findings = check_solution_files(
            files, allow_triton=bool(s["allow_triton"]), allow_libraries=list(s["allow_libraries"] or [])
        )
        violations, warnings = summarize(findings, bool(s["warnings_reject"]))
    if is_workspace(path):
        violations += check_protected(path, task_code)
    return violations, warnings, findings


def binary_review(artifact: str, s: dict[str, Any]):
    """(violations, warnings, findings) of the checks on a build's shared objects (`symbols`)."""
    from pipeline.evaluate import symbols

    ops = symbols.allowed_ops(s["allow_libraries"], s.get("allow_torch_ops"))
    findings = without_allowed_libraries(symbols.check_artifact(artifact, ops), s["allow_libraries"])
    violations, warnings = summarize(findings, bool(s["warnings_reject"]))
    return violations, warnings, findings


def _static_reject(task_code: str, solution_path: str, settings: dict[str, Any]) -> bool:
    try:
        return bool(static_review(task_code, Path(solution_path), options.resolve(settings))[0])
    except OSError:
        return False


def evaluate(
    task_code: str,
    solution_path: str,
    *,
    mode: str = "full",
    settings: dict | None = None,
    compile_result: CompileResult | dict | None = None,
) -> EvalResult:
    """Evaluate one solution (single .py file or workspace dir) against a KernelBench-format task.

    `compile_result`: a build already made (by a CPU compile task); None builds here. On a machine without CUDA
    the result carries the static and build outcome and reason "no_gpu".
    """
    t0 = time.perf_counter()
    s = options.resolve(settings)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    res = EvalResult(mode=mode)
    try:
        res.task_id = _task_id(task_code)
    except Exception:  # noqa: BLE001
        res.task_id = ""
    p = Path(solution_path)
    if not p.exists():
        res.reason = "no_solution"
        res.error = f"{p} does not exist"
        return _finish(res, t0, float(s["margin"]))
    res.solution_kind = "workspace" if is_workspace(p) else "single_file"
    try:
        files = solution_files(p)
    except OSError as e:
        res.reason, res.error = "no_solution", str(e)
        return _finish(res, t0, float(s["margin"]))

    # ---- static checks (cheap; run before any build or GPU time)
    violations, warnings, findings = static_review(task_code, p, s, files)
    res.details["static"] = [f.to_dict() for f in findings][:100]
    res.violations += violations
    res.warnings += warnings
    if res.violations:
        res.reason = "static_violation"
        return _finish(res, t0, float(s["margin"]))

    # ---- baselines, from here in the background: jailed processes of their own that overlap the build and the
    # candidate's set-up and verification (their timings and the candidate's take the GPU's lock exclusive, one at
    # a time). A build that fails returns at once; its task's baseline is still measured and cached for the next.
    arch = resolve_arch_list(s["arch_list"])
    baselines = _baselines_in_background(task_code, s, arch) if mode != "verify" else None

    # ---- the judge's reference process (the task's inputs and outputs) starts now: it runs while the solution builds
    from pipeline.evaluate.judge import Judge, judge_candidate
    from pipeline.gpumemory import ROOM_WAIT_S, room_beside_others

    device = cuda_device() if s["device"] == "cuda" else "cpu"
    judge = Judge(task_code, {}, mode, s, arch, "") if device is not None else None
    if judge is not None:
        try:
            judge.begin()
        except OSError:  # no room for its directory: judge_candidate tries again and reports why
            judge = None

    # ---- compile (sealed: the artifact's hashes recorded where no jail writes, checked before every load)
    try:
        if compile_result is None:
            cr = artifacts.compile_locked(
                p,
                s["cache_dir"],
                arch_list=arch,
                timeout=float(s["compile_timeout_s"]),
                slim_headers=bool(s["slim_headers"]),
                memory_mb=int(s["build_memory_mb"]),
            )
        else:
            cr = compile_result if isinstance(compile_result, CompileResult) else CompileResult(**compile_result)
            if cr.ok and cr.artifact:
                artifacts.seal(s["cache_dir"], cr.artifact)
    except BaseException:
        if judge is not None:
            judge.abandon()
        raise
    res.compile = cr.to_dict()
    res.compiled = cr.ok
    if cr.ok and cr.artifact and s["static_checks"]:
        # what the binary links to, before anything loads it (names the source checks cannot see through macros)
        try:
            linked = binary_review(cr.artifact, s)
        except Exception as e:  # noqa: BLE001 - unchecked is refused; the judge begun above must end (its slot)
            linked = None
            res.reason, res.error = "binary_unchecked", f"{type(e).__name__}: {e}"[:300]
        if linked is None or linked[0]:
            if judge is not None:
                judge.abandon()
            if linked is not None:
                res.details["static"] += [f.to_dict() for f in linked[2]][:100]
                res.violations += [v for v in linked[0] if v not in res.violations]
                res.reason = "static_violation"
            return _finish(res, t0, float(s["margin"]))
        res.warnings += [w for w in linked[1] if w not in res.warnings]
    if not cr.ok:
        if judge is not None:
            judge.abandon()
        device = cuda_device()
        res.device = device or ""
        res.reason = cr.reason or "compile_error"
        if cr.reason == "needs_cuda_torch" and device is None:
            res.reason = "no_gpu"
        res.error = cr.log
        return _finish(res, t0, float(s["margin"]))

    # ---- GPU (device "cpu": the protocol on the host, for tests)
    if device is None:
        res.reason = "no_gpu"
        return _finish(res, t0, float(s["margin"]))
    res.device = device
    sol_path = str((p / "model_new.py") if res.solution_kind == "workspace" else p)
    sol = {"kind": res.solution_kind, "path": sol_path}
    rep = judge_candidate(task_code, sol, mode, s, arch, cr.artifact if cr.ok else "", judge)
    if _no_room(rep):
        # A full file system is the host's doing (other evaluations' files), not the task's or the candidate's: once
        # some room comes back, judged again from the start. A second failure keeps its reason (and -1).
        from pipeline.evaluate import tensorio

        tensorio.wait_for_room(tempfile.gettempdir(), tensorio.NO_ROOM_WAIT_S)
        first, first_ms = rep.get("reason", ""), _first_figure(rep)
        rep = judge_candidate(task_code, sol, mode, s, arch, cr.artifact if cr.ok else "")
        rep.setdefault("details", {})["judged_again_after"] = first
        _timing_floor(rep, first_ms)
    elif _short_of_memory(rep):
        # Out of GPU memory beside other evaluations says nothing about the task or the candidate: judged again. First
        # beside the others, once the GPU has room for what the failed process needed (others ending is sooner
        # than all of them); short of memory again, or no room in sight, with the GPU's memory to itself. A failure
        # alone is the failing side's own (the reference's: a task defect, reward 0; the candidate's: -1).
        first = rep.get("reason", "")
        first_ms = _first_figure(rep)
        again = None
        # (device "cpu": the protocol on the host, no GPU memory to wait for)
        room = room_beside_others(str(rep.get("error") or ""), ROOM_WAIT_S) if s["device"] != "cpu" else None
        if room is not None:
            again = judge_candidate(task_code, sol, mode, s, arch, cr.artifact if cr.ok else "")
            again.setdefault("details", {})["judged_again_beside"] = room
        if again is None or _short_of_memory(again):
            # the judgement beside the others may have timed the candidate too: the higher figure floors the last
            first_ms = max((f for f in (first_ms, _first_figure(again or {})) if f is not None), default=None)
            rep = judge_candidate(task_code, sol, mode, s, arch, cr.artifact if cr.ok else "", alone=True)
            if again is not None:
                rep.setdefault("details", {})["judged_again_beside"] = {
                    **again["details"]["judged_again_beside"],
                    "reason": again.get("reason", ""),
                }
        else:
            rep = again
        rep.setdefault("details", {})["judged_again_after"] = first
        _timing_floor(rep, first_ms)
    # An incorrect candidate's verdict does not wait for the baselines (they finish and are cached in the background).
    base: dict[str, Any] = baselines.result() if baselines is not None and rep.get("correct") else {}
    res.eager_ms, res.compile_ms = base.get("eager_ms"), base.get("compile_ms")
    _merge(res, rep, base, s)
    return _finish(res, t0, float(s["margin"]))


def _first_figure(rep: dict) -> tuple[float, str] | None:
    """The first judgement's figure a second one is never below: its timing where the timed run was over before it
    failed, else what its timed run had measured when it failed (`partial_timing_ms`), else None."""
    if rep.get("solution_ms") is not None:
        return float(rep["solution_ms"]), "first judgement"
    part = (rep.get("details") or {}).get("partial_timing_ms")
    return (float(part), "first judgement's partial timed run") if part is not None else None


def _timing_floor(rep: dict, first: tuple[float, str] | None) -> None:
    """A second judgement's figure is never below the first's (_first_figure): a candidate that disliked its times
    could feign running out of memory or a full disk (in a timed call, a post-timing trial, at `finish`) for a fresh
    run."""
    if first is None:
        return
    rep.setdefault("details", {})["timing_floor_ms"] = first[0]  # what the figure could not go below
    ms = rep.get("solution_ms")
    if ms is not None and ms < first[0]:
        rep["solution_ms"] = first[0]
        rep["details"]["timing_floor_from"] = first[1]


def _no_room(rep: dict) -> bool:
    """A full file system stopped the judgement (not after the candidate learned which outputs are checked: it can
    fill the disk itself, `checks_unverified`)."""
    reason = str(rep.get("reason") or "").removeprefix("post_timing_")
    if (rep.get("details") or {}).get("checks_unverified"):
        return False
    return reason.startswith("host_error") or reason.startswith("reference_error: NoRoom")


def _short_of_memory(rep: dict) -> bool:
    """The reference ran out of GPU memory, or the candidate did while other evaluations held memory slots beside it
    (`slots_beside`, read by the trusted side: a candidate cannot make others appear). A candidate can still feign
    the words then: it buys a second judgement alone and its own verdict again (docs/judge.md)."""
    from pipeline.evaluate.judge import said_out_of_memory

    reason = str(rep.get("reason") or "")
    details = rep.get("details") or {}
    if rep.get("correct") or details.get("judged_alone") or details.get("checks_unverified"):
        return False
    if reason.startswith("reference_error"):
        return said_out_of_memory(reason, rep.get("error"))
    # the judge's record of the judgement's first failure (Judge.fail): what fails after it, a candidate may have
    # caused knowing the verdict (a wrong output, then "out of memory" at `finish`)
    beside = details.get("slots_beside")
    return bool(beside) and not rep.get("violations") and bool(details.get("failed_out_of_memory"))


def _merge(res: EvalResult, rep: dict, base: dict, s: dict) -> None:
    """The judge's report (computed on the trusted side) into the result."""
    sb = rep.get("sandbox", {})
    res.details["phase_s"] = rep.get("phase_s", {})
    res.details["sandbox"] = {k: sb.get(k) for k in ("reason", "returncode", "signal", "timed_out", "wall_s", "jail")}
    if sb.get("killed_after_last_reply"):
        res.details["sandbox"]["killed_after_last_reply"] = True
    for k in (
        "violation_details",
        "warning_details",
        "kernels_launched",
        "kernelbench_ok",
        "reference",
        "task_defect",
        "timed_outputs_checked",
        "timed_leaves_checked",
        "judged_again_after",
        "judged_again_beside",
        "judged_alone",
        "slots_beside",
        "checks_unverified",
        "failed_out_of_memory",
        "crash_after",
        "crash_error",
        "timing_floor_from",
        "timing_floor_ms",
        "partial_timing_ms",
        "io_budget",
        "own_inputs",
        "spread_caps",
        "reference_mutates_inputs",
    ):
        if k in rep.get("details", {}):
            res.details[k] = rep["details"][k]
    for v in rep.get("violations", []):
        if v not in res.violations:
            res.violations.append(v)
    for w in rep.get("warnings", []):
        if w not in res.warnings:
            res.warnings.append(w)
    for k in ("max_abs_err", "max_rel_err", "max_tol_err", "solution_ms"):
        if rep.get(k) is not None:
            setattr(res, k, rep[k])
    if rep.get("trials_run") is not None:
        res.details["trials_run"] = rep["trials_run"]
    if rep.get("loaded") is False or rep.get("reason") == "artifact_tampered":
        res.compiled = False  # built, but the module did not import (undefined symbol, bad ModelNew, a crash)
    res.outputs_match = bool(rep.get("correct"))
    res.reason = rep.get("reason", "") or ""
    res.error = (rep.get("error") or "")[-3000:]
    if not res.outputs_match and not res.reason:
        res.reason = _crash_reason(sb, rep.get("stage", ""))
        res.error = res.error or (sb.get("error") or sb.get("stderr_tail") or "")[-3000:]
    if rep.get("device"):
        res.device = rep["device"]
    res.task_defect = rep.get("task_defect", "")
    timing = dict(rep.get("timing") or {})
    if base:
        timing["baseline"] = {
            "eager": (base.get("timing") or {}).get("eager"),
            "compile": (base.get("timing") or {}).get("compile"),
            "compile_seconds": (base.get("timing") or {}).get("compile_seconds"),
            "cached": base.get("cached"),
            "key": base.get("key"),
            "compile_error": base.get("compile_error", ""),
            "runs": base.get("runs"),
        }  # every baseline process's figures (lowest median used)
    res.timing = timing
    if res.solution_ms and res.eager_ms:
        res.speedup_vs_eager = res.eager_ms / res.solution_ms
    if res.solution_ms and res.compile_ms:
        res.speedup_vs_compile = res.compile_ms / res.solution_ms
    if res.speedup_vs_eager is not None and res.speedup_vs_eager > float(s["max_speedup"]):
        target = res.violations if s["reject_excessive_speedup"] else res.warnings
        if "excessive_speedup" not in target:
            target.append("excessive_speedup")
    res.correct = bool(res.outputs_match) and not res.violations
    if res.outputs_match and res.violations and not res.reason:
        res.reason = "violation"
    if res.task_defect and res.correct:
        # The task's fault, not the kernel's: excluded (reward 0), never -1 and never a speedup reward.
        res.reason = f"task_defect:{res.task_defect}"


def _crash_reason(sb: dict, stage: str) -> str:
    r = sb.get("reason") or "no_result"
    return f"crash:{r}" + (f" (after {stage})" if stage else "")


def _finish(res: EvalResult, t0: float, margin: float = 0.05) -> EvalResult:
    if res.violations or not res.compiled:
        res.correct = False
    res.reward = compute_reward(res.correct, res.speedup_vs_eager, res.speedup_vs_compile, margin)
    if res.task_defect and (res.correct or res.task_defect == "reference_failed"):
        res.reward = 0  # the candidate was not judged (or judged correct) on a task at fault
    res.seconds = round(time.perf_counter() - t0, 3)
    return res
