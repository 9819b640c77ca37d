"""A process pool for CPU-bound chunks that inherits its input by fork instead of pickling it.

Ray (pipeline.executor) is for large inputs on a cluster; its start-up costs seconds, more than a whole
decontamination run of a few thousand candidates on two cores. Here the input and the shared state (the
reference index) are put in a module global before the pool forks, so each task only sends (start, end) and
receives its chunk's result.
"""

from __future__ import annotations

import gc
from typing import Any, Callable

_STATE: dict[int, tuple] = {}


class no_gc:
    """Cyclic GC off for a batch of canonicalizations: parsing allocates thousands of AST nodes per task, which
    triggers collections that scan every tracked object of the process (the bulk of parse time in a process that
    holds a million input strings). The canonicalizer creates no reference cycles, so nothing accumulates."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc) -> None:
        if self.was:
            gc.enable()


def _init() -> None:
    gc.freeze()  # the parent's objects: never scanned (nor their pages copied) by this worker's collections


def _run(args: tuple[int, Callable, int, int]) -> Any:
    key, fn, a, b = args
    items, extra = _STATE[key]
    return fn(items[a:b], *extra)


def chunk_bounds(n: int, workers: int, min_chunk: int, per_worker: int = 4) -> list[tuple[int, int]]:
    """(start, end) of about `per_worker` chunks per worker (load balance), none smaller than `min_chunk`."""
    size = max(1, min_chunk, -(-n // (max(1, workers) * per_worker)))
    return [(a, min(a + size, n)) for a in range(0, n, size)]


def fork_map(fn: Callable, items: list, extra: tuple, workers: int, bounds: list[tuple[int, int]]) -> list:
    """[fn(items[a:b], *extra) for (a, b) in bounds], on a forked pool of `workers` processes when that helps.
    `fn` must be a module-level function (it is sent by reference)."""
    if workers <= 1 or len(bounds) <= 1:
        return [fn(items[a:b], *extra) for a, b in bounds]
    import concurrent.futures as cf
    import multiprocessing as mp

    key = id(items)
    _STATE[key] = (items, extra)
    try:
        with cf.ProcessPoolExecutor(
            min(workers, len(bounds)), mp_context=mp.get_context("fork"), initializer=_init
        ) as pool:
            return list(pool.map(_run, [(key, fn, a, b) for a, b in bounds]))
    finally:
        _STATE.pop(key, None)
