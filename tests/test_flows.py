"""Prefect flows over the library, with the real Prefect test harness and a real local Ray: shard tasks run as
Ray tasks (API URL propagated), artifacts are created, the catalog records stages and files, stages that cannot
run here are recorded as skipped with what they need, and `opforge sql` joins two stages' tables."""

from __future__ import annotations

import json
import os
import random

import pytest
from typer.testing import CliRunner

from pipeline.catalog import Catalog
from pipeline.config import load_config
from pipeline.identity import task_id
from pipeline.storage import DataStore
from tests._rows import row

RUN = "flows-run"


def _tasks(reference, n_ref: int = 12, n_new: int = 12) -> list[dict]:
    rng = random.Random(3)
    ops = ["torch.relu(x)", "torch.tanh(x)", "x * 1.5", "torch.sigmoid(x)", "x.pow(2)", "torch.nn.functional.gelu(x)"]
    codes = [p.code for p in reference[:n_ref]]
    for i in range(n_new):
        body = "\n".join(f"        x = {o}" for o in rng.sample(ops, 3))
        codes.append(
            f"import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n{body}\n        return x\n"
            f"def get_inputs():\n    return [torch.randn(4, {16 + i})]\ndef get_init_inputs():\n    return []\n"
        )
    return [
        row("tasks", task_id=task_id(c), code=c, data_source="test", composer="external", seed=i, run_id=RUN)
        for i, c in enumerate(codes)
    ]


@pytest.fixture()
def seeded_root(data_root, kernelbench_path):
    from pipeline.kernelbench import load_reference

    DataStore(data_root).write("tasks", _tasks(load_reference(kernelbench_path)), RUN)
    Catalog(data_root / "catalog.duckdb", data_root).start_run(RUN, {}, "test")
    return data_root


def test_flow_executor_follows_ray_and_the_stage(monkeypatch):
    """Shards of a flow are Prefect task runs whose work goes to the library's executor: Ray tasks with the stage's
    declared resources when Ray is up (never a Prefect Ray task runner), else the stage's threads here."""
    from flows import sharded
    from pipeline import executor, registry

    validate, evaluate = registry.get("validate"), registry.get("evaluate")
    assert executor.ray_options(evaluate.resources) == {"num_cpus": 1, "num_gpus": 1, "max_retries": 3}
    monkeypatch.setattr(executor, "ray_available", lambda: True)  # whether Ray is up, not what it runs
    ex = sharded.prefect_executor(validate)
    assert isinstance(ex, sharded.PrefectExecutor) and isinstance(ex.inner, executor.RayExecutor)
    monkeypatch.setattr(executor, "ray_available", lambda: False)
    ex = sharded.prefect_executor(validate)
    assert isinstance(ex.inner, executor.LocalExecutor) and ex.threads == (os.cpu_count() or 1)
    assert sharded.prefect_executor(registry.get("decontaminate")).threads == 1


def test_decontaminate_flow_on_ray_records_catalog_artifacts_and_resumes(prefect_harness, ray_local, seeded_root):
    from prefect.client.orchestration import get_client

    from flows.stages import decontaminate_flow

    over = [f"data_root={seeded_root}"]
    res = decontaminate_flow(overrides=over, run_id=RUN, shard_size=5)
    deco = res["stages"][0]
    assert deco["stage"] == "decontaminate" and deco["status"] == "completed"
    assert deco["rows_in"] == 24 and deco["shards_computed"] == 5 and deco["shards_skipped"] == 0
    # The KernelBench copies are caught, each with a reason code.
    assert sum(deco["drop_reasons"].values()) >= 12 and deco["rows_out"] == 24 - sum(deco["drop_reasons"].values())

    # Every shard was a Prefect task run (its work a Ray task) and is Completed in Prefect.
    import asyncio

    async def task_runs_and_artifacts():
        async with get_client() as client:
            flow_runs = await client.read_flow_runs()
            runs = await client.read_task_runs()
            arts = await client.read_artifacts()
        return flow_runs, runs, arts

    flow_runs, runs, arts = asyncio.run(task_runs_and_artifacts())
    # The Prefect API is shared by the whole test session (the fault test kills flows mid-stage): only this run's.
    mine = {fr.id for fr in flow_runs if (fr.parameters or {}).get("run_id") == RUN}
    assert mine
    shard_runs = [r for r in runs if r.name.startswith("decontaminate-shard-") and r.flow_run_id in mine]
    assert len(shard_runs) >= 5 and all(r.state.is_completed() for r in shard_runs)
    keys = {a.key for a in arts}
    assert {"decontaminate-summary", "decontaminate-drop-reasons", "contamination-summary"} <= keys
    summary = next(a for a in arts if a.key == "contamination-summary")
    assert "level" in json.dumps(summary.data)  # names the matched KernelBench problems

    cat = Catalog(seeded_root / "catalog.duckdb", seeded_root)
    st = cat.sql(
        "SELECT stage, status, rows_in, rows_out, drop_reasons FROM stages WHERE run_id = ? ORDER BY stage", [RUN]
    ).to_pylist()
    by = {r["stage"]: r for r in st}
    assert by["decontaminate"]["rows_in"] == 24 and json.loads(by["decontaminate"]["drop_reasons"])
    assert cat.sql("SELECT count(*) AS n FROM table_files WHERE table_name = 'contamination'").to_pylist()[0]["n"] == 5

    again = decontaminate_flow(overrides=over, run_id=RUN, shard_size=5)["stages"][0]
    assert again["shards_skipped"] == 5 and again["shards_computed"] == 0
    assert again["drop_reasons"] == deco["drop_reasons"]

    # Changed settings: new shards; the old ones leave the table and the catalog's file registry.
    changed = decontaminate_flow(overrides=over + ["decontam.threshold=0.75"], run_id=RUN, shard_size=5)["stages"][0]
    assert changed["shards_computed"] == 5
    assert cat.sql("SELECT count(*) AS n FROM table_files WHERE table_name = 'contamination'").to_pylist()[0]["n"] == 5
    assert cat.sql("SELECT count(*) AS n FROM contamination WHERE run_id = ?", [RUN]).to_pylist()[0]["n"] == 24

    # `opforge sql` joins two stages' tables (tasks from synthesis, contamination from decontamination).
    from flows.cli import app

    q = (
        "SELECT t.data_source, c.contaminated, count(*) AS n FROM tasks t JOIN contamination c "
        "USING (task_id, run_id) GROUP BY ALL ORDER BY ALL"
    )
    out = CliRunner().invoke(app, ["sql", q, "--set", f"data_root={seeded_root}", "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert sum(r["n"] for r in rows) == 24 and {r["contaminated"] for r in rows} == {True, False}


def test_gpu_stages_are_skipped_with_what_they_need(prefect_harness, seeded_root):
    from flows.stages import evaluate_flow, rollout_flow

    r = rollout_flow(overrides=[f"data_root={seeded_root}", "device=cpu"], run_id=RUN)["stages"][0]
    assert r["status"] == "skipped" and "model" in r["detail"] and "GPU" in r["detail"]
    e = evaluate_flow(overrides=[f"data_root={seeded_root}", "device=cpu"], run_id=RUN)["stages"][0]
    assert e["status"] == "skipped" and "GPU" in e["detail"]
    cat = Catalog(seeded_root / "catalog.duckdb", seeded_root)
    st = {
        r["stage"]: r for r in cat.sql("SELECT stage, status, detail FROM stages WHERE run_id = ?", [RUN]).to_pylist()
    }
    assert st["rollout"]["status"] == "skipped" and "GPU" in st["rollout"]["detail"]


def test_latest_run_and_unknown_override_fail_clearly(tmp_path):
    from flows.stages import load

    with pytest.raises(ValueError, match="no completed run"):
        load(None, [f"data_root={tmp_path}"], "latest")
    with pytest.raises(Exception, match="nosuchkey"):
        load(None, ["nosuchkey=1"], None)


def test_example_config_is_valid_and_matches_the_defaults():
    from pathlib import Path

    from pipeline.config import OpforgeConfig

    example = Path(__file__).resolve().parents[1] / "opforge.example.yaml"
    assert load_config(example).dump() == OpforgeConfig().dump()


def test_prefect_yaml_deployments_build_with_their_schedules():
    from pathlib import Path

    from flows.deployments import build

    deps = {d.name: d for d in build(Path(__file__).resolve().parents[1] / "prefect.yaml", overrides=["synth.n=3"])}
    assert {
        "nightly-synthesize-decontaminate",
        "nightly-rollout",
        "weekly-publish",
        "pipeline",
        "synthesize",
        "validate",
        "decontaminate",
        "rollout",
        "evaluate",
        "curate",
        "publish",
    } == set(deps)
    assert [s.schedule.cron for s in deps["nightly-rollout"].schedules] == ["0 4 * * *"]
    assert deps["nightly-synthesize-decontaminate"].parameters["overrides"] == ["synth.seed_per_run=true", "synth.n=3"]
    assert [s.schedule.cron for s in deps["nightly-synthesize-decontaminate"].schedules] == ["0 2 * * *"]
    assert deps["weekly-publish"].parameters["run_id"] == "latest"
    assert deps["synthesize"].parameters["overrides"] == ["synth.n=3"]
    # Two runs of one deployment never overlap: a late one waits in the queue.
    assert all(
        d.concurrency_limit == 1 and d.concurrency_options.collision_strategy == "ENQUEUE" for d in deps.values()
    )
