"""The one runner: executes any stage (pipeline/stage.py) of a run, and is the only writer of the catalog for runs.

For a sharded stage it asks the stage's plan for its input and arguments, splits the input into content-keyed
shards (pipeline/shards.py), skips the shards already written (resume), runs the others on an executor
(pipeline/executor.py: this process, threads or Ray; the stage never knows which), retires shards of older
settings and records the stage, its files and its drop reasons in the catalog. A whole-table stage (curate,
publish) returns an `Outcome` that is recorded the same way. A stage that cannot run here (no GPU, no model, no
KernelBench, no input) is recorded as skipped with what it needs; a stage whose code cannot be imported fails
the run (`StageUnavailable`): nothing is ever reported as done that did not run.

The sharded execution itself is `pipeline.shards.run_sharded`; this module adds the stage contract, the catalog
and the observer. `run_steps` runs several stages as one run under the run's lock: completed, failed or
interrupted. The Prefect flows (flows/stages.py) and the stage commands of the CLI both call this module, so both
resume.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import pyarrow as pa

from pipeline.catalog import Catalog
from pipeline.config import OpforgeConfig, load_config
from pipeline.executor import Executor, LocalExecutor, default_executor
from pipeline.shards import RetryPolicy, StageOutput, TransientError, call_with_retries, run_sharded
from pipeline.stage import Outcome, Plan, ShardCall, Skip, Stage, StageUnavailable, device
from pipeline.storage import DataStore
from schemas import schema_version

log = logging.getLogger("opforge.runner")


class Observer(Protocol):
    """Who watches a run: progress bars, Prefect artifacts. All methods are optional no-ops in `Quiet`."""

    def start(self, stage: str, total: int) -> None: ...

    def advance(self, stage: str) -> None: ...

    def message(self, text: str) -> None: ...

    def recorded(
        self, stage: str, run_id: str, rows_in: int, rows_out: int, reasons: dict[str, int], **kw: Any
    ) -> None: ...


class Quiet:
    def start(self, stage: str, total: int) -> None:
        pass

    def advance(self, stage: str) -> None:
        pass

    def message(self, text: str) -> None:
        log.info("%s", text)

    def recorded(
        self, stage: str, run_id: str, rows_in: int, rows_out: int, reasons: dict[str, int], **kw: Any
    ) -> None:
        pass


class ConsoleObserver(Quiet):
    """Progress lines for the stage commands of the CLI (`console`: anything with `print`, e.g. rich's)."""

    def __init__(self, console: Any):
        self.console, self.totals, self.done, self.t0 = console, {}, {}, {}

    def start(self, stage: str, total: int) -> None:
        self.totals[stage], self.done[stage], self.t0[stage] = total, 0, time.monotonic()

    def advance(self, stage: str) -> None:
        self.done[stage] = self.done.get(stage, 0) + 1
        n, total = self.done[stage], self.totals.get(stage, 0)
        if total > 1 and (n % 10 == 0 or n == total):
            self.console.print(f"  {stage}: {n}/{total} shards ({time.monotonic() - self.t0[stage]:.0f}s)")

    def message(self, text: str) -> None:
        self.console.print(text)


ExecutorFor = Callable[[Stage], Executor]


def start_ray(cfg: OpforgeConfig, env_vars: dict[str, str] | None = None) -> None:
    """Join `ray.address`, or start this process's local Ray sized by `ray.num_cpus` (stage commands' --ray)."""
    from pipeline.executor import ensure_ray

    ensure_ray(cfg.ray.address, cfg.ray.num_cpus, cfg.ray.object_store_mb, env_vars=env_vars)


def local_or_ray(stage: Stage) -> Executor:
    """The default executor: Ray when it is up in this process, else this process (the stage's threads)."""
    return default_executor(stage.threads or os.cpu_count() or 1)


def in_this_process(stage: Stage) -> Executor:
    """Every shard in this process, one after another (a CLI that shows live progress of one unit of work)."""
    return LocalExecutor(1)


def item_executor() -> Executor:
    """The executor a stage function spreads one shard's items on (`Stage.fan_out`): Ray tasks when Ray is up
    (from a Ray worker too), else one after another in the shard's own process."""
    return default_executor(1)


# -- the catalog -----------------------------------------------------------------------------------------------


def catalog(cfg: OpforgeConfig) -> Catalog:
    return Catalog(cfg.catalog_path, cfg.data_root)


def catalog_call(fn: Callable[[], Any]) -> Any:
    """DuckDB lets one process write a file at a time; two runs finishing together meet a lock that clears soon."""

    def attempt():
        try:
            return fn()
        except Exception as e:
            if "lock" in str(e).lower():
                raise TransientError(str(e)) from e
            raise

    return call_with_retries(attempt, RetryPolicy(attempts=8, base_delay_s=0.5, max_delay_s=5))[0]


def load(config: str | Path | None, overrides: list[str] | None, run_id: str | None) -> OpforgeConfig:
    """The typed config of a run; `run_id="latest"` picks the last completed run in the catalog (never a running,
    failed or interrupted one); no run id: a new one."""
    cfg = load_config(config, list(overrides or []))
    if run_id == "latest" or (not run_id and cfg.run_id == "latest"):
        run_id = catalog(cfg).resolve_run_id("latest")
    if run_id:
        cfg = cfg.model_copy(update={"run_id": run_id})
    cfg = cfg.with_run_id()
    return cfg.model_copy(update={"data_root": Path(cfg.data_root).resolve()})


def ensure_run(cfg: OpforgeConfig, note: str) -> None:
    """Register the run once (a stage started alone opens the run it writes to); a resumed run is running again."""
    cat = catalog(cfg)
    if not cat.sql("SELECT 1 FROM runs WHERE run_id = ?", [cfg.run_id]).num_rows:
        from pipeline.provenance import version

        cat.start_run(cfg.run_id, cfg.dump(), version(), note=note)
    else:
        cat.mark_running(cfg.run_id)


def record(
    cfg: OpforgeConfig,
    stage: str,
    *,
    rows_in: int,
    rows_out: int,
    reasons: dict[str, int],
    status: str = "completed",
    detail: str = "",
    started_at: _dt.datetime | None = None,
    files: Sequence[tuple[str, str, int]] = (),
    observer: Observer | None = None,
    **art: Any,
) -> None:
    """Catalog rows for the stage and its files; the observer hears of it (Prefect artifacts)."""
    cat = catalog(cfg)
    for table, path, n in files:
        catalog_call(lambda t=table, p=path, n=n: cat.register_file(cfg.run_id, t, p, n, schema_version(t)))
    catalog_call(
        lambda: cat.record_stage(
            cfg.run_id,
            stage,
            rows_in=rows_in,
            rows_out=rows_out,
            drop_reasons=reasons,
            status=status,
            detail=detail,
            started_at=started_at,
        )
    )
    (observer or Quiet()).recorded(
        stage,
        cfg.run_id,
        rows_in,
        rows_out,
        reasons,
        status=status,
        detail=detail,
        paths=[p for _, p, _ in files],
        **art,
    )


def skip(
    cfg: OpforgeConfig, stage: str, why: str, observer: Observer | None = None, rows_in: int = 0
) -> dict[str, Any]:
    """A stage that cannot run here: recorded as skipped with what it needs, never faked."""
    (observer or Quiet()).message(f"[yellow]skipped {stage}:[/yellow] {why}")
    record(cfg, stage, rows_in=rows_in, rows_out=0, reasons={}, status="skipped", detail=why, observer=observer)
    return {"stage": stage, "status": "skipped", "detail": why, "rows_in": rows_in, "rows_out": 0}


# -- one stage -------------------------------------------------------------------------------------------------


def missing_needs(stage: Stage, cfg: OpforgeConfig) -> str | None:
    """What the stage needs that this run lacks, in words a user can act on; None when nothing is missing."""
    missing = []
    section = getattr(cfg, stage.settings, None)
    if stage.needs.model and getattr(section, "backend", None) == "vllm" and not getattr(section, "model", None):
        missing.append(f"a model (--set {stage.settings}.model=PATH_OR_HF_ID, served by vLLM)")
    if stage.needs.gpu and device(cfg) != "cuda":
        missing.append(
            "an NVIDIA GPU with CUDA for compiling and timing kernels (on a cluster: ray.address of a "
            "cluster with GPU workers)"
        )
    return " and ".join(missing) if missing else None


def run_stage(
    stage: Stage,
    cfg: OpforgeConfig,
    *,
    executor: ExecutorFor = local_or_ray,
    observer: Observer | None = None,
    shard_size: int | None = None,
    policy: RetryPolicy = RetryPolicy(),
    items: pa.Table | None = None,
    check_needs: bool = True,
    extra_args: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one stage of `cfg.run_id`; returns its summary (also recorded in the catalog).

    `items`: the stage's input given by the caller (a CLI reading a file) instead of the run's tables;
    `check_needs=False`: the caller asked for this stage here explicitly (a CLI; the stage reports what it lacks
    itself); `extra_args`: more keyword arguments of the per-shard function (callbacks; in-process executors)."""
    obs = observer or Quiet()
    why = missing_needs(stage, cfg) if check_needs else None
    if why:
        return skip(cfg, stage.name, f"needs {why}", obs)
    stage.function()  # StageUnavailable: the run fails, naming the missing code
    planner = stage.planner()
    try:
        if planner is None:
            return _run_whole(stage, cfg, obs)
        plan = planner(cfg) if items is None else planner(cfg, items=items)
    except Skip as e:
        return skip(cfg, stage.name, str(e), obs)
    if extra_args:
        plan.args = {**plan.args, **extra_args}
    if plan.facts:
        catalog_call(lambda: catalog(cfg).record_facts(cfg.run_id, stage.name, dict(plan.facts)))
    out = _run_sharded(stage, cfg, plan, executor(stage), obs, shard_size or stage.shard_size, policy)
    summary = {
        "stage": stage.name,
        "status": "completed",
        "rows_in": out.rows_in,
        "rows_out": out.rows_out,
        "drop_reasons": out.drop_reasons,
        "shards_computed": out.shards_computed,
        "shards_skipped": out.shards_skipped,
        "seconds": round(out.seconds, 2),
        "table": out.table,
    }
    if plan.finish is not None:
        summary.update(plan.finish(out.data))
    return summary


def _run_sharded(
    stage: Stage,
    cfg: OpforgeConfig,
    plan: Plan,
    executor: Executor,
    obs: Observer,
    shard_size: int,
    policy: RetryPolicy,
) -> StageOutput:
    started = _dt.datetime.now(_dt.timezone.utc)
    table = stage.outputs[0]
    store = DataStore(cfg.data_root)
    call = ShardCall(stage.fn, {**plan.args, **({"executor": item_executor()} if stage.fan_out else {})})
    out = run_sharded(
        stage.name,
        table,
        plan.items,
        stage.shard_key,
        call,
        plan.key if plan.key is not None else getattr(cfg, stage.settings),
        cfg.run_id,
        store,
        shard_size,
        policy=policy,
        resources=stage.resources,
        executor=executor,
        inputs=plan.ids,
        rows_in=plan.rows_in,
        on_plan=lambda n: obs.start(stage.name, n),
        on_shard=lambda _r: obs.advance(stage.name),
    )
    if out.moved:  # those files are no longer part of the table

        def forget():
            with catalog(cfg).connect() as con:
                for p in out.moved:
                    con.execute(
                        "DELETE FROM table_files WHERE path = ?",
                        [str((store.table_dir(table, cfg.run_id) / p.name).resolve())],
                    )

        catalog_call(forget)
    shards = f"shards: {out.shards_computed} computed, {out.shards_skipped} reused"
    record(
        cfg,
        stage.name,
        rows_in=out.rows_in,
        rows_out=out.rows_out,
        reasons=out.drop_reasons,
        started_at=started,
        detail=f"{plan.detail}; {shards}" if plan.detail else shards,
        files=[(table, r.spec.path, r.rows) for r in out.results],
        observer=obs,
        data=out.data,
        shards=(out.shards_computed, out.shards_skipped),
        seconds=out.seconds,
    )
    return out


def _run_whole(stage: Stage, cfg: OpforgeConfig, obs: Observer) -> dict[str, Any]:
    started = _dt.datetime.now(_dt.timezone.utc)
    t0 = time.monotonic()
    out: Outcome = stage.function()(cfg, catalog(cfg))
    if out.release:
        r = out.release
        catalog_call(
            lambda: catalog(cfg).record_release(
                cfg.run_id, r["repo_id"], r["tag"], r["commit"], r["endpoint"], r["files"]
            )
        )
    record(
        cfg,
        stage.name,
        rows_in=out.rows_in,
        rows_out=out.rows_out,
        reasons=out.drop_reasons,
        detail=out.detail,
        started_at=started,
        files=list(out.files),
        observer=obs,
        seconds=time.monotonic() - t0,
    )
    if out.message:
        obs.message(out.message)
    return {
        "stage": stage.name,
        "status": "completed",
        "rows_in": out.rows_in,
        "rows_out": out.rows_out,
        "drop_reasons": out.drop_reasons,
        **out.summary,
    }


# -- a run: several stages under the run's lock ----------------------------------------------------------------


def mark_interrupted(cat: Catalog, run_id: str | None = None) -> None:
    """A run whose writer stopped without finishing it (a crash, a cancellation) is interrupted; so is any run
    whose writer died (its lock is free)."""
    if run_id and cat.sql("SELECT status FROM runs WHERE run_id = ?", [run_id]).to_pylist() == [{"status": "running"}]:
        cat.finish_run(run_id, "interrupted")
    cat.sweep_interrupted()


Step = tuple[str, Callable[[OpforgeConfig], dict[str, Any]]]


def steps(
    stages: Sequence[Stage],
    *,
    executor: ExecutorFor = local_or_ray,
    observer: Observer | None = None,
    shard_size: int | None = None,
) -> list[Step]:
    """(name, body) pairs for `run_steps`: each body runs its stage with this executor and observer."""
    return [
        (
            s.name,
            lambda cfg, s=s: run_stage(
                s, cfg, executor=executor, observer=observer, shard_size=shard_size if s.shard_key else None
            ),
        )
        for s in stages
    ]


def run_steps(
    cfg: OpforgeConfig,
    stage_steps: Sequence[Step],
    note: str,
    *,
    observer: Observer | None = None,
    on_start: Callable[[Catalog], None] | None = None,
) -> dict[str, Any]:
    """Run the steps on `cfg.run_id` under its run lock, in order, stopping at the first failure: the run ends
    completed, failed (a stage raised; RuntimeError) or interrupted (a signal, Ctrl-C, a cancellation: any
    BaseException). A second writer of the same run id is refused (RunLocked)."""
    from pipeline.runlock import run_lock

    obs = observer or Quiet()
    with run_lock(cfg.data_root, cfg.run_id):
        cat = catalog(cfg)
        try:
            cat.sweep_interrupted()  # runs whose process died without a word (kill -9) say so
            ensure_run(cfg, note=note)
            if on_start:
                on_start(cat)
            results, status = _loop(cfg, stage_steps, obs)
        except BaseException:
            cat.finish_run(cfg.run_id, "interrupted")
            raise
        cat.finish_run(cfg.run_id, status)
    if status == "failed":
        raise RuntimeError(f"run {cfg.run_id}: stage {results[-1]['stage']} failed: {results[-1]['detail']}")
    return {"run_id": cfg.run_id, "data_root": str(cfg.data_root), "stages": results}


def _loop(cfg: OpforgeConfig, stage_steps: Sequence[Step], obs: Observer) -> tuple[list[dict[str, Any]], str]:
    log.info("run %s: %s (data root %s)", cfg.run_id, ", ".join(n for n, _ in stage_steps), cfg.data_root)
    results: list[dict[str, Any]] = []
    for name, body in stage_steps:
        try:
            results.append(body(cfg))
        except Exception as e:
            log.error("stage %s failed:\n%s", name, traceback.format_exc())
            detail = f"{type(e).__name__}: {e}"
            record(cfg, name, rows_in=0, rows_out=0, reasons={}, status="failed", detail=detail[:500], observer=obs)
            results.append({"stage": name, "status": "failed", "detail": detail})
            return results, "failed"
    return results, "completed"


__all__ = [
    "Observer",
    "Quiet",
    "StageUnavailable",
    "catalog",
    "ensure_run",
    "load",
    "record",
    "run_stage",
    "run_steps",
    "skip",
    "steps",
]
