"""The Prefect flows, generated from the stage registry (pipeline/registry.py): one flow per stage, the end-to-end
flow and the scheduled ones. They hold no library logic: each runs stages with the one runner (pipeline/runner.py)
under a flow run, with shard task runs and artifacts (flows/sharded.py).

Every flow takes the same parameters: `config` (a YAML path), `overrides` (`["synth.n=50", ...]`) and `run_id`
(a new one when empty; "latest" for the last completed run in the catalog); sharded stages also take `shard_size`.
Stages exchange data through Parquet tables under the data root, keyed by run id, so each flow can run alone
(from a schedule) or inside the end-to-end flow.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Callable

from prefect import Flow

from flows import runtime
from flows.sharded import FlowObserver, prefect_executor
from pipeline import registry, runner
from pipeline.catalog import Catalog
from pipeline.config import OpforgeConfig, load_config
from pipeline.credentials import hide_overrides
from pipeline.runner import load  # noqa: F401  (the flows' config loader, also used by `opforge run`)
from pipeline.stage import Stage

log = logging.getLogger("opforge.flows")

STAGES: list[Stage] = registry.stages()
# (name, stage) in pipeline order: what the end-to-end flow runs.
END_TO_END: list[tuple[str, Stage]] = [(s.name, s) for s in STAGES]

# Flow function name -> the stages it runs (prefect.yaml entrypoints name the functions).
FLOW_STAGES: dict[str, list[str]] = {}
# Flow run id -> (catalog, run id) of the runs this process is writing, for the Prefect state hooks below.
_ACTIVE: dict[str, tuple[Catalog, str]] = {}


def _flow_run_id() -> str | None:
    try:
        from prefect.runtime import flow_run

        return str(flow_run.id) if flow_run.id else None
    except Exception:  # outside a flow run
        return None


def _run_stages(
    steps: list[tuple[str, Callable[[OpforgeConfig], dict[str, Any]]]], config, overrides, run_id, note: str
) -> dict[str, Any]:
    """Run (name, body) steps as one run with the runner's lifecycle, known to the crash hooks while it runs."""
    cfg = load(config, overrides, run_id)
    if runtime.use_ray(cfg):
        runtime.start_ray(cfg)
    fid = _flow_run_id()
    try:
        return runner.run_steps(
            cfg,
            steps,
            note,
            observer=FlowObserver(),
            on_start=lambda cat: _ACTIVE.__setitem__(fid, (cat, cfg.run_id)) if fid else None,
        )
    finally:
        _ACTIVE.pop(fid or "", None)


def run_registered(
    stages: list[Stage], config, overrides, run_id, note: str, shard_size: int | None = None
) -> dict[str, Any]:
    return _run_stages(
        runner.steps(stages, executor=prefect_executor, observer=FlowObserver(), shard_size=shard_size),
        config,
        overrides,
        run_id,
        note,
    )


def mark_interrupted(flow, flow_run, state) -> None:
    """Prefect on_crashed / on_cancellation hook: the run this flow run was writing is interrupted, and so is
    any run whose writer died (its lock is free). Runs in the process that ran the flow, or in the runner that
    cancelled it (then only the sweep applies)."""
    try:
        active = _ACTIVE.pop(str(flow_run.id), None)
        if active:
            runner.mark_interrupted(*active)
        params = dict(flow_run.parameters or {})
        # Only the data root matters here; a secret's variable may be unset in a runner that cancelled the run.
        cfg = load_config(params.get("config"), list(params.get("overrides") or []), resolve_secrets=False)
        runner.mark_interrupted(runner.catalog(cfg))
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


# -- the flows -------------------------------------------------------------------------------------------------


def _make_flow(
    fn_name: str, flow_name: str, stages: list[Stage], doc: str, note: str, default_run_id: str | None = None
):
    """A module-level flow `fn_name` (prefect.yaml's entrypoints name it) running `stages`."""
    if any(s.shard_key for s in stages):

        def body(
            config: str | None = None,
            overrides: list[str] | None = None,
            run_id: str | None = default_run_id,
            shard_size: int | None = None,
        ) -> dict[str, Any]:
            return run_registered(stages, config, overrides, run_id, note, shard_size)
    else:

        def body(
            config: str | None = None, overrides: list[str] | None = None, run_id: str | None = default_run_id
        ) -> dict[str, Any]:
            return run_registered(stages, config, overrides, run_id, note)

    body.__name__ = body.__qualname__ = fn_name
    FLOW_STAGES[fn_name] = [s.name for s in stages]
    body.__doc__ = doc
    # Every opforge flow: its run lifecycle hooks, prints logged, secrets kept out of its parameters.
    return OpforgeFlow(body, name=flow_name, log_prints=True, **HOOKS)


def _stage_flows() -> dict[str, Any]:
    """One flow per `Stage.flow` name; stages that share a flow (decontaminate, dedup) run in it in order."""
    by_flow: dict[str, list[Stage]] = {}
    for s in STAGES:
        by_flow.setdefault(s.flow, []).append(s)
    return {
        name: _make_flow(name, group[0].name, group, " Then: ".join(s.doc for s in group), f"{group[0].name} flow")
        for name, group in by_flow.items()
    }


globals().update(_stage_flows())
FLOWS = sorted({s.flow for s in STAGES})

pipeline_flow = _make_flow(
    "pipeline_flow",
    "opforge-pipeline",
    STAGES,
    "End to end: " + " -> ".join(s.name for s in STAGES) + ".",
    "end-to-end",
)
nightly_flow = _make_flow(
    "nightly_flow",
    "nightly-synthesize-decontaminate",
    STAGES[:4],
    "Nightly: a fresh run that synthesizes, validates and decontaminates new tasks.",
    "nightly",
)
weekly_publish_flow = _make_flow(
    "weekly_publish_flow",
    "weekly-publish",
    [s for s in STAGES if s.name in ("curate", "publish")],
    "Weekly: curate and publish the newest run.",
    "weekly publish",
    default_run_id="latest",
)
