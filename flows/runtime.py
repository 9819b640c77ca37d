"""Where flows run: which Prefect API, which task runner, and how Ray workers reach that API.

- Prefect API: `prefect.api_url` from the config, else `$PREFECT_API_URL`, else a temporary local server started
  here (so its URL is known and can be handed to Ray workers).
- Task runner: a thread pool by default; prefect-ray's RayTaskRunner when `ray.address` is set (or when the caller
  started a local Ray, as `opforge run` does).
- Ray workers do not inherit the API URL: without it each one starts its own temporary Prefect server (~65 s,
  STACK.md). The URL goes into the Ray job's runtime_env and, for a Ray started elsewhere, into every task's.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from pipeline.config import OpforgeConfig

_ENV_DEFAULTS = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
}
# Settings every Ray worker needs to run a Prefect task against our API (PREFECT_HOME keeps its local state apart).
_PROPAGATED = ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_LOGGING_LEVEL",
               "TORCHINDUCTOR_CACHE_DIR", "HF_HUB_DISABLE_TELEMETRY", "KERNELBENCH_PATH")

log = logging.getLogger("opforge.flows")


def set_env_defaults() -> None:
    for k, v in _ENV_DEFAULTS.items():
        os.environ.setdefault(k, v)


def current_api_url() -> str | None:
    """The API URL Prefect uses in this context (the test harness sets it in a settings context, not the env)."""
    try:
        from prefect.settings import PREFECT_API_URL

        return PREFECT_API_URL.value() or os.environ.get("PREFECT_API_URL")
    except Exception:
        return os.environ.get("PREFECT_API_URL")


@dataclass
class PrefectAPI:
    url: str
    server: Any = None  # a temporary server we own (started by `start`, stopped by `close`)

    def start(self, timeout_s: int = 120) -> None:
        """Block until our temporary server answers (no-op for a configured API)."""
        if self.server is not None and not self.server.running:
            self.server.start(timeout=timeout_s)
            # It moves to another port if ours was taken meanwhile; tasks submitted from now on get the new URL.
            self.url = self.server.api_url
            os.environ["PREFECT_API_URL"] = self.url

    def settings(self):
        """A Prefect settings context that points at this API. Needed because Prefect reads its settings once per
        process: setting $PREFECT_API_URL after `import prefect` changes nothing for this process."""
        from prefect.settings import PREFECT_API_URL, temporary_settings

        return temporary_settings(updates={PREFECT_API_URL: self.url})

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def plan_prefect_api(cfg: OpforgeConfig) -> PrefectAPI:
    """The API flows and workers will use: configured, inherited, or a temporary local server on a port chosen
    now, so its URL can be handed to Ray before the server has finished starting."""
    set_env_defaults()
    url = cfg.prefect.api_url or current_api_url()
    if url:
        os.environ["PREFECT_API_URL"] = url
        return PrefectAPI(url)
    from prefect.server.api.server import SubprocessASGIServer

    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = SubprocessASGIServer(port)
    os.environ["PREFECT_API_URL"] = server.api_url
    return PrefectAPI(server.api_url, server)


def ensure_prefect_api(cfg: OpforgeConfig, start_timeout_s: int = 120) -> PrefectAPI:
    """`plan_prefect_api`, then wait for it."""
    api = plan_prefect_api(cfg)
    api.start(start_timeout_s)
    return api


def worker_env() -> dict[str, str]:
    env = {k: os.environ[k] for k in _PROPAGATED if os.environ.get(k)}
    url = current_api_url()
    if url:
        env["PREFECT_API_URL"] = url
    return env


def start_ray(cfg: OpforgeConfig) -> None:
    """Connect to `ray.address`, or start a local Ray sized by `ray.num_cpus`; workers get the Prefect API URL."""
    from pipeline.executor import ensure_ray

    set_env_defaults()
    ensure_ray(cfg.ray.address, cfg.ray.num_cpus, cfg.ray.object_store_mb, env_vars=worker_env())


def use_ray(cfg: OpforgeConfig) -> bool:
    """Ray task runner when a cluster is configured or a Ray is already up in this process."""
    if cfg.ray.address:
        return True
    try:
        import ray

        return ray.is_initialized()
    except ImportError:
        return False


def task_runner(cfg: OpforgeConfig, max_workers: int | None = None):
    """RayTaskRunner on a cluster (or an already started local Ray); a thread pool otherwise.

    `max_workers=1` for stages whose work is pure Python: threads gain nothing under the GIL, and CPython 3.11's
    `ast` is not thread-safe (concurrent `ast.parse` raises "AST constructor recursion depth mismatch")."""
    if use_ray(cfg):
        from prefect_ray import RayTaskRunner

        start_ray(cfg)  # no-op when Ray is up; RayTaskRunner then reuses it
        return RayTaskRunner(address=cfg.ray.address)
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner(max_workers=max_workers or cfg.ray.num_cpus or os.cpu_count() or 2)


@contextmanager
def resources(cpus: float = 1.0, gpus: float = 0.0, memory_mb: int | None = None) -> Iterator[None]:
    """Ray options for the tasks submitted inside (GPU per task for rollouts and evaluation). The runtime_env
    repeats the API URL for a Ray started by someone else (a test fixture, `ray start`); harmless otherwise."""
    try:
        import ray  # noqa: F401
        from prefect_ray.context import remote_options
    except ImportError:
        yield
        return
    opts: dict[str, Any] = {"num_cpus": cpus, "num_gpus": gpus}
    if memory_mb:
        opts["memory"] = memory_mb * 2**20
    env = worker_env()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pp = os.environ.get("PYTHONPATH", "")
    env["PYTHONPATH"] = root + (os.pathsep + pp if pp else "")
    opts["runtime_env"] = {"env_vars": env}
    with remote_options(**opts):
        yield
