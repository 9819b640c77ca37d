"""Is the between-process spread of short-kernel timings a matter of where the buffers sit, of time, or of the L2
flush? (issue 7, repeatability below 1 ms). GPU only; torch alone.

Each fresh process times each op in epochs of `--calls` calls with the harness's `Timer` (device-wide synchronize
before the end event). Even epochs reuse the process's first buffers (layout 0: what changes is time only); odd
epochs allocate new input buffers, and a new flush buffer, behind a random-size pad (a new layout). Inputs are
refilled in place from the GPU RNG before every call (two alternating sets, as the harness's fresh inputs alternate
between two allocator blocks). Flush variants: `zero` (the harness's: 2x L2 of int32 zeroed, leaving dirty lines
that the timed call writes back) and `read` (2x L2 summed: the same eviction, clean lines).

Printed per op and flush: the CV of layout-0 epoch medians (drift in time), of new-layout epoch medians, and of the
per-process medians over all epochs (what repeatability sees).

    python3 benchmarks/bench_timing_layout.py [--procs 4] [--epochs 8] [--calls 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from bench_timing import OPS_SRC  # the same ops as the first study (this script's folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = (
    r"""
import json, random, statistics, sys
sys.path.insert(0, sys.argv[4])
import torch
from pipeline.evaluate.timing import Timer
ops, epochs, calls = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
dev = torch.device("cuda", 0)
rng = random.Random()
"""
    + OPS_SRC
    + r"""
timer = Timer()
timer.prepare(dev, True)
l2_words = timer.flush_buf.numel()
gen = torch.Generator(device=dev)
gen.manual_seed(7)
out = {}
keep = []

def new_layout():
    keep.append(torch.empty(rng.randrange(1, 256) * (1 << 20), dtype=torch.uint8, device=dev))
    return torch.empty(l2_words, dtype=torch.int32, device=dev)

with torch.no_grad():
    for op in ops:
        shapes, fn = SHAPES[op], FNS[op]
        base = ([[torch.empty(*s, device=dev) for s in shapes] for _ in range(2)], timer.flush_buf)
        for flush in ("zero", "read"):
            if flush == "zero":
                timer.flush = lambda: timer.flush_buf.zero_()
            else:
                timer.flush = lambda: timer.flush_buf.sum()
            rows = []
            for e in range(epochs):
                if e % 2 == 0:
                    sets, timer.flush_buf = base
                else:
                    fb = new_layout()
                    sets = [[torch.empty(*s, device=dev) for s in shapes] for _ in range(2)]
                    timer.flush_buf = fb

                def make_args(i, sets=sets):
                    a = sets[i % 2]
                    for t in a:
                        t.normal_(generator=gen)
                    return a
                run = timer.run(fn, make_args, warmup=5, trials=calls, warmup_ms=150.0 if e == 0 else 20.0)
                rows.append({"layout": 0 if e % 2 == 0 else e, "med": statistics.median(run["times_ms"]),
                             "stream": statistics.median(run["stream_times_ms"])})
            out[op + "/" + flush] = rows
print(json.dumps(out))
"""
)


def cv(xs: list[float]) -> float:
    m = statistics.fmean(xs)
    return statistics.pstdev(xs) / m if len(xs) > 1 and m else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--ops", default="vec_add,row_softmax,fused_chain,vec_add_small")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    procs = []
    for p in range(a.procs):
        r = subprocess.run(
            [sys.executable, "-c", CHILD, a.ops, str(a.epochs), str(a.calls), ROOT],
            capture_output=True,
            text=True,
            timeout=400,
        )
        if r.returncode != 0:
            print(f"process {p} failed: {r.stderr[-800:]}", flush=True)
            continue
        procs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    summary = {}
    for key in procs[0] if procs else []:
        per = [pr[key] for pr in procs]
        l0 = [[r["med"] for r in rows if r["layout"] == 0] for rows in per]
        ln = [[r["med"] for r in rows if r["layout"] != 0] for rows in per]
        proc_med = [statistics.median([r["med"] for r in rows]) for rows in per]
        proc_l0 = [statistics.median(x) for x in l0]
        s = {
            "cv_time_within_layout0": round(statistics.median(cv(x) for x in l0), 4),
            "cv_new_layouts_within_process": round(statistics.median(cv(x) for x in ln), 4),
            "cv_between_processes_all_epochs": round(cv(proc_med), 4),
            "cv_between_processes_layout0": round(cv(proc_l0), 4),
            "epoch_medians_ms": [[round(r["med"], 5) for r in rows] for rows in per],
            "stream_medians_ms": [[round(r["stream"], 5) for r in rows] for rows in per],
        }
        summary[key] = s
        print(
            f"{key:22s} time(L0) {s['cv_time_within_layout0']:.4f} layouts {s['cv_new_layouts_within_process']:.4f} "
            f"between procs: all {s['cv_between_processes_all_epochs']:.4f} L0 {s['cv_between_processes_layout0']:.4f}"
            f" | {s['epoch_medians_ms']}",
            flush=True,
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
