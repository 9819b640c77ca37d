"""Resumable shards (pipeline/shards.py): content keys, skip-on-rerun, retries of named transient errors only,
and no shard read as valid after a failed (disk-full) or killed writer. Real Parquet files, real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.shards import (
    RetryPolicy,
    TransientError,
    is_complete,
    plan_shards,
    run_shard,
    run_sharded,
    supersede_stale,
)
from pipeline.storage import DataStore
from tests._rows import row

ROOT = Path(__file__).resolve().parents[1]
FAST = RetryPolicy(attempts=3, base_delay_s=0.01)


def _items(n: int) -> pa.Table:
    ids = [f"t{i:04d}" for i in range(n)]
    return pa.table({"task_id": ids, "x": list(range(n))})


def _to_tasks(shard: pa.Table, tag: str = "a") -> list[dict]:
    return [
        row(
            "tasks",
            task_id=t,
            code=f"# {tag} {x}",
            ops=["relu"],
            data_source="torch#1",
            composer="programmatic",
            seed=x,
            run_id="r1",
        )
        for t, x in zip(shard.column("task_id").to_pylist(), shard.column("x").to_pylist())
    ]


def test_rerun_skips_finished_shards_and_changed_settings_supersede_old_ones(tmp_path):
    store = DataStore(tmp_path)
    items = _items(10)
    first = run_sharded("toy", "tasks", items, "task_id", _to_tasks, {"k": 1}, "r1", store, 3, policy=FAST)
    assert [r.skipped for r in first.results] == [False] * 4
    assert first.data.num_rows == 10 and first.data.column("task_id").to_pylist() == sorted(
        items.column("task_id").to_pylist()
    )

    # Input order does not change the shards: same keys, everything skipped, same rows.
    again = run_sharded(
        "toy", "tasks", items.take(list(range(9, -1, -1))), "task_id", _to_tasks, {"k": 1}, "r1", store, 3, policy=FAST
    )
    assert [r.skipped for r in again.results] == [True] * 4
    assert again.data.equals(first.data)

    # New settings: new keys, recomputed; the old shards leave the table (moved, not deleted).
    changed = run_sharded(
        "toy", "tasks", items, "task_id", lambda s: _to_tasks(s, "b"), {"k": 2}, "r1", store, 3, policy=FAST
    )
    assert changed.shards_computed == 4
    assert len(store.shards("tasks", "r1")) == 4
    assert store.read("tasks", "r1").num_rows == 10
    assert all(c.startswith("# b") for c in store.read("tasks", "r1").column("code").to_pylist())
    assert len(list((tmp_path / "superseded").rglob("*.parquet"))) == 4


def test_duplicated_ids_land_in_one_shard(tmp_path):
    items = pa.table({"task_id": ["a", "b", "b", "c"], "x": [1, 2, 3, 4]})
    out = run_sharded("toy", "tasks", items, "task_id", _to_tasks, {}, "r1", DataStore(tmp_path), 1, policy=FAST)
    assert sorted(out.data.column("seed").to_pylist()) == [1, 2, 3, 4]


def test_transient_errors_are_retried_others_are_not(tmp_path):
    store = DataStore(tmp_path)
    [spec] = plan_shards("toy", "tasks", ["t0000"], {}, "r1", store, 5)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise TransientError("service busy")
        return _to_tasks(_items(1))

    res = run_shard(spec, flaky, FAST)
    assert res.attempts == 3 and res.rows == 1 and Path(spec.path).exists()

    [spec2] = plan_shards("toy2", "tasks", ["t0000"], {}, "r1", store, 5)
    calls.clear()

    def broken():
        calls.append(1)
        raise ValueError("a bug, not a blip")

    with pytest.raises(ValueError):
        run_shard(spec2, broken, FAST)
    assert len(calls) == 1 and not Path(spec2.path).exists()

    # A schema violation is an application error too: not retried, nothing written.
    [spec3] = plan_shards("toy3", "tasks", ["t0000"], {}, "r1", store, 5)
    with pytest.raises(ValueError, match="seed"):
        run_shard(spec3, lambda: [dict(_to_tasks(_items(1))[0], seed="x")], FAST)
    assert not Path(spec3.path).exists()


_DISK_FULL_WRITER = textwrap.dedent("""
    import resource, signal, sys
    import pyarrow as pa
    from pipeline.shards import plan_shards, run_shard, RetryPolicy
    from pipeline.storage import DataStore
    from tests._rows import row
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)            # get EFBIG from write() instead of a signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))  # the "disk" fills up after 20 kB
    [spec] = plan_shards("big", "tasks", ["t0"], {}, "r1", DataStore(sys.argv[1]), 1)
    import random
    big = random.Random(0).randbytes(500_000).hex()  # incompressible, so the file really outgrows the limit
    rows = [row("tasks", task_id="t0", code=big, run_id="r1")]
    try:
        run_shard(spec, lambda: rows, RetryPolicy(attempts=1))
    except OSError as e:
        print("write failed:", e.errno)
        sys.exit(3)
""")


def test_full_disk_leaves_no_shard_and_the_rerun_completes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run(
        [sys.executable, "-c", _DISK_FULL_WRITER, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 3, p.stdout + p.stderr
    store = DataStore(tmp_path)
    [spec] = plan_shards("big", "tasks", ["t0"], {}, "r1", store, 1)
    run_dir = Path(spec.path).parent
    assert not Path(spec.path).exists()
    assert list(run_dir.iterdir()) == []  # not even the temporary file stays
    assert store.read("tasks", "r1").num_rows == 0

    import random

    big = random.Random(0).randbytes(500_000).hex()
    rows = [row("tasks", task_id="t0", code=big, run_id="r1")]
    res = run_shard(spec, lambda: rows, FAST)
    assert not res.skipped and store.read("tasks", "r1").column("code")[0].as_py() == big


def test_partial_files_are_never_read_as_valid(tmp_path):
    store = DataStore(tmp_path)
    [spec] = plan_shards("toy", "tasks", ["t0000"], {}, "r1", store, 1)
    path = Path(spec.path)
    path.parent.mkdir(parents=True)
    # What kill -9 during a write leaves: a temporary file with half a Parquet file in it.
    good = tmp_path / "good.parquet"
    pq.write_table(pa.Table.from_pylist(_to_tasks(_items(1))), good)
    half = good.read_bytes()[: good.stat().st_size // 2]
    tmp = path.parent / f".{path.name}.tmp-99999-abcd"
    tmp.write_bytes(half)
    assert store.read("tasks", "r1").num_rows == 0  # readers never see temporary files
    # A truncated file under the final name (a filesystem without atomic rename) is moved aside, not trusted.
    path.write_bytes(half)
    assert not is_complete(path, "tasks")
    assert not path.exists() and list(path.parent.glob(f".{path.name}.corrupt-*"))

    res = run_shard(spec, lambda: _to_tasks(_items(1)), FAST)
    assert not res.skipped and res.rows == 1 and not tmp.exists()
    assert is_complete(path, "tasks")


def test_supersede_keeps_planned_shards(tmp_path):
    store = DataStore(tmp_path)
    specs = plan_shards("toy", "tasks", ["a", "b"], {}, "r1", store, 1)
    for s in specs:
        run_shard(s, lambda s=s: _to_tasks(pa.table({"task_id": list(s.ids), "x": [0]})), FAST)
    assert supersede_stale(store, "tasks", "r1", specs) == []
    assert supersede_stale(store, "tasks", "r1", specs[:1])[0].name == Path(specs[1].path).name
