"""The rollout stage: agent trajectories on the kept tasks (needs a model and GPU workers)."""

from __future__ import annotations

from typing import Any

from pipeline.stage import Needs, Plan, Resources, Stage, resolve

# One unit of work that only drives: rollout() keeps its own per-trajectory shards under the data root (a rerun
# skips finished trajectories) and asks for its vLLM replicas and kernel evaluations itself; holding a GPU here
# would deadlock a one-GPU node.
STAGE = Stage(
    name="rollout",
    inputs=("tasks", "validation", "contamination", "dedup"),
    outputs=("trajectories",),
    settings="rollout",
    fn="pipeline.rollout.spec:roll",
    plan="pipeline.rollout.spec:plan",
    shard_key=None,
    resources=Resources(cpus=1, gpus=0),
    fan_out=True,
    needs=Needs(gpu=True, model=True),
    command="rollout",
    flow="rollout_flow",
    docs="rollout",
    doc="Agent rollouts on the clean tasks (needs a model and GPU workers).",
)


def plan(cfg: Any, items: Any = None) -> Plan:
    """The run's kept tasks (curation's rule), or `items` (tasks a CLI read from a file)."""
    from pipeline.selection import kept_tasks

    resolve("pipeline.llm.backend:make_backend")  # a missing backend is named before any work
    tasks = kept_tasks(cfg) if items is None else items
    return Plan(
        args={
            "settings": cfg.rollout,
            "eval_settings": cfg.eval.model_dump(),
            "run_id": cfg.run_id,
            "data_root": str(cfg.data_root),
        },
        items=tasks,
        key={"rollout": cfg.rollout, "eval": cfg.eval},
        ids=tasks.column("task_id").to_pylist(),
    )


def roll(
    tasks: Any,
    settings: Any,
    eval_settings: dict[str, Any],
    run_id: str,
    data_root: str,
    on_row: Any = None,
    executor: Any = None,
) -> Any:
    from pipeline.llm.backend import make_backend
    from pipeline.rollout.stage import rollout

    backend = make_backend(settings)
    try:
        return rollout(
            tasks, settings, backend, eval_settings, run_id, out_dir=data_root, on_row=on_row, executor=executor
        )
    finally:
        if hasattr(backend, "close"):
            backend.close()
