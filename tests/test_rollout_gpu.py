"""On a GPU (device tool, H200): a replayed trajectory whose turns write a real kernel goes through compile, verify
and profile and ends with the measured reward. Prints the figures."""

from __future__ import annotations

import json

import pytest
from test_rollout import KERNEL, TASK, kernel_script, settings, tasks_table

pytestmark = pytest.mark.gpu


def test_replayed_kernel_trajectory_earns_a_measured_reward_on_gpu(tmp_path):
    from pipeline.identity import task_id
    from pipeline.llm.replay import ReplayBackend
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner

    ev = {"cache_dir": str(tmp_path / "eval-cache")}
    out = rollout(
        tasks_table(TASK),
        settings(),
        ReplayBackend({task_id(TASK): kernel_script()}),
        ev,
        "gpu",
        out_dir=tmp_path / "data",
        runner=LocalRunner(),
    )
    row = out.to_pylist()[0]
    turns = row["turns"]
    tools = [m for m in row["messages"] if m["role"] == "tool"]
    print("\n".join(f"[{m['name']}] {m['content'][:400]}" for m in tools))
    figures = {
        "termination": row["termination"],
        "final_reward": row["final_reward"],
        "reference_eager_ms": turns[2]["eager_ms"],
        "reference_compile_ms": turns[2]["compile_ms"],
        "verify_correct": turns[7]["correct"],
        "solution_ms": turns[8]["solution_ms"],
        "speedup_vs_eager": turns[8]["speedup_vs_eager"],
        "speedup_vs_compile": turns[8]["speedup_vs_compile"],
        "best_speedup_vs_eager": row["best_speedup_vs_eager"],
        "timings": json.loads(row["timings"]),
        "broken_compile_failed": turns[4]["compiled"] is False,
        "fixed_compile_ok": turns[6]["compiled"],
    }
    print("GPU_FIGURES " + json.dumps(figures))
    assert row["termination"] == "finished"
    assert turns[4]["compiled"] is False and turns[6]["compiled"] is True
    assert turns[7]["correct"] is True, tools[9]["content"]
    assert turns[8]["solution_ms"] > 0 and turns[8]["eager_ms"] > 0 and turns[2]["eager_ms"] > 0
    assert row["final_reward"] == turns[8]["reward"] and row["final_reward"] >= 1
    assert json.loads(row["final_kernel"])["kernels/identity.cu"] == KERNEL
