"""Runs that cannot lie: lifecycle statuses, `latest`, the run lock, the read-only `opforge sql`, no stored secret."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.catalog import Catalog
from pipeline.runlock import RunLocked, holder, run_lock
from pipeline.storage import DataStore
from tests._rows import row

ROOT = Path(__file__).resolve().parents[1]
HOLD = (
    "import sys; sys.path.insert(0, {root!r}); from pipeline.runlock import run_lock\n"
    "with run_lock({data!r}, 'r1'):\n    print('locked', flush=True); sys.stdin.read()\n"
)


def _holder_process(data_root: Path) -> subprocess.Popen:
    """A process that holds run r1's lock until killed; returns once it holds it (it says so)."""
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(root=str(ROOT), data=str(data_root))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "locked"
    return p


def test_second_writer_is_refused_naming_the_holder_and_a_dead_holder_does_not_block(data_root):
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r1", {}, "test")
    p = _holder_process(data_root)
    try:
        with pytest.raises(RunLocked, match=rf"pid {p.pid} on .*started .*lock"):
            run_lock(data_root, "r1").acquire()
        assert holder(data_root, "r1")["pid"] == p.pid
        assert cat.sweep_interrupted() == []  # alive: still running
    finally:
        p.kill()  # kill -9: no handler runs, the kernel drops the flock
        p.wait()
    assert holder(data_root, "r1") is None
    assert cat.sweep_interrupted() == ["r1"]
    assert cat.sql("SELECT status FROM runs").to_pylist() == [{"status": "interrupted"}]
    with run_lock(data_root, "r1"):  # the next writer proceeds
        assert holder(data_root, "r1") is None or holder(data_root, "r1")["pid"] == os.getpid()


def test_same_process_second_writer_is_refused_too(data_root):
    with run_lock(data_root, "r2"):
        with pytest.raises(RunLocked, match=f"pid {os.getpid()}"):
            run_lock(data_root, "r2").acquire()
    run_lock(data_root, "r2").acquire().release()


def test_latest_is_the_last_completed_run(data_root):
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    for rid, status in (("a", "completed"), ("b", "completed"), ("c", "failed"), ("d", "interrupted"), ("e", None)):
        cat.start_run(rid, {}, "test")
        if status:
            cat.finish_run(rid, status)
    assert cat.resolve_run_id("latest") == "b"
    from flows.stages import load

    assert load(None, [f"data_root={data_root}"], "latest").run_id == "b"
    with pytest.raises(ValueError):
        cat.finish_run("a", "running")


def _flow_run(data_root, stages, run_id="r1"):
    from prefect import flow

    from flows.stages import HOOKS, _run_stages

    @flow(**HOOKS, name="lifecycle-test")
    def f():
        return _run_stages(stages, None, [f"data_root={data_root}"], run_id, "test")

    return f()


def test_failed_and_interrupted_runs_are_marked_and_release_their_lock(prefect_harness, data_root):
    cat = Catalog(data_root / "catalog.duckdb", data_root)

    def ok(cfg):
        return {"stage": "ok", "status": "completed"}

    _flow_run(data_root, [("ok", ok)], "good")

    def boom(cfg):
        raise ValueError("bad input")

    with pytest.raises(RuntimeError, match="bad input"):
        _flow_run(data_root, [("ok", ok), ("boom", boom)], "bad")

    def interrupted(cfg):
        raise KeyboardInterrupt("signal SIGTERM")

    with pytest.raises(KeyboardInterrupt):
        _flow_run(data_root, [("ok", ok), ("stop", interrupted)], "stopped")
    status = {r["run_id"]: r["status"] for r in cat.sql("SELECT run_id, status FROM runs").to_pylist()}
    assert status == {"good": "completed", "bad": "failed", "stopped": "interrupted"}
    assert cat.resolve_run_id("latest") == "good"
    assert all(holder(data_root, r) is None for r in status)
    # A resumed run is running again, then completed.
    _flow_run(data_root, [("ok", ok)], "stopped")
    assert cat.sql("SELECT status FROM runs WHERE run_id = 'stopped'").to_pylist() == [{"status": "completed"}]


def test_crash_hook_marks_the_run_interrupted(data_root):
    from types import SimpleNamespace

    from flows.stages import _ACTIVE, mark_interrupted

    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r9", {}, "test")
    _ACTIVE["fr-1"] = (cat, "r9")
    mark_interrupted(None, SimpleNamespace(id="fr-1", parameters={"overrides": [f"data_root={data_root}"]}), None)
    assert cat.sql("SELECT status FROM runs").to_pylist() == [{"status": "interrupted"}]


def test_secrets_in_the_config_are_never_stored(data_root):
    from pipeline.config import load_config

    cfg = load_config(None, [f"data_root={data_root}", "synth.llm.api_key=sk-live-123", "rollout.api_key=sk-2"])
    cat = Catalog(cfg.catalog_path, cfg.data_root)
    cat.start_run("r1", cfg.dump(), "test")
    stored = (data_root / "catalog.duckdb").read_bytes()
    assert b"sk-live-123" not in stored and b"sk-2" not in stored
    conf = json.loads(cat.sql("SELECT config FROM runs").column("config")[0].as_py())
    assert conf["synth"]["llm"]["api_key"] == "<redacted>" and conf["rollout"]["api_key"] == "<redacted>"
    assert conf["synth"]["n"] == cfg.synth.n  # everything else is kept


def _seed(data_root):
    rows = [row("tasks", task_id=f"t{i}", code=f"x = {i}", run_id="r1") for i in range(3)]
    path, _ = DataStore(data_root).write("tasks", rows, "r1")
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r1", {}, "test")
    cat.register_file("r1", "tasks", path, 3, 1)
    return cat


def test_sql_is_read_only_portable_and_has_every_view(data_root, tmp_path):
    from pipeline.cli import app
    from schemas import table_names

    _seed(data_root)
    cli = CliRunner()
    args = ["--set", f"data_root={data_root}", "--format", "json"]
    r = cli.invoke(app, ["sql", "DELETE FROM runs", *args])
    assert r.exit_code == 1 and "read-only" in r.output
    r = cli.invoke(app, ["sql", "SELECT count(*) AS n FROM runs", *args])
    assert json.loads(r.output) == [{"n": 1}]
    # Every table has a view, with its schema's columns, empty until it has files.
    for t in table_names():
        r = cli.invoke(app, ["sql", f"SELECT count(*) AS n FROM {t}", *args])
        assert r.exit_code == 0, r.output
    r = cli.invoke(app, ["sql", "SELECT count(*) AS n, count(reason) AS r FROM validation", *args])
    assert json.loads(r.output) == [{"n": 0, "r": 0}]
    # Portable: the catalog file's own views are relative to the data root, which can move.
    Catalog(data_root / "catalog.duckdb", data_root).refresh_views()
    moved = tmp_path / "elsewhere"
    shutil.move(str(data_root), moved)
    r = cli.invoke(app, ["sql", "SELECT count(*) AS n FROM tasks", "--set", f"data_root={moved}", "--format", "json"])
    assert json.loads(r.output) == [{"n": 3}]
    assert json.loads(
        json.dumps(Catalog(moved / "catalog.duckdb", moved).sql("SELECT count(*) AS n FROM tasks").to_pylist())
    ) == [{"n": 3}]


WRITER = (
    "import sys; sys.path.insert(0, {root!r}); from pipeline.catalog import Catalog\n"
    "from pathlib import Path\nc = Catalog(Path({data!r}) / 'catalog.duckdb', Path({data!r}))\n"
    "print('ready', flush=True)\n"
    "for i in range(150):\n    c.record_stage('r1', f's{{i}}', rows_in=i, rows_out=i)\n"
    "print('done', flush=True)\n"
)


def test_sql_works_while_a_run_writes(data_root):
    cat = _seed(data_root)
    w = subprocess.Popen(
        [sys.executable, "-c", WRITER.format(root=str(ROOT), data=str(data_root))], stdout=subprocess.PIPE, text=True
    )
    assert w.stdout.readline().strip() == "ready"
    seen = []
    while w.poll() is None:  # read as long as the writer writes: every query answers, none fails
        seen.append(cat.query_readonly("SELECT count(*) AS n FROM stages").column("n")[0].as_py())
    assert w.wait() == 0 and w.stdout.read().strip() == "done"
    assert seen == sorted(seen) and seen
    assert cat.query_readonly("SELECT count(*) AS n FROM stages")[0][0].as_py() == 150


def test_sigterm_handler_unwinds_like_ctrl_c():
    from flows.commands import Interrupted, interrupt_on_signals

    for sig in (signal.SIGTERM, signal.SIGHUP):
        before = signal.getsignal(sig)
        with pytest.raises(Interrupted, match=sig.name):
            with interrupt_on_signals():
                os.kill(os.getpid(), sig)  # the handler runs before the next statement
                raise AssertionError("not interrupted")
        assert signal.getsignal(sig) == before


def test_command_line_on_record_hides_secrets():
    from pipeline.provenance import command_line

    line = command_line(
        ["/venv/bin/opforge", "run", "--set", "rollout.api_key=sk-1", "--hf-token", "hf_x", "--set", "synth.n=4"]
    )
    assert line == "opforge run --set 'rollout.api_key=<redacted>' --hf-token '<redacted>' --set synth.n=4"


def test_stage_commands_writing_a_run_take_its_lock_and_end_it(data_root, tmp_path):
    """`opforge synth/curate/rollout --run-id X` are writers of X too: refused while another process writes X
    (before writing anything), and a run they start ends completed or failed, never `running` forever."""
    from pipeline.cli import app

    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r1", {}, "test")
    cli = CliRunner()
    s = ["--set", f"data_root={data_root}"]
    p = _holder_process(data_root)
    try:
        for args in (["synth", "--n", "2", "--no-validate", "--run-id", "r1"], ["curate", "--run-id", "r1"]):
            r = cli.invoke(app, [*args, *s])
            assert r.exit_code == 2 and f"run r1 is being written by pid {p.pid}" in r.output, r.output
        assert not (data_root / "tables").exists()  # nothing written
        assert cat.sql("SELECT status FROM runs").to_pylist() == [{"status": "running"}]  # the holder's run
    finally:
        p.kill()
        p.wait()
    r = cli.invoke(app, ["synth", "--n", "2", "--no-validate", "--run-id", "s1", *s])
    assert r.exit_code == 0, r.output
    (run,) = cat.sql("SELECT status, pipeline_version FROM runs WHERE run_id = 's1'").to_pylist()
    assert run["status"] == "completed" and "git" in run["pipeline_version"] and holder(data_root, "s1") is None
    # A command that fails marks its run failed and releases the lock.
    tasks = tmp_path / "tasks.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"code": ["x = 1"]}), tasks)
    r = cli.invoke(
        app,
        [
            "rollout",
            "--tasks",
            str(tasks),
            "--backend",
            "replay",
            "--replay",
            str(tmp_path / "missing.json"),
            "--run-id",
            "f1",
            *s,
        ],
    )
    assert r.exit_code != 0
    assert cat.sql("SELECT status FROM runs WHERE run_id = 'f1'").to_pylist() == [{"status": "failed"}]
    assert holder(data_root, "f1") is None
