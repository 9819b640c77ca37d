"""Where stage work runs: in this process or on Ray. The only module of the library that imports Ray.

Stages declare `Resources` (pipeline.stage); this module turns them into Ray options. The runner takes an
`Executor`: `LocalExecutor` (this process, optionally a few threads) or `RayExecutor` (one Ray task per item with
the declared resources); a stage function never knows which. Only infrastructure failures (a dead worker,
a lost object) are retried; an exception raised by the work itself is returned to the caller as it is.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Protocol, TypeVar

from pipeline.stage import InProcess, Resources  # the stage contract declares resources; re-exported here

T = TypeVar("T")
R = TypeVar("R")


# Ray 2.60 turns token auth on by default; a local, single-user Ray needs none.
_RAY_ENV_DEFAULTS = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


class RayUnreachable(ConnectionError):
    """`ray.address` names a cluster that does not answer. The message says which and what to do."""


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when an explicit host:port (or ray://host:port) does not accept connections; Ray's
    own connect retries for a minute and then raises a long traceback."""
    import socket

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" or another form Ray resolves itself
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        raise RayUnreachable(
            f"Ray cluster at ray.address={address!r} is unreachable ({e.strerror or e}); start "
            "it, fix ray.address, or leave ray.address unset for a local Ray"
        ) from None


def ensure_ray(
    address: str | None = None,
    num_cpus: int | None = None,
    object_store_mb: int = 1024,
    env_vars: dict[str, str] | None = None,
) -> None:
    """Join the cluster at `address` (the config's `ray.address`), or start this process's own local Ray (no
    dashboard) when it is unset; once per process.

    Whether opforge joins a cluster is explicit: without `address` it never picks one up from $RAY_ADDRESS or
    from a `ray start` cluster's leftover `ray_current_cluster` file (a stale one made every command crash with
    "When connecting to an existing cluster, object_store_memory must not be provided"). An unreachable explicit
    address is a one-line RayUnreachable."""
    import ray

    if ray.is_initialized():
        return
    for k, v in _RAY_ENV_DEFAULTS.items():
        os.environ.setdefault(k, v)
    runtime_env = {"env_vars": dict(env_vars or {})}
    if os.environ.get("OPFORGE_SANDBOX_MODE"):  # the jail's mode (docs/jail.md) holds on every worker too
        runtime_env["env_vars"].setdefault("OPFORGE_SANDBOX_MODE", os.environ["OPFORGE_SANDBOX_MODE"])
    # Workers must find this project's packages wherever they start.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pp = os.environ.get("PYTHONPATH", "")
    runtime_env["env_vars"].setdefault("PYTHONPATH", root + (os.pathsep + pp if pp else ""))
    if address and address != "local":
        _probe(address)
        try:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
        except ConnectionError as e:
            raise RayUnreachable(
                f"could not join the Ray cluster at ray.address={address!r}: "
                f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None
    else:
        # "local": a new local instance, whatever RAY_ADDRESS or /tmp/ray/ray_current_cluster say.
        ray.init(
            address="local",
            num_cpus=num_cpus,
            include_dashboard=False,
            object_store_memory=object_store_mb * 2**20,
            runtime_env=runtime_env,
            log_to_driver=False,
        )


def ray_available() -> bool:
    try:
        import ray

        return ray.is_initialized()
    except ImportError:
        return False


def map_items(
    fn: Callable[[T], R],
    items: Iterable[T],
    resources: Resources = Resources(),
    *,
    use_ray: bool | None = None,
    max_retries: int = 3,
    on_result: Callable[[int, R], None] | None = None,
) -> list[R]:
    """Apply `fn` to every item, on Ray workers when Ray is up (or `use_ray`), else in this process.

    Results come back in input order; `on_result(index, result)` is called as each finishes (progress bars).
    """
    items = list(items)
    if use_ray is None:
        use_ray = ray_available()
    if not use_ray:
        out = []
        for i, it in enumerate(items):
            r = fn(it)
            if on_result:
                on_result(i, r)
            out.append(r)
        return out
    import ray

    remote = ray.remote(fn).options(**ray_options(resources, max_retries))
    refs = [remote.remote(it) for it in items]
    index = {ref: i for i, ref in enumerate(refs)}
    results: list[Any] = [None] * len(refs)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            i = index[ref]
            results[i] = ray.get(ref)
            if on_result:
                on_result(i, results[i])
    return results


def ray_options(resources: Resources, max_retries: int = 3) -> dict[str, Any]:
    """Ray task options for declared resources."""
    opts: dict[str, Any] = {"num_cpus": resources.cpus, "num_gpus": resources.gpus, "max_retries": max_retries}
    if resources.memory_mb:
        opts["memory"] = resources.memory_mb * 2**20
    return opts


class Executor(Protocol):
    """Runs `fn` over items with the given resources; results in input order, `on_result(i, r)` as each ends.
    `distributed`: items run in other processes (Ray), so a caller need not fork its own pool."""

    distributed: bool

    def map(
        self,
        fn: Callable[[T], R],
        items: list[T],
        resources: Resources,
        on_result: Callable[[int, R], None] | None = None,
    ) -> list[R]: ...


class LocalExecutor(InProcess):
    """This process: in order, or `threads` at a time (for work that waits on subprocesses)."""

    def __init__(self, threads: int = 1):
        self.threads = max(1, threads)

    def map(self, fn, items, resources=Resources(), on_result=None):
        items = list(items)
        if self.threads == 1 or len(items) < 2:
            return super().map(fn, items, resources, on_result)
        import concurrent.futures as cf

        out: list[Any] = [None] * len(items)
        with cf.ThreadPoolExecutor(min(self.threads, len(items))) as pool:
            futures = {pool.submit(fn, it): i for i, it in enumerate(items)}
            for fut in cf.as_completed(futures):
                i = futures[fut]
                out[i] = fut.result()
                if on_result:
                    on_result(i, out[i])
        return out


class RayExecutor:
    """One Ray task per item, with the declared resources as its Ray options (Ray must be up: `ensure_ray`)."""

    distributed = True

    def map(self, fn, items, resources=Resources(), on_result=None):
        return map_items(fn, items, resources, use_ray=True, on_result=on_result)


def default_executor(threads: int = 1) -> Executor:
    """Ray when it is up in this process, else this process (`threads` at a time)."""
    return RayExecutor() if ray_available() else LocalExecutor(threads)
