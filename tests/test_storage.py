"""Foundation: schemas are enforced on every write, Parquet round-trips, the DuckDB catalog answers SQL."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.catalog import Catalog
from pipeline.identity import normalized_md5, task_id
from pipeline.storage import DataStore, SchemaError, conform
from schemas import get_schema, table_names

CODE = '''
import torch
class Model(torch.nn.Module):
    """doc"""
    def forward(self, x):
        return torch.relu(x)  # comment
def get_inputs():
    return [torch.randn(8, 8)]
def get_init_inputs():
    return []
'''


def _task_row(**kw):
    row = {
        "task_id": task_id(CODE),
        "code": CODE,
        "ops": ["relu"],
        "data_source": "torch#1",
        "composer": "programmatic",
        "seed": 1,
        "run_id": "r1",
        "compose_reason": "",
        "size_profile": "small",
        "est_ms": None,
    }
    row.update(kw)
    return row


def test_every_table_has_a_versioned_schema():
    names = table_names()
    assert "tasks" in names
    for n in names:
        s = get_schema(n)
        assert int(s.metadata[b"opforge.version"]) >= 1
        assert all((f.metadata or {}).get(b"doc") for f in s), f"{n}: every field needs a doc"


def test_wrong_type_names_the_column():
    with pytest.raises(SchemaError, match="'seed'"):
        conform("tasks", [_task_row(seed="one")])
    with pytest.raises(SchemaError, match="'ops'"):
        conform("tasks", [_task_row(ops="relu")])
    with pytest.raises(SchemaError, match="'seed'"):
        conform("tasks", [_task_row(seed=True)])  # bool is not silently an int


def test_missing_extra_and_null_columns_are_errors():
    row = _task_row()
    del row["composer"]
    with pytest.raises(SchemaError, match="composer"):
        conform("tasks", [row])
    with pytest.raises(SchemaError, match="bogus"):
        conform("tasks", [_task_row(bogus=1)])
    with pytest.raises(SchemaError, match="'code'"):
        conform("tasks", [_task_row(code=None)])


def test_arrow_table_with_other_types_is_not_cast():
    tbl = conform("tasks", [_task_row()])
    bad = tbl.set_column(tbl.schema.get_field_index("seed"), "seed", pa.array([1], pa.int32()))
    with pytest.raises(SchemaError, match="'seed'.*int32"):
        conform("tasks", bad)


def test_task_id_ignores_comments_docstrings_and_formatting():
    reformatted = (
        CODE.replace("# comment", "")
        .replace('"""doc"""', "")
        .replace("return torch.relu(x)", "return   torch.relu( x )")
    )
    assert task_id(reformatted) == task_id(CODE)
    assert task_id(CODE.replace("relu", "sigmoid")) != task_id(CODE)
    assert normalized_md5(CODE) == normalized_md5(CODE.replace("\n", "\n\n"))


def test_parquet_roundtrip_and_catalog_join(data_root):
    store = DataStore(data_root)
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r1", {"k": 1}, "test")
    path, tbl = store.write("tasks", [_task_row(), _task_row(task_id="abc", code="x=1")], "r1")
    cat.register_file("r1", "tasks", path, tbl.num_rows, 1)
    cat.record_stage("r1", "synthesize", rows_in=2, rows_out=2, drop_reasons={})
    back = pq.read_table(path)
    assert back.schema.metadata[b"opforge.table"] == b"tasks"
    assert back.to_pylist() == tbl.to_pylist()
    assert store.read("tasks").num_rows == 2
    res = cat.sql("SELECT s.stage, count(*) AS n FROM tasks t JOIN stages s USING (run_id) GROUP BY s.stage")
    assert res.to_pylist() == [{"stage": "synthesize", "n": 2}]
    files = cat.sql("SELECT row_count FROM table_files WHERE table_name = 'tasks'")
    assert files.column("row_count").to_pylist() == [2]
    # No temporary files are left beside the shard.
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_write_removes_temporary_files_of_dead_writers_only(tmp_path):
    """kill -9 between writing and renaming leaves `.<name>.tmp-<pid>-<hex>`; the next write of that file removes
    the dead writer's, never a live one's."""
    import os
    import subprocess
    import sys

    from pipeline.storage import atomic_write_parquet

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = tmp_path / "part-00000.parquet"
    stale = tmp_path / f".{path.name}.tmp-{dead.pid}-abcd1234"
    live = tmp_path / f".{path.name}.tmp-{os.getpid()}-ffff0000"
    other = tmp_path / ".other.parquet.tmp-1-00"
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    atomic_write_parquet(pa.table({"x": [1]}), path)
    assert not stale.exists() and live.exists() and other.exists()
