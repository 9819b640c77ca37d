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

from pipeline.curate.columns import json_lists, light_rows, prefixes, take_lists
from pipeline.curate.critic import critic_rows
from pipeline.curate.filters import (
    DEDUP_REASON,
    INTEGRITY_REASONS,
    TASK_REASONS,
    TRAJECTORY_REASONS,
    final_speedups,
    shape_problem,
    task_reasons,
    trajectory_reasons,
)
from pipeline.curate.inputs import TableLike, as_rows, latest_by_task, loads_json
from pipeline.curate.settings import CurateSettings
from pipeline.curate.sft import sft_row
from pipeline.curate.warmup import warmup_rows
from pipeline.selection import decision
from pipeline.storage import conform

DATASETS = ("warmup", "sft", "critic", "rejection_sampled")


@dataclass
class CurationResult:
    """The three datasets (Arrow tables in their schemas), the drops, and a JSON-able summary for the card."""

    run_id: str
    warmup: pa.Table
    sft: pa.Table
    critic: pa.Table
    drops: pa.Table
    summary: dict[str, Any] = field(default_factory=dict)
    rejection_sampled: pa.Table = field(default_factory=lambda: conform("rejection_sampled", []))

    def tables(self) -> dict[str, pa.Table]:
        return {
            "warmup": self.warmup,
            "sft": self.sft,
            "critic": self.critic,
            "rejection_sampled": self.rejection_sampled,
            "curation_drops": self.drops,
        }


def _values_by_traj(values: Any) -> dict[str, list[float]]:
    """Value baselines given to curation: a {traj_id: [V_0..]} mapping or a (traj_id, turn, value) table. (A
    trajectory's own `values` list column is read with the row.)"""
    out: dict[str, list[float]] = {}
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
    # time at 20k trajectories); nothing here builds cycles, so refcounting frees everything with it paused.
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def curate(
    tasks: TableLike,
    validation: TableLike,
    contamination: TableLike,
    trajectories: TableLike,
    settings: CurateSettings | None = None,
    run_id: str = "",
    *,
    values: Any = None,
    dedup: TableLike = None,
    batch_size: int = 4096,
    single_turn: TableLike = None,
) -> CurationResult:
    """Build the warm-up, SFT, critic and rejection-sampled datasets (see `_curate`); an Arrow table of
    trajectories is read `batch_size` rows at a time."""
    with _gc_paused():
        return _curate(
            tasks, validation, contamination, trajectories, settings, run_id, values, dedup, batch_size, single_turn
        )


@dataclass
class _Seen:
    """What curation keeps of one trajectory after reading it once (the full row is let go batch by batch)."""

    i: int
    traj_id: str
    task_id: str
    reasons: list[str]
    details: list[str]
    final_kernel_hash: str | None = None
    rank: tuple = ()
    speedup: float | None = None
    run_id: str | None = None
    model: str | None = None
    sft: dict[str, Any] | None = None
    critic: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    tools: Any = None


def _batches(trajectories: TableLike, size: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(offset, rows) in batches: an Arrow table is converted a slice at a time, so memory stays bounded."""
    if isinstance(trajectories, pa.Table):
        for off in range(0, trajectories.num_rows, size):
            rows, tokens = light_rows(trajectories.slice(off, size))
            for r, n in zip(rows, tokens):
                r["_token_count"] = n
            yield off, rows
    else:
        rows = as_rows(trajectories)
        if rows:
            yield 0, rows


def _curate(
    tasks: TableLike,
    validation: TableLike,
    contamination: TableLike,
    trajectories: TableLike,
    settings: CurateSettings | None,
    run_id: str,
    values: Any,
    dedup: TableLike = None,
    batch_size: int = 4096,
    single_turn: TableLike = None,
) -> CurationResult:
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
        single_turn: optional `single_turn` table (k scored answers per warm-up prompt); the rewarded ones become
            the rejection_sampled dataset.
    """
    settings = settings or CurateSettings()
    task_rows = as_rows(tasks)
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
        drops.append(
            {
                "dataset": dataset,
                "kind": kind,
                "item_id": str(item_id),
                "task_id": str(task_id or ""),
                "reason": reasons[0],
                "reasons": reasons,
                "detail": detail,
                "run_id": run_id,
            }
        )

    # -- warm-up: every clean task ----------------------------------------------------------------------------
    for t in unreadable_tasks:
        drop(
            "warmup",
            "task",
            str(t.get("task_id") or ""),
            str(t.get("task_id") or ""),
            ["unreadable_task"],
            "task_id or code missing or not a string",
        )
    removed = {r["task_id"] for r in as_rows(dedup) if decision("dedup", r) is False}
    problems = {
        tid: (["near_duplicate"] if tid in removed else []) + task_reasons(tid, task_by_id, val, con, settings)
        for tid in task_by_id
    }
    clean = [task_by_id[tid] for tid in sorted(task_by_id) if not problems[tid]]
    for tid in sorted(task_by_id):
        if problems[tid]:
            drop("warmup", "task", tid, tid, problems[tid])
    warmup = conform("warmup", warmup_rows(clean, con, settings, run_id))

    # -- rejection-sampled single-turn answers -------------------------------------------------------------------
    from pipeline.curate.rejection import rejection_rows

    samples = as_rows(single_turn)
    rs_rows, rs_drops = rejection_rows(samples, task_by_id, problems, settings, run_id)
    for smp, reasons, detail in rs_drops:
        drop(
            "rejection_sampled",
            "sample",
            str(smp.get("sample_id") or ""),
            str(smp.get("task_id") or ""),
            reasons,
            detail,
        )
    rejection = conform("rejection_sampled", rs_rows)

    # -- trajectories: one pass of filters (and row building for those that pass), batch by batch -------------
    traj_tbl = trajectories if isinstance(trajectories, pa.Table) else None
    list_rows = None if traj_tbl is not None else as_rows(trajectories)
    if values is None and settings.values_path:
        from pipeline.curate.critic import load_values

        values = load_values(settings.values_path)
    baselines = _values_by_traj(values)
    seen_ids: set[str] = set()
    seen: list[_Seen] = []
    gpus: set[str] = set()
    for off, rows in _batches(traj_tbl if traj_tbl is not None else list_rows, batch_size):
        for k, tr in enumerate(rows):
            seen.append(_read_one(off + k, tr, seen_ids, problems, task_by_id, val, con, settings, run_id, baselines))
            gpus.update(_gpus([tr]))

    def rank_key(x: _Seen) -> tuple:
        return (x.task_id, x.final_kernel_hash) if settings.dedup_scope == "task" else (x.final_kernel_hash,)

    best: dict[tuple, _Seen] = {}
    for x in seen:
        if not x.reasons and x.final_kernel_hash:
            key = rank_key(x)
            if key not in best or x.rank < best[key].rank:
                best[key] = x
    sft_keep: list[_Seen] = []
    critic_keep: list[_Seen] = []
    for x in seen:
        reasons, details = x.reasons, x.details
        if not reasons and x.final_kernel_hash and best[rank_key(x)] is not x:
            reasons = [DEDUP_REASON]
            details = [f"{DEDUP_REASON}: same final kernel {x.final_kernel_hash} as {best[rank_key(x)].traj_id}"]
        if reasons:
            drop("sft", "trajectory", x.traj_id, x.task_id, reasons, "; ".join(details))
        else:
            sft_keep.append(x)
        if settings.critic_source == "sft":
            if reasons:
                drop("critic", "trajectory", x.traj_id, x.task_id, reasons, "; ".join(details))
            else:
                critic_keep.append(x)
        else:
            integrity = [r for r in reasons if r in INTEGRITY_REASONS]
            if integrity:
                drop("critic", "trajectory", x.traj_id, x.task_id, integrity, "; ".join(details))
            else:
                critic_keep.append(x)

    def messages_of(i: int) -> Any:
        return list_rows[i].get("messages") if list_rows is not None else traj_tbl.column("messages")[i].as_py()

    sft_keep.sort(key=lambda x: x.traj_id)
    critic_keep.sort(key=lambda x: x.traj_id)
    sft = _with_chat(
        "sft", [x.sft for x in sft_keep], [x.i for x in sft_keep], None, messages_of, [x.tools for x in sft_keep]
    )
    crows = [dict(r) for x in critic_keep for r in x.critic]
    src = [x.i for x in critic_keep for _ in x.critic]
    critic = _with_chat(
        "critic",
        crows,
        src,
        [r.pop("_prefix_len") for r in crows],
        messages_of,
        [x.tools for x in critic_keep for _ in x.critic],
    )
    drops_tbl = conform("curation_drops", drops)
    notes = [f"{x.traj_id}: {x.note}" for x in critic_keep if x.note]
    has_values = bool(baselines) or 0 < critic.num_rows > critic.column("value").null_count
    summary = _summary(
        task_by_id,
        task_rows,
        val,
        con,
        seen,
        sft_keep,
        warmup,
        sft,
        critic,
        drops,
        settings,
        notes,
        has_values,
        sorted(gpus),
        rejection,
        len(samples),
    )
    return CurationResult(run_id, warmup, sft, critic, drops_tbl, summary, rejection)


def _read_one(
    i: int,
    tr: dict[str, Any],
    seen_ids: set[str],
    problems: dict[str, list[str]],
    task_by_id: dict[str, dict[str, Any]],
    val: dict,
    con: dict,
    settings: CurateSettings,
    run_id: str,
    baselines: dict[str, list[float]],
) -> _Seen:
    """Filter one trajectory and, when it may be kept, build its SFT and critic rows right away."""
    bad_shape = shape_problem(tr)
    if bad_shape:
        return _Seen(
            i,
            str(tr.get("traj_id") or ""),
            str(tr.get("task_id") or ""),
            ["unreadable_trajectory"],
            [f"unreadable_trajectory: {bad_shape}"],
        )
    tid = tr["task_id"]
    try:
        tp = problems[tid] if tid in problems else task_reasons(tid, task_by_id, val, con, settings)
        reasons, details = trajectory_reasons(tr, tp, con, settings)
    except Exception as e:  # a row no filter can read is dropped with its error, never fatal to the run
        reasons, details = ["unreadable_trajectory"], [f"unreadable_trajectory: {type(e).__name__}: {e}"[:300]]
    if not tr["traj_id"] or tr["traj_id"] in seen_ids:
        reasons, details = ["duplicate_trajectory", *reasons], [f"traj_id {tr['traj_id']!r} seen before"]
    seen_ids.add(tr["traj_id"])
    try:
        _, sp = final_speedups(tr)
    except Exception:
        sp = None
    x = _Seen(
        i,
        tr["traj_id"],
        tid,
        reasons,
        details,
        tr.get("final_kernel_hash"),
        (-(tr.get("final_reward") or 0), -(sp or 0.0), len(tr.get("messages") or []), tr["traj_id"]),
        sp,
        tr.get("run_id"),
        tr.get("model"),
        tools=tr.get("tools"),
    )
    wants_critic = not reasons if settings.critic_source == "sft" else not any(r in INTEGRITY_REASONS for r in reasons)
    if not reasons or wants_critic:
        try:  # a value no filter looked at (a NaN reward, a junk baseline) fails its own row, not the run
            base = baselines.get(tr["traj_id"])
            own = tr.get("values", tr.get("value_baseline"))
            if base is None and isinstance(own, (list, tuple)):
                base = list(own)
            x.sft = sft_row(tr, task_by_id[tid], settings, run_id) if not reasons else None
            if wants_critic:
                x.critic, x.note = critic_rows(tr, settings, run_id, base)
        except Exception as e:
            x.reasons = ["unreadable_trajectory", *reasons]
            x.details = [f"unreadable_trajectory: {type(e).__name__}: {e}"[:300], *details]
            x.sft, x.critic = None, []
    return x


def _with_chat(
    name: str,
    rows: list[dict[str, Any]],
    index: list[int],
    prefix: list[int] | None,
    messages_of: Any,
    tools: list[Any],
) -> pa.Table:
    """The table `name` from its scalar columns plus the JSON columns trainers read: `messages` (each source
    conversation converted once by `chat_messages`, then gathered whole or as its first `prefix` items in Arrow)
    and `tools` (the tool schemas as objects); validated against the schema."""
    from pipeline.curate.sft import chat_messages, tool_schemas
    from schemas import get_schema

    schema = get_schema(name)
    sources = sorted(set(index))
    pos = {i: k for k, i in enumerate(sources)}
    convos = json_lists([chat_messages(messages_of(i)) for i in sources])
    at = [pos[i] for i in index]
    msgs = take_lists(convos, at) if prefix is None else prefixes(convos, at, prefix)
    parsed: dict[str, list[dict[str, Any]]] = {}
    tool_lists = []
    for t in tools:
        key = t if isinstance(t, str) else json.dumps(t, default=str)
        if key not in parsed:
            parsed[key] = tool_schemas(t)
        tool_lists.append(parsed[key])
    arrays = []
    for f in schema:
        if f.name == "messages":
            arrays.append(msgs)
        elif f.name == "tools":
            arrays.append(json_lists(tool_lists))
        else:
            arrays.append(pa.array([r[f.name] for r in rows], type=f.type))
    return conform(name, pa.Table.from_arrays(arrays, schema=schema))


def _split_counts(tbl: pa.Table) -> dict[str, int]:
    return dict(sorted(Counter(tbl.column("split").to_pylist()).items())) if tbl.num_rows else {}


def _summary(
    task_by_id,
    task_rows,
    val,
    con,
    seen: list[_Seen],
    sft_keep: list[_Seen],
    warmup,
    sft,
    critic,
    drops,
    settings: CurateSettings,
    notes: list[str],
    have_baseline: bool,
    gpus: list[str],
    rejection: pa.Table | None = None,
    n_samples: int = 0,
) -> dict[str, Any]:
    from pipeline.curate.rejection import RS_REASONS

    filters: dict[str, dict[str, int]] = {}
    failing: dict[str, dict[str, int]] = {}
    for d in drops:
        filters.setdefault(d["dataset"], Counter())[d["reason"]] += 1
        for r in d["reasons"]:
            failing.setdefault(d["dataset"], Counter())[r] += 1
    order = {
        "warmup": TASK_REASONS,
        "sft": TRAJECTORY_REASONS,
        "critic": TRAJECTORY_REASONS,
        "rejection_sampled": RS_REASONS,
    }
    filter_table = {
        ds: [
            {"reason": r, "dropped": (filters.get(ds) or {}).get(r, 0), "failing": (failing.get(ds) or {}).get(r, 0)}
            for r in order[ds]
        ]
        for ds in DATASETS
    }
    decided = [c for tid, c in con.items() if tid in task_by_id]
    contaminated = [c for c in decided if c.get("contaminated")]
    skipped = []
    if not seen:
        skipped.append(
            "sft and critic: no trajectories were given (no rollouts in this run, e.g. a CPU-only run), "
            "so only the warm-up dataset was built"
        )
    elif not sft.num_rows:
        skipped.append("sft and critic: every trajectory was filtered out (see the filter table)")
    if seen and not have_baseline:
        skipped.append(
            "critic GAE targets: no value baseline was given, so `value`, `advantage` and `gae_target` "
            "are empty; `return_to_go` (gamma = 1) is filled"
        )
    sp_all = [x.speedup for x in seen if x.speedup is not None and x.speedup == x.speedup]
    sp_kept = [x.speedup for x in sft_keep if x.speedup is not None and x.speedup == x.speedup]
    return {
        "inputs": {
            "task_rows": len(task_rows),
            "tasks": len(task_by_id),
            "validation_verdicts": len(val),
            "contamination_decisions": len(con),
            "trajectories": len(seen),
            "single_turn_samples": n_samples,
        },
        "counts": {
            "warmup": _split_counts(warmup),
            "sft": _split_counts(sft),
            "critic": _split_counts(critic),
            "rejection_sampled": _split_counts(rejection) if rejection is not None else {},
        },
        "rows": {
            "warmup": warmup.num_rows,
            "sft": sft.num_rows,
            "critic": critic.num_rows,
            "rejection_sampled": rejection.num_rows if rejection is not None else 0,
        },
        "filters": filter_table,
        "contamination": {
            "tasks_decided": len(decided),
            "contaminated": len(contaminated),
            "clean": len(decided) - len(contaminated),
            "undecided": len(task_by_id) - len(decided),
            "by_reason": dict(Counter(str(c.get("reason") or "") for c in contaminated)),
            "nearest_refs": dict(Counter(str(c.get("nearest_ref")) for c in contaminated).most_common(10)),
            "decision_runs": sorted({str(c.get("run_id")) for c in decided if c.get("run_id")}),
            "reference_fingerprints": sorted(
                {str(c["reference_fingerprint"]) for c in decided if c.get("reference_fingerprint")}
            ),
            "changed_since_rollout": sum("contamination_changed" in x.reasons for x in seen),
        },
        "provenance": {
            "task_runs": sorted({str(t.get("run_id")) for t in task_rows if t.get("run_id")}),
            "rollout_runs": sorted({str(x.run_id) for x in seen if x.run_id}),
            "models": sorted({str(x.model) for x in seen if x.model}),
            "gpus": sorted(
                set(gpus)
                | {str(v["device_name"]) for v in val.values() if v.get("device") == "cuda" and v.get("device_name")}
            ),
        },
        "speedups_vs_compile": {"all": sp_all, "kept": sp_kept},
        # Valid tasks whose 1-100 ms eager runtime window was never checked (validated on CPU: small shapes); the
        # data card says so.
        "runtime_window_unchecked": sum(
            1 for tid, v in val.items() if tid in task_by_id and v.get("valid") and not v.get("runtime_window_checked")
        ),
        "skipped": skipped,
        "notes": notes,
        "settings": settings.model_dump(mode="json"),
    }


# -- persistence: the curated tables go into the data store and the catalog like every stage's ------------------
def summary_path(data_root: Path, run_id: str) -> Path:
    return Path(data_root) / "curation" / f"run_id={run_id}" / "summary.json"


def save_result(result: CurationResult, data_root: Path) -> dict[str, Path]:
    """Write the tables (validated, atomic) and the summary; the runner records them in the catalog."""
    from pipeline.storage import DataStore, atomic_write_parquet

    store = DataStore(Path(data_root))
    paths = {}
    for name, tbl in result.tables().items():
        path = store.shard_path(name, result.run_id)
        atomic_write_parquet(conform(name, tbl), path)
        paths[name] = path
    sp = summary_path(data_root, result.run_id)
    sp.parent.mkdir(parents=True, exist_ok=True)
    tmp = sp.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.summary, indent=1, sort_keys=True, default=str))
    tmp.replace(sp)
    return paths


def load_result(data_root: Path, run_id: str) -> CurationResult:
    """Read a saved curation run back (for `opforge publish`)."""
    from pipeline.storage import DataStore

    store = DataStore(Path(data_root))
    tbl = {n: store.read(n, run_id) for n in ("warmup", "sft", "critic", "curation_drops", "rejection_sampled")}
    sp = summary_path(data_root, run_id)
    summary = json.loads(sp.read_text()) if sp.exists() else {}
    return CurationResult(
        run_id, tbl["warmup"], tbl["sft"], tbl["critic"], tbl["curation_drops"], summary, tbl["rejection_sampled"]
    )
