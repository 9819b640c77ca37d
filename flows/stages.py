"""One Prefect flow per stage, and the end-to-end flow: thin wrappers over the library's stage functions.

Every flow takes the same parameters: `config` (a YAML path), `overrides` (`["synth.n=50", ...]`) and `run_id`
(a new one when empty; "latest" for the newest run in the catalog). Stages exchange data through Parquet tables
under the data root, keyed by run id, so each flow can run alone (from a schedule) or inside the end-to-end flow.
A stage whose code or hardware is missing is recorded as skipped with what it needs; it is never faked.
"""

from __future__ import annotations

import importlib
import os
import traceback
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from prefect import flow, get_run_logger

from flows import progress, runtime
from flows.sharded import catalog, record, run_single, run_stage, skip
from pipeline.config import OpforgeConfig, load_config
from pipeline.executor import Resources
from pipeline.storage import DataStore

VERSION = "0.1.0"


class StageUnavailable(RuntimeError):
    """The stage's library code is not importable here (not written yet, or a dependency is missing)."""


def stage_fn(module: str, name: str) -> Callable[..., Any]:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise StageUnavailable(f"{module} is not available ({e})") from None
    except Exception as e:  # a broken module: name the error rather than crash the whole run
        raise StageUnavailable(f"{module} failed to import: {type(e).__name__}: {e}") from None
    if not hasattr(mod, name):
        raise StageUnavailable(f"{module}.{name} does not exist")
    return getattr(mod, name)


def load(config: str | None, overrides: list[str] | None, run_id: str | None) -> OpforgeConfig:
    """The typed config for a flow run; `run_id="latest"` picks the newest run in the catalog."""
    cfg = load_config(config, list(overrides or []))
    if run_id == "latest":
        rows = catalog(cfg).sql("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").to_pylist()
        if not rows:
            raise ValueError(f"no runs in {cfg.catalog_path}; run the synthesize flow first")
        run_id = rows[0]["run_id"]
    if run_id:
        cfg = cfg.model_copy(update={"run_id": run_id})
    cfg = cfg.with_run_id()
    return cfg.model_copy(update={"data_root": Path(cfg.data_root).resolve()})


def ensure_run(cfg: OpforgeConfig, note: str) -> None:
    """Register the run once (a stage flow started alone opens the run it writes to)."""
    cat = catalog(cfg)
    if not cat.sql("SELECT 1 FROM runs WHERE run_id = ?", [cfg.run_id]).num_rows:
        cat.start_run(cfg.run_id, cfg.dump(), VERSION, note=note)


def device(cfg: OpforgeConfig) -> str:
    if cfg.device != "auto":
        return cfg.device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except Exception:
        return "cpu"


def _table(cfg: OpforgeConfig, name: str) -> pa.Table:
    return DataStore(cfg.data_root).read(name, cfg.run_id)


def _has(cfg: OpforgeConfig, name: str) -> bool:
    return bool(DataStore(cfg.data_root).shards(name, cfg.run_id))


def _summary(stage: str, out) -> dict[str, Any]:
    return {"stage": stage, "status": "completed", "rows_in": out.rows_in, "rows_out": out.rows_out,
            "drop_reasons": out.drop_reasons, "shards_computed": out.shards_computed,
            "shards_skipped": out.shards_skipped, "seconds": round(out.seconds, 2), "table": out.table}


def _guard(cfg: OpforgeConfig, stage: str, body: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return body()
    except StageUnavailable as e:
        return skip(cfg, cfg.run_id, stage, f"stage code not available: {e}")


# -- stages ----------------------------------------------------------------------------------------------------

def do_synthesize(cfg: OpforgeConfig) -> dict[str, Any]:
    synthesize = stage_fn("pipeline.synth.stage", "synthesize")
    settings, run_id = cfg.synth, cfg.run_id
    out = run_single(cfg, run_id, "synthesize", "tasks", _Synth(synthesize, settings, run_id), settings,
                     rows_in=cfg.synth.n, res=Resources(cpus=1))
    return _summary("synthesize", out)


class _Synth:
    # A small picklable callable (Ray ships it to a worker); a closure over the config would drag the whole of it.
    def __init__(self, fn, settings, run_id):
        self.fn, self.settings, self.run_id = fn, settings, run_id

    def __call__(self):
        return self.fn(self.settings, self.run_id)


class _PerShard:
    """fn(shard, *args, **kwargs): a stage function applied to one shard of its input."""

    def __init__(self, fn, *args, **kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __call__(self, shard: pa.Table):
        return self.fn(shard, *self.args, **self.kwargs)


def do_validate(cfg: OpforgeConfig, shard_size: int = 4) -> dict[str, Any]:
    validate = stage_fn("pipeline.validate.stage", "validate")
    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "validate", "no tasks for this run (run synthesize first)")
    tasks = _table(cfg, "tasks")
    dev = device(cfg)
    out = run_stage(cfg, cfg.run_id, "validate", VALIDATION_TABLE, tasks, "task_id",
                    _PerShard(validate, cfg.validate_, device=dev), {"settings": cfg.validate_, "device": dev},
                    shard_size, res=Resources(cpus=1, gpus=1 if dev == "cuda" else 0))
    return _summary("validate", out)


VALIDATION_TABLE = "validation"
CONTAMINATION_TABLE = "contamination"


def valid_tasks(cfg: OpforgeConfig) -> tuple[pa.Table, str]:
    """Tasks that passed validation (all tasks, with a note, when this run has no validation table)."""
    tasks = _table(cfg, "tasks")
    if not _has(cfg, VALIDATION_TABLE):
        return tasks, "validation not run: every synthesized task was checked"
    val = _table(cfg, VALIDATION_TABLE)
    ok = val.filter(pc.equal(val.column("valid"), True)).column("task_id")
    return tasks.filter(pc.is_in(tasks.column("task_id"), value_set=ok)), ""


def do_decontaminate(cfg: OpforgeConfig, shard_size: int = 8) -> dict[str, Any]:
    decontaminate = stage_fn("pipeline.decontam.stage", "decontaminate")
    from pipeline.kernelbench import KernelBenchNotFound, fingerprint, load_reference, resolve_source

    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "decontaminate", "no tasks for this run (run synthesize first)")
    try:
        reference = load_reference(resolve_source(cfg.kernelbench))
    except KernelBenchNotFound as e:
        return skip(cfg, cfg.run_id, "decontaminate", str(e))
    candidates, note = valid_tasks(cfg)
    # The reference's checksum is part of every shard's key: a new KernelBench version recomputes everything.
    key = {"settings": cfg.decontam, "reference": fingerprint(reference)}
    out = run_stage(cfg, cfg.run_id, "decontaminate", CONTAMINATION_TABLE, candidates, "task_id",
                    _PerShard(decontaminate, reference, cfg.decontam), key, shard_size,
                    detail=note or f"reference: {len(reference)} KernelBench problems")
    return _summary("decontaminate", out)


def _needs_gpu_and_model(cfg: OpforgeConfig, stage: str) -> str | None:
    dev = device(cfg)
    missing = []
    if stage == "rollout" and not cfg.rollout.model and cfg.rollout.backend == "vllm":
        missing.append("a model (--set rollout.model=PATH_OR_HF_ID)")
    if dev != "cuda" and not (stage == "rollout" and cfg.rollout.backend != "vllm"):
        missing.append("an NVIDIA GPU (CUDA); on a cluster set ray.address to one with GPU workers")
    return " and ".join(missing) if missing else None


def do_rollout(cfg: OpforgeConfig) -> dict[str, Any]:
    why = _needs_gpu_and_model(cfg, "rollout")
    if why:
        return skip(cfg, cfg.run_id, "rollout", f"needs {why}")
    rollout = stage_fn("pipeline.rollout.stage", "rollout")
    make_backend = stage_fn("pipeline.llm.backend", "make_backend")
    candidates, _ = valid_tasks(cfg)
    backend = make_backend(cfg.rollout)
    out = run_single(cfg, cfg.run_id, "rollout", "trajectories",
                     lambda: rollout(candidates, cfg.rollout, backend, cfg.eval, cfg.run_id),
                     {"rollout": cfg.rollout, "eval": cfg.eval}, candidates.column("task_id").to_pylist(),
                     rows_in=candidates.num_rows, res=Resources(cpus=1, gpus=1))
    return _summary("rollout", out)


def do_evaluate(cfg: OpforgeConfig) -> dict[str, Any]:
    why = _needs_gpu_and_model(cfg, "evaluate")
    if why:
        return skip(cfg, cfg.run_id, "evaluate", f"needs {why}")
    stage_fn("pipeline.evaluate.harness", "evaluate")
    # Rollouts evaluate every kernel they write (the reward is part of each trajectory); a separate evaluation
    # pass over stored solutions is run with `opforge eval`.
    return skip(cfg, cfg.run_id, "evaluate", "kernels are evaluated inside rollouts; standalone: `opforge eval`")


def do_curate(cfg: OpforgeConfig) -> dict[str, Any]:
    curate = stage_fn("pipeline.curate.stage", "curate")
    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "curate", "no tasks for this run")
    res = curate(_table(cfg, "tasks"), _table(cfg, VALIDATION_TABLE) if _has(cfg, VALIDATION_TABLE) else None,
                 _table(cfg, CONTAMINATION_TABLE) if _has(cfg, CONTAMINATION_TABLE) else None,
                 _table(cfg, "trajectories") if _has(cfg, "trajectories") else None, cfg.curate, cfg.run_id)
    return {"stage": "curate", "status": "completed", "result": res}


def do_publish(cfg: OpforgeConfig) -> dict[str, Any]:
    publish_local = stage_fn("pipeline.publish.stage", "publish_local")
    return {"stage": "publish", "status": "completed", "result": publish_local}


# -- flows -----------------------------------------------------------------------------------------------------

def _stage_flow(stage: str, body: Callable[[OpforgeConfig], dict[str, Any]], config, overrides, run_id):
    cfg = load(config, overrides, run_id)
    ensure_run(cfg, note=f"{stage} flow")
    if runtime.use_ray(cfg):
        runtime.start_ray(cfg)
    get_run_logger().info("run %s: %s (data root %s)", cfg.run_id, stage, cfg.data_root)
    return _guard(cfg, stage, lambda: body(cfg))


@flow(name="synthesize", log_prints=True)
def synthesize_flow(config: str | None = None, overrides: list[str] | None = None,
                    run_id: str | None = None) -> dict[str, Any]:
    """Compose candidate operator tasks (KernelBench format) into the run's `tasks` table."""
    return _stage_flow("synthesize", do_synthesize, config, overrides, run_id)


@flow(name="validate", log_prints=True)
def validate_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
    """Run every task in a sandbox (eager and torch.compile) and record a verdict with a reason per task."""
    return _stage_flow("validate", do_validate, config, overrides, run_id)


@flow(name="decontaminate", log_prints=True)
def decontaminate_flow(config: str | None = None, overrides: list[str] | None = None,
                       run_id: str | None = None) -> dict[str, Any]:
    """Check the run's valid tasks against KernelBench in resumable shards; one decision per task."""
    return _stage_flow("decontaminate", do_decontaminate, config, overrides, run_id)


@flow(name="rollout", log_prints=True)
def rollout_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Agent rollouts on the clean tasks (needs a model and GPU workers)."""
    return _stage_flow("rollout", do_rollout, config, overrides, run_id)


@flow(name="evaluate", log_prints=True)
def evaluate_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
    """Kernel evaluation (compile, correctness, timing -> reward) on GPU workers."""
    return _stage_flow("evaluate", do_evaluate, config, overrides, run_id)


@flow(name="curate", log_prints=True)
def curate_flow(config: str | None = None, overrides: list[str] | None = None,
                run_id: str | None = None) -> dict[str, Any]:
    """Build the warm-up, SFT and critic datasets from the run's tables, each drop with a reason."""
    return _stage_flow("curate", do_curate, config, overrides, run_id)


@flow(name="publish", log_prints=True)
def publish_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Write the curated datasets and their data card to a Hub-layout folder (and the Hub when configured)."""
    return _stage_flow("publish", do_publish, config, overrides, run_id)


def _run_stages(stages: list[tuple[str, Callable]], config, overrides, run_id, note: str) -> dict[str, Any]:
    cfg = load(config, overrides, run_id)
    ensure_run(cfg, note=note)
    if runtime.use_ray(cfg):
        runtime.start_ray(cfg)
    results, status = [], "completed"
    for name, body in stages:
        try:
            results.append(_guard(cfg, name, lambda b=body: b(cfg)))
        except Exception as e:
            status = "failed"
            get_run_logger().error("stage %s failed:\n%s", name, traceback.format_exc())
            record(cfg, cfg.run_id, name, rows_in=0, rows_out=0, reasons={}, status="failed",
                   detail=f"{type(e).__name__}: {e}"[:500])
            results.append({"stage": name, "status": "failed", "detail": f"{type(e).__name__}: {e}"})
            break
    catalog(cfg).finish_run(cfg.run_id, status)
    if status == "failed":
        raise RuntimeError(f"run {cfg.run_id}: stage {results[-1]['stage']} failed: {results[-1]['detail']}")
    return {"run_id": cfg.run_id, "data_root": str(cfg.data_root), "stages": results}


END_TO_END = [("synthesize", do_synthesize), ("validate", do_validate), ("decontaminate", do_decontaminate),
              ("rollout", do_rollout), ("evaluate", do_evaluate), ("curate", do_curate), ("publish", do_publish)]


@flow(name="opforge-pipeline", log_prints=True)
def pipeline_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
    """End to end: synthesize -> validate -> decontaminate -> rollout -> evaluate -> curate -> publish."""
    return _run_stages(END_TO_END, config, overrides, run_id, "end-to-end")


@flow(name="nightly-synthesize-decontaminate", log_prints=True)
def nightly_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Nightly: a fresh run that synthesizes, validates and decontaminates new tasks."""
    return _run_stages(END_TO_END[:3], config, overrides, run_id, "nightly")


@flow(name="weekly-publish", log_prints=True)
def weekly_publish_flow(config: str | None = None, overrides: list[str] | None = None,
                        run_id: str | None = "latest") -> dict[str, Any]:
    """Weekly: curate and publish the newest run."""
    return _run_stages(END_TO_END[5:], config, overrides, run_id, "weekly publish")
