"""Fault test: kill -9 the flow process in the middle of the sharded decontamination stage, rerun it, and get
exactly the rows of an uninterrupted run (counts and checksums equal, nothing duplicated, nothing lost).

Real Prefect (the session's test-harness server, shared with the killed subprocess), real KernelBench reference,
real Parquet shards and a real DuckDB catalog.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from pipeline.catalog import Catalog
from pipeline.identity import task_id
from pipeline.storage import DataStore
from tests._rows import row

ROOT = Path(__file__).resolve().parents[1]
RUN = "fault-run"
SHARD = 6

_OPS = [
    "torch.relu(x)",
    "torch.sigmoid(x)",
    "torch.tanh(x)",
    "x * 2.5",
    "x + 0.75",
    "torch.nn.functional.gelu(x)",
    "torch.clamp(x, -1.0, 1.0)",
    "x.pow(2)",
    "torch.exp(-x.abs())",
    "torch.log1p(x.abs())",
    "torch.cumsum(x, 1)",
    "torch.softmax(x, dim=-1)",
    "x - x.mean(dim=-1, keepdim=True)",
    "torch.nn.functional.silu(x)",
]


def _composed(i: int, rng: random.Random) -> str:
    body = "\n".join(f"        x = {op}" for op in rng.sample(_OPS, rng.randint(2, 5)))
    return (
        f"import torch\n\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n{body}\n        return x\n\n"
        f"def get_inputs():\n    return [torch.randn({rng.randint(2, 64)}, {rng.randint(8, 4096)})]\n\n"
        f"def get_init_inputs():\n    return []\n# variant {i}\n"
    )


def _write_tasks(root: Path, reference) -> int:
    rng = random.Random(7)
    codes = [p.code for p in reference[::3]] + [_composed(i, rng) for i in range(40)]
    rows, seen = [], set()
    for c in codes:
        tid = task_id(c)
        if tid not in seen:
            seen.add(tid)
            rows.append(row("tasks", task_id=tid, code=c, data_source="fault-test", composer="external", run_id=RUN))
    DataStore(root).write("tasks", rows, RUN)
    return len(rows)


def _checksum(tbl) -> str:
    rows = sorted(json.dumps(r, sort_keys=True, default=str) for r in tbl.to_pylist())
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


_DRIVER = """
import sys
from flows.stages import decontaminate_flow
decontaminate_flow(overrides=[f"data_root={sys.argv[1]}"], run_id=sys.argv[2], shard_size=int(sys.argv[3]))
"""


def test_kill_9_mid_stage_then_rerun_equals_uninterrupted(prefect_harness, tmp_path, kernelbench_path):
    from flows.runtime import current_api_url
    from flows.stages import decontaminate_flow
    from pipeline.kernelbench import load_reference

    reference = load_reference(kernelbench_path)
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    n = _write_tasks(killed, reference)
    assert _write_tasks(clean, reference) == n
    n_shards = -(-n // SHARD)
    shard_dir = DataStore(killed).table_dir("contamination", RUN)

    env = dict(os.environ, PREFECT_API_URL=current_api_url(), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(killed), RUN, str(SHARD)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    done_at_kill = 0
    while proc.poll() is None:  # the kill point is an event (the 3rd shard file), however long a busy machine takes
        done_at_kill = len(list(shard_dir.glob("shard-*.parquet"))) if shard_dir.exists() else 0
        if done_at_kill >= 3:
            os.kill(proc.pid, signal.SIGKILL)  # the flow process itself, mid-stage
            break
        time.sleep(0.02)
    rc = proc.wait(30)
    assert rc == -signal.SIGKILL, f"the flow was not killed mid-stage (rc {rc}): {proc.stderr.read()[-2000:]}"
    survived = len(list(shard_dir.glob("shard-*.parquet")))
    assert 3 <= survived < n_shards, f"{survived} of {n_shards} shards finished before the kill"

    rerun = decontaminate_flow(overrides=[f"data_root={killed}"], run_id=RUN, shard_size=SHARD)["stages"][0]
    assert rerun["status"] == "completed"
    assert rerun["shards_skipped"] == survived and rerun["shards_computed"] == n_shards - survived

    whole = decontaminate_flow(overrides=[f"data_root={clean}"], run_id=RUN, shard_size=SHARD)["stages"][0]
    assert whole["shards_computed"] == n_shards and whole["shards_skipped"] == 0

    a = DataStore(killed).read("contamination", RUN)
    b = DataStore(clean).read("contamination", RUN)
    assert a.num_rows == b.num_rows == n
    assert len(set(a.column("task_id").to_pylist())) == n  # nothing duplicated, nothing lost
    assert _checksum(a) == _checksum(b)
    assert sum(a.column("contaminated").to_pylist()) >= len(reference[::3]) - 3  # the KernelBench copies are caught
    assert rerun["drop_reasons"] == whole["drop_reasons"] and rerun["rows_out"] == whole["rows_out"]
    # No partial file survives, and the catalog's view sees each row once.
    assert not [p for p in shard_dir.iterdir() if not p.name.startswith("shard-")]
    cat = Catalog(killed / "catalog.duckdb", killed)
    got = cat.sql(
        "SELECT count(*) AS n, count(DISTINCT task_id) AS d FROM contamination WHERE run_id = ?", [RUN]
    ).to_pylist()[0]
    assert got == {"n": n, "d": n}
    files = cat.sql(
        "SELECT count(*) AS f, sum(row_count) AS r FROM table_files WHERE table_name = 'contamination'"
    ).to_pylist()[0]
    assert files == {"f": n_shards, "r": n}
