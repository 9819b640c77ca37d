"""The Hub's folder layout: `data/<config>/<split>-NNNNN-of-NNNNN.parquet` (zstd) and the card's `configs:`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.storage import atomic_write_parquet, conform

SPLITS = ("train", "validation")


def write_config(name: str, tbl: pa.Table, root: Path, max_shard_rows: int) -> list[dict[str, str]]:
    """Write one dataset's shards per split, validated against its schema; returns its `data_files` entries."""
    tbl = conform(name, tbl)
    files = []
    for split in SPLITS:
        part = tbl.filter(pc.equal(tbl.column("split"), split))
        if part.num_rows == 0:
            continue
        n = max(1, math.ceil(part.num_rows / max_shard_rows))
        for i in range(n):
            shard = part.slice(i * max_shard_rows, max_shard_rows)
            atomic_write_parquet(shard, root / "data" / name / f"{split}-{i:05d}-of-{n:05d}.parquet")
        files.append({"split": split, "path": f"data/{name}/{split}-*"})
    return files


def configs_yaml(data_files: dict[str, list[dict[str, str]]], default: str) -> list[dict[str, Any]]:
    out = []
    for name, files in data_files.items():
        entry: dict[str, Any] = {"config_name": name, "data_files": files}
        if name == default:
            entry["default"] = True
        out.append(entry)
    return out


def size_category(n: int) -> str:
    """The Hub's size_categories bucket for n rows."""
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
        (1_000_000_000, "100M<n<1B"),
    ):
        if n < limit:
            return label
    return "1B<n<10B"
