"""Rows for tests that need a valid record of some table: every column filled from the table's schema, so the
tests keep working when another stage adds a column."""

from __future__ import annotations

from typing import Any

from schemas import neutral_row


def row(table: str, **values: Any) -> dict[str, Any]:
    """A row of `table`: nullable columns None, others a neutral value of their type, then `values`."""
    out = neutral_row(table)
    unknown = set(values) - set(out)
    if unknown:
        raise KeyError(f"{table} has no column(s) {sorted(unknown)}")
    out.update(values)
    return out
