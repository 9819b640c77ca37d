"""Single-byte corruption of a stored shard: how many read back as wrong data without an error.

Writes a `tasks` shard with `DataStore.write`, flips each byte in turn (XOR 0x5A) and reads the table back two
ways: the plain read (`pq.read_table(path, schema=...)`, what DataStore.read did before checksums and strict
reads) and today's `DataStore.read`. Prints, for each: errors, identical reads, wrong reads.

    python benchmarks/bench_corruption.py [--rows 12] [--step 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.curate.synthetic import task_code, task_rows  # noqa: E402
from pipeline.storage import DataStore  # noqa: E402
from schemas import get_schema  # noqa: E402


def rows(n: int) -> list[dict]:
    return task_rows([task_code(i) for i in range(n)], "r1")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=12)
    ap.add_argument("--step", type=int, default=1)
    a = ap.parse_args()
    store = DataStore(Path(tempfile.mkdtemp()))
    path, written = store.write("tasks", rows(a.rows), "r1")
    data = path.read_bytes()
    schema = get_schema("tasks")
    counts = {"plain": [0, 0, 0], "strict": [0, 0, 0]}  # errors, identical, wrong
    for off in range(0, len(data), a.step):
        bad = bytearray(data)
        bad[off] ^= 0x5A
        path.write_bytes(bytes(bad))
        for name, read in (
            ("plain", lambda: pq.read_table(path, schema=schema)),
            ("strict", lambda: store.read("tasks", "r1")),
        ):
            try:
                got = read()
            except Exception:
                counts[name][0] += 1
                continue
            counts[name][1 if got.select(written.column_names).equals(written) else 2] += 1
    n = len(range(0, len(data), a.step))
    print(f"{len(data)}-byte shard, {n} single-byte corruptions")
    for name, (err, same, wrong) in counts.items():
        print(f"  {name:6s}: {err} errors, {same} identical, {wrong} wrong data without an error")


if __name__ == "__main__":
    main()
