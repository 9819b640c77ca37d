"""Which rows move on: one rule per table, one answer for "no decision".

Each decision table has a rule: the column holding its stage's decision, the value that keeps a row, and the column
holding the reason. A row whose decision column holds that value is kept; any other value is a drop. A task with
no decision (no row in the table, a null decision, or the table was never written) is not kept when the table is
required, and passes only when the consumer says the check is optional. The same function answers for rollouts,
dedup and curation, so GPU time never goes to a task that curation would then drop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa


@dataclass(frozen=True)
class Rule:
    """How a table records its stage's decision about a row."""

    decision: str | None  # column with the decision; None: the reason column alone decides (empty: kept)
    kept: Any  # the decision value of a kept row
    reason: str  # column with the reason code of a dropped row


RULES: dict[str, Rule] = {
    "tasks": Rule(None, None, "compose_reason"),
    "validation": Rule("valid", True, "reason"),
    "contamination": Rule("contaminated", False, "reason"),
    "dedup": Rule("removed", False, "reason"),
    "evaluations": Rule("correct", True, "reason"),
}
DEFAULT_RULE = Rule(None, None, "reason")  # tables not listed keep rows whose `reason` is empty


def rule(table: str) -> Rule:
    return RULES.get(table, DEFAULT_RULE)


def table_name(tbl: pa.Table) -> str:
    """The table an Arrow table was written as (its schema metadata), or "" for a bare table."""
    return (tbl.schema.metadata or {}).get(b"opforge.table", b"").decode()


def decision(table: str, row: Mapping[str, Any] | None) -> bool | None:
    """True: the row is kept; False: dropped; None: no decision (no row, or a null decision)."""
    if row is None:
        return None
    r = rule(table)
    if r.decision is not None:
        v = row.get(r.decision)
        return None if v is None else v == r.kept
    return not row.get(r.reason)


def passes(table: str, row: Mapping[str, Any] | None, required: bool = True) -> bool:
    """May the row's item move on? A decision says so; with no decision, only when the check is not required."""
    d = decision(table, row)
    return (not required) if d is None else d


def kept_mask(tbl: pa.Table) -> list[bool]:
    """Per row of a stage's output table: kept by its stage? (A stage's own output has a row per item.)"""
    r = rule(table_name(tbl))
    if r.decision and r.decision in tbl.column_names:
        return [v == r.kept for v in tbl.column(r.decision).to_pylist()]
    if r.reason in tbl.column_names:
        return [not v for v in tbl.column(r.reason).to_pylist()]
    return [True] * tbl.num_rows


def drop_reasons(tbl: pa.Table) -> dict[str, int]:
    """Counts of reason codes over the rows the stage dropped ("unspecified" when a dropped row has none)."""
    reason = rule(table_name(tbl)).reason
    if reason not in tbl.column_names:
        return {}
    reasons = tbl.column(reason).to_pylist()
    return dict(sorted(Counter(r or "unspecified" for r, k in zip(reasons, kept_mask(tbl)) if not k).items()))


def latest_by_task(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """One row per task_id: the one of the latest run (run ids sort by time), ties by position (last wins)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        tid = r.get("task_id")
        if not tid:
            continue
        prev = out.get(tid)
        if prev is None or str(r.get("run_id") or "") >= str(prev.get("run_id") or ""):
            out[tid] = r
    return out


def _decisions(table: str, tbl: pa.Table) -> dict[str, Mapping[str, Any]]:
    cols = [c for c in ("task_id", "run_id", rule(table).decision, rule(table).reason) if c and c in tbl.column_names]
    return latest_by_task(tbl.select(cols).to_pylist())


def select_tasks(tasks: pa.Table, decisions: Mapping[str, pa.Table | None], required: Iterable[str] = ()) -> pa.Table:
    """The tasks that every given decision table lets move on, in input order.

    `decisions` maps a table name (validation, contamination, dedup, ...) to that table for these tasks, or None
    when its stage did not run. A table named in `required` must hold a keeping decision for a task (no row, a null
    decision or a missing table drop it); any other table drops only the tasks it decided against.
    """
    required = set(required)
    keep = [True] * tasks.num_rows
    ids = tasks.column("task_id").to_pylist()
    for table, tbl in decisions.items():
        if tbl is None:
            if table in required:
                return tasks.slice(0, 0)
            continue
        by_task = _decisions(table, tbl)
        keep = [k and passes(table, by_task.get(t), table in required) for k, t in zip(keep, ids)]
    return tasks.filter(pa.array(keep, pa.bool_()))


def requirements(settings: Any) -> list[str]:
    """Decision tables a task must pass to reach the datasets (curation's `require_validation` and
    `require_decontamination`); rollouts select their tasks with the same list."""
    return [
        t
        for t, flag in (
            ("validation", settings.require_validation),
            ("contamination", settings.require_decontamination),
        )
        if flag
    ]


# -- a run's inputs: which of its tasks each stage takes ---------------------------------------------------------


def run_table(cfg: Any, name: str) -> pa.Table:
    """Table `name` of the config's run (every shard)."""
    from pipeline.storage import DataStore

    return DataStore(cfg.data_root).read(name, cfg.run_id)


def has_table(cfg: Any, name: str) -> bool:
    from pipeline.storage import DataStore

    return bool(DataStore(cfg.data_root).shards(name, cfg.run_id))


def _run_decisions(cfg: Any, *names: str) -> dict[str, pa.Table | None]:
    return {n: (run_table(cfg, n) if has_table(cfg, n) else None) for n in names}


def valid_tasks(cfg: Any) -> tuple[pa.Table, str]:
    """The run's tasks that passed validation (all of them, with a note, when the run has no validation table):
    decontamination's input."""
    tasks = run_table(cfg, "tasks")
    if not has_table(cfg, "validation"):
        return tasks, "validation not run: every synthesized task was checked"
    return select_tasks(tasks, _run_decisions(cfg, "validation"), required=["validation"]), ""


def clean_tasks(cfg: Any) -> pa.Table:
    """Valid tasks with a clean contamination decision (curation's rule: no decision is not clean): dedup's
    input."""
    return select_tasks(
        run_table(cfg, "tasks"), _run_decisions(cfg, "validation", "contamination"), required=requirements(cfg.curate)
    )


def kept_tasks(cfg: Any) -> pa.Table:
    """Tasks that survive validation, decontamination and dedup (curation's rule): the input of rollouts."""
    return select_tasks(
        run_table(cfg, "tasks"),
        _run_decisions(cfg, "validation", "contamination", "dedup"),
        required=requirements(cfg.curate),
    )
