"""One Prefect flow per stage, and the end-to-end flow: thin wrappers over the library's stage functions.

Every flow takes the same parameters: `config` (a YAML path), `overrides` (`["synth.n=50", ...]`) and `run_id`
(a new one when empty; "latest" for the last completed run in the catalog). Stages exchange data through Parquet tables
under the data root, keyed by run id, so each flow can run alone (from a schedule) or inside the end-to-end flow.
A stage whose code or hardware is missing is recorded as skipped with what it needs; it is never faked.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import traceback
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc
from prefect import Flow, get_run_logger

from flows import progress, runtime
from flows.sharded import catalog, record, run_single, run_stage, skip
from pipeline.catalog import Catalog
from pipeline.config import OpforgeConfig, load_config
from pipeline.credentials import hide_overrides
from pipeline.executor import Resources
from pipeline.selection import requirements, select_tasks
from pipeline.storage import DataStore

log = logging.getLogger("opforge.flows")


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
    """The typed config for a flow run; `run_id="latest"` picks the last completed run in the catalog (never a
    running, failed or interrupted one)."""
    cfg = load_config(config, list(overrides or []))
    if run_id == "latest" or (not run_id and cfg.run_id == "latest"):
        run_id = catalog(cfg).resolve_run_id("latest")
    if run_id:
        cfg = cfg.model_copy(update={"run_id": run_id})
    cfg = cfg.with_run_id()
    return cfg.model_copy(update={"data_root": Path(cfg.data_root).resolve()})


def ensure_run(cfg: OpforgeConfig, note: str) -> None:
    """Register the run once (a stage flow started alone opens the run it writes to); a resumed run is running
    again."""
    cat = catalog(cfg)
    if not cat.sql("SELECT 1 FROM runs WHERE run_id = ?", [cfg.run_id]).num_rows:
        from pipeline.provenance import version

        cat.start_run(cfg.run_id, cfg.dump(), version(), note=note)
    else:
        cat.mark_running(cfg.run_id)


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
    except ModuleNotFoundError as e:
        if not (e.name or "").startswith("pipeline."):  # a missing third-party package is a real failure
            raise
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
        if self.settings.composer != "llm":
            return self.fn(self.settings, self.run_id)
        from pipeline.llm.backend import make_backend

        backend = make_backend(self.settings.llm)
        try:
            return self.fn(self.settings, self.run_id, backend=backend)
        finally:
            backend.close()


class _PerShard:
    """fn(shard, *args, **kwargs): a stage function applied to one shard of its input (picklable for Ray)."""

    def __init__(self, fn, *args, **kwargs):
        self.fn, self.args, self.kwargs, self.bound = fn, args, kwargs, None

    def bind(self, items: pa.Table) -> "_PerShard":
        """The same call on fixed input, taking no argument (for single-shard stages)."""
        self.bound = items
        return self

    def __call__(self, shard: pa.Table | None = None):
        return self.fn(self.bound if shard is None else shard, *self.args, **self.kwargs)


def do_validate(cfg: OpforgeConfig, shard_size: int | None = None) -> dict[str, Any]:
    validate = stage_fn("pipeline.validate.stage", "validate")
    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "validate", "no tasks for this run (run synthesize first)")
    tasks = _table(cfg, "tasks")
    dev = device(cfg)
    out = run_stage(cfg, cfg.run_id, "validate", VALIDATION_TABLE, tasks, "task_id",
                    _PerShard(validate, cfg.validate_, device=dev), {"settings": cfg.validate_, "device": dev},
                    shard_size or SHARD_SIZE["validate"], res=DRIVER,
                    threads=os.cpu_count())  # each task runs in its own sandbox subprocess: threads just wait
    return _summary("validate", out)


# Shard tasks of GPU stages only drive the work: validate() asks Ray for one GPU per candidate and rollout() for
# its vLLM replicas and kernel evaluations. A driver holding a GPU while it waits for children that need one would
# deadlock a one-GPU node (Ray lends a blocked task's CPU to its children, not its GPU).
DRIVER = Resources(cpus=1, gpus=0)
# Items per shard: a shard is the unit of resume and of parallelism (validation runs subprocesses per task).
SHARD_SIZE = {"validate": 4, "decontaminate": 32, "evaluate": 4}
VALIDATION_TABLE = "validation"
CONTAMINATION_TABLE = "contamination"


def valid_tasks(cfg: OpforgeConfig) -> tuple[pa.Table, str]:
    """Tasks that passed validation (all tasks, with a note, when this run has no validation table)."""
    tasks = _table(cfg, "tasks")
    if not _has(cfg, VALIDATION_TABLE):
        return tasks, "validation not run: every synthesized task was checked"
    return select_tasks(tasks, _decisions(cfg, VALIDATION_TABLE), required=[VALIDATION_TABLE]), ""


def _decisions(cfg: OpforgeConfig, *names: str) -> dict[str, pa.Table | None]:
    return {n: (_table(cfg, n) if _has(cfg, n) else None) for n in names}


def do_decontaminate(cfg: OpforgeConfig, shard_size: int | None = None) -> dict[str, Any]:
    decontaminate = stage_fn("pipeline.decontam.stage", "decontaminate")
    from pipeline import provenance
    from pipeline.kernelbench import KernelBenchNotFound, choose_source, load_reference, pin

    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "decontaminate", "no tasks for this run (run synthesize first)")
    source, _why = choose_source(cfg.kernelbench)
    try:
        reference = load_reference(source)
    except KernelBenchNotFound as e:
        return skip(cfg, cfg.run_id, "decontaminate", str(e))
    ref_pin = pin(reference, cfg.kernelbench)
    candidates, note = valid_tasks(cfg)
    # What this decision is pinned to, on the record before any shard runs: the reference (source, why it was
    # chosen, checksum), the candidates' checksum, the code version and the command line.
    facts = {"reference_source": ref_pin.source, "reference_chosen_by": ref_pin.chosen_by,
             "reference_fingerprint": ref_pin.fingerprint, "reference_problems": str(ref_pin.problems),
             "candidates": str(candidates.num_rows),
             "candidates_checksum": provenance.checksum(zip(candidates.column("task_id").to_pylist(),
                                                            candidates.column("code").to_pylist())),
             "opforge_version": provenance.version(), "command_line": provenance.command_line()}
    catalog(cfg).record_facts(cfg.run_id, "decontaminate", facts)
    # The reference's checksum is part of every shard's key: a new KernelBench version recomputes everything.
    key = {"settings": cfg.decontam, "reference": ref_pin.fingerprint}
    # The index over the reference is built once per process (seconds; kept for the next flow run of a serving
    # process) and shipped to every shard (it pickles to ~2.5 MB).
    index = _reference_index(reference, cfg.decontam)
    out = run_stage(cfg, cfg.run_id, "decontaminate", CONTAMINATION_TABLE, candidates, "task_id",
                    _PerShard(decontaminate, index, cfg.decontam), key, shard_size or SHARD_SIZE["decontaminate"],
                    detail=note or f"against {len(reference)} KernelBench problems, {ref_pin.describe()}")
    summary = _summary("decontaminate", out)
    # The auditor's report (every decision, with diffs against the matched problem), beside the run's tables,
    # with the pin beside it (provenance.json).
    report_dir = Path(cfg.data_root) / "reports" / "decontam" / f"run_id={cfg.run_id}"
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "provenance.json").write_text(json.dumps({"run_id": cfg.run_id, **facts}, indent=1))
    try:
        write_report = stage_fn("pipeline.decontam.report", "write_report")
        summary["report"] = str(write_report(out.data, candidates.select(["task_id", "code"]), reference,
                                             cfg.decontam, report_dir, reference_source=(
                                                 f"{ref_pin.source} ({ref_pin.chosen_by}); opforge "
                                                 f"{facts['opforge_version']}; {facts['candidates']} candidates, "
                                                 f"sha256 {facts['candidates_checksum']}; command: "
                                                 f"{facts['command_line']}")))
    except Exception as e:  # the decisions are stored already; a report that cannot be drawn must not undo them
        get_run_logger().warning("decontamination report not written: %s: %s", type(e).__name__, e)
        summary["report_error"] = f"{type(e).__name__}: {e}"
    return summary


_INDEXES: dict[str, Any] = {}


def _reference_index(reference, settings) -> Any:
    from pipeline.kernelbench import fingerprint
    from pipeline.shards import settings_fingerprint

    key = fingerprint(reference) + settings_fingerprint(settings)
    if key not in _INDEXES:
        _INDEXES.clear()  # one reference at a time: indexes are large
        _INDEXES[key] = stage_fn("pipeline.decontam.index", "ReferenceIndex")(reference, settings)
    return _INDEXES[key]


def clean_tasks(cfg: OpforgeConfig) -> pa.Table:
    """Valid tasks with a clean contamination decision; a task without one is not clean (as in curation)."""
    return select_tasks(_table(cfg, "tasks"), _decisions(cfg, VALIDATION_TABLE, CONTAMINATION_TABLE),
                        required=requirements(cfg.curate))


def do_dedup(cfg: OpforgeConfig) -> dict[str, Any]:
    dedup = stage_fn("pipeline.decontam.stage", "dedup")
    if not _has(cfg, "tasks"):
        return skip(cfg, cfg.run_id, "dedup", "no tasks for this run (run synthesize first)")
    tasks = clean_tasks(cfg)
    # Set-wide (every pair is compared): one unit of work, keyed by all its task ids and settings.
    out = run_single(cfg, cfg.run_id, "dedup", "dedup", _PerShard(dedup, cfg.decontam).bind(tasks), cfg.decontam,
                     tasks.column("task_id").to_pylist(), rows_in=tasks.num_rows)
    return _summary("dedup", out)


def kept_tasks(cfg: OpforgeConfig) -> pa.Table:
    """Tasks that survive validation, decontamination and dedup: the input of rollouts (curation's rule)."""
    return select_tasks(_table(cfg, "tasks"), _decisions(cfg, VALIDATION_TABLE, CONTAMINATION_TABLE, "dedup"),
                        required=requirements(cfg.curate))


def _gpu_missing(cfg: OpforgeConfig, stage: str) -> str | None:
    missing = []
    if stage == "rollout" and cfg.rollout.backend == "vllm" and not cfg.rollout.model:
        missing.append("a model (--set rollout.model=PATH_OR_HF_ID, served by vLLM)")
    if device(cfg) != "cuda":
        missing.append("an NVIDIA GPU with CUDA for compiling and timing kernels (on a cluster: ray.address of a "
                       "cluster with GPU workers)")
    return " and ".join(missing) if missing else None


class _Rollout:
    def __init__(self, fn, tasks, settings, backend_settings, eval_settings, run_id, data_root):
        self.fn, self.tasks, self.settings = fn, tasks, settings
        self.backend_settings, self.eval_settings, self.run_id, self.data_root = (backend_settings, eval_settings,
                                                                                  run_id, data_root)

    def __call__(self):
        from pipeline.llm.backend import make_backend

        return self.fn(self.tasks, self.settings, make_backend(self.backend_settings), self.eval_settings,
                       self.run_id, out_dir=self.data_root)


def do_rollout(cfg: OpforgeConfig) -> dict[str, Any]:
    why = _gpu_missing(cfg, "rollout")
    if why:
        return skip(cfg, cfg.run_id, "rollout", f"needs {why}")
    rollout = stage_fn("pipeline.rollout.stage", "rollout")
    stage_fn("pipeline.llm.backend", "make_backend")
    tasks = kept_tasks(cfg)
    # rollout() keeps its own per-trajectory shards under the data root (a rerun skips finished trajectories);
    # the whole stage is one GPU task here, which fans its tool calls out to Ray itself.
    out = run_single(cfg, cfg.run_id, "rollout", "trajectories",
                     _Rollout(rollout, tasks, cfg.rollout, cfg.rollout, cfg.eval.model_dump(), cfg.run_id,
                              str(cfg.data_root)),
                     {"rollout": cfg.rollout, "eval": cfg.eval}, tasks.column("task_id").to_pylist(),
                     rows_in=tasks.num_rows, res=DRIVER)
    return _summary("rollout", out)


class _Evaluate:
    """Re-evaluate final kernels of trajectories on a GPU: one `evaluations` row per trajectory of the shard."""

    def __init__(self, task_code: dict[str, str], eval_settings: dict[str, Any], run_id: str, work_dir: str):
        self.task_code, self.eval_settings, self.run_id, self.work_dir = task_code, eval_settings, run_id, work_dir

    def __call__(self, shard: pa.Table) -> list[dict[str, Any]]:
        import json as _json

        from pipeline.evaluate.harness import evaluate
        from pipeline.evaluate.records import to_row

        rows = []
        for tr in shard.to_pylist():
            sol = Path(self.work_dir) / tr["traj_id"]
            files = _json.loads(tr["final_kernel"] or "{}")
            for name, text in files.items():  # the agent's workspace as it ended (model_new.py, kernels/...)
                f = (sol / name).resolve()
                if sol.resolve() not in f.parents:  # names come from model output: stay inside the workspace
                    continue
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text)
            res = evaluate(self.task_code.get(tr["task_id"], ""), str(sol), mode="full", settings=self.eval_settings)
            rows.append(to_row(res, sol, self.run_id, self.eval_settings))
        return rows


def do_evaluate(cfg: OpforgeConfig, shard_size: int | None = None) -> dict[str, Any]:
    why = _gpu_missing(cfg, "evaluate")
    if why:
        return skip(cfg, cfg.run_id, "evaluate", f"needs {why}")
    stage_fn("pipeline.evaluate.harness", "evaluate")
    if not _has(cfg, "trajectories"):
        return skip(cfg, cfg.run_id, "evaluate", "no trajectories in this run (rollout did not run)")
    trajs = _table(cfg, "trajectories").select(["traj_id", "task_id", "final_kernel"])
    trajs = trajs.filter(pc.invert(pc.is_null(trajs.column("final_kernel"))))
    tasks = _table(cfg, "tasks")
    codes = dict(zip(tasks.column("task_id").to_pylist(), tasks.column("code").to_pylist()))
    settings = cfg.eval.model_dump(mode="json")
    # Each shard task evaluates on the GPU itself, so it asks Ray for one: a GPU per task.
    out = run_stage(cfg, cfg.run_id, "evaluate", "evaluations", trajs, "traj_id",
                    _Evaluate(codes, settings, cfg.run_id, str(Path(cfg.data_root) / "solutions" / cfg.run_id)),
                    settings, shard_size or SHARD_SIZE["evaluate"], res=Resources(cpus=1, gpus=1))
    return _summary("evaluate", out)


def do_curate(cfg: OpforgeConfig) -> dict[str, Any]:
    curate = stage_fn("pipeline.curate.stage", "curate")
    save_result = stage_fn("pipeline.curate.stage", "save_result")
    curation_inputs = stage_fn("pipeline.curate.pool", "curation_inputs")
    # The task pool of every run (curate.scope=pool) or this run's partitions: the same reader as `opforge curate`.
    ins = curation_inputs(cfg.data_root, cfg.run_id, cfg.curate.scope, cfg.decontam)
    tasks = ins["tasks"]
    if tasks is None:
        return skip(cfg, cfg.run_id, "curate", "no tasks for this run")
    result = curate(tasks, ins[VALIDATION_TABLE], ins[CONTAMINATION_TABLE], ins["trajectories"], cfg.curate,
                    cfg.run_id, dedup=ins["dedup"], single_turn=ins["single_turn"])
    # save_result writes the tables atomically and records the stage and its files in the catalog.
    paths = save_result(result, cfg.data_root, catalog(cfg))
    reasons = dict(sorted(_count(result.drops.column("reason").to_pylist()).items())) if result.drops.num_rows else {}
    rows = result.summary.get("rows", {})
    from flows.artifacts import publish_stage_artifacts

    publish_stage_artifacts("curate", cfg.run_id, tasks.num_rows, sum(rows.values()), reasons,
                            detail=", ".join(f"{k}: {v} rows" for k, v in rows.items()),
                            paths=[str(p) for p in paths.values()])
    progress.get().message(f"curate: {rows}" + "".join(f"\n  note: {s}" for s in result.summary.get("skipped", [])))
    return {"stage": "curate", "status": "completed", "rows_in": tasks.num_rows, "rows_out": sum(rows.values()),
            "drop_reasons": reasons, "rows": rows, "paths": {k: str(v) for k, v in paths.items()}}


def _count(values: list) -> dict:
    from collections import Counter

    return Counter(v or "unspecified" for v in values)


def do_publish(cfg: OpforgeConfig) -> dict[str, Any]:
    publish_local = stage_fn("pipeline.publish.stage", "publish_local")
    load_result = stage_fn("pipeline.curate.stage", "load_result")
    from pipeline.curate.stage import summary_path

    if not summary_path(cfg.data_root, cfg.run_id).exists():
        return skip(cfg, cfg.run_id, "publish", "nothing curated in this run (run curate first)")
    result = load_result(cfg.data_root, cfg.run_id)
    ps = cfg.publish
    from pipeline.publish.jail_check import unsafe_tasks

    unsafe = unsafe_tasks(cfg.data_root, result)
    if unsafe and not ps.allow_unsafe:
        raise ValueError(f"{len(unsafe)} task(s) of this release were validated outside the jail "
                         f"(sandbox.mode=unsafe), e.g. {unsafe[0]}; refusing to publish "
                         "(set publish.allow_unsafe=true to force)")
    folder = Path(ps.out_dir) if ps.out_dir else Path(cfg.data_root) / "published" / cfg.run_id
    repo_id = ps.repo_id or ps.repo_prefix
    from pipeline.kernelbench import fingerprint, load_reference, resolve_source
    from pipeline.publish.lineage import card_provenance

    ctx = {"repo_id": repo_id or "ORG/NAME", "revision": cfg.run_id, "license": ps.license,
           "pretty_name": ps.pretty_name, "tags": ps.tags, "provenance": card_provenance(catalog(cfg), cfg.run_id)}
    try:
        ref = load_reference(resolve_source(cfg.kernelbench))
        ctx["kernelbench"] = f"sha256:{fingerprint(ref)} ({len(ref)} problems)"
    except Exception:  # the card then says nothing about the reference; publishing does not depend on it
        pass
    path = publish_local(result, folder, ctx, max_shard_rows=ps.max_shard_rows)
    rows_in = sum(result.summary.get("rows", {}).values())
    n_files = sum(1 for p in Path(path).rglob("*.parquet"))
    detail = f"local Hub-layout folder {path}"
    if repo_id:
        publish_hub = stage_fn("pipeline.publish.stage", "publish_hub")
        report = publish_hub(path, repo_id, private=ps.private, tag=cfg.run_id, dry_run=ps.dry_run)
        detail += f"; Hub {repo_id}@{report.tag}" + (" (dry run)" if report.dry_run else "")
        if not report.dry_run:  # only a tagged commit is a release
            catalog(cfg).record_release(cfg.run_id, repo_id, report.tag or "", report.commit_oid or "",
                                        report.endpoint, len(report.files))
    else:
        detail += "; no Hub repo configured (publish.repo_id)"
    record(cfg, cfg.run_id, "publish", rows_in=rows_in, rows_out=rows_in, reasons={}, detail=detail)
    return {"stage": "publish", "status": "completed", "rows_in": rows_in, "rows_out": rows_in,
            "out_dir": str(path), "card": str(Path(path) / "README.md"), "parquet_files": n_files}


# -- run lifecycle ---------------------------------------------------------------------------------------------

# Flow run id -> (catalog, run id) of the runs this process is writing, for the Prefect state hooks below.
_ACTIVE: dict[str, tuple[Catalog, str]] = {}


def _flow_run_id() -> str | None:
    try:
        from prefect.runtime import flow_run

        return str(flow_run.id) if flow_run.id else None
    except Exception:  # outside a flow run
        return None


def _run_stages(stages: list[tuple[str, Callable]], config, overrides, run_id, note: str) -> dict[str, Any]:
    """Run `stages` on one run id under its run lock: completed, failed (a stage raised) or interrupted (a signal,
    Ctrl-C, a cancellation: any BaseException). A second writer of the same run id is refused (RunLocked)."""
    from pipeline.runlock import run_lock

    cfg = load(config, overrides, run_id)
    with run_lock(cfg.data_root, cfg.run_id):
        cat = catalog(cfg)
        fid = _flow_run_id()
        try:
            cat.sweep_interrupted()  # runs whose process died without a word (kill -9) say so
            ensure_run(cfg, note=note)
            if fid:
                _ACTIVE[fid] = (cat, cfg.run_id)
            results, status = _stage_loop(cfg, stages)
        except BaseException:
            cat.finish_run(cfg.run_id, "interrupted")
            raise
        finally:
            _ACTIVE.pop(fid or "", None)
        cat.finish_run(cfg.run_id, status)
    if status == "failed":
        raise RuntimeError(f"run {cfg.run_id}: stage {results[-1]['stage']} failed: {results[-1]['detail']}")
    return {"run_id": cfg.run_id, "data_root": str(cfg.data_root), "stages": results}


def _stage_loop(cfg: OpforgeConfig, stages: list[tuple[str, Callable]]) -> tuple[list[dict[str, Any]], str]:
    if runtime.use_ray(cfg):
        runtime.start_ray(cfg)
    get_run_logger().info("run %s: %s (data root %s)", cfg.run_id, ", ".join(n for n, _ in stages), cfg.data_root)
    results: list[dict[str, Any]] = []
    for name, body in stages:
        try:
            results.append(_guard(cfg, name, lambda b=body: b(cfg)))
        except Exception as e:
            get_run_logger().error("stage %s failed:\n%s", name, traceback.format_exc())
            record(cfg, cfg.run_id, name, rows_in=0, rows_out=0, reasons={}, status="failed",
                   detail=f"{type(e).__name__}: {e}"[:500])
            results.append({"stage": name, "status": "failed", "detail": f"{type(e).__name__}: {e}"})
            return results, "failed"
    return results, "completed"


def mark_interrupted(flow, flow_run, state) -> None:
    """Prefect on_crashed / on_cancellation hook: the run this flow run was writing is interrupted, and so is
    any run whose writer died (its lock is free). Runs in the process that ran the flow, or in the runner that
    cancelled it (then only the sweep applies)."""
    try:
        active = _ACTIVE.pop(str(flow_run.id), None)
        if active:
            cat, rid = active
            if cat.sql("SELECT status FROM runs WHERE run_id = ?", [rid]).to_pylist() == [{"status": "running"}]:
                cat.finish_run(rid, "interrupted")
        params = dict(flow_run.parameters or {})
        # Only the data root matters here; a secret's variable may be unset in a runner that cancelled the run.
        cfg = load_config(params.get("config"), list(params.get("overrides") or []), resolve_secrets=False)
        catalog(cfg).sweep_interrupted()
    except Exception as e:  # a hook must never turn a crash report into another crash
        log.warning("could not mark the run interrupted: %s: %s", type(e).__name__, e)


HOOKS = {"on_crashed": [mark_interrupted], "on_cancellation": [mark_interrupted]}


class OpforgeFlow(Flow):
    """A Prefect flow whose `overrides` never carry a secret into Prefect's database: a literal secret
    (`rollout.api_key=sk-...`) moves into this process's environment and the flow run's parameter holds a reference
    to it, `rollout.api_key=env:OPFORGE_SECRET_ROLLOUT_API_KEY` (pipeline.credentials), resolved by `load`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        control = {k: kwargs.pop(k) for k in ("return_state", "wait_for") if k in kwargs}
        bound = inspect.signature(self.fn).bind_partial(*args, **kwargs)
        if bound.arguments.get("overrides"):
            bound.arguments["overrides"] = hide_overrides(list(bound.arguments["overrides"]))
        return super().__call__(*bound.args, **bound.kwargs, **control)

    def with_options(self, **options: Any) -> "OpforgeFlow":
        new = super().with_options(**options)  # Prefect builds a plain Flow: keep the secret handling
        new.__class__ = OpforgeFlow
        return new


def opforge_flow(name: str) -> Callable[[Callable[..., Any]], OpforgeFlow]:
    """Every opforge flow: its run lifecycle hooks, prints logged, secrets kept out of its parameters."""
    return lambda fn: OpforgeFlow(fn, name=name, log_prints=True, **HOOKS)


# -- flows -----------------------------------------------------------------------------------------------------

def _stage_flow(stage: str, body: Callable[[OpforgeConfig], dict[str, Any]], config, overrides, run_id):
    return _run_stages([(stage, body)], config, overrides, run_id, f"{stage} flow")


@opforge_flow("synthesize")
def synthesize_flow(config: str | None = None, overrides: list[str] | None = None,
                    run_id: str | None = None) -> dict[str, Any]:
    """Compose candidate operator tasks (KernelBench format) into the run's `tasks` table."""
    return _stage_flow("synthesize", do_synthesize, config, overrides, run_id)


@opforge_flow("validate")
def validate_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None, shard_size: int | None = None) -> dict[str, Any]:
    """Run every task in a sandbox (eager and torch.compile) and record a verdict with a reason per task."""
    return _stage_flow("validate", lambda c: do_validate(c, shard_size), config, overrides, run_id)


@opforge_flow("decontaminate")
def decontaminate_flow(config: str | None = None, overrides: list[str] | None = None,
                       run_id: str | None = None, shard_size: int | None = None) -> dict[str, Any]:
    """Check the run's valid tasks against KernelBench in resumable shards (one decision per task), then remove
    near-duplicates among the clean ones."""
    return _run_stages([("decontaminate", lambda c: do_decontaminate(c, shard_size)), ("dedup", do_dedup)],
                       config, overrides, run_id, "decontaminate flow")


@opforge_flow("rollout")
def rollout_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Agent rollouts on the clean tasks (needs a model and GPU workers)."""
    return _stage_flow("rollout", do_rollout, config, overrides, run_id)


@opforge_flow("evaluate")
def evaluate_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
    """Re-evaluate the final kernel of every trajectory of the run (compile, correctness, timing -> reward), one GPU
    per shard task."""
    return _stage_flow("evaluate", do_evaluate, config, overrides, run_id)


@opforge_flow("curate")
def curate_flow(config: str | None = None, overrides: list[str] | None = None,
                run_id: str | None = None) -> dict[str, Any]:
    """Build the warm-up, SFT and critic datasets from the run's tables, each drop with a reason."""
    return _stage_flow("curate", do_curate, config, overrides, run_id)


@opforge_flow("publish")
def publish_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Write the curated datasets and their data card to a Hub-layout folder (and the Hub when configured)."""
    return _stage_flow("publish", do_publish, config, overrides, run_id)


END_TO_END = [("synthesize", do_synthesize), ("validate", do_validate), ("decontaminate", do_decontaminate),
              ("dedup", do_dedup), ("rollout", do_rollout), ("evaluate", do_evaluate), ("curate", do_curate),
              ("publish", do_publish)]


@opforge_flow("opforge-pipeline")
def pipeline_flow(config: str | None = None, overrides: list[str] | None = None,
                  run_id: str | None = None) -> dict[str, Any]:
    """End to end: synthesize -> validate -> decontaminate -> dedup -> rollout -> evaluate -> curate -> publish."""
    return _run_stages(END_TO_END, config, overrides, run_id, "end-to-end")


@opforge_flow("nightly-synthesize-decontaminate")
def nightly_flow(config: str | None = None, overrides: list[str] | None = None,
                 run_id: str | None = None) -> dict[str, Any]:
    """Nightly: a fresh run that synthesizes, validates and decontaminates new tasks."""
    return _run_stages(END_TO_END[:4], config, overrides, run_id, "nightly")


@opforge_flow("weekly-publish")
def weekly_publish_flow(config: str | None = None, overrides: list[str] | None = None,
                        run_id: str | None = "latest") -> dict[str, Any]:
    """Weekly: curate and publish the newest run."""
    return _run_stages(END_TO_END[6:], config, overrides, run_id, "weekly publish")
