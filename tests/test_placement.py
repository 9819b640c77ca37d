"""GPU placement for rollouts: LLM replicas and evaluator actors hold their GPUs through Ray; the evaluator pool
is what the replicas leave; on one GPU, generation and evaluation share it through its lock (tests/test_gpulock.py).
Checked with Ray's logical GPU resources for 1, 2 and 8 GPUs (one Ray instance per case, in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.llm.placement import PlacementError, plan_gpus

ROOT = Path(__file__).resolve().parents[1]


def test_plans():
    p = plan_gpus(1, 1, 1)
    assert (p.replicas, p.gpus_per_replica, p.evaluators, p.gpus_per_evaluator, p.shared) == (1, 0.5, 1, 0.5, True)
    p = plan_gpus(2, 1, 1)
    assert (p.replicas, p.gpus_per_replica, p.evaluators, p.gpus_per_evaluator, p.shared) == (1, 1.0, 1, 1.0, False)
    p = plan_gpus(8, 2, 2)  # 4 GPUs for two TP-2 replicas, 4 evaluators
    assert (p.replicas, p.gpus_per_replica, p.evaluators, p.held) == (2, 2.0, 4, 8.0)
    p = plan_gpus(8, 8, 1)  # the replicas would hold every GPU: one fewer, so evaluation has one
    assert (p.replicas, p.evaluators) == (7, 1)
    assert plan_gpus(8, 0).evaluators == 8 and plan_gpus(0, 2).evaluators == 1  # OpenAI endpoint / CPU cluster
    with pytest.raises(PlacementError):
        plan_gpus(2, 1, 2)  # one TP-2 replica over both GPUs leaves nothing to time kernels on
    with pytest.raises(PlacementError):
        plan_gpus(2, 1, 4)


PROBE = r"""
import json, os, sys, tempfile
import ray
from pipeline.llm.placement import plan_gpus
from pipeline.llm.ray_replicas import start_replicas
from pipeline.rollout.tools import RayRunner
script = tempfile.mktemp(suffix=".json")
open(script, "w").write(json.dumps({"*": ["hello"]}))
out = {}
for n, replicas, tp in [(1, 1, 1), (2, 1, 1), (8, 2, 2)]:
    ray.init(num_cpus=8, num_gpus=n, include_dashboard=False, object_store_memory=200 * 2**20,
             log_to_driver=False)
    plan = plan_gpus(n, replicas, tp)
    reps = start_replicas({"backend": "replay", "replay_path": script, "replicas": replicas,
                           "tensor_parallel_size": tp}, cpus_per_replica=0.5, plan=plan)
    runner = RayRunner(eval_settings={}, plan=plan, compile_cpus=0.5, eval_cpus=0.5)
    ref = ray.get(runner._actors[0].reference.remote("import torch\n", {}), timeout=120)
    ev = ray.get([a.placement.remote() for a in runner._actors], timeout=60)
    rp = [ray.get(r.handle.info.remote(), timeout=60) for r in reps]
    left = ray.available_resources().get("GPU", 0.0)  # every actor is up now
    chat = reps[0].chat([{"role": "user", "content": "hi"}]).text
    out[n] = {"replicas": len(reps), "evaluators": len(runner._actors), "gpus_left": left, "ref": ref["reason"],
              "ev": ev, "rp": rp, "chat": chat}
    for r in reps:
        r.close()
    runner.close()
    ray.shutdown()
print("RESULT " + json.dumps(out))
"""


def test_replicas_and_evaluators_hold_their_gpus_in_ray():
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT), "RAY_DEDUP_LOGS": "0"}
    p = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=420)
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, p.stdout[-3000:] + p.stderr[-3000:]
    out = {int(k): v for k, v in json.loads(line[7:]).items()}
    for n, (reps, evals) in {1: (1, 1), 2: (1, 1), 8: (2, 4)}.items():
        r = out[n]
        assert (r["replicas"], r["evaluators"]) == (reps, evals), r
        assert r["gpus_left"] == 0.0, r  # every GPU is held by a replica or an evaluator, through Ray
        assert r["ref"] == "no_gpu" and r["chat"] == "hello"  # the evaluator started and answers (CPU host)
        assert all(e["cuda_visible_devices"] not in (None, "") for e in r["ev"])
    one = out[1]  # one GPU: the replica and the evaluator are on it, with the same lock
    assert one["rp"][0]["cuda_visible_devices"] == one["ev"][0]["cuda_visible_devices"] == "0"
    assert one["rp"][0]["gpu_lock"] == one["ev"][0]["gpu_lock"] and one["rp"][0]["gpu_lock"]
    eight = out[8]  # replicas and evaluators on disjoint GPUs
    rep_gpus = {g for x in eight["rp"] for g in x["cuda_visible_devices"].split(",")}
    ev_gpus = {x["cuda_visible_devices"] for x in eight["ev"]}
    assert len(rep_gpus) == 4 and len(ev_gpus) == 4 and not rep_gpus & ev_gpus
    assert all(x["gpu_lock"] is None for x in eight["rp"])
