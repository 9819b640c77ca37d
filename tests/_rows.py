"""Rows for tests that need a valid record of some table: every column filled from the table's schema, so the
tests keep working when another stage adds a column."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from schemas import get_schema


def _default(t: pa.DataType) -> Any:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_integer(t):
        return 0
    if pa.types.is_floating(t):
        return 0.0
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return []
    if pa.types.is_struct(t):
        return {f.name: _default(f.type) for f in t}
    return None


def row(table: str, **values: Any) -> dict[str, Any]:
    """A row of `table`: nullable columns None, others a neutral value of their type, then `values`."""
    schema = get_schema(table)
    out = {f.name: (None if f.nullable else _default(f.type)) for f in schema}
    unknown = set(values) - set(out)
    if unknown:
        raise KeyError(f"{table} has no column(s) {sorted(unknown)}")
    out.update(values)
    return out
