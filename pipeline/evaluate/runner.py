"""Run one worker job (pipeline.evaluate.worker) in its own sandboxed process and read its report.

Reuses `pipeline.sandbox.run_sandboxed` (stdlib only): own process group killed on timeout, rlimits, audit hook
against processes/network/writes outside the cache, a private result channel. A crash (segfault from a
TORCH_CHECK, abort, OOM) becomes a reason code; the evaluator never goes down with the candidate.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from pipeline.sandbox import DEFAULT_ALLOWED_EXECUTABLES, run_sandboxed

ROOT = Path(__file__).resolve().parents[2]
_BOOT = "from pipeline.evaluate.worker import main\nmain(PAYLOAD, emit_result)\n"
ALLOWED = tuple(DEFAULT_ALLOWED_EXECUTABLES) + ("ninja", "which", "nvidia-smi")


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


def run_job(payload: dict[str, Any], settings: dict[str, Any], *, timeout_s: float, arch_list: str,
            ext_dir: str | None = None) -> dict[str, Any]:
    """Run a job; returns the worker's last report plus `sandbox` (reason, exit status, stderr tail)."""
    nonce = secrets.token_hex(16)
    payload = {**payload, "seed": secrets.randbits(62), "nonce": nonce, "settings": settings}
    Path(settings["cache_dir"]).mkdir(parents=True, exist_ok=True)
    write_dirs = [settings["cache_dir"]]
    if settings.get("gpu_lock"):
        # The worker opens the lock file: its directory must be writable through the sandbox's file hook.
        Path(settings["gpu_lock"]).parent.mkdir(parents=True, exist_ok=True)
        write_dirs.append(str(Path(settings["gpu_lock"]).parent))
    sb = run_sandboxed(_BOOT, payload=payload, timeout_s=timeout_s, memory_mb=None, nproc=None,
                       cpu_s=timeout_s * 8 + 60, fsize_mb=4096, write_dirs=write_dirs,
                       env=worker_env(settings, arch_list, ext_dir), allowed_executables=ALLOWED,
                       max_output_bytes=20_000)
    report = sb.result if isinstance(sb.result, dict) else {}
    info = {"reason": sb.reason, "returncode": sb.returncode, "signal": sb.signal, "timed_out": sb.timed_out,
            "wall_s": sb.wall_s, "violations": sb.violations, "stderr_tail": sb.stderr[-2000:],
            "error": sb.error_message[-2000:]}
    if report and report.get("nonce") != nonce:
        # A report without our nonce was not written by the worker: something forged the channel.
        report = {"stage": "forged", "violations": ["forged_report"], "reason": "forged_report"}
    report.pop("nonce", None)
    report["sandbox"] = info
    return report
