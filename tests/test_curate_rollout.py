"""Curation of trajectories written by the real rollout stage (replayed model turns, the real agent loop, tools and
workspace), not hand-built rows: the published conversation is exactly the rollout's."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from pipeline.curate.columns import to_rows
from pipeline.curate.settings import CurateSettings
from pipeline.curate.sft import chat_messages
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import task_code, task_rows
from pipeline.identity import task_id


def _call(name: str, **args) -> dict:
    return {"id": "r", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _turn(content: str, *calls: dict) -> dict:
    return {"content": content, "tool_calls": list(calls)}


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    from pipeline.llm.replay import ReplayBackend
    from pipeline.rollout.settings import RolloutSettings
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner

    codes = [task_code(i) for i in range(3)]
    ids = [task_id(c) for c in codes]
    explore = [
        _turn("Look.", _call("list_files")),
        _turn("Read.", _call("read_file", path="model.py")),
        _turn("Done.", _call("finish", summary="explored")),
    ]
    looping = [_turn("Look.", _call("list_files"))] * 3 + [_turn("Done.", _call("finish", summary="x"))]
    garbage = ["I will not call a tool.", "Still no tool.", "Nope."]
    be = ReplayBackend({ids[0]: explore, ids[1]: looping, ids[2]: garbage})
    s = RolloutSettings(
        backend="replay", concurrency=2, final_eval=False, samples_per_task=2, max_consecutive_malformed=2
    )
    out = rollout(
        pa.table({"task_id": ids, "code": codes}),
        s,
        be,
        {"cache_dir": str(tmp_path_factory.mktemp("eval-cache"))},
        "rollout-real",
        runner=LocalRunner(),
    )
    tasks = task_rows(codes)
    val = [{"task_id": t, "valid": True, "run_id": "val"} for t in ids]
    con = [{"task_id": t, "contaminated": False, "run_id": "decon"} for t in ids]
    return {"traj": out, "tasks": tasks, "val": val, "con": con, "ids": ids}


def test_real_rollout_rows_are_filtered_with_reasons(rolled):
    out = rolled["traj"]
    assert out.num_rows == 6
    r = curate(rolled["tasks"], rolled["val"], rolled["con"], out, CurateSettings(), "cur-real")
    assert r.sft.num_rows == 0 and r.warmup.num_rows == 3
    by_task: dict[str, set] = {}
    for d in r.drops.to_pylist():
        if d["dataset"] == "sft":
            by_task.setdefault(d["task_id"], set()).add(d["reason"])
    ids = rolled["ids"]
    # On this CPU machine nothing is ever correct (the harness reports no_gpu): reward -1.
    assert by_task[ids[0]] == {"nonpositive_reward"}
    assert by_task[ids[1]] == {"loop"}
    assert by_task[ids[2]] == {"malformed_tool_call"}
    # The integrity-filtered critic set keeps the well-formed failures, with return -1 on every turn.
    r2 = curate(rolled["tasks"], rolled["val"], rolled["con"], out, CurateSettings(critic_source="integrity"), "c2")
    assert set(r2.critic.column("task_id").to_pylist()) == {ids[0]}
    assert set(r2.critic.column("return_to_go").to_pylist()) == {-1.0}
    assert r2.critic.num_rows == 2 * 3


def test_a_positive_real_trajectory_is_published_verbatim(rolled):
    """The H200 verdict stood in for: the final kernel's turn marked correct and timed, as the GPU harness records
    it; everything else is the rollout's own row."""
    out = rolled["traj"]
    rows = out.to_pylist()
    i = next(k for k, r in enumerate(rows) if r["task_id"] == rolled["ids"][0])
    row = rows[i]
    last = row["turns"][-2]
    last.update(
        kernel_hash="k" * 16, compiled=True, correct=True, speedup_vs_eager=2.4, speedup_vs_compile=1.6, reward=3
    )
    row.update(final_reward=3, final_kernel_hash="k" * 16, best_speedup_vs_compile=1.6, best_speedup_vs_eager=2.4)
    from pipeline.storage import conform

    tbl = conform("trajectories", [row])
    r = curate(rolled["tasks"], rolled["val"], rolled["con"], tbl, CurateSettings(), "cur-real-2")
    assert r.sft.num_rows == 1, r.drops.to_pylist()
    sft = to_rows(r.sft)[0]
    assert sft["messages"] == chat_messages(tbl.column("messages").to_pylist()[0])
    assert sft["tools"] == json.loads(row["tools"]) and sft["speedup_vs_compile"] == 1.6 and sft["num_turns"] == 3
    assert r.critic.num_rows == 3 and r.critic.column("return_to_go").to_pylist() == [3.0, 3.0, 3.0]
