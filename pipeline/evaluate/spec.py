"""The evaluate stage: re-evaluate the final kernel of every trajectory (compile, correctness, timing -> reward),
one GPU per shard. Driver-side only: GPU workers import the harness, not this module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.stage import Needs, Plan, Resources, Skip, Stage, resolve

STAGE = Stage(
    name="evaluate",
    inputs=("trajectories", "tasks"),
    outputs=("evaluations",),
    settings="eval",
    fn="pipeline.evaluate.spec:evaluate_shard",
    plan="pipeline.evaluate.spec:plan",
    shard_key="traj_id",
    shard_size=4,
    resources=Resources(cpus=1, gpus=1),
    needs=Needs(gpu=True),
    command="eval",
    flow="evaluate_flow",
    docs="evaluate",
    doc="Re-evaluate the final kernel of every trajectory of the run (compile, correctness, timing -> reward), "
    "one GPU per shard task.",
)


def plan(cfg: Any) -> Plan:
    import pyarrow.compute as pc

    from pipeline.selection import has_table, run_table

    resolve("pipeline.evaluate.harness:evaluate")
    if not has_table(cfg, "trajectories"):
        raise Skip("no trajectories in this run (rollout did not run)")
    trajs = run_table(cfg, "trajectories").select(["traj_id", "task_id", "final_kernel"])
    trajs = trajs.filter(pc.invert(pc.is_null(trajs.column("final_kernel"))))
    tasks = run_table(cfg, "tasks")
    settings = cfg.eval.model_dump(mode="json")
    return Plan(
        args={
            "task_code": dict(zip(tasks.column("task_id").to_pylist(), tasks.column("code").to_pylist())),
            "eval_settings": settings,
            "run_id": cfg.run_id,
            "work_dir": str(Path(cfg.data_root) / "solutions" / cfg.run_id),
        },
        items=trajs,
        key=settings,
    )


def evaluate_shard(
    shard: Any, task_code: dict[str, str], eval_settings: dict[str, Any], run_id: str, work_dir: str
) -> list[dict[str, Any]]:
    """One `evaluations` row per trajectory of the shard."""
    from pipeline.evaluate.harness import evaluate
    from pipeline.evaluate.records import to_row

    rows = []
    for tr in shard.to_pylist():
        sol = Path(work_dir) / tr["traj_id"]
        files = json.loads(tr["final_kernel"] or "{}")
        for name, text in files.items():  # the agent's workspace as it ended (model_new.py, kernels/...)
            f = (sol / name).resolve()
            if sol.resolve() not in f.parents:  # names come from model output: stay inside the workspace
                continue
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(text)
        res = evaluate(task_code.get(tr["task_id"], ""), str(sol), mode="full", settings=eval_settings)
        rows.append(to_row(res, sol, run_id, eval_settings))
    return rows
