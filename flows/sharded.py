"""What flows add to the runner (pipeline/runner.py): every shard is a Prefect task run (visible in the UI), and the
runner's progress and stage records become progress bars and Prefect artifacts.

Shard tasks run on a thread pool in the flow's process; the work of each runs on the library's executor (a Ray
task with the stage's declared resources when Ray is up, else in that thread). So Ray is used in one way only:
there is no Ray task runner, and no Ray task is ever started from inside one.
"""

from __future__ import annotations

from typing import Any, Callable

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows import progress
from flows.artifacts import publish_stage_artifacts
from pipeline.executor import Executor, Resources
from pipeline.runner import local_or_ray
from pipeline.stage import Stage


# Resume is the library's job (content-keyed shard files), so Prefect's own result cache stays off.
@task(cache_policy=NO_CACHE, persist_result=False)
def shard_task(fn: Callable[[Any], Any], item: Any, inner: Executor, resources: Resources) -> Any:
    return inner.map(fn, [item], resources)[0]


class PrefectExecutor:
    """One Prefect task per item, each running its item on `inner` (Ray or this process)."""

    def __init__(self, inner: Executor, threads: int):
        self.inner, self.threads = inner, max(1, threads)

    def map(self, fn, items, resources=Resources(), on_result=None):
        items = list(items)
        if not items:
            return []
        from pipeline.executor import RayExecutor

        # On Ray a thread only waits for its Ray task, so all are submitted at once and Ray schedules them by
        # their resources; in this process, `threads` at a time.
        workers = len(items) if isinstance(self.inner, RayExecutor) else min(self.threads, len(items))
        out: list[Any] = [None] * len(items)
        with ThreadPoolTaskRunner(max_workers=workers) as runner:
            futures = [
                runner.submit(
                    shard_task.with_options(task_run_name=getattr(it, "task_name", None) or f"shard-{i:05d}"),
                    {"fn": fn, "item": it, "inner": self.inner, "resources": resources},
                )
                for i, it in enumerate(items)
            ]
            index = {id(f): i for i, f in enumerate(futures)}
            for fut in as_completed(futures):
                i = index[id(fut)]
                out[i] = fut.result()
                if on_result:
                    on_result(i, out[i])
        return out


def prefect_executor(stage: Stage) -> Executor:
    """The runner's executor inside flows: Prefect task runs around the library's executor."""
    inner = local_or_ray(stage)
    return PrefectExecutor(inner, getattr(inner, "threads", 1))


class FlowObserver:
    """Progress bars (flows.progress) and Prefect artifacts for the runner's stages."""

    def start(self, stage: str, total: int) -> None:
        progress.get().start(stage, total)

    def advance(self, stage: str) -> None:
        progress.get().advance(stage)

    def message(self, text: str) -> None:
        progress.get().message(text)

    def recorded(
        self, stage: str, run_id: str, rows_in: int, rows_out: int, reasons: dict[str, int], **kw: Any
    ) -> None:
        publish_stage_artifacts(stage, run_id, rows_in, rows_out, reasons, **kw)
