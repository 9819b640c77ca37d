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


def test_one_gpu_node_shares_its_gpu_between_generation_and_evaluation_in_ray(tmp_path):
    """Ray counts the real GPU: on a one-GPU node the LLM replica and the evaluator each hold half of it through
    Ray's accounting, with the same GPU lock, and a replayed trajectory's kernel is measured by the evaluator actor
    on that GPU."""
    import ray

    from pipeline.identity import task_id
    from pipeline.llm.placement import plan_gpus
    from pipeline.llm.ray_replicas import start_replicas
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import RayRunner

    script = tmp_path / "script.json"
    script.write_text(json.dumps({task_id(TASK): kernel_script()}))
    ev = {"cache_dir": str(tmp_path / "eval-cache")}
    ray.init(num_cpus=8, include_dashboard=False, log_to_driver=False)
    reps, runner = [], None
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        plan = plan_gpus(1, 1, 1)  # one GPU of the node for this run: shared by the replica and an evaluator
        assert gpus >= 1 and plan.shared
        reps = start_replicas({"backend": "replay", "replay_path": str(script)}, cpus_per_replica=0.5, plan=plan)
        runner = RayRunner(eval_settings=ev, plan=plan)
        row = rollout(
            tasks_table(TASK), settings(), reps[0], ev, "gpu-ray", out_dir=tmp_path / "data", runner=runner
        ).to_pylist()[0]
        placed = ray.get([a.placement.remote() for a in runner._actors], timeout=60)
        replica = ray.get(reps[0].handle.info.remote(), timeout=60)
        left = ray.available_resources().get("GPU", 0.0)
        print("GPU_PLACEMENT " + json.dumps({"evaluators": placed, "replica": replica, "gpus_left": left}))
        print("GPU_FIGURES " + json.dumps({"termination": row["termination"], "final_reward": row["final_reward"]}))
        assert row["termination"] == "finished" and row["final_reward"] >= 1
        assert len(placed) == 1 and placed[0]["cuda_visible_devices"] == replica["cuda_visible_devices"]
        assert placed[0]["gpu_lock"] == replica["gpu_lock"] and replica["gpu_lock"]
        assert left == gpus - 1.0  # the shared GPU is held in full: half by the replica, half by the evaluator
    finally:
        for r in reps:
            r.close()
        if runner is not None:
            runner.close()
        ray.shutdown()
