"""Run one baseline job (pipeline.evaluate.worker: the task's reference, timed) in its own jailed process.

A crash (segfault, abort, OOM) becomes a reason code; the evaluator never goes down with the task. The process
may write only its own work dir and its task's inductor/triton caches (torch.compile's; exec: it loads what it
compiles); never the baseline cache, which `harness.get_baselines` alone writes, nor the build cache.

Compile caches are per task (`compile/<task hash>/`): one task's code cannot plant compiled code that another
task's baseline loads. Every job runs under a uid of its own, so in one cache for all jobs a job could not write
into a directory an earlier job had created (Permission denied; torch.compile then fails and the task has no
compile baseline). The jobs of one task share its cache: the trusted side opens its directories to every uid
before each job, and the job creates its own with umask 0 (jobs of the same task at once).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Any

from pipeline.gpulock import ensure
from pipeline.sandbox import run_sandboxed

ROOT = Path(__file__).resolve().parents[2]
_BOOT = "import os\nos.umask(0)\nfrom pipeline.evaluate.worker import main\nmain(PAYLOAD, emit_result)\n"


def _pythonpath() -> str:
    """This checkout first (the jailed process imports the same pipeline), then the caller's PYTHONPATH."""
    extra = os.environ.get("PYTHONPATH")
    return str(ROOT) + (os.pathsep + extra if extra else "")


def compile_caches(settings: dict[str, Any], task_code: str) -> list[Path]:
    """The task's inductor and triton cache dirs, created and opened to every job uid (see the module doc)."""
    root = Path(settings["cache_dir"]) / "compile" / hashlib.sha256(task_code.encode()).hexdigest()[:24]
    dirs = [root / "inductor", root / "triton"]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    for d in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
        try:
            os.chmod(d, 0o777)
        except OSError:
            pass
    return dirs


def worker_env(arch_list: str, caches: list[Path]) -> dict[str, str]:
    return {
        "PYTHONPATH": _pythonpath(),
        "TORCH_CUDA_ARCH_LIST": arch_list,
        "TORCHINDUCTOR_CACHE_DIR": str(caches[0]),
        "TRITON_CACHE_DIR": str(caches[1]),
        "PYTHONHASHSEED": "0",
    }


def run_job(payload: dict[str, Any], settings: dict[str, Any], *, timeout_s: float, arch_list: str) -> dict[str, Any]:
    """Run a baseline job; returns the worker's last report plus `sandbox` (reason, exit status, stderr tail)."""
    from pipeline.evaluate.judge import jail_kwargs

    # The job takes the GPU's lock itself (pipeline.gpulock): shared while it sets up, none while it compiles,
    # exclusive while it times. Task code could drop it; it is the validated task's reference, and a job holds
    # the GPU at most until its timeout, as before.
    lock = settings.get("gpu_lock")
    reads = [str(Path(ensure(lock)).parent)] if lock else []
    payload = {**payload, "seed": secrets.randbits(62), "settings": dict(settings)}
    caches = compile_caches(settings, str(payload.get("task_code", "")))
    sb = run_sandboxed(
        _BOOT,
        payload=payload,
        timeout_s=timeout_s,
        memory_mb=None,
        nproc=None,
        cpu_s=timeout_s * 8 + 60,
        fsize_mb=4096,
        env=worker_env(arch_list, caches),
        max_output_bytes=20_000,
        **jail_kwargs(gpu=True, read_dirs=reads, exec_dirs=caches),
    )
    report = sb.result if isinstance(sb.result, dict) else {}
    report["sandbox"] = {
        "reason": sb.reason,
        "returncode": sb.returncode,
        "signal": sb.signal,
        "timed_out": sb.timed_out,
        "wall_s": sb.wall_s,
        "violations": sb.violations,
        "stderr_tail": sb.stderr[-2000:],
        "error": sb.error_message[-2000:],
    }
    return report
