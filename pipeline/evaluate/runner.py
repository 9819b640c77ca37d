"""Run one worker job (pipeline.evaluate.worker) in its own sandboxed process and read its report.

Reuses `pipeline.sandbox.run_sandboxed` (stdlib only): own process group killed on timeout, rlimits, audit hook
against processes/network/writes outside the cache, a private result channel. A crash (segfault from a
TORCH_CHECK, abort, OOM) becomes a reason code; the evaluator never goes down with the candidate.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import time
from pathlib import Path
from typing import Any

from pipeline.sandbox import run_sandboxed

ROOT = Path(__file__).resolve().parents[2]
_BOOT = "from pipeline.evaluate.worker import main\nmain(PAYLOAD, emit_result)\n"


def worker_env(settings: dict[str, Any], arch_list: str, ext_dir: str | None = None) -> dict[str, str]:
    cache = Path(settings["cache_dir"])
    env = {
        "PYTHONPATH": str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
        "TORCH_CUDA_ARCH_LIST": arch_list,
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "PYTHONHASHSEED": "0",
    }
    if ext_dir:
        from pipeline.evaluate.build import build_env

        env.update(build_env(ext_dir, arch_list))
    return env


@contextlib.contextmanager
def _gpu_lock(path: str | None):
    """Hold the GPU's lock file (flock: released by the kernel if this process dies) while a job measures."""
    if not path:
        yield None
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    t = time.perf_counter()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield [round(time.perf_counter() - t, 4)]
    finally:
        os.close(fd)


def run_job(payload: dict[str, Any], settings: dict[str, Any], *, timeout_s: float, arch_list: str,
            ext_dir: str | None = None) -> dict[str, Any]:
    """Run a job; returns the worker's last report plus `sandbox` (reason, exit status, stderr tail)."""
    nonce = secrets.token_hex(16)
    # The GPU lock is held here, outside the jail (a job cannot keep it, and flock dies with its holder).
    payload = {**payload, "seed": secrets.randbits(62), "nonce": nonce, "settings": {**settings, "gpu_lock": None}}
    Path(settings["cache_dir"]).mkdir(parents=True, exist_ok=True)
    write_dirs = [settings["cache_dir"]]
    sol = payload.get("solution") or {}
    reads = {str(Path(p).resolve().parent) for p in [sol.get("path")] + list(sol.get("files") or []) if p}
    if sol.get("artifact"):  # a workspace's built extension (a dir for single files: already under the cache)
        a = Path(sol["artifact"])
        reads.add(str((a if a.is_dir() else a.parent).resolve()))
    reads = {r for r in reads if not any(r == w or r.startswith(w.rstrip("/") + "/")
                                         for w in map(lambda x: str(Path(x).resolve()), write_dirs))}
    with _gpu_lock(settings.get("gpu_lock")) as waited:
        sb = run_sandboxed(_BOOT, payload=payload, timeout_s=timeout_s, memory_mb=None, nproc=None,
                           cpu_s=timeout_s * 8 + 60, fsize_mb=4096, exec_dirs=write_dirs, gpu=True,
                           read_dirs=sorted(reads),
                           env=worker_env(settings, arch_list, ext_dir), max_output_bytes=20_000)
    report = sb.result if isinstance(sb.result, dict) else {}
    if waited is not None and isinstance(report.get("phase_s"), dict):
        report["phase_s"]["gpu_wait"] = waited[0]
    info = {"reason": sb.reason, "returncode": sb.returncode, "signal": sb.signal, "timed_out": sb.timed_out,
            "wall_s": sb.wall_s, "violations": sb.violations, "stderr_tail": sb.stderr[-2000:],
            "error": sb.error_message[-2000:]}
    if report and report.get("nonce") != nonce:
        # A report without our nonce was not written by the worker: something forged the channel.
        report = {"stage": "forged", "violations": ["forged_report"], "reason": "forged_report"}
    report.pop("nonce", None)
    report["sandbox"] = info
    return report
