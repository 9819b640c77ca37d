"""The DuckDB catalog: runs, stages, the Parquet files each wrote, and one view per table over those files.

Only the driver process writes the catalog (DuckDB allows one writer per file); workers return rows. Connections
are short (one per call) and retry while another process holds the file, so writers and `opforge sql` readers
take turns instead of failing.

Runs: `status` is running, completed, failed or interrupted; `latest` means the last completed run. Views read
`tables/<table>/run_id=*/*.parquet` relative to the data root (`file_search_path`), so a moved or copied data
root keeps working; a table without files has an empty view with its schema's columns.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from pipeline.credentials import redact
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
CREATE TABLE IF NOT EXISTS facts (
    run_id VARCHAR, stage VARCHAR, key VARCHAR, value VARCHAR, recorded_at TIMESTAMPTZ,
    PRIMARY KEY (run_id, stage, key));
CREATE TABLE IF NOT EXISTS releases (
    run_id VARCHAR, repo_id VARCHAR, tag VARCHAR, commit_oid VARCHAR, endpoint VARCHAR, files BIGINT,
    published_at TIMESTAMPTZ, PRIMARY KEY (repo_id, tag));
"""
# Registry tables a read-only snapshot copies (`query_readonly`).
_REGISTRY = ("runs", "stages", "table_files", "facts", "releases")


RUN_STATUSES = ("running", "completed", "failed", "interrupted")


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def _is_lock_error(e: Exception) -> bool:
    msg = str(e).lower()
    return "lock" in msg and ("conflicting" in msg or "could not set" in msg)


def _connect(path: Path, read_only: bool = False, wait_s: float = 60.0) -> duckdb.DuckDBPyConnection:
    """Open the file, waiting (with backoff) while another process holds DuckDB's file lock; the holders' calls
    are short, so this waits for their end rather than failing a run or a query."""
    deadline = time.monotonic() + wait_s
    delay = 0.01
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as e:
            if not _is_lock_error(e) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


@functools.lru_cache(maxsize=None)
def _empty_select(table: str) -> str:
    """A SELECT of no rows with the columns and SQL types of the table's schema."""
    from schemas import get_schema

    con = duckdb.connect()
    try:
        from pipeline.storage import empty_table

        types = con.from_arrow(empty_table(get_schema(table))).types
    finally:
        con.close()
    cols = [f'CAST(NULL AS {t}) AS "{f.name}"' for f, t in zip(get_schema(table), types)]
    return f"SELECT {', '.join(cols)} WHERE false"


def _view_sql(name: str, data_root: Path) -> tuple[str, bool]:
    """The view's SELECT over the table's files (a relative glob), or an empty one; and whether files exist."""
    if any((Path(data_root) / "tables" / name).glob("run_id=*/*.parquet")):
        glob = f"tables/{name}/run_id=*/*.parquet".replace("'", "''")
        return (f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true, union_by_name = true)", True)
    return _empty_select(name), False


def _search_path(con: duckdb.DuckDBPyConnection, data_root: Path) -> None:
    con.execute(f"SET file_search_path = '{str(Path(data_root).resolve()).replace(chr(39), chr(39) * 2)}'")


class Catalog:
    """A DuckDB file at `path`; Parquet data under `data_root/tables/`."""

    def __init__(self, path: Path, data_root: Path | None = None):
        self.path = Path(path)
        self.data_root = Path(data_root) if data_root else self.path.parent
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        con = _connect(self.path)
        try:
            con.execute(_DDL)
            _search_path(con, self.data_root)
            yield con
        finally:
            con.close()

    # -- runs and stages -------------------------------------------------------------------------------------
    def start_run(self, run_id: str, config: dict[str, Any], version: str, note: str = "") -> None:
        """Register (or re-open) a run as running. Secrets in `config` are redacted before they are stored."""
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO runs VALUES (?, ?, NULL, 'running', ?, ?, ?)",
                [run_id, _now(), version, json.dumps(redact(config), default=str), note],
            )

    def mark_running(self, run_id: str) -> None:
        """A run resumed under its id is running again (its first start time is kept)."""
        with self.connect() as con:
            con.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE run_id = ?", [run_id])

    def finish_run(self, run_id: str, status: str = "completed") -> None:
        if status not in RUN_STATUSES[1:]:
            raise ValueError(f"run status {status!r}: one of {RUN_STATUSES[1:]}")
        with self.connect() as con:
            con.execute("UPDATE runs SET finished_at = ?, status = ? WHERE run_id = ?", [_now(), status, run_id])

    def latest_completed_run(self) -> str | None:
        """The last run that completed (by finish time): what `run_id: latest` means everywhere."""
        rows = self.sql(
            "SELECT run_id FROM runs WHERE status = 'completed' ORDER BY finished_at DESC, started_at DESC LIMIT 1"
        ).to_pylist()
        return rows[0]["run_id"] if rows else None

    def resolve_run_id(self, run_id: str | None) -> str | None:
        """ "latest" -> the last completed run (ValueError when there is none); anything else as given."""
        if run_id != "latest":
            return run_id
        found = self.latest_completed_run()
        if not found:
            raise ValueError(
                f"no completed run in {self.path} for run_id 'latest' (running, failed and interrupted "
                "runs are never picked)"
            )
        return found

    def sweep_interrupted(self, data_root: Path | None = None) -> list[str]:
        """Runs still marked running whose run lock nobody holds died without a word (kill -9, power cut): mark
        them interrupted. Runs that never took a lock (written by an older opforge) are left alone."""
        from pipeline import runlock

        root = Path(data_root or self.data_root)
        running = [r["run_id"] for r in self.sql("SELECT run_id FROM runs WHERE status = 'running'").to_pylist()]
        dead = [r for r in running if runlock.lock_path(root, r).exists() and runlock.holder(root, r) is None]
        for r in dead:
            self.finish_run(r, "interrupted")
        return dead

    def record_stage(
        self,
        run_id: str,
        stage: str,
        *,
        rows_in: int,
        rows_out: int,
        drop_reasons: dict[str, int] | None = None,
        status: str = "completed",
        detail: str = "",
        started_at: _dt.datetime | None = None,
    ) -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO stages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    stage,
                    started_at or _now(),
                    _now(),
                    status,
                    rows_in,
                    rows_out,
                    json.dumps(drop_reasons or {}, sort_keys=True),
                    detail,
                ],
            )

    def register_file(self, run_id: str, table: str, path: Path, row_count: int, schema_version: int) -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO table_files VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, table, str(Path(path).resolve()), row_count, schema_version, _now()],
            )
        self.refresh_views()

    # -- provenance and releases -----------------------------------------------------------------------------
    def record_facts(self, run_id: str, stage: str, facts: dict[str, Any]) -> None:
        """Key/value facts a stage wants on the record (reference checksum, command line, ...); secrets redacted."""
        with self.connect() as con:
            for k, v in redact(dict(facts)).items():
                con.execute(
                    "INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?)",
                    [run_id, stage, k, v if isinstance(v, str) else json.dumps(v, default=str), _now()],
                )

    def facts(self, run_id: str) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for r in self.sql(
            "SELECT stage, key, value FROM facts WHERE run_id = ? ORDER BY stage, key", [run_id]
        ).to_pylist():
            out.setdefault(r["stage"], {})[r["key"]] = r["value"]
        return out

    def record_release(self, run_id: str, repo_id: str, tag: str, commit_oid: str, endpoint: str, files: int) -> None:
        with self.connect() as con:
            con.execute(
                "INSERT OR REPLACE INTO releases VALUES (?, ?, ?, ?, ?, ?, ?)",
                [run_id, repo_id, tag, commit_oid, endpoint, files, _now()],
            )

    # -- views and queries -----------------------------------------------------------------------------------
    def refresh_views(self) -> list[str]:
        """(Re)create one view per table: `SELECT * FROM tasks` reads every run's shards (an empty view with the
        schema's columns when the table has no file yet). Returns the tables that have files."""
        made = []
        with self.connect() as con:
            for name in table_names():
                select, has_files = _view_sql(name, self.data_root)
                con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {select}')
                if has_files:
                    made.append(name)
        return made

    def query_readonly(self, query: str, params: list[Any] | None = None) -> pa.Table:
        """`opforge sql`: the query runs on a read-only snapshot, never on the catalog file itself.

        The registry tables are copied out of the catalog under a read-only connection held for milliseconds (a
        running run's writes wait for it, or it for them), into a scratch database that is reopened read-only with
        the table views; so DELETE or DROP fail, and a long query never blocks a run."""
        scratch = Path(tempfile.mkdtemp(prefix="opforge-sql-"))
        try:
            db = scratch / "snapshot.duckdb"
            registry: dict[str, pa.Table] = {}
            if self.path.exists():
                con = _connect(self.path, read_only=True)
                try:
                    have = {
                        r[0]
                        for r in con.execute(
                            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'"
                        ).fetchall()
                    }
                    for t in _REGISTRY:
                        if t in have:
                            registry[t] = con.sql(f"SELECT * FROM {t}").to_arrow_table()
                finally:
                    con.close()
            con = duckdb.connect(str(db))
            try:
                con.execute(_DDL)
                _search_path(con, self.data_root)
                for t, tbl in registry.items():
                    con.register("_src", tbl)
                    con.execute(f"INSERT INTO {t} SELECT * FROM _src")
                    con.unregister("_src")
                for name in table_names():
                    con.execute(f'CREATE VIEW "{name}" AS {_view_sql(name, self.data_root)[0]}')
            finally:
                con.close()
            con = duckdb.connect(str(db), read_only=True)
            try:
                _search_path(con, self.data_root)
                rel = con.sql(query, params=params or None)
                return rel.to_arrow_table() if rel is not None else pa.table({})
            finally:
                con.close()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def sql(self, query: str, params: list[Any] | None = None) -> pa.Table:
        self.refresh_views()
        with self.connect() as con:
            # con.sql gives a relation that converts to Arrow without an extra copy; statements give None.
            rel = con.sql(query, params=params or None)
            return rel.to_arrow_table() if rel is not None else pa.table({})
