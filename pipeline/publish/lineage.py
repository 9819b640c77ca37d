"""Lineage of a published row: DuckDB over the catalog's Parquet views answers which trajectory, task, seed
operators, contamination decision and runs produced it."""

from __future__ import annotations

from typing import Any

from pipeline.catalog import Catalog

# Where each published config keeps its ids (warm-up rows are per task and keep it in extra_info).
_ID_SQL = {
    "warmup": "SELECT row_id, extra_info.task_id AS task_id, CAST(NULL AS VARCHAR) AS traj_id, run_id FROM warmup",
    "sft": "SELECT row_id, task_id, traj_id, run_id FROM sft",
    "critic": "SELECT row_id, task_id, traj_id, run_id FROM critic",
}


def _rows(cat: Catalog, views: set[str], table: str, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    """Run `sql` over the table's catalog view; a stage table without a registered schema is read straight from
    its Parquet files; a table with no files gives no rows."""
    if table in views:
        return cat.sql(sql, params).to_pylist()
    d = (cat.data_root / "tables" / table).resolve()
    if not any(d.glob("run_id=*/*.parquet")):
        return []
    glob = str(d / "run_id=*" / "*.parquet").replace("'", "''")
    src = f"read_parquet('{glob}', hive_partitioning = true, union_by_name = true)"
    return cat.sql(sql.replace(f"FROM {table} ", f"FROM {src} "), params).to_pylist()


def lineage(cat: Catalog, row_id: str) -> dict[str, Any]:
    """Everything that produced `row_id` ('warmup:<task_id>', 'sft:<traj_id>', 'critic:<traj_id>:<turn>').

    Returns {row, trajectory, task, seed_operators, validation, contamination, runs, stages}; raises KeyError
    when no published table holds the row.
    """
    views = set(cat.refresh_views())
    prefix = row_id.split(":", 1)[0]
    tables = [prefix] if prefix in _ID_SQL else list(_ID_SQL)
    row = None
    for t in tables:
        if t in views:
            hit = cat.sql(f"SELECT *, '{t}' AS dataset FROM ({_ID_SQL[t]}) WHERE row_id = ? LIMIT 1", [row_id])
            if hit.num_rows:
                row = hit.to_pylist()[0]
                break
    if row is None:
        known = ", ".join(sorted(views)) or "empty"
        raise KeyError(f"row {row_id!r} is in no curated table of this catalog ({known})")
    out: dict[str, Any] = {"row": row}
    traj = _rows(cat, views, "trajectories",
                 "SELECT traj_id, task_id, sample_idx, seed, model, run_id, final_reward, best_speedup_vs_compile, "
                 "final_kernel_hash, termination, contamination_run_id, contaminated_at_rollout FROM trajectories "
                 "WHERE traj_id = ?", [row["traj_id"]]) if row["traj_id"] else []
    out["trajectory"] = traj[0] if traj else None
    task = _rows(cat, views, "tasks", "SELECT task_id, ops, data_source, composer, seed, run_id FROM tasks "
                                      "WHERE task_id = ? ORDER BY run_id", [row["task_id"]])
    out["task"] = task[0] if task else None
    ops = list(task[0]["ops"]) if task else []
    out["seed_operators"] = _rows(cat, views, "seed_operators",
                                  "SELECT name, source, kind FROM seed_operators WHERE list_contains(?, name) "
                                  "OR list_contains(?, regexp_extract(name, '[^.]+$'))", [ops, ops]) or \
        [{"name": o} for o in ops]
    out["validation"] = _rows(cat, views, "validation", "SELECT * FROM validation WHERE task_id = ? ORDER BY run_id",
                              [row["task_id"]])
    out["contamination"] = _rows(cat, views, "contamination",
                                 "SELECT * FROM contamination WHERE task_id = ? ORDER BY run_id", [row["task_id"]])
    run_ids = sorted({r for r in [row.get("run_id"), (out["trajectory"] or {}).get("run_id"),
                                  (out["trajectory"] or {}).get("contamination_run_id"),
                                  *(t["run_id"] for t in task), *(c.get("run_id") for c in out["contamination"]),
                                  *(v.get("run_id") for v in out["validation"])] if r})
    out["runs"] = cat.sql("SELECT run_id, started_at, finished_at, status, pipeline_version FROM runs "
                          "WHERE list_contains(?, run_id) ORDER BY run_id", [run_ids]).to_pylist()
    out["stages"] = cat.sql("SELECT run_id, stage, status, rows_in, rows_out FROM stages "
                            "WHERE list_contains(?, run_id) ORDER BY run_id, started_at", [run_ids]).to_pylist()
    out["run_ids"] = run_ids
    return out
