"""Distribution: one Ray actor per GPU serves evaluations, fed by CPU compile tasks (CPU side; Ray imported lazily).

`evaluate_batch(items, executor=...)` builds every solution on the caller's executor (Ray CPU tasks from the
runner; default: one after another here); as each build finishes, its evaluation goes to the least-loaded GPU
actor, so compiling overlaps measuring. Each actor takes up to `concurrency` evaluations at once, but their worker
processes take the GPU's lock file before touching the GPU: the next candidate imports torch and its module on the
CPU while the current one is measured alone.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from pipeline.evaluate import options


@dataclass
class EvalItem:
    task_code: str
    solution_path: str
    mode: str = "full"
    key: str = ""  # caller's id (e.g. trajectory id), echoed in the result


class GPUEvaluator:
    """Serves evaluations on one GPU (wrapped with ray.remote(num_gpus=1) by `evaluate_batch`)."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.settings = options.resolve(settings)
        self.served = 0

    def evaluate(self, item: dict[str, Any], compile_result: dict[str, Any] | None) -> dict[str, Any]:
        from pipeline.evaluate.harness import evaluate

        t0 = time.time()
        res = evaluate(
            item["task_code"],
            item["solution_path"],
            mode=item.get("mode", "full"),
            settings=self.settings,
            compile_result=compile_result,
        )
        self.served += 1
        d = res.to_dict()
        d["key"] = item.get("key", "")
        d["actor_pid"] = os.getpid()
        d["started_at"], d["finished_at"] = t0, time.time()
        return d


def _compile(item: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    from pipeline.evaluate.artifacts import compile_locked
    from pipeline.evaluate.build import resolve_arch_list
    from pipeline.evaluate.harness import _static_reject

    if _static_reject(item["task_code"], item["solution_path"], settings):
        return {"skip_build": True}  # rejected before any build; the actor reports the violations
    s = options.resolve(settings)
    # sealed right after the build: the GPU actor checks the artifact against this record before loading it
    return compile_locked(
        item["solution_path"],
        s["cache_dir"],
        arch_list=resolve_arch_list(s["arch_list"]),
        timeout=float(s["compile_timeout_s"]),
        slim_headers=bool(s["slim_headers"]),
        memory_mb=int(s["build_memory_mb"]),
    ).to_dict()


def _ray_up() -> bool:
    import sys

    ray = sys.modules.get("ray")  # not imported: not running (importing Ray only to ask costs ~0.5 s)
    return ray is not None and ray.is_initialized()


def evaluate_batch(
    items: list[EvalItem | dict[str, Any]],
    settings: dict[str, Any] | None = None,
    *,
    num_gpus: int | None = None,
    concurrency: int = 2,
    executor: Any = None,
) -> list[dict[str, Any]]:
    """Evaluate many solutions: builds on `executor` (the runner's: Ray CPU tasks; default: here), one Ray actor
    per GPU measures. Results in input order.

    Without Ray initialised, runs sequentially in this process. `num_gpus`: actors to start (default: the
    cluster's GPUs, at least 1; with 0 GPUs in the cluster the actor runs without one and reports no_gpu).
    """
    from pipeline.stage import InProcess, Resources

    rows = [it if isinstance(it, dict) else it.__dict__ for it in items]
    s = options.resolve(settings)
    if not _ray_up():
        ev = GPUEvaluator(s)
        out = []
        for r in rows:
            cr = _compile(r, s)
            out.append(ev.evaluate(r, None if cr.get("skip_build") else cr))
        return out
    import ray

    gpus_in_cluster = int(ray.cluster_resources().get("GPU", 0))
    n = num_gpus if num_gpus is not None else max(1, gpus_in_cluster)
    per_actor_gpu = 1 if gpus_in_cluster >= n and gpus_in_cluster > 0 else 0
    actor_cls = ray.remote(num_gpus=per_actor_gpu, num_cpus=0, max_concurrency=max(1, concurrency))(GPUEvaluator)
    actors = [actor_cls.remote(s) for _ in range(n)]
    load = [0] * n
    refs: dict[int, Any] = {}
    owner: dict[Any, int] = {}

    def submit(i: int, cr: dict[str, Any]) -> None:
        a = min(range(n), key=lambda k: load[k])
        load[a] += 1
        ref = actors[a].evaluate.remote(rows[i], None if cr.get("skip_build") else cr)
        refs[i] = ref
        owner[ref] = a

    # The executor calls back as each build finishes: its evaluation is queued while other builds go on.
    (executor or InProcess()).map(lambda r: _compile(r, s), rows, Resources(cpus=1), on_result=submit)
    out: list[dict[str, Any]] = [None] * len(rows)  # type: ignore[list-item]
    pending = {ref: i for i, ref in refs.items()}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            i = pending.pop(ref)
            out[i] = ray.get(ref)
            load[owner[ref]] -= 1
    for a in actors:
        ray.kill(a)
    return out
