"""`curate`: tasks, verdicts and trajectories in; warm-up, SFT and critic datasets and a drops table out.

A plain function over Arrow tables (or lists of dicts): no Prefect, no Ray. Every task or trajectory left out of a
dataset gets a `curation_drops` row with its reason code; the summary counts them per filter for the data card.
"""

from __future__ import annotations

import gc
import json
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import pyarrow as pa

from pipeline.curate.columns import light_rows, messages_array, prefixes, take_lists
from pipeline.curate.critic import critic_rows
from pipeline.curate.filters import (DEDUP_REASON, INTEGRITY_REASONS, TASK_REASONS, TRAJECTORY_REASONS,
                                     final_speedups, shape_problem, task_reasons, trajectory_reasons)
from pipeline.curate.inputs import TableLike, as_rows, latest_by_task, loads_json
from pipeline.curate.settings import CurateSettings
from pipeline.curate.sft import sft_row
from pipeline.curate.warmup import warmup_rows
from pipeline.storage import conform

DATASETS = ("warmup", "sft", "critic")


@dataclass
class CurationResult:
    """The three datasets (Arrow tables in their schemas), the drops, and a JSON-able summary for the card."""

    run_id: str
    warmup: pa.Table
    sft: pa.Table
    critic: pa.Table
    drops: pa.Table
    summary: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pa.Table]:
        return {"warmup": self.warmup, "sft": self.sft, "critic": self.critic, "curation_drops": self.drops}


def _values_by_traj(values: Any, trajectories: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Value baselines per trajectory: a {traj_id: [V_0..]} mapping, a (traj_id, turn, value) table, or a
    `values` list column on the trajectories."""
    out: dict[str, list[float]] = {}
    for t in trajectories:
        v = t.get("values", t.get("value_baseline"))
        if isinstance(v, (list, tuple)) and isinstance(t.get("traj_id"), str):
            out[t["traj_id"]] = list(v)
    if values is None:
        return out
    if isinstance(values, Mapping):
        out.update({k: list(v) for k, v in values.items()})
        return out
    per: dict[str, dict[int, float]] = {}
    for r in as_rows(values):
        per.setdefault(r["traj_id"], {})[int(r["turn"])] = r["value"]
    for tid, d in per.items():
        out[tid] = [d.get(i) for i in range(max(d) + 1)]
    return out


def _gpus(trajectories: list[dict[str, Any]]) -> list[str]:
    found = set()
    for t in trajectories:
        for key in ("gpu", "timings", "sampling"):
            v = t.get(key)
            d = loads_json(v, {}) if isinstance(v, str) and key != "gpu" else v
            if key == "gpu" and isinstance(v, str) and v:
                found.add(v)
            elif isinstance(d, dict) and isinstance(d.get("gpu"), str):
                found.add(d["gpu"])
    return sorted(found)


@contextmanager
def _gc_paused() -> Iterator[None]:
    # Millions of small acyclic dicts make the cyclic collector rescan the heap again and again (~25% of the
    # time at 20k trajectories); nothing here builds cycles, so pause it and collect once afterwards.
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def curate(tasks: TableLike, validation: TableLike, contamination: TableLike, trajectories: TableLike,
           settings: CurateSettings | None = None, run_id: str = "", *, values: Any = None,
           dedup: TableLike = None) -> CurationResult:
    """Build the warm-up, SFT and critic datasets (see `_curate`)."""
    with _gc_paused():
        return _curate(tasks, validation, contamination, trajectories, settings, run_id, values, dedup)


def _curate(tasks: TableLike, validation: TableLike, contamination: TableLike, trajectories: TableLike,
            settings: CurateSettings | None, run_id: str, values: Any, dedup: TableLike = None) -> CurationResult:
    """Build the warm-up, SFT and critic datasets.

    Args:
        tasks, validation, contamination, trajectories: the stage tables (Arrow or rows; None or empty is fine:
            with no trajectories only the warm-up set is built and the summary says what was skipped).
        settings: filter thresholds and dataset options.
        run_id: the curation run id stamped on every output row.
        values: optional value baseline for GAE targets ({traj_id: [V per assistant turn]}, or a table of
            traj_id, turn, value); trajectories may also carry a `values` list column.
        dedup: optional `dedup` table; tasks it removed (near/exact duplicates of a kept task) are dropped with
            reason `near_duplicate`, and so are their trajectories.
    """
    settings = settings or CurateSettings()
    task_rows = as_rows(tasks)
    traj_tbl = trajectories if isinstance(trajectories, pa.Table) else None
    if traj_tbl is not None:
        traj_rows, tokens = light_rows(traj_tbl)
        for r, n in zip(traj_rows, tokens):
            r["_token_count"] = n
    else:
        traj_rows = as_rows(trajectories)
    for i, r in enumerate(traj_rows):
        r["_i"] = i
    task_by_id: dict[str, dict[str, Any]] = {}
    unreadable_tasks = []
    for t in task_rows:
        if isinstance(t.get("task_id"), str) and t["task_id"] and isinstance(t.get("code"), str):
            task_by_id.setdefault(t["task_id"], t)  # the same task from several runs: its first row
        else:
            unreadable_tasks.append(t)
    val = latest_by_task(as_rows(validation))
    con = latest_by_task(as_rows(contamination))
    drops: list[dict[str, Any]] = []

    def drop(dataset: str, kind: str, item_id: str, task_id: str, reasons: list[str], detail: str = "") -> None:
        drops.append({"dataset": dataset, "kind": kind, "item_id": str(item_id), "task_id": str(task_id or ""),
                      "reason": reasons[0], "reasons": reasons, "detail": detail, "run_id": run_id})

    # -- warm-up: every clean task ----------------------------------------------------------------------------
    for t in unreadable_tasks:
        drop("warmup", "task", str(t.get("task_id") or ""), str(t.get("task_id") or ""), ["unreadable_task"],
             "task_id or code missing or not a string")
    removed = {r["task_id"] for r in as_rows(dedup) if r.get("removed")}
    problems = {tid: (["near_duplicate"] if tid in removed else [])
                + task_reasons(tid, task_by_id, val, con, settings) for tid in task_by_id}
    clean = [task_by_id[tid] for tid in sorted(task_by_id) if not problems[tid]]
    for tid in sorted(task_by_id):
        if problems[tid]:
            drop("warmup", "task", tid, tid, problems[tid])
    warmup = conform("warmup", warmup_rows(clean, con, settings, run_id))

    # -- trajectories: filters, then dedup of identical final kernels -----------------------------------------
    seen: set[str] = set()
    verdicts: list[tuple[dict[str, Any], list[str], list[str]]] = []
    for tr in traj_rows:
        bad_shape = shape_problem(tr)
        if bad_shape:
            reasons, details = ["unreadable_trajectory"], [f"unreadable_trajectory: {bad_shape}"]
        else:
            tid = tr["task_id"]
            try:
                tp = problems[tid] if tid in problems else task_reasons(tid, task_by_id, val, con, settings)
                reasons, details = trajectory_reasons(tr, tp, con, settings)
            except Exception as e:  # a row no filter can read is dropped with its error, never fatal to the run
                reasons = ["unreadable_trajectory"]
                details = [f"unreadable_trajectory: {type(e).__name__}: {e}"[:300]]
            if not tr["traj_id"] or tr["traj_id"] in seen:
                reasons, details = ["duplicate_trajectory", *reasons], [f"traj_id {tr['traj_id']!r} seen before"]
        seen.add(str(tr.get("traj_id") or ""))
        verdicts.append((tr, reasons, details))

    def rank(tr: dict[str, Any]) -> tuple:
        _, sp = final_speedups(tr)
        return (-(tr.get("final_reward") or 0), -(sp or 0.0), len(tr.get("messages") or []), tr["traj_id"])

    best: dict[tuple, dict[str, Any]] = {}
    for tr, reasons, _ in verdicts:
        if reasons or not tr.get("final_kernel_hash"):
            continue
        fh = tr["final_kernel_hash"]
        key = (fh,) if settings.dedup_scope == "global" else (tr["task_id"], fh)
        if key not in best or rank(tr) < rank(best[key]):
            best[key] = tr
    sft_keep: list[dict[str, Any]] = []
    integrity_keep: list[dict[str, Any]] = []
    for tr, reasons, details in verdicts:
        fh = tr.get("final_kernel_hash")
        if not reasons and fh:
            key = (fh,) if settings.dedup_scope == "global" else (tr["task_id"], fh)
            if best[key] is not tr:
                reasons = [DEDUP_REASON]
                details = [f"{DEDUP_REASON}: same final kernel {fh} as {best[key]['traj_id']}"]
        item = tr.get("traj_id") or ""
        if reasons:
            drop("sft", "trajectory", item, tr.get("task_id") or "", reasons, "; ".join(details))
        else:
            sft_keep.append(tr)
        if not any(r in INTEGRITY_REASONS for r in reasons):
            integrity_keep.append(tr)
        elif settings.critic_source == "integrity":
            ir = [r for r in reasons if r in INTEGRITY_REASONS]
            drop("critic", "trajectory", item, tr.get("task_id") or "", ir, "; ".join(details))
        if settings.critic_source == "sft" and reasons:
            drop("critic", "trajectory", item, tr.get("task_id") or "", reasons, "; ".join(details))

    msgs = messages_array(traj_tbl, traj_rows)
    baselines = _values_by_traj(values, traj_rows)
    critic_src = sft_keep if settings.critic_source == "sft" else integrity_keep
    in_sft = {id(tr) for tr in sft_keep}
    in_critic = {id(tr) for tr in critic_src}
    srows: list[dict[str, Any]] = []
    sft_idx: list[int] = []
    crows: list[dict[str, Any]] = []
    src: list[int] = []
    notes: list[str] = []
    failed: set[int] = set()
    for tr in sorted({id(t): t for t in [*sft_keep, *critic_src]}.values(), key=lambda t: t["traj_id"]):
        try:  # a value no filter looked at (a NaN reward, a junk baseline) fails its own row, not the run
            srow = sft_row(tr, task_by_id[tr["task_id"]], settings, run_id) if id(tr) in in_sft else None
            rows, note = critic_rows(tr, settings, run_id, baselines.get(tr["traj_id"])) \
                if id(tr) in in_critic else ([], "")
        except Exception as e:
            failed.add(id(tr))
            for ds in [d for d, ids in (("sft", in_sft), ("critic", in_critic)) if id(tr) in ids]:
                drop(ds, "trajectory", tr["traj_id"], tr["task_id"], ["unreadable_trajectory"],
                     f"unreadable_trajectory: {type(e).__name__}: {e}"[:300])
            continue
        if srow is not None:
            srows.append(srow)
            sft_idx.append(tr["_i"])
        crows.extend(rows)
        src.extend([tr["_i"]] * len(rows))
        if note:
            notes.append(f"{tr['traj_id']}: {note}")
    sft_keep = [t for t in sft_keep if id(t) not in failed]
    sft = _with_messages("sft", srows, msgs, sft_idx, None, traj_rows)
    critic = _with_messages("critic", crows, msgs, src, [r.pop("_prefix_len") for r in crows], traj_rows)
    drops_tbl = conform("curation_drops", drops)

    summary = _summary(task_by_id, task_rows, val, con, traj_rows, verdicts, sft_keep, warmup, sft, critic,
                       drops, settings, notes, bool(baselines))
    return CurationResult(run_id, warmup, sft, critic, drops_tbl, summary)


def _with_messages(name: str, rows: list[dict[str, Any]], msgs: pa.ListArray | None, index: list[int],
                   prefix: list[int] | None, traj_rows: list[dict[str, Any]]) -> pa.Table:
    """The table `name` from its scalar columns plus `messages` gathered in Arrow (whole, or first `prefix` items)
    from the trajectories; validated against the schema."""
    from schemas import get_schema

    schema = get_schema(name)
    if msgs is None:  # conversations that do not fit the published message type: clean them in Python
        from pipeline.curate.sft import clean_messages

        for r, i, n in zip(rows, index, prefix or [None] * len(rows)):
            r["messages"] = clean_messages(traj_rows[i].get("messages"))[:n]
        return conform(name, rows)
    col = take_lists(msgs, index) if prefix is None else prefixes(msgs, index, prefix)
    arrays = []
    for f in schema:
        if f.name == "messages":
            arrays.append(col)
        else:
            arrays.append(pa.array([r[f.name] for r in rows], type=f.type))
    return conform(name, pa.Table.from_arrays(arrays, schema=schema))


def _split_counts(tbl: pa.Table) -> dict[str, int]:
    return dict(sorted(Counter(tbl.column("split").to_pylist()).items())) if tbl.num_rows else {}


def _summary(task_by_id, task_rows, val, con, traj_rows, verdicts, sft_keep, warmup, sft, critic, drops,
             settings: CurateSettings, notes: list[str], have_baseline: bool) -> dict[str, Any]:
    filters: dict[str, dict[str, int]] = {}
    failing: dict[str, dict[str, int]] = {}
    for d in drops:
        filters.setdefault(d["dataset"], Counter())[d["reason"]] += 1
        for r in d["reasons"]:
            failing.setdefault(d["dataset"], Counter())[r] += 1
    order = {"warmup": TASK_REASONS, "sft": TRAJECTORY_REASONS, "critic": TRAJECTORY_REASONS}
    filter_table = {ds: [{"reason": r, "dropped": (filters.get(ds) or {}).get(r, 0),
                          "failing": (failing.get(ds) or {}).get(r, 0)} for r in order[ds]] for ds in DATASETS}
    decided = [c for tid, c in con.items() if tid in task_by_id]
    contaminated = [c for c in decided if c.get("contaminated")]
    skipped = []
    if not traj_rows:
        skipped.append("sft and critic: no trajectories were given (no rollouts in this run, e.g. a CPU-only run), "
                       "so only the warm-up dataset was built")
    elif not sft.num_rows:
        skipped.append("sft and critic: every trajectory was filtered out (see the filter table)")
    if traj_rows and not have_baseline:
        skipped.append("critic GAE targets: no value baseline was given, so `value`, `advantage` and `gae_target` "
                       "are empty; `return_to_go` (gamma = 1) is filled")
    sp_all = [s for s in (final_speedups(t)[1] for t in traj_rows) if s is not None and s == s]
    sp_kept = [s for s in (final_speedups(t)[1] for t in sft_keep) if s is not None and s == s]
    return {
        "inputs": {"task_rows": len(task_rows), "tasks": len(task_by_id), "validation_verdicts": len(val),
                   "contamination_decisions": len(con), "trajectories": len(traj_rows)},
        "counts": {"warmup": _split_counts(warmup), "sft": _split_counts(sft), "critic": _split_counts(critic)},
        "rows": {"warmup": warmup.num_rows, "sft": sft.num_rows, "critic": critic.num_rows},
        "filters": filter_table,
        "contamination": {
            "tasks_decided": len(decided), "contaminated": len(contaminated),
            "clean": len(decided) - len(contaminated),
            "undecided": len(task_by_id) - len(decided),
            "by_reason": dict(Counter(str(c.get("reason") or "") for c in contaminated)),
            "nearest_refs": dict(Counter(str(c.get("nearest_ref")) for c in contaminated).most_common(10)),
            "decision_runs": sorted({str(c.get("run_id")) for c in decided if c.get("run_id")}),
            "reference_fingerprints": sorted({str(c["reference_fingerprint"]) for c in decided
                                              if c.get("reference_fingerprint")}),
            "changed_since_rollout": sum("contamination_changed" in r for _, r, _ in verdicts),
        },
        "provenance": {
            "task_runs": sorted({str(t.get("run_id")) for t in task_rows if t.get("run_id")}),
            "rollout_runs": sorted({str(t.get("run_id")) for t in traj_rows if t.get("run_id")}),
            "models": sorted({str(t.get("model")) for t in traj_rows if t.get("model")}),
            "gpus": sorted(set(_gpus(traj_rows)) | {str(v["device_name"]) for v in val.values()
                                                    if v.get("device") == "cuda" and v.get("device_name")}),
        },
        "speedups_vs_compile": {"all": sp_all, "kept": sp_kept},
        "skipped": skipped,
        "notes": notes,
        "settings": settings.model_dump(mode="json"),
    }


# -- persistence: the curated tables go into the data store and the catalog like every stage's ------------------
def summary_path(data_root: Path, run_id: str) -> Path:
    return Path(data_root) / "curation" / f"run_id={run_id}" / "summary.json"


def save_result(result: CurationResult, data_root: Path, catalog: Any | None = None) -> dict[str, Path]:
    """Write the four tables (validated, atomic) and the summary; register them in the catalog if one is given."""
    from pipeline.storage import DataStore, atomic_write_parquet
    from schemas import schema_version

    store = DataStore(Path(data_root))
    paths = {}
    for name, tbl in result.tables().items():
        path = store.shard_path(name, result.run_id)
        atomic_write_parquet(conform(name, tbl), path)
        paths[name] = path
        if catalog is not None:
            catalog.register_file(result.run_id, name, path, tbl.num_rows, schema_version(name))
    sp = summary_path(data_root, result.run_id)
    sp.parent.mkdir(parents=True, exist_ok=True)
    tmp = sp.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.summary, indent=1, sort_keys=True, default=str))
    tmp.replace(sp)
    if catalog is not None:
        reasons = Counter(result.drops.column("reason").to_pylist()) if result.drops.num_rows else Counter()
        catalog.record_stage(result.run_id, "curate", rows_in=result.summary["inputs"]["tasks"]
                             + result.summary["inputs"]["trajectories"],
                             rows_out=sum(result.summary["rows"].values()), drop_reasons=dict(reasons),
                             detail=json.dumps(result.summary["rows"]))
    return paths


def load_result(data_root: Path, run_id: str) -> CurationResult:
    """Read a saved curation run back (for `opforge publish`)."""
    from pipeline.storage import DataStore

    store = DataStore(Path(data_root))
    tbl = {n: store.read(n, run_id) for n in ("warmup", "sft", "critic", "curation_drops")}
    sp = summary_path(data_root, run_id)
    summary = json.loads(sp.read_text()) if sp.exists() else {}
    return CurationResult(run_id, tbl["warmup"], tbl["sft"], tbl["critic"], tbl["curation_drops"], summary)
