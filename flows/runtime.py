"""Where flows run: which Prefect API, which task runner, and how Ray workers reach that API.

- Prefect API: `prefect.api_url` from the config, else `$PREFECT_API_URL`, else a temporary local server started
  here (so its URL is known and can be handed to Ray workers).
- Ray: joined when `ray.address` is set (or already started by the caller, as `opforge run` does); shard work then
  runs as Ray tasks through the library's executor (flows/sharded.py), never through a Prefect Ray task runner.
- Ray workers get the API URL and Prefect's settings in the Ray job's runtime_env, so library code that logs
  through Prefect on a worker never starts a temporary Prefect server of its own (~65 s).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from pipeline.config import OpforgeConfig

_ENV_DEFAULTS = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_USAGE_STATS_ENABLED": "0",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
}
# Settings every Ray worker needs to run a Prefect task against our API (PREFECT_HOME keeps its local state apart).
_PROPAGATED = (
    "PREFECT_API_URL",
    "PREFECT_HOME",
    "PREFECT_SERVER_ANALYTICS_ENABLED",
    "PREFECT_LOGGING_LEVEL",
    "TORCHINDUCTOR_CACHE_DIR",
    "HF_HUB_DISABLE_TELEMETRY",
    "KERNELBENCH_PATH",
)

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
    import socket

    from prefect.server.api.server import SubprocessASGIServer

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
