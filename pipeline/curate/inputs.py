"""Input tables for curation, normalised to Python rows; the latest decision per task wins."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

import pyarrow as pa

from pipeline import selection

Rows = list[dict[str, Any]]
TableLike = pa.Table | Iterable[Mapping[str, Any]] | None


def as_rows(data: TableLike) -> Rows:
    """Arrow table, list of dicts or None, as a list of plain dicts."""
    if data is None:
        return []
    if isinstance(data, pa.Table):
        return data.to_pylist()
    return [dict(r) for r in data]


def latest_by_task(rows: Rows) -> dict[str, dict[str, Any]]:
    """One row per task_id: the one of the latest run (run ids sort by time), ties by position (last wins)."""
    return selection.latest_by_task(rows)


def loads_json(text: Any, default: Any) -> Any:
    """Parse a JSON column; a malformed or missing value gives `default` (never raises)."""
    if text is None or text == "":
        return default
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return default
