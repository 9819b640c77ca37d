"""Runtime filter on a GPU: real eager times (CUDA events, median of 20) of synthesized gpu-profile tasks, next to
the composer's estimate.

Here (CPU, full project):  .venv/bin/python benchmarks/bench_synth_gpu.py --compose 24 --to .gpu/synth
  (writes .gpu/synth/tasks.jsonl and copies sandbox.py, static.py, harness.py beside this script there)
On the GPU worker (torch + numpy only):  python .gpu/synth/bench_synth_gpu.py --budget 230
  (writes $OUT/gpu_runtime.json and prints one JSON line per task)
"""

import argparse
import json
import os
import shutil
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))


def compose(n: int, to: str) -> None:
    from pipeline.identity import task_id
    from pipeline.synth.catalog import load_catalog
    from pipeline.synth.composer import compose_task, profile
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import task_seed

    ops, prof, mix = load_catalog(), profile("gpu", (2.0, 40.0)), SynthSettings().op_mix
    os.makedirs(to, exist_ok=True)
    root = os.path.dirname(here)
    for src in ("pipeline/sandbox.py", "pipeline/validate/static.py", "benchmarks/bench_synth_gpu.py"):
        shutil.copy(os.path.join(root, src), to)
    from pipeline.validate.stage import harness_source

    with open(os.path.join(to, "harness_source.py"), "w") as f:  # standalone: what the validator runs in the jail
        f.write(harness_source())
    i = written = 0
    with open(os.path.join(to, "tasks.jsonl"), "w") as f:
        while written < n:
            i += 1
            try:
                c = compose_task(ops, task_seed(11, i), mix, prof)
            except Exception:
                continue
            if any(o.startswith("transformers") for o in c.ops):
                continue
            f.write(json.dumps({"task_id": task_id(c.code), "code": c.code, "ops": c.ops, "est_ms": c.est_ms}) + "\n")
            written += 1
    print(f"wrote {written} tasks to {to}")


def measure(device: str, budget: float) -> None:
    if os.path.exists(os.path.join(here, "sandbox.py")):  # the copied, standalone layout
        sys.path.insert(0, here)
        import static
        from sandbox import run_sandboxed

        harness = open(os.path.join(here, "harness_source.py")).read()
    else:
        from pipeline.sandbox import run_sandboxed
        from pipeline.validate import static
        from pipeline.validate.stage import harness_source

        harness = harness_source()
    out_dir = os.environ.get("OUT", "/tmp/gpu-out")
    os.makedirs(out_dir, exist_ok=True)
    tasks = [json.loads(line) for line in open(os.path.join(here, "tasks.jsonl"))]
    t0, rows = time.time(), []
    for t in tasks:
        if time.time() - t0 > budget:
            break
        bad = [r for _, r, _ in static.static_checks(t["code"]) if r]
        row = {"task_id": t["task_id"], "ops": t["ops"], "est_ms": t["est_ms"]}
        if bad:
            row["reason"] = bad[0]
        else:
            r = run_sandboxed(
                harness,
                payload={
                    "code": t["code"],
                    "device": device,
                    "check_compile": False,
                    "runtime_window_ms": [1.0, 100.0],
                    "timing_trials": 20,
                    "max_output_mb": 16384,
                },
                timeout_s=60,
                memory_mb=None,
                env={"OMP_NUM_THREADS": "8"},
            )
            h = r.result if isinstance(r.result, dict) else {}
            row.update(
                reason=r.reason or h.get("reason", ""),
                sandbox_reason=r.reason,
                wall_s=r.wall_s,
                eager_ms=h.get("eager_ms"),
                device_name=h.get("device_name"),
                runtime_window_checked=h.get("runtime_window_checked"),
                peak_memory_mb=h.get("peak_memory_mb"),
                details=h.get("details"),
                netns=r.netns,
                mountns=r.mountns,
                err=r.error_message[-300:],
            )
        rows.append(row)
        print(json.dumps({k: row.get(k) for k in ("task_id", "reason", "est_ms", "eager_ms", "wall_s")}), flush=True)
        with open(os.path.join(out_dir, "gpu_runtime.json"), "w") as f:
            json.dump(rows, f, indent=1)
    timed = [r for r in rows if r.get("eager_ms") is not None]
    inside = [r for r in timed if 1.0 <= r["eager_ms"] <= 100.0]
    print(
        json.dumps(
            {
                "tasks": len(rows),
                "timed": len(timed),
                "in_window_1_100ms": len(inside),
                "reasons": {
                    k: sum(1 for r in rows if r.get("reason") == k) for k in sorted({r.get("reason") for r in rows})
                },
                "seconds": round(time.time() - t0, 1),
            }
        )
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--compose", type=int, default=0)
    ap.add_argument("--to", default=".gpu/synth")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget", type=float, default=230.0)
    a = ap.parse_args()
    if a.compose:
        compose(a.compose, a.to)
    else:
        measure(a.device, a.budget)
