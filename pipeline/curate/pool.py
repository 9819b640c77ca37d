"""The task pool that curation and publishing read: every run's tables under the data root, so tasks synthesized
by successive scheduled runs accumulate into one dataset.

One meaning for the flow and the CLI (both call `curation_inputs`):
- tasks: every run's, one row per task_id (a task composed again by a later run is the same task: its first row);
- validation and contamination: the latest decision per task (a later decontamination run, e.g. against a new
  KernelBench version, overrides an earlier one);
- dedup: where the dedup stage ran, near-duplicates across the whole pool (the decontamination stage's MinHash
  dedup over every clean task, oldest first, so a task already published is the one kept when a later run
  composes a near copy); where it never ran, none;
- trajectories and single_turn samples: every run's (a trajectory's id is a content hash: reruns do not repeat).
`curate.scope = "run"` restricts all of this to one run's partitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

INPUT_TABLES = ("tasks", "validation", "contamination", "trajectories", "single_turn", "dedup")


def _read(data_root: Path, table: str, run_id: str | None) -> pa.Table | None:
    """A table's shards (of one run, or of all runs), with `run_id` from the partition when the table lacks it."""
    import pyarrow.parquet as pq

    base = Path(data_root) / "tables" / table
    pattern = f"run_id={run_id}/*.parquet" if run_id else "run_id=*/*.parquet"
    files = sorted(base.glob(pattern)) if base.exists() else []
    if not files:
        return None
    parts = []
    for f in files:
        t = pq.read_table(f)
        if "run_id" not in t.column_names:
            t = t.append_column("run_id", pa.array([f.parent.name.split("=", 1)[1]] * t.num_rows, pa.string()))
        parts.append(t)
    return pa.concat_tables(parts, promote_options="permissive")


def _first_per_task(tasks: pa.Table) -> pa.Table:
    """One row per task_id: the earliest run's (run ids sort by time)."""
    order = pc.sort_indices(tasks, sort_keys=[("run_id", "ascending"), ("task_id", "ascending")])
    tasks = tasks.take(order)
    seen: set[str] = set()
    keep = []
    for i, tid in enumerate(tasks.column("task_id").to_pylist()):
        if tid not in seen:
            seen.add(tid)
            keep.append(i)
    return tasks.take(pa.array(keep, pa.int64()))


def pool_dedup(
    tasks: pa.Table, validation: pa.Table | None, contamination: pa.Table | None, decontam_settings: Any = None
) -> pa.Table | None:
    """The dedup table over the pool's clean tasks (valid where validated, not contaminated where decided)."""
    from pipeline.curate.inputs import as_rows, latest_by_task
    from pipeline.decontam.stage import dedup

    val = latest_by_task(as_rows(validation))
    con = latest_by_task(as_rows(contamination))
    rows = [
        (t, c)
        for t, c in zip(tasks.column("task_id").to_pylist(), tasks.column("code").to_pylist())
        if c and (val.get(t) or {}).get("valid", True) and (con.get(t) or {}).get("contaminated") is not True
    ]
    if not rows:
        return None
    return dedup(rows, decontam_settings)


def curation_inputs(
    data_root: str | Path, run_id: str | None = None, scope: str = "pool", decontam_settings: Any = None
) -> dict[str, pa.Table | None]:
    """The keyword arguments of `curate` (tasks, validation, contamination, trajectories, dedup, single_turn)
    read from the data root: the whole pool (scope "pool") or one run's partitions (scope "run")."""
    if scope not in ("pool", "run"):
        raise ValueError(f"curate.scope must be 'pool' or 'run', not {scope!r}")
    only = run_id if scope == "run" else None
    t = {name: _read(Path(data_root), name, only) for name in INPUT_TABLES}
    if t["tasks"] is not None:
        t["tasks"] = _first_per_task(t["tasks"])
        if scope == "pool" and t["dedup"] is not None:  # the dedup stage ran: extend it across every run
            t["dedup"] = pool_dedup(t["tasks"], t["validation"], t["contamination"], decontam_settings)
    return t
