"""One versioned Arrow schema per table: the single source of truth for every Parquet file the pipeline writes.

Each module here defines `SCHEMA` (built with `schemas._base.table_schema`). `get_schema(name)` returns it;
`pipeline.storage` validates every write against it and never coerces.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pyarrow as pa

_REGISTRY: dict[str, pa.Schema] = {}


def _load() -> dict[str, pa.Schema]:
    if not _REGISTRY:
        for mod in pkgutil.iter_modules(__path__):
            if mod.name.startswith("_"):
                continue
            schema = importlib.import_module(f"{__name__}.{mod.name}").SCHEMA
            name = schema.metadata[b"opforge.table"].decode()
            if name in _REGISTRY:
                raise RuntimeError(f"table {name!r} defined twice in schemas/")
            _REGISTRY[name] = schema
    return _REGISTRY


def table_names() -> list[str]:
    return sorted(_load())


def get_schema(name: str) -> pa.Schema:
    reg = _load()
    if name not in reg:
        raise KeyError(f"no schema for table {name!r}; known: {', '.join(sorted(reg))}")
    return reg[name]


def schema_version(name: str) -> int:
    return int(get_schema(name).metadata[b"opforge.version"])


def _neutral(t: pa.DataType) -> Any:
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
        return {f.name: _neutral(f.type) for f in t}
    return None


def neutral_row(name: str) -> dict[str, Any]:
    """A row of table `name` that passes validation: nullable columns None, others a neutral value of their type."""
    return {f.name: (None if f.nullable else _neutral(f.type)) for f in get_schema(name)}
