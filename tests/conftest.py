"""Shared fixtures: one real local Ray and one real Prefect test harness per test session (each costs ~10-20 s)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
_SESSION_TMP = Path(tempfile.mkdtemp(prefix="opforge-tests-"))
os.environ.setdefault("PREFECT_HOME", str(_SESSION_TMP / "prefect"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(_SESSION_TMP / "inductor"))

ROOT = Path(__file__).resolve().parents[1]


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (run on the device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def kernelbench_path() -> Path:
    """The KernelBench reference: ../shared/kernelbench, else $KERNELBENCH_PATH; skip if neither exists."""
    from pipeline.kernelbench import resolve_source

    src = resolve_source()
    if not Path(src).exists():
        pytest.skip("KernelBench not available: set KERNELBENCH_PATH to a checkout")
    return Path(src)


@pytest.fixture(scope="session")
def ray_local():
    """A real local Ray, started once."""
    from pipeline.executor import ensure_ray

    # Test modules are imported from tests/ by pytest; Ray workers must be able to import them too.
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    ensure_ray(num_cpus=2, object_store_mb=512)
    import ray

    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def prefect_harness():
    """A real Prefect API (the test harness's temporary server), started once."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=600):  # ends when it answers; a loaded CI machine is slow
        yield


@pytest.fixture()
def data_root(tmp_path) -> Path:
    d = tmp_path / "opforge-data"
    d.mkdir()
    return d


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_SESSION_TMP, ignore_errors=True)
