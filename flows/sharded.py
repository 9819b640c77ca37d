"""Stages as Prefect tasks: one task per resumable shard (pipeline/shards.py), run by the flow's task runner
(threads locally, Ray workers on a cluster), then recorded in the catalog and shown as artifacts."""

from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed

from flows import progress, runtime
from flows.artifacts import publish_stage_artifacts
from pipeline.catalog import Catalog
from pipeline.config import OpforgeConfig
from pipeline.executor import Resources
from pipeline.shards import (RetryPolicy, ShardResult, ShardSpec, StageOutput, TransientError, call_with_retries,
                             is_complete, plan_shards, read_shards, run_shard, select_ids, single_shard,
                             supersede_stale)
from pipeline.storage import DataStore
from schemas import schema_version


# Resume is the library's job (content-keyed shard files), so Prefect's own result cache stays off.
@task(cache_policy=NO_CACHE, persist_result=False)
def shard_task(spec: ShardSpec, fn: Callable[..., Any], items: pa.Table | None, policy: RetryPolicy) -> ShardResult:
    return run_shard(spec, (lambda: fn(items)) if items is not None else fn, policy)


def _catalog_call(fn: Callable[[], Any]) -> Any:
    # DuckDB lets one process write a file at a time; two flows finishing together meet a lock that clears soon.
    def attempt():
        try:
            return fn()
        except Exception as e:
            if "lock" in str(e).lower():
                raise TransientError(str(e)) from e
            raise

    return call_with_retries(attempt, RetryPolicy(attempts=8, base_delay_s=0.5, max_delay_s=5))[0]


def catalog(cfg: OpforgeConfig) -> Catalog:
    return Catalog(cfg.catalog_path, cfg.data_root)


def record(cfg: OpforgeConfig, run_id: str, stage: str, *, rows_in: int, rows_out: int, reasons: dict[str, int],
           status: str = "completed", detail: str = "", started_at: _dt.datetime | None = None,
           files: list[tuple[str, str, int]] | None = None, data: pa.Table | None = None, **art: Any) -> None:
    """Catalog rows for the stage and its files, and the stage's Prefect artifacts."""
    cat = catalog(cfg)
    for table, path, n in files or []:
        _catalog_call(lambda t=table, p=path, n=n: cat.register_file(run_id, t, p, n, schema_version(t)))
    _catalog_call(lambda: cat.record_stage(run_id, stage, rows_in=rows_in, rows_out=rows_out, drop_reasons=reasons,
                                           status=status, detail=detail, started_at=started_at))
    publish_stage_artifacts(stage, run_id, rows_in, rows_out, reasons, data=data, status=status, detail=detail,
                            paths=[p for _, p, _ in files or []], **art)


def skip(cfg: OpforgeConfig, run_id: str, stage: str, why: str, rows_in: int = 0) -> dict[str, Any]:
    """A stage that cannot run here: recorded as skipped with what it needs, never faked."""
    progress.get().message(f"[yellow]skipped {stage}:[/yellow] {why}")
    record(cfg, run_id, stage, rows_in=rows_in, rows_out=0, reasons={}, status="skipped", detail=why)
    return {"stage": stage, "status": "skipped", "detail": why, "rows_in": rows_in, "rows_out": 0}


def _collect(stage: str, futures: list, specs: list[ShardSpec]) -> list[ShardResult]:
    results: dict[int, ShardResult] = {}
    for fut in as_completed(futures):
        r = fut.result()
        results[r.spec.index] = r
        progress.get().advance(stage)
    return [results[s.index] for s in specs]


def _submit(cfg: OpforgeConfig, stage: str, jobs: list[tuple[ShardSpec, Callable, pa.Table | None]],
            policy: RetryPolicy, res: Resources, threads: int | None) -> list[ShardResult]:
    """One Prefect task per unfinished shard on the configured task runner; results in shard order.

    Finished shards are recognised here, in the driver (their final file exists), so a rerun of a finished stage
    starts no worker at all."""
    done: dict[int, ShardResult] = {}
    todo = []
    for spec, fn, items in jobs:
        if is_complete(Path(spec.path), spec.table):
            done[spec.index] = run_shard(spec, fn, policy)  # reads the file's row count and reasons, computes nothing
            progress.get().advance(stage)
        else:
            todo.append((spec, fn, items))
    if todo:
        with runtime.task_runner(cfg, threads) as runner, runtime.resources(res.cpus, res.gpus, res.memory_mb):
            futures = [runner.submit(shard_task.with_options(task_run_name=f"{stage}-shard-{spec.index:05d}"),
                                     {"spec": spec, "fn": fn, "items": items, "policy": policy})
                       for spec, fn, items in todo]
            for r in _collect(stage, futures, [j[0] for j in todo]):
                done[r.spec.index] = r
    return [done[spec.index] for spec, _, _ in jobs]


def run_stage(cfg: OpforgeConfig, run_id: str, stage: str, table: str, items: pa.Table, id_column: str,
              fn: Callable[[pa.Table], Any], settings: Any, shard_size: int, *,
              res: Resources = Resources(), policy: RetryPolicy = RetryPolicy(), detail: str = "",
              record_catalog: bool = True, threads: int | None = 1) -> StageOutput:
    """Run `fn` over `items` in resumable shards, one Prefect task each; record and return the output.

    `threads`: shards run at once without Ray (1 for pure-Python work; more when the work waits on subprocesses).
    On Ray, every shard is a Ray task with `res`."""
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.monotonic()
    store = DataStore(cfg.data_root)
    specs = plan_shards(stage, table, items.column(id_column).to_pylist(), settings, run_id, store, shard_size)
    progress.get().start(stage, len(specs))
    results = _submit(cfg, stage, [(s, fn, select_ids(items, id_column, s.ids)) for s in specs], policy, res,
                      threads)
    return _finish(cfg, run_id, stage, table, specs, results, items.num_rows, started, t0, detail, record_catalog)


def run_single(cfg: OpforgeConfig, run_id: str, stage: str, table: str, fn: Callable[[], Any], settings: Any,
               inputs: list[str] | None = None, rows_in: int = 0, *, res: Resources = Resources(),
               policy: RetryPolicy = RetryPolicy(), detail: str = "", record_catalog: bool = True) -> StageOutput:
    """A stage that is one unit of work (synthesis from a seed, set-wide dedup), still resumable by content key."""
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.monotonic()
    spec = single_shard(stage, table, settings, run_id, DataStore(cfg.data_root), inputs or [])
    progress.get().start(stage, 1)
    results = _submit(cfg, stage, [(spec, fn, None)], policy, res, 1)
    return _finish(cfg, run_id, stage, table, [spec], results, rows_in, started, t0, detail, record_catalog)


def _finish(cfg: OpforgeConfig, run_id: str, stage: str, table: str, specs: list[ShardSpec],
            results: list[ShardResult], rows_in: int, started: _dt.datetime, t0: float, detail: str,
            record_catalog: bool) -> StageOutput:
    moved = supersede_stale(DataStore(cfg.data_root), table, run_id, specs)
    if moved and record_catalog:  # those files are no longer part of the table
        def forget():
            with catalog(cfg).connect() as con:
                for p in moved:
                    con.execute("DELETE FROM table_files WHERE path = ?",
                                [str((DataStore(cfg.data_root).table_dir(table, run_id) / p.name).resolve())])

        _catalog_call(forget)
    out = StageOutput(stage, table, read_shards(table, specs), results, rows_in, time.monotonic() - t0)
    if record_catalog:
        shards = f"shards: {out.shards_computed} computed, {out.shards_skipped} reused"
        record(cfg, run_id, stage, rows_in=rows_in, rows_out=out.rows_out, reasons=out.drop_reasons,
               started_at=started, detail=f"{detail}; {shards}" if detail else shards, files=[(table, r.spec.path, r.rows) for r in results],
               data=out.data, shards=(out.shards_computed, out.shards_skipped), seconds=out.seconds)
    return out
