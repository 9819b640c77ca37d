"""Lineage of a published row: DuckDB over the catalog's Parquet views answers which trajectory, task, seed
operators, contamination decision and runs produced it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: the catalog is opened by the runner and the CLI
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
    traj = (
        _rows(
            cat,
            views,
            "trajectories",
            "SELECT traj_id, task_id, sample_idx, seed, model, run_id, final_reward, best_speedup_vs_compile, "
            "final_kernel_hash, termination, contamination_run_id, contaminated_at_rollout FROM trajectories "
            "WHERE traj_id = ?",
            [row["traj_id"]],
        )
        if row["traj_id"]
        else []
    )
    out["trajectory"] = traj[0] if traj else None
    task = _rows(
        cat,
        views,
        "tasks",
        "SELECT task_id, ops, data_source, composer, seed, run_id FROM tasks WHERE task_id = ? ORDER BY run_id",
        [row["task_id"]],
    )
    out["task"] = task[0] if task else None
    ops = list(task[0]["ops"]) if task else []
    out["seed_operators"] = _rows(
        cat,
        views,
        "seed_operators",
        "SELECT name, source, kind FROM seed_operators WHERE list_contains(?, name) "
        "OR list_contains(?, regexp_extract(name, '[^.]+$'))",
        [ops, ops],
    ) or [{"name": o} for o in ops]
    out["validation"] = _rows(
        cat, views, "validation", "SELECT * FROM validation WHERE task_id = ? ORDER BY run_id", [row["task_id"]]
    )
    out["contamination"] = _rows(
        cat, views, "contamination", "SELECT * FROM contamination WHERE task_id = ? ORDER BY run_id", [row["task_id"]]
    )
    run_ids = sorted(
        {
            r
            for r in [
                row.get("run_id"),
                (out["trajectory"] or {}).get("run_id"),
                (out["trajectory"] or {}).get("contamination_run_id"),
                *(t["run_id"] for t in task),
                *(c.get("run_id") for c in out["contamination"]),
                *(v.get("run_id") for v in out["validation"]),
            ]
            if r
        }
    )
    out["runs"] = cat.sql(
        "SELECT run_id, started_at, finished_at, status, pipeline_version FROM runs "
        "WHERE list_contains(?, run_id) ORDER BY run_id",
        [run_ids],
    ).to_pylist()
    out["stages"] = cat.sql(
        "SELECT run_id, stage, status, rows_in, rows_out FROM stages "
        "WHERE list_contains(?, run_id) ORDER BY run_id, started_at",
        [run_ids],
    ).to_pylist()
    out["run_ids"] = run_ids
    return out


# The order data flows through the stages, for the drop funnel.
FUNNEL_ORDER = ("synthesize", "validate", "decontaminate", "dedup", "rollout", "evaluate", "curate", "publish")


def card_provenance(cat: Catalog, run_id: str) -> dict[str, Any]:
    """What the data card states about a release, read from the catalog (never from the caller's memory):

    runs (status, version with commit), the drop funnel (every stage: status, rows in/out, each reason with its
    count), the KernelBench pin the decisions were made against, and what a CPU run did not check."""
    import json

    from pipeline.storage import DataStore

    runs = cat.sql(
        "SELECT run_id, status, pipeline_version, started_at, finished_at, note FROM runs WHERE run_id = ?", [run_id]
    ).to_pylist()
    # The card is written by the publish stage: a publish row already in the catalog is an earlier attempt's, and
    # would make the card depend on how often the run was retried (a kill -9 after it was recorded).
    stages = {
        r["stage"]: r
        for r in cat.sql(
            "SELECT stage, status, rows_in, rows_out, drop_reasons, detail FROM stages WHERE run_id = ? "
            "AND stage <> 'publish'",
            [run_id],
        ).to_pylist()
    }
    funnel = []
    for name in [s for s in FUNNEL_ORDER if s in stages] + sorted(set(stages) - set(FUNNEL_ORDER)):
        st = stages[name]
        reasons = json.loads(st["drop_reasons"] or "{}")
        funnel.append(
            {
                "stage": name,
                "status": st["status"],
                "rows_in": st["rows_in"],
                "rows_out": st["rows_out"],
                "reasons": ", ".join(f"`{k}` {v}" for k, v in sorted(reasons.items())) or "-",
                "detail": (st["detail"] or "") if st["status"] != "completed" else "",
            }
        )
    facts = cat.facts(run_id).get("decontaminate", {})
    reference = None
    if facts.get("reference_fingerprint"):
        src = str(facts.get("reference_source") or "")
        # A local path says nothing to a reader of the card (and names the producer's disk): its checksum does.
        where = src if not src.startswith(("/", ".", "~")) else f"a local copy ({Path(src).name})"
        reference = (
            f"sha256:{facts['reference_fingerprint']} ({facts.get('reference_problems')} problems, "
            f"{where}; {facts.get('reference_chosen_by')})"
        )
    decided = stages.get("decontaminate", {})
    unchecked = []
    val = DataStore(cat.data_root).read("validation", run_id) if _has_files(cat, "validation", run_id) else None
    if val is not None and val.num_rows:
        rows = [r for r in val.select(["valid", "runtime_window_checked", "device"]).to_pylist() if r["valid"]]
        cpu = [r for r in rows if not r["runtime_window_checked"]]
        if cpu:
            devices = sorted({str(r["device"]) for r in cpu})
            unchecked.append(
                f"{len(cpu)} of {len(rows)} valid tasks were validated on {', '.join(devices)} only: "
                "their shapes are the small CPU profile, and the 1-100 ms eager runtime window was "
                "never checked (no GPU timing); they are not known to be GPU-sized workloads"
            )
    if "rollout" not in stages or stages["rollout"]["status"] != "completed":
        unchecked.append(
            "no agent rollouts and no kernel evaluation ran (no GPU and model): there are no "
            "trajectories, speedups or rewards behind this release"
        )
    return {
        "runs": runs,
        "funnel": funnel,
        "reference": reference,
        "facts": facts,
        "unchecked": unchecked,
        "decision_runs": [run_id] if decided.get("status") == "completed" else [],
        "pipeline_version": runs[0]["pipeline_version"] if runs else None,
    }


def _has_files(cat: Catalog, table: str, run_id: str) -> bool:
    from pipeline.storage import DataStore

    return bool(DataStore(cat.data_root).shards(table, run_id))
