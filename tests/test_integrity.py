"""Integrity of stored tables: page checksums, the recorded row count, strict reads, directory fsync."""

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.curate.synthetic import task_code, task_rows
from pipeline.storage import CorruptFileError, DataStore, SchemaError, atomic_write_parquet, conform, read_parquet
from schemas import get_schema


def _rows(n=12):
    return task_rows([task_code(i) for i in range(n)], "r1")


def test_every_single_byte_corruption_is_an_error_or_reads_identical(tmp_path):
    store = DataStore(tmp_path)
    path, written = store.write("tasks", _rows(), "r1")
    data = path.read_bytes()
    wrong, errors = [], 0
    for off in range(0, len(data), 3):  # every third byte: ~1/3 of the file, ~2 s
        bad = bytearray(data)
        bad[off] ^= 0x5A
        path.write_bytes(bytes(bad))
        try:
            got = store.read("tasks", "r1")
        except (CorruptFileError, SchemaError):
            errors += 1
            continue
        if not got.equals(written):
            wrong.append(off)
    assert errors > 0 and not wrong, f"{len(wrong)} corruptions read back as wrong data at offsets {wrong[:10]}"


def test_files_carry_page_checksums_and_row_count(tmp_path):
    path, tbl = DataStore(tmp_path).write("tasks", _rows(3), "r1")
    md = pq.ParquetFile(path).metadata
    assert md.schema.to_arrow_schema().metadata[b"opforge.rows"] == b"3"
    # A page's CRC is verified on read: flip a byte of the code column's dictionary page.
    col = md.row_group(0).column(1)  # code: the largest chunk
    data = bytearray(path.read_bytes())
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    data[start + 40] ^= 0xFF  # inside the dictionary page (the data page header holds large min/max statistics)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match=str(path.name)):
        read_parquet(path, "tasks")
    assert not list(path.parent.glob(".*tmp*"))  # nothing left of the temporary file


def test_strict_read_names_file_and_column(tmp_path):
    store = DataStore(tmp_path)
    d = store.table_dir("tasks", "r1")
    full = conform("tasks", _rows(2))
    # A non-nullable column missing: an error naming the file and the column, never nulls.
    atomic_write_parquet(full.drop_columns(["code"]), d / "a.parquet")
    with pytest.raises(SchemaError, match=r"a\.parquet.*'code'"):
        store.read("tasks", "r1")
    (d / "a.parquet").unlink()
    # A changed type: an error, never a silent cast.
    changed = full.set_column(
        full.schema.get_field_index("seed"), "seed", pa.array([str(s) for s in full.column("seed").to_pylist()])
    )
    atomic_write_parquet(changed, d / "b.parquet")
    with pytest.raises(SchemaError, match=r"(?i)b\.parquet.*'seed'.*string"):
        store.read("tasks", "r1")
    (d / "b.parquet").unlink()
    # A nullable column added by a later version reads as nulls (old files stay readable).
    nullable = [f.name for f in get_schema("tasks") if f.nullable]
    assert nullable
    atomic_write_parquet(full.drop_columns(nullable[:1]), d / "c.parquet")
    got = store.read("tasks", "r1")
    assert got.num_rows == 2 and got.column(nullable[0]).null_count == 2
    assert got.column("code").to_pylist() == full.column("code").to_pylist()


def test_rename_is_followed_by_a_directory_fsync(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def spy(fd):
        synced.append(os.path.realpath(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    path, _ = DataStore(tmp_path).write("tasks", _rows(1), "r1")
    # The file (its temporary name) first, then its directory, after the rename.
    assert synced[-1] == str(path.parent) and ".tmp-" in synced[-2]
