"""The decontaminate and dedup stages: valid tasks against KernelBench (resumable shards, one decision per task),
then near-duplicates among the clean ones (set-wide: one unit of work)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pipeline.stage import Needs, Plan, Resources, Skip, Stage

log = logging.getLogger("opforge.decontam")

STAGE = Stage(
    name="decontaminate",
    inputs=("tasks", "validation"),
    outputs=("contamination",),
    settings="decontam",
    fn="pipeline.decontam.stage:decontaminate",
    plan="pipeline.decontam.spec:plan",
    shard_key="task_id",
    shard_size=32,
    resources=Resources(cpus=1),
    fan_out=True,
    needs=Needs(kernelbench=True),
    command="decontam",
    flow="decontaminate_flow",
    docs="decontaminate",
    doc="Check the run's valid tasks against KernelBench in resumable shards (one decision per task).",
)
DEDUP = Stage(
    name="dedup",
    inputs=("tasks", "validation", "contamination"),
    outputs=("dedup",),
    settings="decontam",
    fn="pipeline.decontam.stage:dedup",
    plan="pipeline.decontam.spec:plan_dedup",
    shard_key=None,
    resources=Resources(cpus=1),
    fan_out=True,
    command="dedup",
    flow="decontaminate_flow",
    docs="decontaminate",
    doc="Remove near-duplicates among the clean tasks (every pair is compared).",
)
STAGES = (STAGE, DEDUP)


def plan(cfg: Any) -> Plan:
    from pipeline import provenance
    from pipeline.kernelbench import KernelBenchNotFound, choose_source, load_reference, pin
    from pipeline.selection import has_table, valid_tasks

    if not has_table(cfg, "tasks"):
        raise Skip("no tasks for this run (run synthesize first)")
    source, _why = choose_source(cfg.kernelbench)
    try:
        reference = load_reference(source)
    except KernelBenchNotFound as e:
        raise Skip(str(e)) from None
    ref_pin = pin(reference, cfg.kernelbench)
    candidates, note = valid_tasks(cfg)
    candidates = with_traces(cfg, candidates)
    # What this decision is pinned to, on the record before any shard runs: the reference (source, why it was
    # chosen, checksum), the candidates' checksum, the code version and the command line.
    facts = {
        "reference_source": ref_pin.source,
        "reference_chosen_by": ref_pin.chosen_by,
        "reference_fingerprint": ref_pin.fingerprint,
        "reference_problems": str(ref_pin.problems),
        "candidates": str(candidates.num_rows),
        "candidates_checksum": provenance.checksum(
            zip(candidates.column("task_id").to_pylist(), candidates.column("code").to_pylist())
        ),
        "opforge_version": provenance.version(),
        "command_line": provenance.command_line(),
    }

    def finish(data: Any) -> dict[str, Any]:
        # The auditor's report (every decision, with diffs against the matched problem), beside the run's tables,
        # with the pin beside it (provenance.json).
        report_dir = Path(cfg.data_root) / "reports" / "decontam" / f"run_id={cfg.run_id}"
        report_dir.mkdir(parents=True, exist_ok=True)
        (report_dir / "provenance.json").write_text(json.dumps({"run_id": cfg.run_id, **facts}, indent=1))
        try:
            from pipeline.decontam.report import write_report

            return {
                "report": str(
                    write_report(
                        data,
                        candidates.select(["task_id", "code"]),
                        reference,
                        cfg.decontam,
                        report_dir,
                        reference_source=(
                            f"{ref_pin.source} ({ref_pin.chosen_by}); opforge "
                            f"{facts['opforge_version']}; {facts['candidates']} candidates, "
                            f"sha256 {facts['candidates_checksum']}; command: "
                            f"{facts['command_line']}"
                        ),
                    )
                )
            }
        except Exception as e:  # the decisions are stored already; a report that cannot be drawn must not undo them
            log.warning("decontamination report not written: %s: %s", type(e).__name__, e)
            return {"report_error": f"{type(e).__name__}: {e}"}

    # The reference's checksum is part of every shard's key: a new KernelBench version recomputes everything.
    # The index over the reference is built once per process (seconds; kept for the next flow run of a serving
    # process) and shipped to every shard (it pickles to ~2.5 MB).
    return Plan(
        args={"reference": reference_index(reference, cfg.decontam), "settings": cfg.decontam},
        items=candidates,
        key={"settings": cfg.decontam, "reference": ref_pin.fingerprint},
        facts=facts,
        detail=note or f"against {len(reference)} KernelBench problems, {ref_pin.describe()}",
        finish=finish,
    )


def with_traces(cfg: Any, candidates: Any) -> Any:
    """The candidates with the semantic trace validation made of each (`semantic_trace`, null where none): the
    semantic view then traces only the tasks that arrive without one."""
    import pyarrow as pa

    from pipeline.selection import has_table, run_table

    traces: dict[str, str] = {}
    if has_table(cfg, "validation"):
        v = run_table(cfg, "validation").select(["task_id", "valid", "semantic_trace"]).to_pydict()
        traces = {t: s for t, ok, s in zip(v["task_id"], v["valid"], v["semantic_trace"]) if ok and s}
    col = pa.array([traces.get(t) for t in candidates.column("task_id").to_pylist()], pa.string())
    return candidates.append_column("semantic_trace", col)


_INDEXES: dict[str, Any] = {}


def reference_index(reference: Any, settings: Any) -> Any:
    from pipeline.decontam.index import ReferenceIndex
    from pipeline.kernelbench import fingerprint
    from pipeline.shards import settings_fingerprint

    key = fingerprint(reference) + settings_fingerprint(settings)
    if key not in _INDEXES:
        _INDEXES.clear()  # one reference at a time: indexes are large
        _INDEXES[key] = ReferenceIndex(reference, settings)
    return _INDEXES[key]


def plan_dedup(cfg: Any) -> Plan:
    from pipeline.selection import clean_tasks, has_table

    if not has_table(cfg, "tasks"):
        raise Skip("no tasks for this run (run synthesize first)")
    tasks = clean_tasks(cfg)
    # Set-wide (every pair is compared): one unit of work, keyed by all its task ids and settings.
    return Plan(
        args={"settings": cfg.decontam}, items=tasks, key=cfg.decontam, ids=tasks.column("task_id").to_pylist()
    )
