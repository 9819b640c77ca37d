"""No secret is ever stored: an API key given by `--set`, by a config file or as `env:NAME` reaches the process that
sends it, and nothing else: not Prefect's database (flow run and deployment parameters, logs, task runs), not the
DuckDB catalog, not any file under the data root."""

from __future__ import annotations

import json
import os
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pipeline.config import ConfigError, load_config
from pipeline.credentials import REDACTED, hide_overrides, is_secret_key, redact
from pipeline.provenance import command_line

ROOT = Path(__file__).resolve().parents[1]


def test_secret_keys_are_recognised_by_their_last_word():
    for k in (
        "rollout.api_key",
        "synth.llm.api_key",
        "apiKey",
        "HF_TOKEN",
        "--hf-token",
        "--token",
        "password",
        "db.secret",
        "aws.secret_access_key",
        "Authorization",
        "gcp.credentials",
        "ssh.private_key",
    ):
        assert is_secret_key(k), k
    # Settings that merely contain such a word are kept on record (they were "<redacted>" before).
    for k in (
        "rollout.max_tokens_per_turn",
        "curate.max_tokens",
        "synth.llm_max_tokens",
        "token_ids",
        "tokenizer",
        "secretary",
        "keyword",
        "api_key_env_note",
    ):
        assert not is_secret_key(k), k
    conf = redact(load_config(None, ["rollout.api_key=sk-1"]).dump())
    assert conf["rollout"]["api_key"] == REDACTED and conf["rollout"]["max_tokens_per_turn"] == 8192


def test_hidden_overrides_give_the_same_config_and_hold_no_secret():
    env: dict[str, str] = {}
    given = ["synth.n=3", "rollout.api_key=sk-live-abc", "synth.llm.api_key='quoted key'", "rollout.api_key=env:X"]
    hidden = hide_overrides(given, env)
    assert hidden == [
        "synth.n=3",
        "rollout.api_key=env:OPFORGE_SECRET_ROLLOUT_API_KEY",
        "synth.llm.api_key=env:OPFORGE_SECRET_SYNTH_LLM_API_KEY",
        "rollout.api_key=env:X",
    ]
    assert env == {"OPFORGE_SECRET_ROLLOUT_API_KEY": "sk-live-abc", "OPFORGE_SECRET_SYNTH_LLM_API_KEY": "quoted key"}
    # A second value of the same key (another flow call of this process) keeps its own variable.
    second = hide_overrides(["rollout.api_key=sk-other"], env)
    assert second == ["rollout.api_key=env:OPFORGE_SECRET_ROLLOUT_API_KEY_2"]
    assert hide_overrides(["rollout.api_key=sk-live-abc"], env) == hidden[1:2]  # the same value: the same name


def test_secret_references_resolve_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_LLM_KEY", "sk-from-env")
    f = tmp_path / "c.yaml"
    f.write_text("rollout:\n  api_key: env:MY_LLM_KEY\n")
    cfg = load_config(f)
    assert cfg.rollout.api_key.get_secret_value() == "sk-from-env"
    assert "sk-from-env" not in json.dumps(cfg.dump()) + repr(cfg) + str(cfg)
    # A reference to a variable that is not set is a config error naming the reference, not the value.
    with pytest.raises(ConfigError, match="env:NOT_SET_ANYWHERE"):
        load_config(None, ["rollout.api_key=env:NOT_SET_ANYWHERE"])
    assert load_config(None, ["rollout.api_key=env:NOT_SET_ANYWHERE"], resolve_secrets=False).run_id is None
    # A mistyped secret key is an error that does not repeat the value.
    with pytest.raises(ConfigError) as e:
        load_config(None, ["rollout.apikey=sk-typo-123"])
    assert "sk-typo-123" not in str(e.value) and "rollout.api_key" in str(e.value)


def test_command_line_on_record_hides_every_form_of_secret():
    line = command_line(
        [
            "opforge",
            "run",
            "--set",
            "rollout.api_key=sk-a",
            "--set=synth.llm.api_key=sk-b",
            "--token=sk-c",
            "--hf-token",
            "sk-d",
            "--set",
            "rollout.max_tokens_per_turn=512",
            "--set",
            "rollout.api_key=env:KEY",
        ]
    )
    assert not any(s in line for s in ("sk-a", "sk-b", "sk-c", "sk-d"))
    assert "rollout.max_tokens_per_turn=512" in line and "rollout.api_key=env:KEY" in line


class _Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that records the bearer tokens it is sent (the real OpenAIBackend talks to it)."""

    seen: list[str] = []

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.seen.append(self.headers.get("Authorization", ""))
        self._send(200, {"data": [{"id": "stub-model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(self.headers.get("Authorization", ""))
        if self.path.endswith("/chat/completions"):
            self._send(200, {"choices": [{"message": {"content": "I cannot write that."}, "finish_reason": "stop"}]})
        else:
            self._send(404, {"error": "not found"})

    def log_message(self, *args):
        pass


@pytest.fixture()
def llm_endpoint():
    _Endpoint.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _Endpoint.seen
    server.shutdown()
    server.server_close()


def _prefect_db_bytes() -> bytes:
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

    url = PREFECT_API_DATABASE_CONNECTION_URL.value()
    assert url and url.startswith("sqlite"), url
    db = Path(url.split(":///", 1)[1])
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


def _unset_until_teardown(monkeypatch, *names: str) -> None:
    # setenv first: monkeypatch then restores the variables' first state (absent or not) when the test ends
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def _files_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_a_secret_given_to_a_flow_reaches_the_endpoint_and_nothing_else(
    prefect_harness, data_root, llm_endpoint, monkeypatch
):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler

    from flows.stages import synthesize_flow
    from pipeline.catalog import Catalog
    from pipeline.storage import DataStore

    url, seen = llm_endpoint
    key, other = f"sk-opforge-{secrets.token_hex(8)}", f"sk-rollout-{secrets.token_hex(8)}"
    _unset_until_teardown(monkeypatch, "OPFORGE_SECRET_SYNTH_LLM_API_KEY", "OPFORGE_SECRET_ROLLOUT_API_KEY")
    overrides = [
        f"data_root={data_root}",
        "synth.n=1",
        "synth.composer=llm",
        "synth.llm_retries=0",
        "synth.llm.backend=openai",
        f"synth.llm.base_url={url}",
        f"synth.llm.api_key={key}",
        f"rollout.api_key={other}",
    ]
    flow = synthesize_flow.with_options(name="synthesize")  # a copy keeps the secret handling
    state = flow(overrides=overrides, run_id="secret-run", return_state=True)
    assert state.is_completed(), state
    # Honest use: the endpoint was sent the key; the run completed with its row.
    assert seen and set(seen) == {f"Bearer {key}"}
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    assert cat.sql("SELECT status FROM runs WHERE run_id = 'secret-run'").to_pylist() == [{"status": "completed"}]
    (task,) = DataStore(data_root).read("tasks", "secret-run").to_pylist()
    assert task["compose_reason"] == "no_code_block"  # what the endpoint answered, as a row with a reason

    APILogHandler().flush()  # the run's log lines are in the API's database before it is read
    fid = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(fid)
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[fid])))
        tasks = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[fid])))
    assert "synth.llm.api_key=env:OPFORGE_SECRET_SYNTH_LLM_API_KEY" in run.parameters["overrides"]
    assert logs and tasks
    stored = {
        "parameters": run.parameters,
        "flow_run": run.model_dump(mode="json"),
        "logs": [x.model_dump(mode="json") for x in logs],
        "tasks": [t.model_dump(mode="json") for t in tasks],
    }
    for secret in (key, other):
        assert secret not in json.dumps(stored, default=str)
        assert secret.encode() not in _prefect_db_bytes()
        assert secret.encode() not in _files_bytes(data_root)  # catalog.duckdb (+ WAL), tables, reports
    config = json.loads(cat.sql("SELECT config FROM runs").column(0)[0].as_py())
    assert config["synth"]["llm"]["api_key"] == REDACTED and config["rollout"]["api_key"] == REDACTED


def test_deployment_defaults_hold_a_reference_not_the_secret(prefect_harness, monkeypatch):
    from prefect.client.orchestration import get_client

    from flows.deployments import build

    key = f"sk-deploy-{secrets.token_hex(8)}"
    _unset_until_teardown(monkeypatch, "OPFORGE_SECRET_ROLLOUT_API_KEY")
    (dep,) = build(
        ROOT / "prefect.yaml",
        overrides=["synth.n=2", f"rollout.api_key={key}"],
        only=["nightly-synthesize-decontaminate"],
    )
    assert os.environ["OPFORGE_SECRET_ROLLOUT_API_KEY"] == key  # what the runs `opforge serve` starts inherit
    dep_id = dep.apply()
    with get_client(sync_client=True) as client:
        stored = client.read_deployment(dep_id)
    assert "rollout.api_key=env:OPFORGE_SECRET_ROLLOUT_API_KEY" in stored.parameters["overrides"]
    assert key not in json.dumps(stored.model_dump(mode="json"), default=str)
    assert key.encode() not in _prefect_db_bytes()
    # A flow run of it loads the same key.
    cfg = load_config(None, stored.parameters["overrides"])
    assert cfg.rollout.api_key.get_secret_value() == key
