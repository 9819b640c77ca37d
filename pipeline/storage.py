"""Parquet storage: every table is validated against its schema in `schemas/` and written atomically.

Layout: `<data_root>/tables/<table>/run_id=<run_id>/<shard>.parquet`. A shard is written to a hidden temporary
file, fsynced and renamed into place, so a killed or disk-full writer never leaves a file read as valid.
"""

from __future__ import annotations

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
                raise SchemaError(f"table {table!r}, column {field.name!r}: row {i} holds {type(v).__name__} "
                                  f"{v!r:.60}, schema says {t}")
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
                f"table {table!r}, column {field.name!r}: row {i} holds {type(v).__name__} {v!r:.60}, "
                f"schema says {t}"
            )


def _check_nulls(table: str, schema: pa.Schema, data: pa.Table) -> None:
    for f in schema:
        if not f.nullable and data.column(f.name).null_count:
            raise SchemaError(f"table {table!r}, column {f.name!r}: {data.column(f.name).null_count} null value(s) "
                              f"in a non-nullable column")


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


def atomic_write_parquet(tbl: pa.Table, path: Path, compression: str = "zstd") -> Path:
    """Write then rename: the final name appears only once the file is complete and synced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        pq.write_table(tbl, tmp, compression=compression)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


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

    def write(self, table: str, data: pa.Table | Iterable[Mapping[str, Any]], run_id: str,
              shard: str = "part-00000") -> tuple[Path, pa.Table]:
        path = self.shard_path(table, run_id, shard)
        return path, write_table(table, data, path)

    def shards(self, table: str, run_id: str | None = None) -> list[Path]:
        d = self.table_dir(table, run_id)
        pattern = "*.parquet" if run_id else "run_id=*/*.parquet"
        return sorted(d.glob(pattern)) if d.exists() else []

    def read(self, table: str, run_id: str | None = None) -> pa.Table:
        """All shards of a table (of one run, or of every run), in the table's schema."""
        files = self.shards(table, run_id)
        schema = get_schema(table)
        if not files:
            return schema.empty_table()
        return pa.concat_tables([pq.read_table(f, schema=schema) for f in files])
