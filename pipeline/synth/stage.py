"""The synthesis stage: compose `settings.n` candidate tasks (rows of `tasks`), programmatically or with an LLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.identity import task_id as compute_task_id
from pipeline.synth.settings import SynthSettings


def resolve_profile(name: str) -> str:
    if name == "auto":
        try:
            import torch

            return "gpu" if torch.cuda.is_available() else "small"
        except ImportError:
            return "small"
    return name


def task_seed(base: int, i: int, attempt: int = 0) -> int:
    """Seed of the i-th task: distinct per (base, i, attempt), stable across runs."""
    return (base * 1_000_003 + i * 7919 + attempt * 104_729) % (2**62)


def run_seed(seed: int, run_id: str) -> int:
    """The composer seed of a run when synth.seed_per_run is set: a stable hash of (seed, run_id)."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"{seed}\0{run_id}".encode()).digest()[:7], "big")


def load_seed_ops(settings: SynthSettings):
    from pipeline.synth.catalog import load_catalog

    return load_catalog(Path(settings.catalog_path) if settings.catalog_path else None)


def synthesize(settings: SynthSettings, run_id: str, *, catalog=None, backend=None) -> pa.Table:
    """`settings.n` rows of `tasks`. The programmatic composer needs no model; the llm composer needs `backend`
    (a pipeline.llm ChatBackend; built from the llm settings by the CLI)."""
    from pipeline.storage import conform

    if settings.seed_per_run:
        settings = settings.model_copy(update={"seed": run_seed(settings.seed, run_id), "seed_per_run": False})
    catalog = catalog if catalog is not None else load_seed_ops(settings)
    prof_name = resolve_profile(settings.size_profile)
    if settings.composer == "programmatic":
        rows = _programmatic(settings, run_id, catalog, prof_name)
    elif settings.composer == "llm":
        if backend is None:
            raise ValueError("the llm composer needs an LLM backend (see pipeline.llm.backend.make_backend)")
        from pipeline.synth.llm_composer import compose_with_llm

        rows = compose_with_llm(settings, run_id, catalog, backend, prof_name)
    else:
        raise ValueError(f"unknown composer {settings.composer!r}: programmatic | llm")
    return conform("tasks", rows)


def _programmatic(settings: SynthSettings, run_id: str, catalog, prof_name: str) -> list[dict[str, Any]]:
    from pipeline.synth.composer import CompositionError, compose_task, profile

    prof = profile(prof_name, tuple(settings.target_ms), settings.max_tensor_mb)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i in range(settings.n):
        for attempt in range(8):  # a seed whose chain cannot be built, or a duplicate, moves to the next seed
            seed = task_seed(settings.seed, i, attempt)
            try:
                c = compose_task(catalog, seed, settings.op_mix, prof)
            except CompositionError:
                continue
            tid = compute_task_id(c.code)
            if tid in seen:
                continue
            seen.add(tid)
            rows.append(
                {
                    "task_id": tid,
                    "code": c.code,
                    "ops": c.ops,
                    "data_source": c.data_source,
                    "composer": "programmatic",
                    "seed": seed,
                    "run_id": run_id,
                    "compose_reason": "",
                    "size_profile": prof.name,
                    "est_ms": c.est_ms,
                }
            )
            break
        else:
            rows.append(
                {
                    "task_id": compute_task_id(f"compose_failed:{settings.seed}:{i}"),
                    "code": "",
                    "ops": [],
                    "data_source": "torch#0",
                    "composer": "programmatic",
                    "seed": task_seed(settings.seed, i),
                    "run_id": run_id,
                    "compose_reason": "composition_failed",
                    "size_profile": prof.name,
                    "est_ms": None,
                }
            )
    return rows
