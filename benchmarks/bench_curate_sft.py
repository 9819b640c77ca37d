"""Benchmark: build and write N SFT rows (default 100,000) and load them back.

    .venv/bin/python benchmarks/bench_curate_sft.py [--rows 100000] [--samples-per-task 10]

Phases: generate synthetic trajectories through the `trajectories` schema and write them as Parquet (not part of
curation, reported for scale); then, in a fresh process (so its peak RSS is its own): read the Parquet inputs,
`curate` (every filter, SFT + critic rows, schema validation), write the Hub-layout folder (zstd shards, card,
plot), read the SFT shards back with pyarrow, `datasets.load_dataset(folder, "sft")` (Arrow cache build
included), and check the loaded rows equal the curated ones.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
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


def generate(args: argparse.Namespace, data: Path) -> None:
    """Synthetic inputs through the real schemas, written as Parquet for the build phase."""
    from pipeline.curate.synthetic import task_code, task_rows, trajectory
    from pipeline.identity import task_id
    from pipeline.storage import conform

    n_tasks = max(1, args.rows // args.samples_per_task)
    with Clock() as clock:
        codes = [task_code(i) for i in range(n_tasks)]
        ids = [task_id(c) for c in codes]
        tasks = task_rows(codes)
        pq.write_table(conform("tasks", tasks), data / "tasks.parquet")
        pq.write_table(
            pa.Table.from_pylist([{"task_id": t, "valid": True, "reason": "", "run_id": "val"} for t in ids]),
            data / "validation.parquet",
        )
        pq.write_table(
            pa.Table.from_pylist(
                [
                    {
                        "task_id": t,
                        "contaminated": False,
                        "nearest_ref": "level1/19_ReLU",
                        "score": 0.1,
                        "reason": "",
                        "run_id": "decon",
                    }
                    for t in ids
                ]
            ),
            data / "contamination.parquet",
        )
        rows = []
        for i, (t, c) in enumerate(zip(ids, codes)):
            for k in range(args.samples_per_task):
                steps = [
                    {"kernel": f"{i}-{k}-{j}", "correct": True, "speedup": 1.1 + 0.01 * j + 0.001 * k, "reward": 3}
                    for j in range(args.turns)
                ]
                rows.append(trajectory(t, k, steps=steps, task_code=c))
        trajs = conform("trajectories", rows)
        pq.write_table(trajs, data / "trajectories.parquet")
    print(
        f"generated {trajs.num_rows:,} trajectories for {n_tasks:,} tasks in {clock} "
        f"(Arrow {trajs.nbytes / 1e6:.0f} MB, "
        f"Parquet {(data / 'trajectories.parquet').stat().st_size / 1e6:.0f} MB)"
    )


def build(data: Path) -> None:
    """Read the inputs, curate, write the Hub-layout folder, load it back; in its own process, so its peak RSS
    is this phase's alone."""
    import datasets

    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import curate
    from pipeline.publish.stage import publish_local

    tables = {
        n: pq.read_table(data / f"{n}.parquet") for n in ("tasks", "validation", "contamination", "trajectories")
    }
    trajs = tables["trajectories"]
    rss_in = rss_mb()
    with Clock() as c:
        res = curate(tables["tasks"], tables["validation"], tables["contamination"], trajs, CurateSettings(), "bench")
    rss_cur = rss_mb()
    print(
        f"curate: {res.sft.num_rows:,} SFT rows + {res.critic.num_rows:,} critic rows + {res.warmup.num_rows:,} "
        f"warm-up rows in {c} ({res.sft.num_rows / c.wall:,.0f} SFT rows/s wall, "
        f"{res.sft.num_rows / c.cpu:,.0f} per CPU second; incl. filters and critic)"
    )
    print(
        f"  RSS {rss_in:,.0f} MB with the inputs read, peak {rss_cur:,.0f} MB after curate "
        f"(outputs in memory: SFT {res.sft.nbytes / 1e6:.0f} MB, critic {res.critic.nbytes / 1e6:.0f} MB)"
    )
    assert res.sft.num_rows == trajs.num_rows, res.summary["filters"]

    with Clock() as c:
        out = publish_local(res, data / "release", None)
    shards = sorted((out / "data" / "sft").glob("*.parquet"))
    size = sum(p.stat().st_size for p in shards)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(
        f"publish_local (all 3 configs, card, plot): {c}; SFT {len(shards)} shards {size / 1e6:.1f} MB zstd "
        f"(in memory {res.sft.nbytes / 1e6:.0f} MB); folder {total / 1e6:.1f} MB"
    )

    with Clock() as c:
        back = pa.concat_tables([pq.read_table(p) for p in shards])
    print(
        f"pyarrow read of the SFT shards: {back.num_rows:,} rows in {c.wall:.2f} s wall "
        f"({back.num_rows / c.wall:,.0f} rows/s)"
    )
    datasets.disable_progress_bars()
    with Clock() as c:
        ds = datasets.load_dataset(str(out), "sft", cache_dir=str(data / "hf-cache"))
    n = sum(d.num_rows for d in ds.values())
    print(
        f"datasets.load_dataset(folder, 'sft'): {n:,} rows in {c} ({n / c.wall:,.0f} rows/s, "
        f"first load incl. Arrow cache)"
    )
    with Clock() as c:
        ds2 = datasets.load_dataset(str(out), "sft", cache_dir=str(data / "hf-cache"))
    print(f"datasets.load_dataset again (cached): {c.wall:.2f} s")
    with Clock() as c:
        want = res.sft.sort_by("row_id")
        got = pa.concat_tables([d.data.table for d in ds2.values()]).sort_by("row_id")
        assert got.num_rows == want.num_rows
        assert got.select(want.column_names).cast(want.schema).equals(want), "loaded rows differ"
    print(f"equality check of all {n:,} rows: ok ({c.wall:.1f} s)")
    print(f"build phase peak RSS {rss_mb():,.0f} MB; load average {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--samples-per-task", type=int, default=10)
    ap.add_argument("--turns", type=int, default=3, help="compile_and_test turns per trajectory")
    ap.add_argument("--build-only", type=Path, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args()
    if args.build_only:
        build(args.build_only)
        return
    # Figures move with what else runs on the machine: print the load so readers can judge them.
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    tmp = Path(tempfile.mkdtemp(prefix="bench-curate-"))
    try:
        generate(args, tmp)
        subprocess.run([sys.executable, __file__, "--build-only", str(tmp)], check=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
