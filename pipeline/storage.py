"""Parquet storage: every table is validated against its schema in `schemas/` and written atomically.

Layout: `<data_root>/tables/<table>/run_id=<run_id>/<shard>.parquet`. A shard is written to a hidden temporary
file, fsynced, renamed into place and its directory fsynced, so a killed or disk-full writer (or a power cut) never
leaves a file read as valid.

Integrity: every page carries a CRC (`write_page_checksum`) that reads verify, the row count is repeated in the
file's metadata (`opforge.rows`, so a flipped footer byte cannot shorten a table) and reads are strict: a missing
non-nullable column or a column whose type changed is an error naming the file and the column, never nulls or a
silent cast.
"""

from __future__ import annotations

import functools
import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from schemas import get_schema


class SchemaError(ValueError):
    """A table or record does not match its declared schema. The message names the table and column."""


_PY_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "bool": (bool,), "double": (float, int)}


def _check_python_types(table: str, field: pa.Field, values: list[Any]) -> None:
    # Arrow would quietly turn True into 1 or 3.0 into 3; we refuse instead of coercing.
    t = field.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_struct(t) or pa.types.is_map(t):
        # A string is iterable: Arrow would read "relu" as the list ["r", "e", "l", "u"].
        want = (dict,) if pa.types.is_struct(t) else (list, tuple, dict) if pa.types.is_map(t) else (list, tuple)
        for i, v in enumerate(values):
            if v is not None and not isinstance(v, want) and type(v).__name__ != "ndarray":
                raise SchemaError(
                    f"table {table!r}, column {field.name!r}: row {i} holds {type(v).__name__} "
                    f"{v!r:.60}, schema says {t}"
                )
        return
    if pa.types.is_integer(t):
        ok: tuple[type, ...] = (int,)
        bad_bool = True
    elif str(t) in _PY_TYPES:
        ok, bad_bool = _PY_TYPES[str(t)], str(t) != "bool"
    else:
        return
    for i, v in enumerate(values):
        if v is None:
            continue
        if not isinstance(v, ok) or (bad_bool and isinstance(v, bool)):
            raise SchemaError(
                f"table {table!r}, column {field.name!r}: row {i} holds {type(v).__name__} {v!r:.60}, schema says {t}"
            )


def _check_nulls(table: str, schema: pa.Schema, data: pa.Table) -> None:
    for f in schema:
        if not f.nullable and data.column(f.name).null_count:
            raise SchemaError(
                f"table {table!r}, column {f.name!r}: {data.column(f.name).null_count} null value(s) "
                f"in a non-nullable column"
            )


def conform(table: str, data: pa.Table | Iterable[Mapping[str, Any]]) -> pa.Table:
    """Return `data` as an Arrow table with exactly the schema of `table`, or raise SchemaError.

    Rows (dicts) must carry exactly the schema's columns; a table must have exactly its columns with equal
    types. Nothing is cast.
    """
    schema = get_schema(table)
    names = set(schema.names)
    if isinstance(data, pa.Table):
        got = set(data.column_names)
        if got != names:
            missing, extra = sorted(names - got), sorted(got - names)
            raise SchemaError(f"table {table!r}: missing column(s) {missing}, unknown column(s) {extra}")
        for f in schema:
            actual = data.schema.field(f.name).type
            if not actual.equals(f.type):
                raise SchemaError(f"table {table!r}, column {f.name!r}: type {actual}, schema says {f.type}")
        out = data.select(schema.names)
        out = pa.Table.from_arrays(out.columns, schema=schema)
        _check_nulls(table, schema, out)
        return out
    rows = list(data)
    for i, row in enumerate(rows):
        keys = set(row)
        if keys != names:
            missing, extra = sorted(names - keys), sorted(keys - names)
            raise SchemaError(f"table {table!r}, row {i}: missing column(s) {missing}, unknown column(s) {extra}")
    arrays = []
    for f in schema:
        values = [r[f.name] for r in rows]
        _check_python_types(table, f, values)
        try:
            arrays.append(pa.array(values, type=f.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as e:
            raise SchemaError(f"table {table!r}, column {f.name!r}: {e}") from None
    out = pa.Table.from_arrays(arrays, schema=schema)
    _check_nulls(table, schema, out)
    return out


class CorruptFileError(OSError):
    """A Parquet file whose bytes do not check out (page CRC, footer, row count). The message names the file."""


ROWS_KEY = b"opforge.rows"


def fsync_dir(path: Path) -> None:
    """Make a rename (or a new file) in `path` durable: the directory entry is data too."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a filesystem that cannot open directories (rare): the file itself is synced already
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_parquet(tbl: pa.Table, path: Path, compression: str = "zstd") -> Path:
    """Write then rename: the final name appears only once the file is complete and synced (file, then dir)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"  # partial_writes() finds these
    meta = dict(tbl.schema.metadata or {})
    meta[ROWS_KEY] = str(tbl.num_rows).encode()
    try:
        pq.write_table(tbl.replace_schema_metadata(meta), tmp, compression=compression, write_page_checksum=True)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()
    _remove_stale_tmp(path)
    return path


def partial_writes(path: Path) -> list[Path]:
    """Temporary files of writes of `path` not (yet) renamed into place: `.<name>.tmp-<pid>-<hex>`."""
    return list(path.parent.glob(f".{path.name}.tmp-*"))


def _remove_stale_tmp(path: Path) -> None:
    """Temporary files of `path` left by a writer that died (kill -9 between write and rename): the name carries
    the writer's pid; those of live processes (another thread of this one, another writer) are left alone."""
    for tmp in partial_writes(path):
        try:
            pid = int(tmp.name.rsplit(".tmp-", 1)[1].split("-", 1)[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, IndexError, PermissionError, OSError):
            continue  # not our naming, or a live process of another user


def _empty_array(t: pa.DataType) -> pa.Array:
    """No values of type `t`; extension types (arrow.json), also nested in lists and structs, from their storage:
    pyarrow cannot make those directly."""
    if isinstance(t, pa.ExtensionType):
        return pa.ExtensionArray.from_storage(t, _empty_array(t.storage_type))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = pa.array([0], pa.int64() if pa.types.is_large_list(t) else pa.int32())
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(offsets, _empty_array(t.value_type), type=t)
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_empty_array(f.type) for f in t], fields=list(t))
    return pa.array([], type=t)


def empty_table(table: str | pa.Schema) -> pa.Table:
    """A table of no rows with exactly the schema (`Schema.empty_table` refuses extension types such as JSON)."""
    schema = get_schema(table) if isinstance(table, str) else table
    return pa.Table.from_arrays([_empty_array(f.type) for f in schema], schema=schema)


@functools.lru_cache(maxsize=None)
def _physical_columns(table: str) -> dict[str, tuple]:
    """How Parquet stores each leaf column of `table` (type, logical type, levels), from an empty file."""
    buf = io.BytesIO()
    pq.write_table(empty_table(table), buf)
    return _leaves(pq.ParquetFile(io.BytesIO(buf.getvalue())).schema)


def _leaves(schema: pq.ParquetSchema) -> dict[str, tuple]:
    cols = (schema.column(i) for i in range(len(schema)))
    return {
        c.path: (
            c.physical_type,
            str(c.logical_type),
            c.converted_type,
            c.max_definition_level,
            c.max_repetition_level,
        )
        for c in cols
    }


def _check_physical(path: Path, table: str) -> None:
    # The Arrow schema in the footer is only a hint: Arrow reads the physical columns and casts them to it, so a
    # flipped byte in a column's physical type would decode the pages as other values with valid checksums.
    try:
        got = _leaves(pq.ParquetFile(path).schema)
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(f"{path}: unreadable Parquet footer ({type(e).__name__}: {e})") from None
    expected = _physical_columns(table)
    unknown = sorted(set(got) - set(expected))
    if unknown:
        raise SchemaError(f"{path}: table {table!r}: unknown column(s) {unknown}")
    for name, want in expected.items():
        if name in got and got[name] != want:
            raise SchemaError(
                f"{path}: table {table!r}, column {name!r} is stored as {got[name]}, the schema "
                f"stores {want} (a changed type or a damaged footer)"
            )


def read_parquet(path: Path, table: str | None = None) -> pa.Table:
    """Read one file, verifying page checksums and the recorded row count; with `table`, strictly in its schema.

    Strict: a column of the schema missing from the file is an error when it is non-nullable (a nullable one reads
    as nulls: a column added by a later schema version); a column of another type, or one the schema does not
    know, is an error (nothing is cast or dropped)."""
    path = Path(path)
    try:
        data = pq.read_table(path, page_checksum_verification=True)
    except (OSError, pa.ArrowException) as e:
        raise CorruptFileError(f"{path}: unreadable Parquet ({type(e).__name__}: {e})") from None
    if table is not None:
        _check_physical(path, table)
    rows = (data.schema.metadata or {}).get(ROWS_KEY)
    if rows is not None and (not rows.isdigit() or int(rows) != data.num_rows):
        raise CorruptFileError(f"{path}: {data.num_rows} rows read, the file's metadata records {rows.decode()!r}")
    if table is None:
        return data
    schema = get_schema(table)
    arrays = []
    for f in schema:
        if f.name not in data.column_names:
            if not f.nullable:
                raise SchemaError(f"{path}: table {table!r}, column {f.name!r} (non-nullable) is missing")
            arrays.append(pa.nulls(data.num_rows, f.type))
            continue
        col = data.column(f.name)
        if not col.type.equals(f.type):
            raise SchemaError(f"{path}: table {table!r}, column {f.name!r} has type {col.type}, schema says {f.type}")
        if not f.nullable and col.null_count:
            raise SchemaError(
                f"{path}: table {table!r}, column {f.name!r}: {col.null_count} null value(s) in a non-nullable column"
            )
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=schema)


def write_table(table: str, data: pa.Table | Iterable[Mapping[str, Any]], path: Path) -> pa.Table:
    """Validate against the schema of `table` and write atomically to `path`. Returns the written table."""
    tbl = conform(table, data)
    atomic_write_parquet(tbl, path)
    return tbl


@dataclass(frozen=True)
class DataStore:
    """Where tables live under the data root."""

    root: Path

    def table_dir(self, table: str, run_id: str | None = None) -> Path:
        base = Path(self.root) / "tables" / table
        return base / f"run_id={run_id}" if run_id else base

    def shard_path(self, table: str, run_id: str, shard: str = "part-00000") -> Path:
        return self.table_dir(table, run_id) / f"{shard}.parquet"

    def write(
        self, table: str, data: pa.Table | Iterable[Mapping[str, Any]], run_id: str, shard: str = "part-00000"
    ) -> tuple[Path, pa.Table]:
        path = self.shard_path(table, run_id, shard)
        return path, write_table(table, data, path)

    def shards(self, table: str, run_id: str | None = None) -> list[Path]:
        d = self.table_dir(table, run_id)
        pattern = "*.parquet" if run_id else "run_id=*/*.parquet"
        return sorted(d.glob(pattern)) if d.exists() else []

    def read(self, table: str, run_id: str | None = None) -> pa.Table:
        """All shards of a table (of one run, or of every run), in the table's schema; strict (`read_parquet`)."""
        files = self.shards(table, run_id)
        schema = get_schema(table)
        if not files:
            return empty_table(schema)
        return pa.concat_tables([read_parquet(f, table) for f in files])


def as_code_column(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A `code` column from a file someone handed us, as strings: text stays text, binary that is valid UTF-8
    becomes text, anything else (integers, undecodable bytes, other types) becomes null, so that the stage gives
    that row its reason (empty code) instead of the whole run crashing on a cast."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    if pa.types.is_string(t):
        return col
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return col.cast(pa.string())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        out = []
        for v in col.to_pylist():
            try:
                out.append(v.decode("utf-8") if v is not None else None)
            except UnicodeDecodeError:
                out.append(None)
        return pa.array(out, pa.string())
    return pa.nulls(len(col), pa.string())


def with_code_column(tbl: pa.Table, name: str = "code") -> pa.Table:
    """`tbl` with its `name` column made strings by `as_code_column` (other columns unchanged)."""
    if name not in tbl.column_names:
        return tbl
    i = tbl.schema.get_field_index(name)
    return tbl.set_column(i, pa.field(name, pa.string()), as_code_column(tbl.column(name)))
