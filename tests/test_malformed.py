"""Malformed inputs become rows with reasons or a one-line error with exit code 2, never a traceback."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from pipeline.storage import as_code_column, with_code_column


def test_code_column_of_any_type_becomes_strings_or_nulls():
    honest = "import torch\nclass Model(torch.nn.Module):\n    pass\n"
    binary = pa.array([honest.encode(), b"\xff\xfe\x00", None], pa.binary())
    assert as_code_column(binary).to_pylist() == [honest, None, None]  # valid UTF-8 bytes are honest code
    assert as_code_column(pa.array([1, 2])).to_pylist() == [None, None]
    assert as_code_column(pa.array([honest], pa.large_string())).to_pylist() == [honest]
    t = with_code_column(pa.table({"task_id": ["a"], "code": pa.array([7])}))
    assert t.schema.field("code").type == pa.string() and t.column("task_id").to_pylist() == ["a"]


def test_decontam_cli_gives_integer_and_binary_code_rows_with_reasons(tmp_path, kernelbench_path):
    from pipeline.cli import app

    for name, col in (("ints", pa.array([1, 2], pa.int64())), ("bytes", pa.array([b"\xff\xfe", b"x = 1"]))):
        cand = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({"task_id": ["t1", "t2"], "code": col}), cand)
        out = tmp_path / name
        r = CliRunner().invoke(app, ["decontam", str(cand), "--reference", str(kernelbench_path), "--out", str(out)])
        assert r.exit_code == 0, r.output
        rows = pq.read_table(out / "contamination.parquet").to_pylist()
        assert [x["task_id"] for x in rows] == ["t1", "t2"]
        # No code, or code that cannot be judged: never clean.
        assert rows[0]["contaminated"] and rows[0]["reason"] == "empty_code"


def test_eval_with_a_non_utf8_task_file_is_one_line_and_exit_2(tmp_path):
    from flows.cli import app

    task = tmp_path / "task.py"
    task.write_bytes(b"import torch\n# \xff\xfe not utf-8\n")
    sol = tmp_path / "sol"
    sol.mkdir()
    r = CliRunner().invoke(app, ["eval", "--task", str(task), "--solution", str(sol)])
    assert r.exit_code == 2, r.output
    assert "cannot read task file" in r.output and "Traceback" not in r.output
