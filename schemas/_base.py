"""Helpers to declare table schemas: a name, a version, a description per field."""

from __future__ import annotations

import pyarrow as pa


def field(name: str, type_: pa.DataType, doc: str, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable, metadata={"doc": doc})


def table_schema(name: str, version: int, doc: str, fields: list[pa.Field]) -> pa.Schema:
    """Bump `version` on any change; the version is stored in every Parquet file written with it."""
    return pa.schema(fields, metadata={"opforge.table": name, "opforge.version": str(version), "opforge.doc": doc})


# Reused column types.
STR = pa.string()
I64 = pa.int64()
F64 = pa.float64()
BOOL = pa.bool_()
TS = pa.timestamp("us", tz="UTC")
STR_LIST = pa.list_(pa.string())
