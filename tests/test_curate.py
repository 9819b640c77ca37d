"""Curation: every filter drops with its reason code, datasets in verl / TRL / critic format, splits by task, the
critic's returns and GAE, and the real flow through Parquet, DuckDB, the CLI and lineage."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from pipeline.curate.columns import to_rows
from pipeline.curate.critic import gae, returns
from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of
from pipeline.curate.stage import curate, load_result, save_result
from pipeline.curate.synthetic import JUNK, TOOLS_JSON, scenario, trajectory
from pipeline.storage import SchemaError, conform


@pytest.fixture(scope="module")
def scen():
    return scenario()


@pytest.fixture(scope="module")
def result(scen):
    return curate(
        scen["tasks"],
        scen["validation"],
        scen["contamination"],
        conform("trajectories", scen["trajectories"]),
        CurateSettings(),
        "cur-1",
    )


def _drops(result, scen, dataset):
    name = {v: k for k, v in scen["ids"].items()}
    return sorted(
        (name.get(d["task_id"], "?"), d["item_id"], tuple(d["reasons"]))
        for d in result.drops.to_pylist()
        if d["dataset"] == dataset
    )


def test_every_filter_drops_with_its_reason(result, scen):
    got = [(n, r) for n, _, r in _drops(result, scen, "sft")]
    assert got == sorted(
        [
            ("?", ("unknown_task",)),
            ("changed", ("contamination_changed",)),
            ("contaminated", ("contamination_changed", "task_contaminated")),
            ("fails", ("nonpositive_reward", "no_speedup_measured")),
            ("good", ("duplicate_final_kernel",)),
            ("good", ("duplicate_trajectory",)),
            ("invalid", ("task_invalid",)),
            ("long", ("too_long",)),
            ("loops", ("loop",)),
            ("malformed", ("malformed_tool_call",)),
            ("malformed", ("malformed_tool_call",)),
            ("slow", ("below_speedup_threshold",)),
            ("unvalidated", ("not_validated",)),
        ]
    )
    # Every trajectory is either kept or has exactly one drop row per dataset.
    n_in = len(scen["trajectories"])
    assert result.sft.num_rows + len(got) == n_in
    assert [(n, r) for n, _, r in _drops(result, scen, "warmup")] == [
        ("contaminated", ("task_contaminated",)),
        ("invalid", ("task_invalid",)),
        ("unvalidated", ("not_validated",)),
    ]
    # The kept ones: the better of the two identical "good" kernels, and the distinct one.
    kept = result.sft.to_pylist()
    assert {r["task_id"] for r in kept} == {scen["ids"]["good"]}
    assert sorted(r["speedup_vs_compile"] for r in kept) == [1.2, 1.4]
    assert all(r["final_reward"] > 0 and r["speedup_vs_compile"] >= 1.05 for r in kept)
    filt = {f["reason"]: f for f in result.summary["filters"]["sft"]}
    assert filt["malformed_tool_call"]["dropped"] == 2 and filt["no_speedup_measured"]["failing"] == 1
    assert filt["no_speedup_measured"]["dropped"] == 0


def test_thresholds_are_configurable(scen):
    loose = CurateSettings(min_speedup_vs_compile=1.0, max_chars=10_000_000)
    r = curate(scen["tasks"], scen["validation"], scen["contamination"], scen["trajectories"], loose, "cur-2")
    tasks = {scen["ids"][n] for n in ("slow", "long")}
    assert tasks <= set(r.sft.column("task_id").to_pylist())


def test_malformed_and_loop_detection_general_cases():
    s = CurateSettings()
    from pipeline.curate.filters import loop, malformed

    t = trajectory("t", steps=[{"kernel": "a", "speedup": 1.3, "reward": 3}])
    assert malformed(t) is None and loop(t, s) is None
    bad_tool = json.loads(json.dumps(t))
    bad_tool["messages"][2]["tool_calls"][0]["function"]["name"] = "rm_rf"
    assert "unknown tool" in malformed(bad_tool)
    not_obj = json.loads(json.dumps(t))
    not_obj["messages"][2]["tool_calls"][0]["function"]["arguments"] = "[1, 2]"
    assert "not a JSON object" in malformed(not_obj)
    orphan = json.loads(json.dumps(t))
    orphan["messages"][3]["tool_call_id"] = "call_999"
    assert "no open tool call" in malformed(orphan)
    unanswered = json.loads(json.dumps(t))
    del unanswered["messages"][3]  # the next assistant turn comes while the call has no result
    assert "got no result" in malformed(unanswered)
    # The same call with reordered JSON keys is the same action; 4 scattered repeats exceed max_identical_actions.
    steps = [{"kernel": k, "speedup": 1.3, "reward": 3} for k in ("a", "b", "a", "b", "a", "b", "a")]
    t2 = trajectory("t", steps=steps)
    assert "4 times" in loop(t2, s)
    t3 = trajectory("t", steps=[{"kernel": k, "speedup": 1.3, "reward": 3} for k in "abc"])
    for i in (4, 6):
        msg = t3["messages"][i]["tool_calls"][0]["function"]
        msg["arguments"] = json.dumps(
            dict(reversed(list(json.loads(t3["messages"][2]["tool_calls"][0]["function"]["arguments"]).items())))
        )
    assert "in a row" in loop(t3, s)


def test_token_limit_uses_recorded_token_ids():
    t = trajectory("t", token_ids=True)
    from pipeline.curate.filters import token_count, trajectory_reasons

    n = token_count(t)
    assert n == 50 + 80
    reasons, _ = trajectory_reasons(t, [], {}, CurateSettings(max_tokens=n - 1))
    assert reasons == ["too_long"]


def test_splits_are_by_task_deterministic_and_consistent(scen):
    ids = [f"task{i:04d}" for i in range(2000)]
    splits = [split_of(i, 0.2) for i in ids]
    assert splits == [split_of(i, 0.2) for i in ids]
    assert 0.17 < splits.count("validation") / len(ids) < 0.23
    assert split_of("x", 0.0) == "train" and split_of("x", 1.0) == "validation"
    # Many samples per task across many tasks: no task in both splits, in any dataset.
    tasks = scen["tasks"]
    trajs = [
        trajectory(
            t["task_id"], k, task_code=t["code"], steps=[{"kernel": f"{t['task_id']}{k}", "speedup": 1.3, "reward": 3}]
        )
        for t in tasks
        for k in range(3)
    ]
    val = [dict(v, valid=True) for v in scen["validation"]] + [{"task_id": scen["ids"]["unvalidated"], "valid": True}]
    con = [dict(c, contaminated=False) for c in scen["contamination"]]
    r = curate(tasks, val, con, trajs, CurateSettings(validation_fraction=0.5), "cur-3")
    assert r.sft.num_rows == 30 and r.warmup.num_rows == 10
    by_split: dict[str, set] = {}
    for tbl in (r.warmup, r.sft, r.critic):
        for row in tbl.to_pylist():
            tid = row.get("task_id") or row["extra_info"]["task_id"]
            by_split.setdefault(tid, set()).add(row["split"])
    assert all(len(s) == 1 for s in by_split.values())
    assert {s for ss in by_split.values() for s in ss} == {"train", "validation"}


def test_warmup_rows_are_in_verls_format(result, scen):
    row = result.warmup.to_pylist()[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["ability"] == "cuda_kernel" and row["reward_model"]["style"] == "rule"
    task = next(t for t in scen["tasks"] if t["task_id"] == row["extra_info"]["task_id"])
    assert row["reward_model"]["ground_truth"] == task["code"]
    assert task["code"].strip() in row["prompt"][1]["content"]
    assert row["extra_info"]["ops"] == ["torch.relu", "torch.mul"] and row["data_source"] == "torch#2"
    assert row["row_id"] == f"warmup:{task['task_id']}"
    idx = sorted(r["extra_info"]["index"] for r in result.warmup.to_pylist() if r["split"] == "train")
    assert idx == list(range(len(idx)))


def test_sft_rows_are_trl_conversations(result):
    row = to_rows(result.sft)[0]
    roles = [m["role"] for m in row["messages"]]
    assert roles[:2] == ["system", "user"] and "tool" in roles and roles[-1] == "assistant"
    calls = [c for m in row["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = {m["tool_call_id"] for m in row["messages"] if m["role"] == "tool"}
    assert {c["id"] for c in calls} == results and all(
        isinstance(c["function"]["arguments"], dict) and c["function"]["arguments"] for c in calls
    )
    # No key without a use: only assistant messages that called tools carry tool_calls, only results the rest.
    for m in row["messages"]:
        extra = (
            {"tool_calls"}
            if m["role"] == "assistant" and "tool_calls" in m
            else {"tool_call_id", "name"}
            if m["role"] == "tool"
            else set()
        )
        assert set(m) == {"role", "content"} | extra and isinstance(m["content"], str)
    assert row["tools"] == json.loads(TOOLS_JSON)
    assert row["num_turns"] == roles.count("assistant")


def test_critic_returns_and_gae_by_hand():
    assert returns([0.0, 0.0, 3.0], 1.0) == [3.0, 3.0, 3.0]
    assert returns([1.0, -1.0, 2.0], 0.5) == [1.0 + 0.5 * (-1.0 + 0.5 * 2.0), -1.0 + 0.5 * 2.0, 2.0]
    r, v, lam = [0.0, 0.0, 3.0], [1.0, 2.0, 2.5], 0.95
    d = [r[0] + v[1] - v[0], r[1] + v[2] - v[1], r[2] - v[2]]  # gamma = 1, V after the end = 0
    a2 = d[2]
    a1 = d[1] + lam * a2
    a0 = d[0] + lam * a1
    adv, tgt = gae(r, v, 1.0, lam)
    assert adv == pytest.approx([a0, a1, a2]) and tgt == pytest.approx([a0 + 1.0, a1 + 2.0, a2 + 2.5])
    # lambda = 1 gives Monte Carlo returns as targets; lambda = 0 gives TD(0) targets.
    assert gae(r, v, 1.0, 1.0)[1] == pytest.approx(returns(r, 1.0))
    assert gae(r, v, 1.0, 0.0)[1] == pytest.approx([r[0] + v[1], r[1] + v[2], r[2]])


def test_critic_rows_one_per_assistant_turn_with_baseline(scen, result):
    kept = to_rows(result.sft)
    traj_ids = [r["traj_id"] for r in kept]
    n_turns = {r["traj_id"]: r["num_turns"] for r in kept}
    values = {traj_ids[0]: [0.5] * n_turns[traj_ids[0]], traj_ids[1]: [1.0]}  # the second has the wrong length
    r = curate(
        scen["tasks"],
        scen["validation"],
        scen["contamination"],
        scen["trajectories"],
        CurateSettings(),
        "cur-4",
        values=values,
    )
    rows = to_rows(r.critic)
    assert len(rows) == sum(n_turns.values())
    first = [x for x in rows if x["traj_id"] == traj_ids[0]]
    assert [x["turn"] for x in first] == list(range(n_turns[traj_ids[0]]))
    assert [x["return_to_go"] for x in first] == [3.0] * len(first)
    assert [x["turn_reward"] for x in first] == [0.0] * (len(first) - 1) + [3.0]
    exp_adv, exp_tgt = gae([x["turn_reward"] for x in first], [0.5] * len(first), 1.0, 0.95)
    assert [x["gae_target"] for x in first] == pytest.approx(exp_tgt)
    assert [x["advantage"] for x in first] == pytest.approx(exp_adv)
    assert first[-1]["is_last"] and first[0]["eval_reward"] is not None
    # The prefix ends with this turn's assistant message and grows turn by turn.
    for x in first:
        assert x["messages"][-1]["role"] == "assistant"
        assert sum(m["role"] == "assistant" for m in x["messages"]) == x["turn"] + 1
    second = [x for x in rows if x["traj_id"] == traj_ids[1]]
    assert all(x["gae_target"] is None for x in second)
    assert any("GAE left empty" in n for n in r.summary["notes"])


def test_no_trajectories_builds_warmup_only(scen):
    r = curate(scen["tasks"], scen["validation"], scen["contamination"], None, CurateSettings(), "cur-cpu")
    assert r.warmup.num_rows == 7 and r.sft.num_rows == 0 and r.critic.num_rows == 0
    assert any("no trajectories" in s for s in r.summary["skipped"])
    empty = curate(None, None, None, None, CurateSettings(), "cur-empty")
    assert empty.warmup.num_rows == 0 and empty.drops.num_rows == 0


def test_latest_contamination_decision_wins(scen):
    ids = scen["ids"]
    later = [
        dict(c, run_id="decon-2", contaminated=True) for c in scen["contamination"] if c["task_id"] == ids["good"]
    ]
    r = curate(
        scen["tasks"],
        scen["validation"],
        scen["contamination"] + later,
        scen["trajectories"],
        CurateSettings(),
        "cur-5",
    )
    assert ids["good"] not in set(r.sft.column("task_id").to_pylist())
    assert f"warmup:{ids['good']}" not in set(r.warmup.column("row_id").to_pylist())
    reasons = {
        tuple(d["reasons"])
        for d in r.drops.to_pylist()
        if d["task_id"] == ids["good"] and d["kind"] == "trajectory" and d["dataset"] == "sft"
    }
    assert ("contamination_changed", "task_contaminated") in reasons


def test_outputs_are_validated_on_write(result):
    bad = result.sft.drop_columns(["tools"])
    with pytest.raises(SchemaError, match="tools"):
        conform("sft", bad)


def _write_inputs(store, scen):
    store.write("tasks", scen["tasks"], "synth-1")
    store.write(
        "contamination", [{k: v for k, v in c.items() if k != "run_id"} for c in scen["contamination"]], "decon-1"
    )
    store.write("trajectories", scen["trajectories"], "rollout-1")
    val_dir = store.table_dir("validation", "val-1")
    val_dir.mkdir(parents=True)
    from schemas import table_names

    if "validation" in table_names():
        store.write("validation", scen["validation"], "val-1")
    else:  # the validation stage's schema is not there yet: the same columns as plain Parquet
        import pyarrow as pa

        pq.write_table(
            pa.Table.from_pylist([{k: v for k, v in r.items() if k != "run_id"} for r in scen["validation"]]),
            val_dir / "part-00000.parquet",
        )


def test_cli_curate_publish_and_lineage_through_parquet_and_duckdb(data_root, scen, tmp_path):
    from pipeline.catalog import Catalog
    from pipeline.cli import app
    from pipeline.storage import DataStore

    store = DataStore(data_root)
    _write_inputs(store, scen)
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    for run in ("synth-1", "val-1", "decon-1", "rollout-1"):
        cat.start_run(run, {}, "test")
    runner = CliRunner()
    s = ["--set", f"data_root={data_root}"]
    res = runner.invoke(app, ["curate", *s, "--run-id", "cur-cli"])
    assert res.exit_code == 0, res.output
    assert "warmup" in res.output
    counts = cat.sql(
        "SELECT (SELECT count(*) FROM warmup) AS w, (SELECT count(*) FROM sft) AS s, "
        "(SELECT count(*) FROM critic) AS c, (SELECT count(*) FROM curation_drops) AS d"
    ).to_pylist()[0]
    assert counts == {"w": 7, "s": 2, "c": 4, "d": 3 + 2 * 13}
    stage = cat.sql("SELECT rows_out, drop_reasons FROM stages WHERE stage = 'curate'").to_pylist()[0]
    assert json.loads(stage["drop_reasons"])["malformed_tool_call"] == 4  # sft + critic rows
    loaded = load_result(data_root, "cur-cli")
    assert loaded.sft.num_rows == 2 and loaded.summary["rows"]["critic"] == 4

    out = tmp_path / "release"
    res = runner.invoke(app, ["publish", *s, "--out", str(out)])
    assert res.exit_code == 0, res.output
    import datasets

    sft = datasets.load_dataset(str(out), "sft")
    published = [r for split in sft.values() for r in split]
    assert sorted(r["row_id"] for r in published) == sorted(loaded.sft.column("row_id").to_pylist())

    # Lineage from a published row back to trajectory, task, seed operators, contamination decision and runs.
    row_id = published[0]["row_id"]
    res = runner.invoke(app, ["lineage", row_id, *s, "--format", "json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    traj = next(t for t in scen["trajectories"] if t["traj_id"] == row_id.split(":")[1])
    assert info["trajectory"]["traj_id"] == traj["traj_id"] and info["trajectory"]["run_id"] == "rollout-1"
    assert info["task"]["task_id"] == scen["ids"]["good"] and info["task"]["run_id"] == "synth-1"
    assert [o["name"] for o in info["seed_operators"]] == ["torch.relu", "torch.mul"]
    assert info["contamination"][0]["contaminated"] is False and info["contamination"][0]["run_id"] == "decon-1"
    assert info["validation"][0]["valid"] is True
    assert set(info["run_ids"]) >= {"cur-cli", "rollout-1", "synth-1", "decon-1", "val-1"}
    assert {r["run_id"] for r in info["runs"]} >= {"cur-cli", "rollout-1", "synth-1"}
    res = runner.invoke(app, ["lineage", f"warmup:{scen['ids']['slow']}", *s])
    assert res.exit_code == 0 and "torch.relu" in res.output and "decon-1" in res.output
    res = runner.invoke(app, ["lineage", "sft:nope", *s])
    assert res.exit_code == 1
    # --dry-run prints the Hub plan and needs no token (nothing is sent).
    res = runner.invoke(
        app,
        ["publish", *s, "--out", str(tmp_path / "dry"), "--repo", "org/kernels", "--dry-run"],
        env={"HF_TOKEN": ""},
    )
    assert res.exit_code == 0, res.output
    assert "[dry run] would publish" in res.output and "data/sft/" in res.output and "tagged cur-cli" in res.output


def test_save_result_round_trips(data_root, result):
    paths = save_result(result, data_root)
    assert pq.read_table(paths["sft"]).schema.metadata[b"opforge.table"] == b"sft"
    back = load_result(data_root, result.run_id)
    assert back.sft.to_pylist() == result.sft.to_pylist()
    assert back.summary["rows"] == result.summary["rows"]


def test_tasks_removed_by_dedup_are_dropped_with_their_trajectories(scen):
    ids = scen["ids"]
    dedup = [
        {
            "task_id": ids["good"],
            "cluster_id": ids["slow"],
            "kept_task_id": ids["slow"],
            "removed": True,
            "reason": "near_duplicate",
            "jaccard_to_kept": 0.93,
            "cluster_size": 2,
        },
        {
            "task_id": ids["slow"],
            "cluster_id": ids["slow"],
            "kept_task_id": ids["slow"],
            "removed": False,
            "reason": "",
            "jaccard_to_kept": 1.0,
            "cluster_size": 2,
        },
    ]
    r = curate(
        scen["tasks"],
        scen["validation"],
        scen["contamination"],
        scen["trajectories"],
        CurateSettings(),
        "cur-6",
        dedup=conform("dedup", dedup),
    )
    assert r.sft.num_rows == 0
    warm = {d["item_id"]: d["reason"] for d in r.drops.to_pylist() if d["dataset"] == "warmup"}
    assert warm[ids["good"]] == "near_duplicate" and ids["slow"] not in warm
    sft = [d["reasons"][0] for d in r.drops.to_pylist() if d["dataset"] == "sft" and d["task_id"] == ids["good"]]
    assert sft and all(x in ("near_duplicate", "duplicate_trajectory") for x in sft)


def test_conversations_outside_the_published_type_are_cleaned_not_fatal(scen):
    """Rows from another producer (extra message fields, a non-string content) still curate."""
    rows = [json.loads(json.dumps(t)) for t in scen["trajectories"]]
    for t in rows:
        for m in t["messages"]:
            m["reasoning_content"] = "thinking..."
        t["messages"][0]["content"] = {"text": "a system prompt given as an object"}
    r = curate(scen["tasks"], scen["validation"], scen["contamination"], rows, CurateSettings(), "cur-7")
    base = curate(
        scen["tasks"], scen["validation"], scen["contamination"], scen["trajectories"], CurateSettings(), "cur-7"
    )
    assert r.sft.column("row_id").to_pylist() == base.sft.column("row_id").to_pylist()
    first = to_rows(r.sft)[0]["messages"]
    assert json.loads(first[0]["content"]) == {"text": "a system prompt given as an object"}
    assert set(first[0]) == {"role", "content"}
    assert r.critic.num_rows == base.critic.num_rows


def test_hostile_rows_never_crash_and_every_item_is_accounted_for(scen):
    """Every field of a good trajectory replaced by values of the wrong shape, one field at a time."""
    import random

    good = json.loads(json.dumps(trajectory(scen["ids"]["good"], 7, task_code="x")))
    rng = random.Random(0)
    rows = []
    for k, key in enumerate(sorted(good)):
        for j, v in enumerate(rng.sample(JUNK, 6)):
            bad = json.loads(json.dumps(good))
            bad[key] = v
            bad["traj_id"] = bad["traj_id"] if key == "traj_id" else f"fuzz-{k}-{j}"
            rows.append(bad)
    for i, msg_junk in enumerate(JUNK):  # and inside the conversation
        bad = json.loads(json.dumps(good))
        bad["traj_id"] = f"fuzz-msg-{i}"
        bad["messages"][2] = msg_junk
        bad["turns"][0] = msg_junk
        rows.append(bad)
    tasks = scen["tasks"] + [{"task_id": 5, "code": None}, {"code": "x"}]
    r = curate(tasks, scen["validation"], scen["contamination"], rows, CurateSettings(), "cur-fuzz")
    sft_drops = [d for d in r.drops.to_pylist() if d["dataset"] == "sft"]
    assert r.sft.num_rows + len(sft_drops) == len(rows)
    assert {d["reason"] for d in r.drops.to_pylist() if d["dataset"] == "warmup"} >= {"unreadable_task"}
    assert "unreadable_trajectory" in {d["reason"] for d in sft_drops}
    for tbl in (r.sft, r.critic):  # whatever was kept is well formed
        for row in to_rows(tbl):
            assert all(isinstance(m["role"], str) for m in row["messages"])


def test_speedup_is_the_final_kernels_and_rewards_must_agree_with_its_evaluation():
    from pipeline.curate.filters import trajectory_reasons

    s = CurateSettings()
    # The best kernel came first; the final one is slower: the best is not credited to the final answer.
    t = trajectory(
        "t", steps=[{"kernel": "fast", "speedup": 2.0, "reward": 3}, {"kernel": "slow", "speedup": 1.01, "reward": 3}]
    )
    assert t["best_speedup_vs_compile"] == 2.0
    assert trajectory_reasons(t, [], {}, s)[0] == ["below_speedup_threshold"]
    # The agent edited after its last evaluation: the final kernel was scored by a fresh evaluation, no turn timed
    # it. Reward 3 certifies the harness's 1.05x bar; reward 2 does not.
    untimed = dict(t, final_kernel_hash="f" * 16, final_reward=3)
    assert trajectory_reasons(untimed, [], {}, s)[0] == []
    assert trajectory_reasons(dict(untimed, final_reward=2), [], {}, s)[0] == ["no_speedup_measured"]
    assert trajectory_reasons(untimed, [], {}, CurateSettings(min_speedup_vs_compile=1.2))[0] == [
        "no_speedup_measured"
    ]
    # A positive reward for a final kernel whose last evaluation failed is not trusted.
    bad = json.loads(json.dumps(t))
    bad["turns"][1]["correct"] = False
    assert "reward_inconsistent" in trajectory_reasons(bad, [], {}, s)[0]


def test_reading_in_batches_gives_the_same_result(scen):
    tbl = conform("trajectories", scen["trajectories"])
    args = (scen["tasks"], scen["validation"], scen["contamination"], tbl, CurateSettings(), "cur-b")
    whole, batched = curate(*args), curate(*args, batch_size=3)
    for name in ("warmup", "sft", "critic", "drops"):
        assert getattr(whole, name).equals(getattr(batched, name)), name
    assert whole.summary == batched.summary


def test_a_task_the_composer_failed_never_reaches_warmup(scen):
    tasks = [
        dict(t, compose_reason="no_code_block") if t["task_id"] == scen["ids"]["good"] else t for t in scen["tasks"]
    ]
    r = curate(tasks, scen["validation"], scen["contamination"], None, CurateSettings(), "cur-8")
    assert f"warmup:{scen['ids']['good']}" not in set(r.warmup.column("row_id").to_pylist())
    assert {d["reason"] for d in r.drops.to_pylist() if d["item_id"] == scen["ids"]["good"]} == {"compose_failed"}


def test_value_estimates_from_a_file_fill_gae_and_returns_are_always_there(scen, result, tmp_path):
    """MC returns need nothing; GAE columns come from a values file in the documented (traj_id, turn, value)
    format, given through settings (so the CLI's --set curate.values_path=... and the flow read it alike)."""
    import pyarrow as pa

    assert result.critic.num_rows and result.critic.column("return_to_go").null_count == 0
    assert result.critic.column("gae_target").null_count == result.critic.num_rows
    kept = to_rows(result.sft)
    rows = [{"traj_id": r["traj_id"], "turn": t, "value": 0.25 * t} for r in kept for t in range(r["num_turns"])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "values.parquet")
    (tmp_path / "values.json").write_text(
        json.dumps({r["traj_id"]: [0.25 * t for t in range(r["num_turns"])] for r in kept})
    )
    outs = []
    for f in ("values.parquet", "values.json"):
        s = CurateSettings(values_path=str(tmp_path / f))
        r = curate(scen["tasks"], scen["validation"], scen["contamination"], scen["trajectories"], s, "cur-v")
        assert r.critic.column("gae_target").null_count == 0
        outs.append(r.critic.column("gae_target").to_pylist())
        first = [x for x in to_rows(r.critic) if x["traj_id"] == kept[0]["traj_id"]]
        rew = [x["turn_reward"] for x in first]
        assert [x["gae_target"] for x in first] == pytest.approx(gae(rew, [x["value"] for x in first], 1.0, 0.95)[1])
    assert outs[0] == outs[1]
