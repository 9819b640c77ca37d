"""Distribution on real Ray: CPU compile tasks feed a GPU-evaluator actor (here without a GPU: the actor still
serves, the builds are real, and each result says why it was not measured)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
sys.path.insert(0, str(FIX))
import assemble as A  # noqa: E402


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the no-GPU path")
def test_batch_through_ray_actor(ray_local, tmp_path):
    from pipeline.evaluate.actor import EvalItem, evaluate_batch

    task = A.task_code("vec_add")
    items = [
        EvalItem(task, str(A.honest_workspace(tmp_path / "honest", "add_vec4")), key="honest"),
        EvalItem(task, str(A.exploit_workspace(tmp_path / "exploit", "ws_torch_op")), key="exploit"),
        EvalItem(task, str(tmp_path / "missing.py"), key="missing"),
    ]
    from pipeline.executor import RayExecutor

    out = evaluate_batch(items, {"cache_dir": str(A.shared_cache_dir())}, num_gpus=1, executor=RayExecutor())
    assert [r["key"] for r in out] == ["honest", "exploit", "missing"]  # input order
    honest, exploit, missing = out
    assert honest["compiled"] and honest["compile"]["ok"] and honest["reason"] == "no_gpu"
    assert exploit["reason"] == "static_violation" and "torch_compute_op" in exploit["violations"]
    assert exploit["compile"] == {}  # rejected before the build: no CPU or GPU time spent on it
    assert missing["reason"] == "no_solution"
    assert len({r["actor_pid"] for r in out}) == 1  # one actor served them all


def test_rows_match_the_evaluations_schema(tmp_path):
    from pipeline.evaluate.harness import evaluate
    from pipeline.evaluate.records import to_row
    from pipeline.storage import write_table

    ws = A.exploit_workspace(tmp_path / "ws", "ws_stream")
    res = evaluate(A.task_code("vec_add"), str(ws), settings={"cache_dir": str(tmp_path / "c")})
    row = to_row(res, ws, run_id="test")
    assert row["violations"] == ["stream_creation"] and row["reward"] == -1
    path = tmp_path / "evaluations.parquet"
    write_table("evaluations", [row], path)
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    assert t.num_rows == 1 and t.column("reason").to_pylist() == ["static_violation"]
