"""The synthesize stage: compose candidate operator tasks from a seed (one unit of work, keyed by its settings)."""

from __future__ import annotations

from typing import Any

from pipeline.stage import Plan, Resources, Stage

STAGE = Stage(
    name="synthesize",
    inputs=(),
    outputs=("tasks",),
    settings="synth",
    fn="pipeline.synth.spec:compose",
    plan="pipeline.synth.spec:plan",
    shard_key=None,
    resources=Resources(cpus=1),
    command="synth",
    flow="synthesize_flow",
    docs="synthesize",
    doc="Compose candidate operator tasks (KernelBench format) into the run's `tasks` table.",
)


def plan(cfg: Any) -> Plan:
    settings = cfg.synth
    if settings.max_tensor_mb is None:  # the run's own output limit: no task is composed only to be dropped
        settings = settings.model_copy(update={"max_tensor_mb": cfg.validate_.max_output_mb})
    return Plan(args={"settings": settings, "run_id": cfg.run_id}, key=settings, rows_in=settings.n)


def compose(_shard: Any, settings: Any, run_id: str) -> Any:
    from pipeline.synth.stage import synthesize

    if settings.composer != "llm":
        return synthesize(settings, run_id)
    from pipeline.llm.backend import make_backend

    backend = make_backend(settings.llm)
    try:
        return synthesize(settings, run_id, backend=backend)
    finally:
        backend.close()
