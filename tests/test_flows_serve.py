"""`opforge serve` against a real `prefect server start` on 127.0.0.1: the deployments of prefect.yaml are
registered with their cron schedules, and a triggered run completes (and lands in the DuckDB catalog)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# Every wait below ends on its event (healthy, registered, finished); this bound only stops a test that would hang,
# and is far above what a busy 2-core CI machine needs.
PATIENCE_S = 600


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(p: subprocess.Popen, sig=signal.SIGTERM, wait: float = 20) -> None:
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(wait)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)


@pytest.fixture()
def prefect_server(tmp_path):
    port = _free_port()
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "server-home"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    env.pop("PREFECT_API_URL", None)
    log = open(tmp_path / "server.log", "w")
    p = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/api"
    deadline = time.time() + PATIENCE_S
    while time.time() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert p.poll() is None, (tmp_path / "server.log").read_text()
        time.sleep(0.5)
    else:
        _stop(p)
        pytest.fail(f"prefect server did not become healthy in {PATIENCE_S} s")
    yield url
    _stop(p)  # by its own PID only
    log.close()


def test_serve_registers_scheduled_deployments_and_a_triggered_run_completes(prefect_server, tmp_path):
    data_root = tmp_path / "data"
    env = dict(
        os.environ, PREFECT_API_URL=prefect_server, PREFECT_HOME=str(tmp_path / "serve-home"), PYTHONPATH=str(ROOT)
    )
    log = open(tmp_path / "serve.log", "w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "serve", "--set", f"data_root={data_root}", "--set", "synth.n=3"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        expected = {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}
        client = httpx.Client(base_url=prefect_server, timeout=10)
        deadline, deps = time.time() + PATIENCE_S, []
        while time.time() < deadline:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            deps = client.post("/deployments/filter", json={}).json()
            if len(deps) >= len(expected):
                break
            time.sleep(1)
        by_name = {d["name"]: d for d in deps}
        assert set(by_name) == set(expected), (tmp_path / "serve.log").read_text()
        crons = {n: [s["schedule"]["cron"] for s in d["schedules"]] for n, d in by_name.items()}
        assert crons["nightly-synthesize-decontaminate"] == ["0 2 * * *"]
        assert crons["weekly-publish"] == ["0 6 * * 1"]
        assert crons["pipeline"] == []
        assert all(s["active"] for s in by_name["nightly-synthesize-decontaminate"]["schedules"])
        # The served defaults carry the --set overrides.
        assert f"data_root={data_root}" in by_name["synthesize"]["parameters"]["overrides"]

        # The server's SQLite store can answer a write with a transient error while `serve` is still writing (seen
        # once in a fresh-clone CI run: a body without an id): ask again until it answers with one.
        deadline, run = time.time() + PATIENCE_S, {}
        while time.time() < deadline and "id" not in run:
            resp = client.post(
                f"/deployments/{by_name['synthesize']['id']}/create_flow_run",
                json={"parameters": {"run_id": "served-run-1"}},
            )
            run = resp.json() if resp.status_code < 300 else {"status": resp.status_code, "body": resp.text[:500]}
            if "id" not in run:
                time.sleep(2)
        assert "id" in run, (run, (tmp_path / "serve.log").read_text()[-3000:])
        deadline, state = time.time() + PATIENCE_S, None
        while time.time() < deadline:
            state = client.get(f"/flow_runs/{run['id']}").json()["state"]
            if state["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
                break
            time.sleep(1)
        assert state and state["type"] == "COMPLETED", (state, (tmp_path / "serve.log").read_text()[-3000:])
    finally:
        _stop(serve, signal.SIGINT, wait=30)
        log.close()

    from pipeline.catalog import Catalog

    cat = Catalog(data_root / "catalog.duckdb", data_root)
    stages = cat.sql("SELECT stage, status FROM stages WHERE run_id = 'served-run-1'").to_pylist()
    assert [s["stage"] for s in stages] == ["synthesize"]
    assert stages[0]["status"] in ("completed", "skipped")
    if stages[0]["status"] == "completed":
        assert cat.sql("SELECT count(*) AS n FROM tasks WHERE run_id = 'served-run-1'").to_pylist()[0]["n"] == 3
