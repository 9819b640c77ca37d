"""Dedup of N synthetic tasks: wall time and peak memory (this process and its workers).

    .venv/bin/python benchmarks/bench_dedup.py --n 1000000 [--view canon|raw] [--ray] [--shard 20000]

Tasks come from pipeline.decontam.calibration.negatives.compose (random bases, 1-5 random ops, random
names/constants), plus planted copies: every 10th task is repeated verbatim, every 10th (offset 5) with its
variable renamed, so the expected clusters are known. Printed: generation time (not counted), dedup time, tasks
removed, whether every planted copy landed in its original's cluster, and peak RSS (ru_maxrss of this process and
of its children).
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402

from pipeline.decontam.calibration.negatives import _BASES, _OPS, compose  # noqa: E402
from pipeline.decontam.settings import DecontamSettings  # noqa: E402


def synth(n: int, seed: int = 0) -> tuple[list[str], list[str], dict[str, str]]:
    rng = random.Random(seed)
    bases, ops = sorted(_BASES), sorted(_OPS)
    ids, codes, planted = [], [], {}
    i = 0
    while len(ids) < n:
        code = compose(rng.sample(ops, rng.randint(1, 5)), rng.choice(bases), rng)
        tid = f"t{i:08d}"
        ids.append(tid)
        codes.append(code)
        if i % 10 == 0 and len(ids) < n:
            ids.append(tid + "-copy")
            codes.append(code)
            planted[tid + "-copy"] = tid
        elif i % 10 == 5 and len(ids) < n:
            ids.append(tid + "-renamed")
            codes.append(code.replace("in_channels", "c_in").replace("in_features", "d_in").replace("Model", "Net"))
            planted[tid + "-renamed"] = tid
        i += 1
    return ids, codes, planted


def _tree_pss_mb(pid: int) -> float:
    """Proportional set size of a process and all its descendants (shared pages counted once in total)."""
    import os

    pids, i = [pid], 0
    while i < len(pids):
        try:
            for tid in os.listdir(f"/proc/{pids[i]}/task"):
                with open(f"/proc/{pids[i]}/task/{tid}/children") as fh:
                    pids += [int(k) for k in fh.read().split()]
        except OSError:
            pass
        i += 1
    kb = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                kb += sum(int(line.split()[1]) for line in fh if line.startswith("Pss:"))
        except OSError:
            pass
    return kb / 1024


class PeakMemory:
    """Samples the process tree's total PSS every second (the memory the run really holds, forked workers
    included, without counting pages they share with the driver twice)."""

    def __init__(self) -> None:
        import os
        import threading

        self.peak, self._stop = 0.0, threading.Event()
        self._t = threading.Thread(target=self._run, args=(os.getpid(),), daemon=True)
        self._t.start()

    def _run(self, pid: int) -> None:
        while not self._stop.wait(1.0):
            self.peak = max(self.peak, _tree_pss_mb(pid))

    def stop(self) -> float:
        self._stop.set()
        self._t.join()
        return self.peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--view", default="canon", choices=["canon", "raw"])
    ap.add_argument("--ray", action="store_true", help="partition over a local Ray (num_cpus=2)")
    ap.add_argument("--workers", type=int, default=1, help="process pool size when Ray is off")
    ap.add_argument("--shard", type=int, default=20000)
    args = ap.parse_args()
    t = time.perf_counter()
    ids, codes, planted = synth(args.n)
    print(
        f"generated {len(ids)} tasks ({len(planted)} planted copies) in {time.perf_counter() - t:.1f} s "
        f"(not timed below)",
        flush=True,
    )
    table = pa.table({"task_id": ids, "code": codes})
    del codes
    if args.ray:
        from pipeline.executor import ensure_ray

        ensure_ray(num_cpus=2, object_store_mb=2048)
    from pipeline.decontam.stage import dedup

    settings = DecontamSettings(dedup_view=args.view, dedup_shard_size=args.shard, workers=args.workers)
    import os

    print("load average %.1f %.1f %.1f on %d cores" % (*os.getloadavg(), os.cpu_count()), flush=True)
    mem = PeakMemory()
    t = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    out = dedup(table, settings)
    dt = time.perf_counter() - t
    peak_tree = mem.stop()
    c1, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime + ch.ru_utime + ch.ru_stime
    kept = dict(zip(out.column("task_id").to_pylist(), out.column("cluster_id").to_pylist()))
    removed = sum(out.column("removed").to_pylist())
    ok = sum(kept[c] == kept[o] for c, o in planted.items())
    self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"dedup view={args.view} ray={args.ray} workers={args.workers}: {len(ids)} tasks in {dt:.1f} s wall, "
        f"{cpu:.1f} s CPU (driver + pool children; Ray workers not counted) "
        f"({len(ids) / dt:.0f} tasks/s); removed {removed}; planted copies in their original's cluster: "
        f"{ok}/{len(planted)}; peak RSS driver {self_mb:.0f} MiB, largest child {child_mb:.0f} MiB; "
        f"peak total PSS of driver + workers (sampled every 1 s) {peak_tree:.0f} MiB "
        f"(target < 15 min wall and < 8 GB: {'met' if dt < 900 and max(self_mb, peak_tree) < 8192 else 'NOT met'})",
        flush=True,
    )
    print("load average %.1f %.1f %.1f" % os.getloadavg())
    if args.ray:
        print("(Ray workers' memory is not in ru_maxrss; see the driver figure and the object store limit)")


if __name__ == "__main__":
    main()
