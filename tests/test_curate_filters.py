"""Every trajectory filter keeps a productive trajectory and drops a degenerate one (docs/datasets.md lists them).

The productive trajectory is what an honest agent does with the rollout's real tools: four write -> compile ->
verify -> profile rounds, each on a new kernel version, ending at reward 3 and 1.5x over torch.compile. Each case
degrades it in the one way its filter is about.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from pipeline.curate.filters import loop, trajectory_reasons
from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import fill_schema, task_code
from pipeline.identity import content_hash, task_id
from pipeline.rollout.tools import TOOLS

CODE = task_code(0)
TID = task_id(CODE)


def _kernel(v: int) -> str:
    return f"__global__ void k(float* y, const float* x, int n) {{ /* version {v} */ y[0] = x[0] * {v}; }}"


def agent_trajectory(rounds: int = 4, final_speedup: float = 1.5, traj: str = "t0") -> dict[str, Any]:
    """`rounds` honest rounds with the real tool names; round k writes kernel version k (a new source)."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You write CUDA kernels."},
        {"role": "user", "content": f"Make it faster:\n{CODE}"},
    ]
    turns: list[dict[str, Any]] = []
    n = 0

    def call(name: str, args: dict[str, Any], result: str, **turn: Any) -> None:
        nonlocal n
        cid = f"call_{n}"
        msgs.append(
            {
                "role": "assistant",
                "content": f"step {n}",
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})
        turns.append({"turn": n, "action": name, "malformed": False, "tool_error": False, **turn})
        n += 1

    khash = None
    for k in range(rounds):
        src = _kernel(k)
        khash = content_hash(src)
        sp = final_speedup * (k + 1) / rounds
        call("write_file", {"path": "kernel.cu", "content": src}, "wrote kernel.cu")
        call("compile", {}, "compiled: ok (12.3 s)", kernel_hash=khash, compiled=True)
        call("verify", {}, "correct: true, max_abs_err 1.2e-07", kernel_hash=khash, compiled=True, correct=True)
        call(
            "profile",
            {},
            f"eager 1.00 ms, compile {0.6:.2f} ms, solution {0.6 / sp:.3f} ms, "
            f"speedup vs compile {sp:.2f}x, reward {3 if sp > 1.05 else 1}",
            kernel_hash=khash,
            compiled=True,
            correct=True,
            speedup_vs_eager=sp * 1.6,
            speedup_vs_compile=sp,
            reward=3 if sp > 1.05 else 1,
        )
    call("finish", {"summary": "fused kernel"}, "finished")
    msgs.append({"role": "assistant", "content": "Done."})
    turns.append({"turn": n, "action": "no_tool_call", "malformed": False, "tool_error": False})
    row = {
        "traj_id": content_hash(traj),
        "task_id": TID,
        "sample_idx": 0,
        "seed": 0,
        "model": "m",
        "run_id": "r",
        "messages": [{"tool_calls": None, "tool_call_id": None, "name": None, "content": None, **m} for m in msgs],
        "tools": json.dumps(TOOLS),
        "turns": [fill_turn(t) for t in turns],
        "final_reward": 3,
        "best_speedup_vs_eager": final_speedup * 1.6,
        "best_speedup_vs_compile": final_speedup,
        "num_turns": len(turns),
        "termination": "finished",
        "final_kernel_hash": khash,
        "contaminated_at_rollout": False,
        "contamination_run_id": "d",
    }
    return fill_schema("trajectories", row)


def fill_turn(t: dict[str, Any]) -> dict[str, Any]:
    from schemas.trajectories import TURN

    return {f.name: t.get(f.name) for f in TURN}


def _asst_idx(t: dict[str, Any], name: str) -> list[int]:
    return [
        i
        for i, m in enumerate(t["messages"])
        if m["role"] == "assistant" and m["tool_calls"] and m["tool_calls"][0]["function"]["name"] == name
    ]


def _repeat_verify(t: dict[str, Any]) -> None:
    """The agent verifies the same, unchanged kernel again and again and gets the same answer."""
    i = _asst_idx(t, "verify")[-1]
    a, r = t["messages"][i], t["messages"][i + 1]
    extra = []
    for j in range(3):
        a2, r2 = copy.deepcopy(a), copy.deepcopy(r)
        a2["tool_calls"][0]["id"] = r2["tool_call_id"] = f"again_{j}"
        extra += [a2, r2]
    t["messages"][i + 2 : i + 2] = extra


def _malformed(t: dict[str, Any]) -> None:
    t["messages"][_asst_idx(t, "write_file")[0]]["tool_calls"][0]["function"]["arguments"] = '{"path": "kernel.cu"'


def _empty(t: dict[str, Any]) -> None:
    t["messages"] = t["messages"][:2]


def _final_fails(t: dict[str, Any]) -> None:
    t["final_reward"] = -1


def _inconsistent(t: dict[str, Any]) -> None:
    t["turns"][-3]["correct"] = False  # the last profile of the final kernel


def _slow(t: dict[str, Any]) -> None:
    for turn in t["turns"]:
        if turn["speedup_vs_compile"]:
            turn["speedup_vs_compile"] = 0.98


def _untimed(t: dict[str, Any]) -> None:
    t["final_reward"] = 2  # reward 2 does not certify a torch.compile speedup
    for turn in t["turns"]:
        turn["speedup_vs_compile"] = None


def _changed(t: dict[str, Any]) -> None:
    t["contaminated_at_rollout"] = True


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], CurateSettings]] = {
    "loop": (_repeat_verify, CurateSettings()),
    "malformed_tool_call": (_malformed, CurateSettings()),
    "empty_trajectory": (_empty, CurateSettings()),
    "too_many_turns": (lambda t: None, CurateSettings(max_turns=16)),  # the productive one has 18 turns
    "too_long": (lambda t: t["messages"][1].update(content="x" * 5000), CurateSettings(max_chars=4000)),
    "nonpositive_reward": (_final_fails, CurateSettings()),
    "reward_inconsistent": (_inconsistent, CurateSettings()),
    "below_speedup_threshold": (_slow, CurateSettings()),
    "no_speedup_measured": (_untimed, CurateSettings()),
    "contamination_changed": (_changed, CurateSettings()),
}
CON = {TID: {"task_id": TID, "contaminated": False, "run_id": "d"}}


@pytest.mark.parametrize("code", sorted(CASES))
def test_filter_keeps_productive_and_drops_degenerate(code):
    degrade, settings = CASES[code]
    good = agent_trajectory()
    if code == "too_many_turns":  # the same honest work in fewer rounds passes the same limit
        assert trajectory_reasons(agent_trajectory(rounds=3), [], CON, settings)[0] == []
        bad = good
    else:
        assert trajectory_reasons(good, [], CON, settings)[0] == [], code
        bad = copy.deepcopy(good)
        degrade(bad)
    reasons, details = trajectory_reasons(bad, [], CON, settings)
    assert reasons and reasons[0] == code, (reasons, details)


def test_a_loop_is_repetition_without_progress_not_a_tool_count():
    s = CurateSettings()
    good = agent_trajectory(rounds=6)  # compile, verify and profile called 6 times each, on 6 versions
    assert loop(good, s) is None
    # Re-profiling the same kernel once is honest (timings differ, masked); three times in a row is a loop.
    t = agent_trajectory(rounds=2)
    i = _asst_idx(t, "profile")[-1]
    a, r = t["messages"][i], t["messages"][i + 1]
    again = [copy.deepcopy(a), dict(r, content=r["content"].replace("0.", "0.1"))]
    t["messages"][i + 2 : i + 2] = again
    assert loop(t, s) is None
    t["messages"][i + 2 : i + 2] = copy.deepcopy(again)
    assert "3 times in a row" in loop(t, s)
    # Writing the very same file again and again and compiling it into the same error is a loop too.
    bad = agent_trajectory(rounds=1)
    w = _asst_idx(bad, "write_file")[0]
    round_ = [copy.deepcopy(m) for m in bad["messages"][w : w + 4]]
    round_[3]["content"] = "error: expected ';' at /tmp/opforge-build-abc123/kernel.cu:3"
    bad["messages"][w : w + 4] = (
        round_
        + copy.deepcopy(round_)
        + [dict(m, content=m["content"].replace("abc123", "zzz999")) for m in copy.deepcopy(round_)]
        + copy.deepcopy(round_)
    )
    assert "times" in loop(bad, s)
    # The same error after changing the source is progress (the agent is trying something new).
    for k, j in enumerate(_asst_idx(bad, "write_file")):
        args = json.loads(bad["messages"][j]["tool_calls"][0]["function"]["arguments"])
        args["content"] += f"// try {k}"
        bad["messages"][j]["tool_calls"][0]["function"]["arguments"] = json.dumps(args)
    assert loop(bad, s) is None


def test_duplicate_filters_keep_one_and_drop_the_rest():
    tasks = [
        fill_schema(
            "tasks",
            {
                "task_id": TID,
                "code": CODE,
                "ops": ["torch.relu"],
                "data_source": "torch#1",
                "composer": "programmatic",
                "seed": 0,
                "run_id": "s",
            },
        )
    ]
    val = [{"task_id": TID, "valid": True, "run_id": "v"}]
    a, b = agent_trajectory(traj="a"), agent_trajectory(traj="b", final_speedup=1.4)  # b: same final kernel
    b["turns"][-3]["speedup_vs_compile"] = 1.4
    r = curate(tasks, val, list(CON.values()), [a, b, copy.deepcopy(a)], CurateSettings(), "c")
    assert r.sft.column("traj_id").to_pylist() == [a["traj_id"]]
    assert sorted(d["reason"] for d in r.drops.to_pylist() if d["dataset"] == "sft") == [
        "duplicate_final_kernel",
        "duplicate_trajectory",
    ]
