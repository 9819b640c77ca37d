"""One selection rule: rollouts get exactly the tasks curation would keep; "no decision" is never clean."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipeline import selection
from pipeline.config import load_config
from pipeline.curate.stage import curate
from pipeline.storage import DataStore, conform
from tests._rows import row

RUN = "20260101T000000-abcdef"
CODE = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x + {n}\n"
# task -> (valid, contaminated, removed by dedup); None: no row in that table
CASES = {
    "t_clean": (True, False, False),
    "t_invalid": (False, False, False),
    "t_contaminated": (True, True, False),
    "t_no_contamination_row": (True, None, False),
    "t_no_validation_row": (None, False, False),
    "t_duplicate": (True, False, True),
    "t_no_dedup_row": (True, False, None),
}


def _tables() -> dict[str, pa.Table]:
    ids = sorted(CASES)
    tasks = [row("tasks", task_id=t, code=CODE.format(n=i), run_id=RUN) for i, t in enumerate(ids)]
    val = [
        row("validation", task_id=t, valid=v, reason="" if v else "nan_output")
        for t, (v, _, _) in CASES.items()
        if v is not None
    ]
    con = [
        row("contamination", task_id=t, contaminated=c, reason="exact_md5" if c else "")
        for t, (_, c, _) in CASES.items()
        if c is not None
    ]
    ded = [
        row("dedup", task_id=t, removed=d, reason="near_duplicate" if d else "")
        for t, (_, _, d) in CASES.items()
        if d is not None
    ]
    return {
        "tasks": conform("tasks", tasks),
        "validation": conform("validation", val),
        "contamination": conform("contamination", con),
        "dedup": conform("dedup", ded),
    }


def test_decision_and_passes():
    assert selection.decision("validation", {"valid": True}) is True
    assert selection.decision("validation", {"valid": False}) is False
    assert selection.decision("contamination", {"contaminated": None}) is None
    assert selection.decision("contamination", None) is None
    assert selection.passes("contamination", None) is False  # no decision: not clean ...
    assert selection.passes("contamination", None, required=False) is True  # ... unless the check is optional
    assert selection.passes("contamination", {"contaminated": True}, required=False) is False
    assert selection.decision("anything_else", {"reason": ""}) is True


def test_select_tasks_one_answer_for_no_decision():
    t = _tables()
    decisions = {"validation": t["validation"], "contamination": t["contamination"], "dedup": t["dedup"]}
    kept = selection.select_tasks(t["tasks"], decisions, required=["validation", "contamination"])
    assert sorted(kept.column("task_id").to_pylist()) == ["t_clean", "t_no_dedup_row"]
    # Optional checks drop only the tasks they decided against.
    loose = selection.select_tasks(t["tasks"], decisions, required=[])
    assert sorted(loose.column("task_id").to_pylist()) == [
        "t_clean",
        "t_no_contamination_row",
        "t_no_dedup_row",
        "t_no_validation_row",
    ]
    # A required stage that never ran lets nothing through; an optional one filters nothing.
    assert selection.select_tasks(t["tasks"], {"contamination": None}, ["contamination"]).num_rows == 0
    assert selection.select_tasks(t["tasks"], {"contamination": None}).num_rows == len(CASES)


def test_kept_mask_and_drop_reasons_follow_the_rules():
    t = _tables()
    assert selection.kept_mask(t["validation"]) == [v for v, _, _ in CASES.values() if v is not None]
    assert selection.drop_reasons(t["contamination"]) == {"exact_md5": 1}
    # The latest run's decision wins; a null decision in it is no decision.
    rows = [
        {"task_id": "a", "run_id": "2", "contaminated": None},
        {"task_id": "a", "run_id": "1", "contaminated": False},
    ]
    assert selection.decision("contamination", selection.latest_by_task(rows)["a"]) is None


def test_rollout_input_is_what_curation_keeps(tmp_path: Path):
    """The rollout stage's input (selection.kept_tasks, what its plan takes) and curate's warm-up set are the same
    tasks."""
    from pipeline.rollout.spec import plan

    store = DataStore(tmp_path)
    for name, tbl in _tables().items():
        store.write(name, tbl, RUN)
    cfg = load_config(None, [f"data_root={tmp_path}", f"run_id={RUN}"])
    rollout_ids = sorted(selection.kept_tasks(cfg).column("task_id").to_pylist())
    assert sorted(plan(cfg).items.column("task_id").to_pylist()) == rollout_ids
    t = _tables()
    result = curate(t["tasks"], t["validation"], t["contamination"], None, cfg.curate, RUN, dedup=t["dedup"])
    assert (
        rollout_ids
        == sorted(r.removeprefix("warmup:") for r in result.warmup.column("row_id").to_pylist())
        == ["t_clean", "t_no_dedup_row"]
    )
    reasons = {r["item_id"]: r["reason"] for r in result.drops.to_pylist() if r["dataset"] == "warmup"}
    assert reasons == {
        "t_invalid": "task_invalid",
        "t_contaminated": "task_contaminated",
        "t_no_contamination_row": "not_decontaminated",
        "t_no_validation_row": "not_validated",
        "t_duplicate": "near_duplicate",
    }
    # Decontamination's input still takes every valid task (a check never starves for want of a decision).
    valid, _ = selection.valid_tasks(cfg)
    assert "t_no_contamination_row" in valid.column("task_id").to_pylist()
    assert "t_no_validation_row" not in valid.column("task_id").to_pylist()


def test_decontamination_input_carries_the_traces_validation_made(tmp_path: Path):
    """The decontaminate plan's candidates carry each valid task's `semantic_trace` from the run's validation table
    (null where validation made none); an invalid task's trace never travels."""
    from pipeline.decontam.spec import with_traces

    t = _tables()
    val = t["validation"].to_pylist()
    for r in val:
        r["semantic_trace"] = f'{{"trace": "{r["task_id"]}"}}' if r["task_id"] != "t_duplicate" else None
    store = DataStore(tmp_path)
    store.write("tasks", t["tasks"], RUN)
    store.write("validation", conform("validation", val), RUN)
    cfg = load_config(None, [f"data_root={tmp_path}", f"run_id={RUN}"])
    got = with_traces(cfg, t["tasks"])
    traces = dict(zip(got.column("task_id").to_pylist(), got.column("semantic_trace").to_pylist()))
    assert traces["t_clean"] == '{"trace": "t_clean"}'
    assert traces["t_invalid"] is None and traces["t_no_validation_row"] is None and traces["t_duplicate"] is None
    assert got.select(t["tasks"].column_names).equals(t["tasks"])  # nothing else changes
