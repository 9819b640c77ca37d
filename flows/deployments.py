"""`opforge serve`: the deployments of prefect.yaml (names, cron schedules, parameters), served by this process.

prefect.yaml stays the one place where schedules are written; `prefect deploy --all` reads the same file for
work-pool deployments.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml

from pipeline.credentials import hide_overrides

ROOT = Path(__file__).resolve().parents[1]


def load_deployments(prefect_yaml: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load(Path(prefect_yaml).read_text()) or {}
    deps = spec.get("deployments") or []
    if not deps:
        raise ValueError(f"{prefect_yaml}: no deployments")
    return deps


def concurrency_limit(deployment: dict[str, Any]):
    """prefect.yaml's `concurrency_limit` (an int, or {limit, collision_strategy}) as Prefect takes it; every
    deployment has one (1 when the file says nothing): two runs of a flow never overlap."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig

    spec = deployment.get("concurrency_limit", 1)
    if isinstance(spec, dict):
        return ConcurrencyLimitConfig(
            limit=int(spec.get("limit", 1)), collision_strategy=spec.get("collision_strategy", "ENQUEUE")
        )
    return ConcurrencyLimitConfig(limit=int(spec), collision_strategy="ENQUEUE")


def _flow(entrypoint: str):
    path, name = entrypoint.split(":")
    module = Path(path).with_suffix("").as_posix().replace("/", ".")
    return getattr(importlib.import_module(module), name)


def build(
    prefect_yaml: Path, config: str | None = None, overrides: list[str] | None = None, only: list[str] | None = None
) -> list:
    """RunnerDeployments for prefect.yaml's entries; `config`/`overrides` become every deployment's defaults."""
    from prefect.schedules import Cron

    out = []
    for d in load_deployments(prefect_yaml):
        if only and d["name"] not in only:
            continue
        params = dict(d.get("parameters") or {})
        if config:
            params["config"] = config
        if overrides:
            params["overrides"] = list(params.get("overrides") or []) + list(overrides)
        if params.get("overrides"):
            # Deployment parameters live in Prefect's database: a literal secret stays in this process's
            # environment, which the flow runs it starts inherit (pipeline.credentials).
            params["overrides"] = hide_overrides(list(params["overrides"]))
        schedules = [Cron(s["cron"], timezone=s.get("timezone", "UTC")) for s in d.get("schedules") or []]
        out.append(
            _flow(d["entrypoint"]).to_deployment(
                name=d["name"],
                schedules=schedules or None,
                parameters=params,
                description=d.get("description"),
                tags=d.get("tags"),
                concurrency_limit=concurrency_limit(d),
            )
        )
    if not out:
        raise ValueError(f"no deployment of {prefect_yaml} matches {only}")
    return out


def serve_deployments(
    prefect_yaml: Path,
    config: str | None = None,
    overrides: list[str] | None = None,
    only: list[str] | None = None,
    console=None,
) -> None:
    from prefect import serve

    deps = build(prefect_yaml, config, overrides, only)
    if console is not None:
        for d in deps:
            crons = ", ".join(s.schedule.cron for s in d.schedules or []) or "manual"
            console.print(f"serving {d.flow_name}/{d.name}  [{crons}]")
    serve(*deps, print_starting_message=False)
