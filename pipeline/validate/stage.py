"""The validation stage: static filters here, runtime filters in a sandboxed process per candidate, one row each.

`validate(tasks, settings, device)` works on any table with a `code` column (our `tasks`, or an external set such
as CUDA-Agent-Ops-6K). Candidates run on the executor the caller passes (Ray tasks when the runner has Ray); on
a GPU each asks Ray for a GPU share. Nothing a candidate does stops the run: every outcome is a row with a reason code.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.identity import task_id as compute_task_id
from pipeline.inlining import inline
from pipeline.validate.settings import ValidateSettings
from schemas.validation import FILTERS

_HARNESS_SOURCE: str | None = None


def harness_source() -> str:
    """The harness module's source plus its entry call: the sandbox runs it without this project on its path."""
    global _HARNESS_SOURCE
    if _HARNESS_SOURCE is None:
        from pipeline.decontam.jailed import TRACER  # source text only (stdlib): decontamination's tracer

        src = inline((Path(__file__).parent / "harness.py").read_text(), "pipeline.patchwatch", "pipeline.gpulock")
        _HARNESS_SOURCE = src + f"\n\nmain(PAYLOAD, emit_result, {TRACER!r})\n"
    return _HARNESS_SOURCE


def resolve_device(device: str) -> str:
    if device in ("auto", "", None):
        try:
            import torch

            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"
    return device


def _inductor_dir(settings: dict[str, Any]) -> str:
    d = (
        settings.get("inductor_cache_dir")
        or os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        or str(Path.home() / ".cache" / "opforge" / "inductor")
    )
    Path(d).mkdir(parents=True, exist_ok=True)
    return d


_VEC_ISA: dict[str, str] = {}
_WARMUP_CODE = """
import torch
from torch._inductor import cpu_vec_isa
m = torch.compile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()))
with torch.no_grad():
    m(torch.randn(4, 8))
emit_result("1" if bool(cpu_vec_isa.pick_vec_isa()) else "0")
"""


def warm_inductor(cache_dir: str, timeout_s: float = 300.0) -> str:
    """Once per cache dir and process: a trusted compile that probes the CPU's vector ISA; returns "1" or "0".

    Inductor checks the ISA in every new process by spawning `python -c "cdll.LoadLibrary(...)"`; candidates may
    not spawn the interpreter, so this trusted run (python allowed) answers once and candidates get the answer
    through TORCHINDUCTOR_VEC_ISA_OK (the run also fills the compile cache).
    """
    from pipeline.sandbox import run_sandboxed

    if cache_dir in _VEC_ISA:
        return _VEC_ISA[cache_dir]
    marker = Path(cache_dir) / ".opforge-vec-isa-ok"
    if marker.exists():
        _VEC_ISA[cache_dir] = marker.read_text().strip() or "0"
        return _VEC_ISA[cache_dir]
    # Trusted code, still jailed; the only job that writes the shared cache (candidates get private copies).
    res = run_sandboxed(
        _WARMUP_CODE,
        timeout_s=timeout_s,
        memory_mb=None,
        exec_dirs=[cache_dir],
        env={"TORCHINDUCTOR_CACHE_DIR": cache_dir},
    )
    ok = str(res.result) if res.ok and res.result in ("0", "1") else "0"
    if res.ok:
        marker.write_text(ok + "\n")
    _VEC_ISA[cache_dir] = ok
    return ok


def gpu_lock_file() -> str:
    """This worker's GPU lock file: the one the LLM engine and the evaluators take (pipeline.llm.placement), so
    that a candidate's timed region never overlaps their GPU work either. Readable by the jail's uid (the harness
    flocks a read-only descriptor)."""
    from pipeline.gpulock import ensure, lock_path

    return ensure(lock_path())


def private_cache(shared: str, dest: Path) -> str:
    """A candidate's own inductor cache: hard links to the trusted warm-up's entries (read-only to the candidate:
    they belong to another uid), in a dir only it writes. A shared writable cache would let one candidate plant
    compiled code that another candidate's torch.compile then loads."""
    dest.mkdir(parents=True, exist_ok=True)
    src = Path(shared)
    for f in src.rglob("*"):
        rel = f.relative_to(src)
        target = dest / rel
        try:
            if f.is_dir():
                if "locks" not in rel.parts:
                    target.mkdir(parents=True, exist_ok=True)
            elif (
                f.is_file()
                and not f.name.startswith(".opforge")
                and not f.name.endswith(".lock")
                and "locks" not in rel.parts
            ):  # lock files are opened for writing
                target.parent.mkdir(parents=True, exist_ok=True)
                os.link(f, target)
        except OSError:
            continue
    for d in [dest, *(p for p in dest.rglob("*") if p.is_dir())]:
        os.chmod(d, 0o777)  # the candidate adds entries beside the linked ones
    return str(dest)


def _empty_row(tid: str, device: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "task_id": tid,
        "valid": False,
        "reason": "",
        "detail": "",
        "device": device,
        "device_name": "",
        "runtime_window_checked": False,
        "gpu_alone": False,
        "gpu_memory_share": None,
        "eager_ms": None,
        "compile_ms": None,
        "compile_s": None,
        "max_abs_err": None,
        "max_rel_err": None,
        "det_max_abs_err": None,
        "train_eval_max_abs_err": None,
        "output_bytes": None,
        "output_shape": None,
        "peak_memory_mb": None,
        "phase_s": None,
        "n_params": None,
        "unused": [],
        "sandbox_reason": "",
        "sandbox_returncode": None,
        "sandbox_signal": None,
        "sandbox_wall_s": None,
        "sandbox_max_rss_mb": None,
        "stdout_bytes": 0,
        "netns": False,
        "jail": "",
        "semantic_trace": None,
    }
    for name, _ in FILTERS:
        row[f"check_{name}"] = None
    return row


def _finite(v: Any) -> float | None:
    if v is None:
        return None
    v = float(v)
    return v if v == v and abs(v) != float("inf") else (1e308 if v > 0 else -1e308) if v == v else None


def check_candidate(item: dict[str, Any]) -> dict[str, Any]:
    """Validate one candidate: {"task_id", "code", "settings": dict, "device", "compose_reason"} -> a row."""
    from pipeline.sandbox import READONLY_MARKERS
    from pipeline.validate.harness import PHASES
    from pipeline.validate.static import static_checks

    s, device = item["settings"], item["device"]
    row = _empty_row(item["task_id"], device)
    if item.get("compose_reason"):
        row["reason"], row["detail"] = item["compose_reason"], "the composer produced no usable code"
        return row
    code = item["code"] or ""
    for name, reason, detail in static_checks(code, tuple(s["allowed_imports"]), s["enforce_imports"]):
        row[f"check_{name}"] = reason == ""
        if reason and not row["reason"]:
            row["reason"], row["detail"] = reason, detail
    if row["reason"]:
        return row
    payload = {
        "code": code,
        "device": device,
        "seed": s["seed"],
        "atol": s["atol"],
        "rtol": s["rtol"],
        "det_atol": s["det_atol"],
        "check_compile": s["check_compile"],
        "runtime_window_ms": list(s["runtime_window_ms"]),
        "max_output_mb": s["max_output_mb"],
        "max_memory_mb": s["max_memory_mb"],
        "timing_trials": s["timing_trials"],
        "run_all": s["run_all"],
        "gpu_jobs": int(s.get("jobs_per_gpu", 1)),
        "timeout_s": s["timeout_s"],
        "trace_s": s["trace_s"],
    }
    waits: dict[str, float] = {}
    if device.startswith("cuda"):
        res, sealed, share = _on_gpu(payload, s, waits)
        row["gpu_memory_share"] = share
        row["gpu_alone"] = share == 1.0 and int(s.get("jobs_per_gpu", 1)) > 1
    else:
        res, sealed = _jailed(payload, s, device)
    row.update(
        sandbox_reason=res.reason,
        sandbox_returncode=res.returncode,
        sandbox_signal=res.signal,
        sandbox_wall_s=res.wall_s,
        sandbox_max_rss_mb=res.max_rss_mb,
        stdout_bytes=res.stdout_bytes,
        netns=res.netns,
        jail=res.jail,
    )
    h = res.result if isinstance(res.result, dict) else None
    if h is not None:
        for name, val in h.get("checks", {}).items():
            row[f"check_{name}"] = val
        row["device_name"] = str(h.get("device_name", ""))
        row["runtime_window_checked"] = bool(h.get("runtime_window_checked"))
        for k in (
            "eager_ms",
            "compile_ms",
            "compile_s",
            "max_abs_err",
            "max_rel_err",
            "det_max_abs_err",
            "train_eval_max_abs_err",
            "peak_memory_mb",
        ):
            row[k] = _finite(h.get(k))
        for k in ("output_bytes", "n_params"):
            row[k] = int(h[k]) if h.get(k) is not None else None
        row["output_shape"] = json.dumps(h["output_shape"]) if h.get("output_shape") is not None else None
        row["unused"] = [str(u) for u in h.get("unused", [])]
        phases = h.get("phase_s") if isinstance(h.get("phase_s"), dict) else {}
        row["phase_s"] = json.dumps({**{k: _finite(phases[k]) for k in PHASES if k in phases}, **waits})
    # A sandbox violation outranks whatever the harness reported: the candidate tried something forbidden.
    if res.reason:
        row["check_sandbox"] = False
        row["reason"] = res.reason
        row["detail"] = (res.error_type + ": " + res.error_message)[-500:] if res.error_message else res.error_type
    else:
        row["check_sandbox"] = True
        row["reason"] = h.get("reason", "") if h else "no_result"
        if row["reason"]:
            failing = next((n for n, _ in FILTERS if row.get(f"check_{n}") is False), None)
            row["detail"] = str(h.get("details", {}).get(failing, ""))[:500] if failing else ""
            # The read-only mount layer makes native writes fail inside forward: that is a blocked file access.
            if any(m in row["detail"].lower() for m in READONLY_MARKERS):
                row["reason"] = "file_access_blocked"
                row["check_sandbox"] = False
    if row["reason"] == "" and h is not None:
        forged = recheck(h, sealed, s)
        if forged:
            row["reason"], row["detail"] = "forged_report", forged[:500]
    row["valid"] = row["reason"] == ""
    if row["valid"] and h is not None:
        from pipeline.decontam.jailed import carry

        row["semantic_trace"] = carry(h.get("semantic_trace"), code)
    return row


def _on_gpu(
    payload: dict[str, Any], s: dict[str, Any], waits: dict[str, float]
) -> tuple[Any, dict[str, Any] | None, float]:
    """Run the candidate with its share of the GPU's memory (1/jobs_per_gpu), held through pipeline.gpumemory so
    that the candidates on a GPU never ask for more than it has together. Out of memory at its share says nothing
    about the task: it runs again with the share its out-of-memory message says it needed (`next_share`), up to the
    whole GPU (waiting for room meanwhile), and the last run's row is its verdict. Returns the sandbox result, the
    sealed samples and the share; `waits` gets the seconds spent waiting for memory and in earlier runs."""
    from pipeline.gpumemory import SLOTS, claimed, slots_for

    k = slots_for(1.0 / max(1, int(s.get("jobs_per_gpu", 1))))
    while True:
        with claimed(k) as waited:
            waits["memory_wait"] = round(waits.get("memory_wait", 0.0) + waited, 3)
            # The candidate caps torch's allocator at its share, less what every process on the GPU holds outside
            # the allocator (its CUDA context, library workspaces); with the whole GPU, no cap.
            cap = k / SLOTS * (1.0 - GPU_HEADROOM) if k < SLOTS else None
            res, sealed = _jailed({**payload, "gpu_memory_fraction": cap}, s, "cuda")
        if res.reason != "memory_limit" or k == SLOTS:
            return res, sealed, k / SLOTS
        waits["earlier_runs"] = round(waits.get("earlier_runs", 0.0) + (res.wall_s or 0.0), 3)
        k = next_share(k, res.error_message)


GPU_HEADROOM = 0.1


def next_share(slots: int, oom_message: str) -> int:
    """Slots for the next run of a task that ran out of GPU memory holding `slots`: 1.5x what torch's message says
    it needed (allocated plus the failed request, of the GPU's total capacity), and at least 1.5x as many slots, so
    that a task reaches the whole GPU in a few runs whatever its message says (the message is the task's own: a
    lie only changes its own share)."""
    from pipeline.gpumemory import SLOTS, oom_figures, slots_for

    floor = min(SLOTS, slots + max(1, slots // 2))
    f = oom_figures(oom_message)
    if not f["total"] or f["asked"] is None:
        return floor
    return max(floor, min(SLOTS, slots_for(1.5 * (f["asked"] + (f["allocated"] or 0.0)) / f["total"])))


def _jailed(payload: dict[str, Any], s: dict[str, Any], device: str) -> tuple[Any, dict[str, Any] | None]:
    """One run of the validation harness in the jail: the sandbox's result and the output samples it sealed."""
    from pipeline.sandbox import run_sandboxed

    shared = _inductor_dir(s)
    env = {"OMP_NUM_THREADS": str(s.get("threads", 1))}
    if s["check_compile"] and device == "cpu":
        env["TORCHINDUCTOR_VEC_ISA_OK"] = warm_inductor(shared)
    mem = s["memory_mb"] if device == "cpu" else (s.get("gpu_memory_mb") or None)
    job = Path(tempfile.mkdtemp(prefix="opforge-validate-"))
    try:
        work = job / "work"
        work.mkdir()
        inductor = private_cache(shared, job / "inductor")
        env["TORCHINDUCTOR_CACHE_DIR"] = env["TRITON_CACHE_DIR"] = inductor
        payload["sealed_path"] = str(work / "sealed.pt")
        payload["sent_at"] = time.time()
        reads = []
        if device.startswith("cuda"):
            lock = gpu_lock_file()
            payload["gpu_lock"] = lock
            reads.append(str(Path(lock).parent))
        res = run_sandboxed(
            harness_source(),
            payload=payload,
            timeout_s=s["timeout_s"],
            memory_mb=mem,
            workdir=work,
            exec_dirs=[inductor],
            read_dirs=reads,
            env=env,
            gpu=device.startswith("cuda"),
        )
        sealed = load_sealed(work / "sealed.pt")
    finally:
        shutil.rmtree(job, ignore_errors=True)
    return res, sealed


SEALED_MAX_BYTES = 256 * 2**20


def load_sealed(path: Path) -> dict[str, Any] | None:
    """The harness's output samples, loaded without unpickling anything but tensors (None when absent or bad)."""
    try:
        if not path.is_file() or path.stat().st_size > SEALED_MAX_BYTES:
            return None
        import torch

        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - whatever is in the file, it is not evidence
        return None
    if not isinstance(data, dict) or not all(
        isinstance(v, list) and all(isinstance(t, __import__("torch").Tensor) for t in v) for v in data.values()
    ):
        return None
    return data


def recheck(h: dict[str, Any], sealed: dict[str, Any] | None, s: dict[str, Any]) -> str:
    """The parent's own verdict on a report that says "valid". The report was written where the candidate ran, so
    it proves nothing alone: the checks that a forged report would fake (finite, deterministic, non-constant,
    input-dependent, compile agreement) are re-derived here from the output samples, and each must pass here too;
    a report that lacks any check the harness always sets is not the harness's. Returns "" or what fails."""
    from pipeline.validate.harness import RUNTIME_CHECKS, _close, _varies

    checks = h.get("checks", {}) or {}
    absent = [k for k in RUNTIME_CHECKS if k not in checks]
    if absent:
        return "the report lacks checks the harness always sets: " + ", ".join(absent[:6])
    if not sealed or "a" not in sealed or "a2" not in sealed:
        return "the report claims a valid task, but the output samples are missing or unreadable"
    a = sealed["a"]
    found: dict[str, bool] = {
        "finite": all(bool(t.isfinite().all()) for t in a if t.is_floating_point() or t.is_complex()),
        "deterministic": _close(a, sealed["a2"], float(s["det_atol"]), 1e-5),
        "non_constant": ("b" in sealed and _varies(a, sealed["b"])) or ("w" in sealed and _varies(a, sealed["w"])),
    }
    if checks.get("input_dependent") is not None:
        found["input_dependent"] = "b" in sealed and _varies(a, sealed["b"])
    if s.get("check_compile"):
        found["compile_agree"] = "c" in sealed and _close(sealed["c"], a, float(s["atol"]), float(s["rtol"]))
    bad = [k for k, v in found.items() if not v]
    if bad:
        return "the report says valid, the output samples fail: " + ", ".join(bad)
    return ""


def settings_dict(settings: ValidateSettings) -> dict[str, Any]:
    return settings.model_dump(mode="json")


def validate(
    tasks: pa.Table, settings: ValidateSettings, device: str = "cpu", *, on_result=None, executor: Any = None
) -> pa.Table:
    """One `validation` row per candidate row of `tasks` (which needs at least `code`), each candidate on
    `executor` (pipeline.executor's, from the runner or the CLI; default: here, one after another)."""
    from pipeline.stage import InProcess, Resources
    from pipeline.storage import conform

    device = resolve_device(device)
    if "code" not in tasks.column_names:
        raise ValueError(f"candidates need a 'code' column; got {tasks.column_names}")
    codes = tasks.column("code").to_pylist()
    ids = tasks.column("task_id").to_pylist() if "task_id" in tasks.column_names else [None] * len(codes)
    compose = (
        tasks.column("compose_reason").to_pylist() if "compose_reason" in tasks.column_names else [""] * len(codes)
    )
    s = settings_dict(settings)
    items = [
        {
            "task_id": tid or compute_task_id(code or ""),
            "code": code,
            "settings": s,
            "device": device,
            "compose_reason": cr or "",
        }
        for code, tid, cr in zip(codes, ids, compose)
    ]
    # On a GPU, several candidates share it: their timed regions take turns (the harness's GPU lock).
    ex = executor or InProcess()
    res = Resources(cpus=1.0, gpus=1.0 / max(1, int(s.get("jobs_per_gpu", 1))) if device.startswith("cuda") else 0.0)
    # Each candidate holds its share of the GPU's memory while it runs, and one out of memory at its share runs again
    # with a larger one (check_candidate): no task is dropped for the company it ran in.
    rows = ex.map(check_candidate, items, res, on_result=on_result)
    return conform("validation", rows)


def drop_reasons(table: pa.Table) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in table.column("reason").to_pylist():
        if r:
            out[r] = out.get(r, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def filter_yield(table: pa.Table) -> list[dict[str, Any]]:
    """Per filter, in order: how many candidates reached it, passed, failed, and were dropped by it first."""
    rows = table.to_pylist()
    out = []
    for name, doc in FILTERS:
        col = [r[f"check_{name}"] for r in rows]
        code = doc.split(":")[0] if ":" in doc and not doc.startswith("the ") else name
        out.append(
            {
                "filter": name,
                "reason": code,
                "ran": sum(v is not None for v in col),
                "passed": sum(v is True for v in col),
                "failed": sum(v is False for v in col),
                "dropped_first": sum(1 for r in rows if r["reason"] == code),
            }
        )
    return out
