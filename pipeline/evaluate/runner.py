"""Run one baseline job (pipeline.evaluate.worker: the task's reference, timed) in its own jailed process.

A crash (segfault, abort, OOM) becomes a reason code; the evaluator never goes down with the task. The process
may write only its own work dir and the inductor/triton caches (torch.compile's); never the baseline cache, which
`harness.get_baselines` alone writes, nor the build cache.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from pipeline.sandbox import run_sandboxed

ROOT = Path(__file__).resolve().parents[2]


def _pythonpath() -> str:
    """This checkout first (the jailed process imports the same pipeline), then the caller's PYTHONPATH."""
    extra = os.environ.get("PYTHONPATH")
    return str(ROOT) + (os.pathsep + extra if extra else "")
_BOOT = "from pipeline.evaluate.worker import main\nmain(PAYLOAD, emit_result)\n"


def worker_env(settings: dict[str, Any], arch_list: str) -> dict[str, str]:
    cache = Path(settings["cache_dir"])
    return {"PYTHONPATH": _pythonpath(), "TORCH_CUDA_ARCH_LIST": arch_list,
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton"),
            "PYTHONHASHSEED": "0"}


def run_job(payload: dict[str, Any], settings: dict[str, Any], *, timeout_s: float, arch_list: str) -> dict[str, Any]:
    """Run a baseline job; returns the worker's last report plus `sandbox` (reason, exit status, stderr tail)."""
    from pipeline.evaluate.judge import jail_kwargs

    payload = {**payload, "seed": secrets.randbits(62), "settings": settings}
    cache = Path(settings["cache_dir"])
    write_dirs = [cache / "inductor", cache / "triton"]
    for d in write_dirs:
        d.mkdir(parents=True, exist_ok=True)
    read_dirs = []
    if settings.get("gpu_lock"):
        lock = Path(settings["gpu_lock"])
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.touch(exist_ok=True)  # the worker opens it read-only to flock it
        read_dirs.append(str(lock.parent))
    sb = run_sandboxed(_BOOT, payload=payload, timeout_s=timeout_s, memory_mb=None, nproc=None,
                       cpu_s=timeout_s * 8 + 60, fsize_mb=4096, write_dirs=[str(d) for d in write_dirs],
                       env=worker_env(settings, arch_list), max_output_bytes=20_000,
                       **jail_kwargs(gpu=True, read_dirs=read_dirs))
    report = sb.result if isinstance(sb.result, dict) else {}
    report["sandbox"] = {"reason": sb.reason, "returncode": sb.returncode, "signal": sb.signal,
                         "timed_out": sb.timed_out, "wall_s": sb.wall_s, "violations": sb.violations,
                         "stderr_tail": sb.stderr[-2000:], "error": sb.error_message[-2000:]}
    return report
