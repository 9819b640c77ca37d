"""EvalResult -> a row of the `evaluations` table (stdlib only)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pipeline.evaluate.result import EvalResult
from pipeline.evaluate.workspace import solution_files


def solution_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    try:
        files = solution_files(path)
    except OSError:
        return ""
    for name, text in sorted(files.items()):
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def to_row(res: EvalResult, solution_path: str | Path, run_id: str, settings: dict[str, Any] | None = None) -> dict:
    sol = solution_sha256(solution_path)
    eval_id = hashlib.sha256(
        f"{res.task_id}|{sol}|{res.mode}|{json.dumps(settings or {}, sort_keys=True, default=str)}".encode()
    ).hexdigest()[:16]
    return {
        "eval_id": eval_id,
        "task_id": res.task_id,
        "solution_sha256": sol,
        "solution_kind": res.solution_kind,
        "mode": res.mode,
        "compiled": bool(res.compiled),
        "correct": bool(res.correct),
        "reward": int(res.reward),
        "eager_ms": res.eager_ms,
        "compile_ms": res.compile_ms,
        "solution_ms": res.solution_ms,
        "speedup_vs_eager": res.speedup_vs_eager,
        "speedup_vs_compile": res.speedup_vs_compile,
        "max_abs_err": res.max_abs_err,
        "max_rel_err": res.max_rel_err,
        "max_tol_err": res.max_tol_err,
        "violations": list(res.violations),
        "warnings": list(res.warnings),
        "device": res.device or "",
        "timing_json": json.dumps(res.timing, default=str),
        "compile_seconds": float(res.compile.get("seconds") or 0.0),
        "compile_cached": bool(res.compile.get("cached", False)),
        "reason": res.reason or "",
        "error": (res.error or "")[-4000:],
        "run_id": run_id,
    }
