"""Benchmark: build and write N SFT rows (default 100,000) and load them back.

    .venv/bin/python benchmarks/bench_curate_sft.py [--rows 100000] [--samples-per-task 10]

Phases, timed one after another in this process: generate synthetic trajectories through the `trajectories`
schema (not part of curation, reported for scale); Arrow table -> `curate` (every filter, SFT + critic rows,
schema validation); write the Hub-layout folder (zstd shards, card, plot); read the SFT shards back with pyarrow;
`datasets.load_dataset(folder, "sft")` (Arrow cache build included); and the row-by-row equality check.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


class Clock:
    """Wall and CPU seconds of one phase: on a shared machine CPU time is the steadier figure."""

    def __enter__(self) -> "Clock":
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.w0, time.process_time() - self.c0

    def __str__(self) -> str:
        return f"{self.wall:.1f} s wall, {self.cpu:.1f} s CPU"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--samples-per-task", type=int, default=10)
    ap.add_argument("--turns", type=int, default=3, help="compile_and_test turns per trajectory")
    args = ap.parse_args()

    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import curate
    from pipeline.curate.synthetic import fill_schema, task_code, trajectory
    from pipeline.identity import task_id
    from pipeline.storage import conform
    from pipeline.publish.stage import publish_local

    n_tasks = max(1, args.rows // args.samples_per_task)
    # Figures move with what else runs on the machine: print the load so readers can judge them.
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    clock = Clock().__enter__()
    codes = [task_code(i) for i in range(n_tasks)]
    ids = [task_id(c) for c in codes]
    tasks = [fill_schema("tasks", {"task_id": t, "code": c, "ops": ["torch.relu", "torch.mul"],
                                   "data_source": "torch#2", "composer": "programmatic", "seed": i, "run_id": "synth"})
             for i, (t, c) in enumerate(zip(ids, codes))]
    validation = [{"task_id": t, "valid": True, "reason": "", "run_id": "val"} for t in ids]
    contamination = [{"task_id": t, "contaminated": False, "nearest_ref": "level1/19_ReLU", "score": 0.1,
                      "reason": "", "run_id": "decon"} for t in ids]
    rows = []
    for i, (t, c) in enumerate(zip(ids, codes)):
        for k in range(args.samples_per_task):
            steps = [{"kernel": f"{i}-{k}-{j}", "correct": True, "speedup": 1.1 + 0.01 * j + 0.001 * k,
                      "reward": 3} for j in range(args.turns)]
            rows.append(trajectory(t, k, steps=steps, task_code=c))
    trajs = conform("trajectories", rows)
    del rows
    clock.__exit__()
    print(f"generated {trajs.num_rows:,} trajectories for {n_tasks:,} tasks in {clock} "
          f"(Arrow {trajs.nbytes / 1e6:.0f} MB)")

    with Clock() as c:
        res = curate(tasks, validation, contamination, trajs, CurateSettings(), "bench")
    print(f"curate: {res.sft.num_rows:,} SFT rows + {res.critic.num_rows:,} critic rows + {res.warmup.num_rows:,} "
          f"warm-up rows in {c} ({res.sft.num_rows / c.wall:,.0f} SFT rows/s wall, "
          f"{res.sft.num_rows / c.cpu:,.0f} per CPU second; incl. filters and critic)")
    assert res.sft.num_rows == trajs.num_rows, res.summary["filters"]

    tmp = Path(tempfile.mkdtemp(prefix="bench-curate-"))
    try:
        with Clock() as c:
            out = publish_local(res, tmp / "release", None)
        shards = sorted((out / "data" / "sft").glob("*.parquet"))
        size = sum(p.stat().st_size for p in shards)
        total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"publish_local (all 3 configs, card, plot): {c}; SFT {len(shards)} shards "
              f"{size / 1e6:.1f} MB zstd (in memory {res.sft.nbytes / 1e6:.0f} MB); folder {total / 1e6:.1f} MB")

        with Clock() as c:
            back = pa.concat_tables([pq.read_table(p) for p in shards])
        print(f"pyarrow read of the SFT shards: {back.num_rows:,} rows in {c.wall:.2f} s wall "
              f"({back.num_rows / c.wall:,.0f} rows/s)")

        import datasets

        datasets.disable_progress_bars()
        with Clock() as c:
            ds = datasets.load_dataset(str(out), "sft", cache_dir=str(tmp / "hf-cache"))
        n = sum(d.num_rows for d in ds.values())
        print(f"datasets.load_dataset(folder, 'sft'): {n:,} rows in {c} ({n / c.wall:,.0f} rows/s, "
              f"first load incl. Arrow cache)")
        t0 = time.perf_counter()
        ds2 = datasets.load_dataset(str(out), "sft", cache_dir=str(tmp / "hf-cache"))
        t_load2 = time.perf_counter() - t0
        print(f"datasets.load_dataset again (cached): {t_load2:.2f} s")

        t0 = time.perf_counter()
        want = res.sft.sort_by("row_id")
        got = pa.concat_tables([d.data.table for d in ds2.values()]).sort_by("row_id")
        assert got.num_rows == want.num_rows
        assert got.select(want.column_names).cast(want.schema).equals(want), "loaded rows differ"
        print(f"equality check of all {n:,} rows: ok ({time.perf_counter() - t0:.1f} s)")
        print(f"peak RSS {rss_mb():,.0f} MB; load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
