"""The DuckDB catalog: runs, stages, the Parquet files each wrote, and one view per table over those files.

Only the driver process writes the catalog (DuckDB allows one writer per file); workers return rows.
"""

from __future__ import annotations

import datetime as _dt
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from schemas import table_names

_DDL = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, status VARCHAR,
    pipeline_version VARCHAR, config JSON, note VARCHAR);
CREATE TABLE IF NOT EXISTS stages (
    run_id VARCHAR, stage VARCHAR, started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, status VARCHAR,
    rows_in BIGINT, rows_out BIGINT, drop_reasons JSON, detail VARCHAR, PRIMARY KEY (run_id, stage));
CREATE TABLE IF NOT EXISTS table_files (
    run_id VARCHAR, table_name VARCHAR, path VARCHAR, row_count BIGINT, schema_version INTEGER,
    written_at TIMESTAMPTZ, PRIMARY KEY (path));
"""


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


class Catalog:
    """A DuckDB file at `path`; Parquet data under `data_root/tables/`."""

    def __init__(self, path: Path, data_root: Path | None = None):
        self.path = Path(path)
        self.data_root = Path(data_root) if data_root else self.path.parent
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = duckdb.connect(str(self.path))
        try:
            con.execute(_DDL)
            yield con
        finally:
            con.close()

    # -- runs and stages -------------------------------------------------------------------------------------
    def start_run(self, run_id: str, config: dict[str, Any], version: str, note: str = "") -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, NULL, 'running', ?, ?, ?)",
                [run_id, _now(), version, json.dumps(config, default=str), note],
            )

    def finish_run(self, run_id: str, status: str = "completed") -> None:
        with self.connect() as con:
            con.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", [_now(), status, run_id])

    def record_stage(self, run_id: str, stage: str, *, rows_in: int, rows_out: int,
                     drop_reasons: dict[str, int] | None = None, status: str = "completed", detail: str = "",
                     started_at: _dt.datetime | None = None) -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO stages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, stage, started_at or _now(), _now(), status, rows_in, rows_out,
                 json.dumps(drop_reasons or {}, sort_keys=True), detail],
            )

    def register_file(self, run_id: str, table: str, path: Path, row_count: int, schema_version: int) -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO table_files VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, table, str(Path(path).resolve()), row_count, schema_version, _now()],
            )
        self.refresh_views()

    # -- views and queries -----------------------------------------------------------------------------------
    def refresh_views(self) -> list[str]:
        """(Re)create one view per table that has files: `SELECT * FROM tasks` reads every run's shards."""
        made = []
        with self.connect() as con:
            for name in table_names():
                d = (self.data_root / "tables" / name).resolve()
                if not any(d.glob("run_id=*/*.parquet")):
                    continue
                glob = str(d / "run_id=*" / "*.parquet").replace("'", "''")
                con.execute(
                    f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM read_parquet(\'{glob}\', '
                    "hive_partitioning = true, union_by_name = true)"
                )
                made.append(name)
        return made

    def sql(self, query: str, params: list[Any] | None = None) -> pa.Table:
        self.refresh_views()
        with self.connect() as con:
            # con.sql gives a relation that converts to Arrow without an extra copy; statements give None.
            rel = con.sql(query, params=params or None)
            return rel.to_arrow_table() if rel is not None else pa.table({})
