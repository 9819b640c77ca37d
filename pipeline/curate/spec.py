"""The curate stage: the warm-up, SFT, critic and rejection-sampled datasets from the task pool, each drop with a
reason. One step over whole tables."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.stage import Outcome, Skip, Stage

STAGE = Stage(
    name="curate",
    inputs=("tasks", "validation", "contamination", "dedup", "trajectories", "single_turn"),
    outputs=("warmup", "sft", "critic", "rejection_sampled", "curation_drops"),
    settings="curate",
    fn="pipeline.curate.spec:run",
    command="curate",
    flow="curate_flow",
    docs="curate",
    doc="Build the warm-up, SFT and critic datasets from the run's tables, each drop with a reason.",
)


def run(cfg: Any, catalog: Any = None) -> Outcome:
    import json

    from pipeline.curate.pool import curation_inputs
    from pipeline.curate.stage import curate, save_result

    # The task pool of every run (curate.scope=pool) or this run's partitions: the same reader as `opforge curate`.
    ins = curation_inputs(cfg.data_root, cfg.run_id, cfg.curate.scope, cfg.decontam)
    tasks = ins["tasks"]
    if tasks is None:
        raise Skip("no tasks for this run")
    result = curate(
        tasks,
        ins["validation"],
        ins["contamination"],
        ins["trajectories"],
        cfg.curate,
        cfg.run_id,
        dedup=ins["dedup"],
        single_turn=ins["single_turn"],
    )
    paths = save_result(result, cfg.data_root)
    tables = result.tables()
    drops = result.drops.column("reason").to_pylist() if result.drops.num_rows else []
    rows = result.summary.get("rows", {})
    return Outcome(
        rows_in=result.summary["inputs"]["tasks"] + result.summary["inputs"]["trajectories"],
        rows_out=sum(rows.values()),
        drop_reasons=dict(Counter(drops)),
        detail=json.dumps(rows),
        files=[(name, str(p), tables[name].num_rows) for name, p in paths.items()],
        summary={
            "rows_in": tasks.num_rows,
            "drop_reasons": dict(sorted(Counter(r or "unspecified" for r in drops).items())),
            "rows": rows,
            "paths": {k: str(v) for k, v in paths.items()},
        },
        message=f"curate: {rows}" + "".join(f"\n  note: {s}" for s in result.summary.get("skipped", [])),
    )
