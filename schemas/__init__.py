"""One versioned Arrow schema per table: the single source of truth for every Parquet file the pipeline writes.

Each module here defines `SCHEMA` (built with `schemas._base.table_schema`). `get_schema(name)` returns it;
`pipeline.storage` validates every write against it and never coerces.
"""

from __future__ import annotations

import importlib
import pkgutil

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
