"""Where the timing noise of short kernels comes from (issue 7, repeatability below 1 ms). GPU only; torch alone.

Each (op, variant) is timed in several fresh processes with the harness's own `Timer` (L2 flush, fresh inputs,
end event after a device-wide synchronize), one long series per process. Printed per op and variant:
- the per-process median of the first 30 timed calls (the old fixed trial count) and of all calls, and their
  coefficient of variation across processes: what repeatability sees;
- the median within-process CV, and the medians of consecutive chunks (drift within a process);
- `null`: the same timed region around a call that launches nothing, i.e. the fixed overhead of the method.
Variants: `free` (the scheduler places the process) and `pinned` (the process pinned to one CPU core).

    python3 benchmarks/bench_timing.py [--procs 4] [--calls 3000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The ops both timing studies time (this one and bench_timing_layout.py): input shapes and the function per op.
OPS_SRC = r"""
SHAPES = {"vec_add": [(1 << 26,), (1 << 26,)], "vec_add_small": [(1 << 22,), (1 << 22,)],
          "row_softmax": [(16384, 2048)], "fused_chain": [(8192, 4096)], "null": []}

def chain(x):
    y = x * 1.5
    y = y + 0.25
    y = torch.relu(y)
    y = y - 0.1
    y = torch.tanh(y)
    return y * 2.0

FNS = {"vec_add": lambda a, b: a + b, "vec_add_small": lambda a, b: a + b,
       "row_softmax": lambda x: torch.softmax(x, dim=1), "fused_chain": chain, "null": lambda: None}
"""

CHILD = (
    r"""
import json, os, statistics, sys
pin = int(sys.argv[3])
if pin >= 0:
    os.sched_setaffinity(0, {pin})
sys.path.insert(0, sys.argv[4])
import torch
from pipeline.evaluate.timing import Timer
op, calls = sys.argv[1], int(sys.argv[2])
dev = torch.device("cuda", 0)
timer = Timer()
timer.prepare(dev, True)
gen = torch.Generator(device=dev)
"""
    + OPS_SRC
    + r"""
shapes, fn = SHAPES[op], FNS[op]

def make_args(i):
    gen.manual_seed(1000 + i)
    return [torch.randn(*s, device=dev, generator=gen) for s in shapes]

with torch.no_grad():
    run = timer.run(fn, make_args, warmup=5, trials=calls, warmup_ms=250.0)
t = run["times_ms"]
chunk = max(1, len(t) // 6)
print(json.dumps({"first30": statistics.median(t[:30]), "all": statistics.median(t), "cv": run["stats"]["cv"],
                  "stream": statistics.median(run["stream_times_ms"]), "n": len(t),
                  "chunks": [round(statistics.median(t[k:k + chunk]), 5) for k in range(0, len(t), chunk)],
                  "cpu": os.sched_getaffinity(0).__len__()}))
"""
)


def cv(xs: list[float]) -> float:
    m = statistics.fmean(xs)
    return statistics.pstdev(xs) / m if m else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--ops", default="null,vec_add,row_softmax,fused_chain")
    ap.add_argument("--variants", default="free,pinned")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    ncpu = os.cpu_count() or 1
    out: dict = {}
    for variant in a.variants.split(","):
        for op in a.ops.split(","):
            rows = []
            for p in range(a.procs):
                pin = (2 + p) % ncpu if variant == "pinned" else -1
                r = subprocess.run(
                    [sys.executable, "-c", CHILD, op, str(a.calls), str(pin), ROOT],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if r.returncode != 0:
                    print(f"{variant} {op}: child failed: {r.stderr[-800:]}", flush=True)
                    continue
                rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
            if not rows:
                continue
            f30, al = [r["first30"] for r in rows], [r["all"] for r in rows]
            res = {
                "first30_ms": [round(x, 5) for x in f30],
                "all_ms": [round(x, 5) for x in al],
                "cv_first30": round(cv(f30), 4),
                "cv_all": round(cv(al), 4),
                "within_cv": round(statistics.median(r["cv"] for r in rows), 4),
                "stream_ms": [round(r["stream"], 5) for r in rows],
                "chunks": [r["chunks"] for r in rows],
                "n": rows[0]["n"],
            }
            out[f"{variant}/{op}"] = res
            print(
                f"{variant:7s} {op:12s} first30 {res['first30_ms']} cv {res['cv_first30']:.4f} | all({res['n']}) "
                f"{res['all_ms']} cv {res['cv_all']:.4f} | within {res['within_cv']:.3f} | chunks {res['chunks']}",
                flush=True,
            )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
