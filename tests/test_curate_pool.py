"""Tasks accumulate across scheduled runs: each run draws new tasks (seed from the run id), and curation reads the
pool of every run, deduplicated across runs, with one meaning for the CLI and the flow (both call
`pipeline.curate.pool.curation_inputs`)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.curate.pool import curation_inputs
from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate, load_result
from pipeline.curate.synthetic import fill_schema, trajectory
from pipeline.identity import task_id
from pipeline.storage import DataStore
from pipeline.synth.settings import SynthSettings
from pipeline.synth.stage import synthesize


def test_each_run_draws_new_tasks_and_a_run_stays_reproducible():
    s = SynthSettings(n=6, seed_per_run=True, size_profile="small")
    a, b, a2 = (synthesize(s, r).column("task_id").to_pylist() for r in ("run-a", "run-b", "run-a"))
    assert a == a2 and not set(a) & set(b)
    fixed = SynthSettings(n=6, size_profile="small")
    assert (
        synthesize(fixed, "run-a").column("task_id").to_pylist()
        == synthesize(fixed, "run-b").column("task_id").to_pylist()
    )


def code(op: str, dim: int = 64) -> str:
    """A small task per operator chain: different chains are different tasks to the dedup view."""
    return (
        f"import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return {op}\n\n"
        f"def get_inputs():\n    return [torch.randn(16, {dim})]\n\ndef get_init_inputs():\n    return []\n"
    )


OPS = [
    "torch.relu(x)",
    "torch.tanh(x) * torch.sigmoid(x)",
    "torch.softmax(x, dim=-1).cumsum(dim=1)",
    "torch.nn.functional.gelu(x).amax(dim=1, keepdim=True)",
    "torch.logsumexp(x.abs().sqrt(), dim=0)",
]


def _write_run(root, run, codes, contaminated=()):
    store = DataStore(root)
    ids = [task_id(c) for c in codes]
    store.write(
        "tasks",
        [
            fill_schema(
                "tasks",
                {
                    "task_id": t,
                    "code": c,
                    "ops": ["torch.relu"],
                    "data_source": "torch#1",
                    "composer": "programmatic",
                    "seed": i,
                    "run_id": run,
                },
            )
            for i, (t, c) in enumerate(zip(ids, codes))
        ],
        run,
    )
    store.write(
        "validation", [fill_schema("validation", {"task_id": t, "valid": True, "run_id": run}) for t in ids], run
    )
    store.write(
        "contamination",
        [
            fill_schema(
                "contamination",
                {
                    "task_id": t,
                    "contaminated": t in contaminated,
                    "reference_fingerprint": "kb",
                    "method": "exact",
                    "parse_ok": True,
                },
            )
            for t in ids
        ],
        run,
    )
    from pipeline.decontam.stage import dedup

    store.write("dedup", dedup(list(zip(ids, codes))), run)  # the run's own dedup stage
    return ids


def test_the_pool_accumulates_runs_deduplicated_and_cli_and_flow_read_it_alike(tmp_path):
    root = tmp_path / "data"
    first = _write_run(root, "2026-01-01T02-00-00-aaaa", [code(o) for o in OPS[:3]])
    near = code(OPS[1], dim=72)  # run 2 composes a near copy of a run-1 task
    second = _write_run(root, "2026-01-02T02-00-00-bbbb", [code(OPS[0]), near, code(OPS[3]), code(OPS[4])])
    assert second[0] == first[0]  # the same task composed again is the same task
    DataStore(root).write(
        "trajectories", [trajectory(first[2], task_code=code(OPS[2]), run_id="roll-1")], "roll-1", shard="t"
    )

    ins = curation_inputs(root)
    assert ins["tasks"].num_rows == 6
    removed = {r["task_id"]: r for r in ins["dedup"].to_pylist() if r["removed"]}
    assert set(removed) == {second[1]} and removed[second[1]]["kept_task_id"] == first[1]
    r = curate(
        ins["tasks"],
        ins["validation"],
        ins["contamination"],
        ins["trajectories"],
        CurateSettings(),
        "cur",
        dedup=ins["dedup"],
    )
    warm = {x["extra_info"]["task_id"] for x in r.warmup.to_pylist()}
    assert warm == {first[0], first[1], first[2], second[2], second[3]}
    assert r.summary["inputs"]["trajectories"] == 1 and r.sft.num_rows == 1
    by_run = {x["extra_info"]["task_id"]: x["extra_info"]["task_run_id"] for x in r.warmup.to_pylist()}
    assert by_run[first[0]] == "2026-01-01T02-00-00-aaaa"  # a task's first run is its origin

    one = curation_inputs(root, "2026-01-02T02-00-00-bbbb", scope="run")
    assert one["tasks"].num_rows == 4 and one["trajectories"] is None

    # The CLI reads the same pool (and writes the rejection_sampled config too, empty here).
    from pipeline.cli import app

    out = CliRunner().invoke(app, ["curate", "--set", f"data_root={root}", "--run-id", "cur-cli"])
    assert out.exit_code == 0, out.output
    back = load_result(root, "cur-cli")
    assert back.warmup.num_rows == r.warmup.num_rows and back.sft.num_rows == 1
    assert back.rejection_sampled.num_rows == 0 and "rejection_sampled" in back.summary["rows"]
    assert json.loads(json.dumps(back.summary["filters"]["warmup"]))
