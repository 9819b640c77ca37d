"""Publishing refuses tasks whose validation ran outside the jail (`sandbox.mode=unsafe`), unless forced."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds

from pipeline.curate.stage import DATASETS, CurationResult


def unsafe_tasks(data_root: Path | str, result: CurationResult) -> list[str]:
    """Task ids of the release whose validation row (in any run under `data_root`) says jail = "unsafe"."""
    published: set[str] = set()
    for name in DATASETS:
        tbl = getattr(result, name)
        if tbl.num_rows and "task_id" in tbl.column_names:
            published.update(str(t) for t in tbl.column("task_id").to_pylist() if t)
    root = Path(data_root) / "tables" / "validation"
    files = sorted(str(p) for p in root.rglob("*.parquet")) if root.is_dir() else []
    if not published or not files:
        return []
    data = ds.dataset(files, format="parquet")
    if "jail" not in data.schema.names:
        return []
    tbl = data.to_table(columns=["task_id", "jail"], filter=pc.field("jail") == "unsafe")
    return sorted(published & {str(t) for t in tbl.column("task_id").to_pylist()})
