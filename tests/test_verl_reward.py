"""The verl warm-up pieces: the reward function (verl's compute_score signature, loaded by path as verl loads it),
the packaged PPO config, single-turn sampling scored by the harness, and the rejection-sampled dataset."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import scenario
from pipeline.curate.verl.config import CONFIG, REWARD, load_config, verl_overrides

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
TASK = (FIX / "tasks" / "vec_add.py").read_text()
HONEST = (FIX / "honest" / "add_inline.py").read_text()


def _load_by_path():
    """What verl does with custom_reward_function.path / name."""
    spec = importlib.util.spec_from_file_location("custom_module", REWARD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, load_config()["custom_reward_function"]["name"])


def test_compute_score_has_verls_signature_and_scores_through_the_harness():
    fn = _load_by_path()
    params = list(inspect.signature(fn).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    # No code block: -1 without running anything.
    out = fn("torch#2", "I would fuse the ops.", TASK, {"task_id": "x"})
    assert out["score"] == -1.0 and out["format_ok"] == 0
    # An honest answer on this CPU machine: the harness runs its static checks and build, then reports no_gpu.
    out = fn("torch#2", f"Here it is:\n```python\n{HONEST}```\n", TASK, {"task_id": "x"})
    assert out["format_ok"] == 1 and out["score"] == -1.0
    assert all(isinstance(v, (int, float)) for v in out.values())  # verl aggregates the extra keys as metrics
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if not gpu:
        assert out["no_gpu"] == 1


def test_a_hostile_answer_scores_minus_one_whatever_its_text_claims():
    fn = _load_by_path()
    sneaky = (
        "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n"
        "        return a + b\n```\nreward: 3, speedup 10x"
    )
    assert fn("torch#2", sneaky, TASK)["score"] == -1.0


@pytest.mark.gpu
def test_compute_score_rewards_an_honest_kernel_on_the_gpu():
    out = _load_by_path()("torch#2", f"```python\n{HONEST}```", TASK, {})
    assert out["correct"] == 1 and out["score"] >= 1.0 and out["no_gpu"] == 0


def test_packaged_verl_config_and_overrides(tmp_path):
    cfg = load_config()
    assert cfg["algorithm"]["gamma"] == 1.0 and cfg["algorithm"]["lam"] == 0.95
    assert cfg["data"]["prompt_key"] == "prompt" and cfg["reward_model"]["enable"] is False
    rel = tmp_path / "release" / "data" / "warmup"
    rel.mkdir(parents=True)
    for f in ("train-00000-of-00002.parquet", "train-00001-of-00002.parquet", "validation-00000-of-00001.parquet"):
        (rel / f).write_bytes(b"")
    args = dict(a.split("=", 1) for a in verl_overrides(tmp_path / "release", extra={"trainer.n_gpus_per_node": 1}))
    assert (
        Path(args["custom_reward_function.path"]).is_file() and args["custom_reward_function.name"] == "compute_score"
    )
    assert args["data.train_files"].count("train-0000") == 2 and "validation-00000" in args["data.val_files"]
    assert args["trainer.n_gpus_per_node"] == "1" and CONFIG.is_file()


def _samples_for(task_id: str) -> list[dict]:
    base = {
        "task_id": task_id,
        "model": "m",
        "run_id": "roll",
        "system": "s",
        "user": "u",
        "finish_reason": "stop",
        "eval_reason": "",
        "error": "",
        "compiled": True,
        "seed": 0,
    }

    def mk(i, reward, text, fmt=True):
        return {
            **base,
            "sample_id": f"s{i}",
            "sample_idx": i,
            "completion": text,  # noqa
            "format_ok": fmt,
            "correct": reward > 0,
            "reward": reward,
            "speedup_vs_eager": 2.0 if reward > 1 else None,
            "speedup_vs_compile": 1.3 if reward > 2 else None,
        }

    return [
        mk(0, 3, "```python\nclass ModelNew: ...\n```"),
        mk(1, -1, "```python\nwrong\n```"),
        mk(2, 1, "```python\nclass ModelNew:  ...\n```"),
        mk(3, -1, "I refuse", fmt=False),
        mk(4, 2, "```python\nclass ModelNew: pass\n```"),
    ]


def test_rejection_sampled_keeps_rewarded_distinct_answers():
    s = scenario()
    good, bad = s["ids"]["good"], s["ids"]["contaminated"]
    samples = _samples_for(good) + [dict(x, sample_id="c" + x["sample_id"], task_id=bad) for x in _samples_for(bad)]
    r = curate(
        s["tasks"],
        s["validation"],
        s["contamination"],
        None,
        CurateSettings(),
        "c-rs",
        single_turn=pa.Table.from_pylist(samples),
    )
    kept = r.rejection_sampled.to_pylist()
    assert [(x["sample_idx"], x["reward"]) for x in kept] == [(0, 3), (4, 2)]  # sample 2 is sample 0 respaced
    assert all(x["k"] == 5 and x["kept"] == 2 and x["completion"][0]["role"] == "assistant" for x in kept)
    drops = {d["item_id"]: d["reasons"] for d in r.drops.to_pylist() if d["dataset"] == "rejection_sampled"}
    assert drops["s1"] == ["nonpositive_reward"] and drops["s3"] == ["no_answer", "nonpositive_reward"]
    assert drops["s2"] == ["duplicate_answer"] and all(drops[f"cs{i}"][0] == "task_not_clean" for i in range(5))
    assert len(kept) + len(drops) == len(samples)
    stricter = curate(
        s["tasks"],
        s["validation"],
        s["contamination"],
        None,
        CurateSettings(rs_min_reward=3),
        "c",
        single_turn=samples,
    )
    assert stricter.rejection_sampled.column("sample_idx").to_pylist() == [0]


def test_single_turn_sampling_scores_every_answer_with_the_harness():
    """Replayed answers through the real sampler and the real reward function (CPU: no_gpu, so all -1)."""
    from pipeline.llm.replay import ReplayBackend
    from pipeline.rollout.settings import RolloutSettings
    from pipeline.rollout.single_turn import sample_single_turn
    from pipeline.storage import conform

    s = scenario()
    t = next(x for x in s["tasks"] if x["task_id"] == s["ids"]["good"])
    be = ReplayBackend({t["task_id"]: [f"```python\n{HONEST}```"], "*": ["no code"]})
    rows = sample_single_turn(
        [t, dict(t, task_id="other")], be, RolloutSettings(backend="replay", concurrency=2), "roll-st", k=2
    )
    tbl = conform("single_turn", rows)
    assert tbl.num_rows == 4 and [r["sample_idx"] for r in rows] == [0, 1, 0, 1]
    by = {(r["task_id"], r["sample_idx"]): r for r in rows}
    assert by[(t["task_id"], 0)]["format_ok"] and not by[("other", 0)]["format_ok"]
    assert all(r["reward"] == -1 and not r["error"] for r in rows)
    assert "ModelNew" in by[(t["task_id"], 1)]["completion"] and "```python" in by[(t["task_id"], 0)]["user"]
    r = curate(s["tasks"], s["validation"], s["contamination"], None, CurateSettings(), "c-st", single_turn=tbl)
    assert r.rejection_sampled.num_rows == 0
    assert {d["reason"] for d in r.drops.to_pylist() if d["dataset"] == "rejection_sampled"} == {
        "task_not_clean",
        "nonpositive_reward",
    }
