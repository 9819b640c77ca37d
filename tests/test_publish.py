"""Publishing: the Hub-layout folder and its data card, and the round trip through a local emulator of the Hub's
HTTP API (tests/hub_emulator.py; the real Hub cannot be reached from here): publish, then `datasets.load_dataset`
through HF_ENDPOINT returns the same rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from hub_emulator import HubEmulator

from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import scenario, trajectory
from pipeline.publish.stage import publish_hub, publish_local

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "hf_emulator_token_alice"


@pytest.fixture(scope="module")
def hub():
    with HubEmulator(tokens={TOKEN: "alice", "hf_bob": "bob"}, orgs={"alice": ["opforge-test"]}) as emu:
        yield emu


@pytest.fixture(scope="module")
def result():
    s = scenario()
    # More trajectories so that both splits and several shards exist.
    extra = [
        trajectory(
            t["task_id"],
            k,
            task_code=t["code"],
            steps=[{"kernel": f"{t['task_id']}{k}", "speedup": 1.1 + 0.1 * k, "reward": 3}],
        )
        for t in s["tasks"]
        for k in range(2)
    ]
    val = [dict(v, valid=True) for v in s["validation"]]
    return curate(
        s["tasks"],
        val,
        s["contamination"],
        s["trajectories"] + extra,
        CurateSettings(validation_fraction=0.4),
        "cur-pub",
    )


def _front_matter(text: str) -> dict:
    m = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert m, "card has no YAML header"
    return yaml.safe_load(m.group(1))


def _load_subprocess(
    endpoint: str, repo: str, config: str | list[str], revision: str | None, tmp: Path, token: str | None = TOKEN
) -> subprocess.CompletedProcess:
    """`load_dataset(repo, config)` in a fresh process; stdout is JSON {split: rows} (or {config: {split: rows}}
    for a list of configs). HF_ENDPOINT is read when huggingface_hub is imported, hence the process."""
    configs = [config] if isinstance(config, str) else config
    code = (
        "import json, sys, datasets\n"
        f"load = lambda c: datasets.load_dataset({repo!r}, c, revision={revision!r})\n"
        f"out = {{c: {{k: v.to_list() for k, v in load(c).items()}} for c in {configs!r}}}\n"
        f"json.dump(out[{configs[0]!r}] if {isinstance(config, str)!r} else out, sys.stdout, default=str)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(tmp / "hf-home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def _rows_by_split(tbl) -> dict[str, list[dict]]:
    from pipeline.curate.columns import to_rows

    out: dict[str, list[dict]] = {}
    for r in to_rows(tbl):  # JSON columns (messages, tools) as the objects datasets decodes them into
        out.setdefault(r["split"], []).append(r)
    return out


def _normalize(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def test_local_folder_is_in_the_hubs_layout_with_a_card(result, tmp_path):
    out = publish_local(
        result, tmp_path / "release", {"repo_id": "opforge-test/kernels", "revision": "v1"}, max_shard_rows=3
    )
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    shards = [f for f in files if f.startswith("data/")]
    for f in shards:
        assert re.fullmatch(r"data/(warmup|sft|critic)/(train|validation)-\d{5}-of-\d{5}\.parquet", f), f
        md = pq.ParquetFile(out / f).metadata
        assert md.row_group(0).column(0).compression == "ZSTD"
    n_sft_train = len([f for f in shards if f.startswith("data/sft/train-")])
    assert n_sft_train == -(-len(_rows_by_split(result.sft)["train"]) // 3) and n_sft_train > 1
    assert f"data/sft/train-00000-of-{n_sft_train:05d}.parquet" in shards
    assert (out / "assets/speedup_vs_compile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".release.tmp-*")), "temporary build folder left behind"

    card = (out / "README.md").read_text()
    meta = _front_matter(card)
    assert meta["license"] == "apache-2.0" and meta["task_categories"] == ["text-generation"]
    assert meta["size_categories"] == ["n<1K"] and meta["pretty_name"] and "cuda" in meta["tags"]
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"warmup", "sft", "critic"} and configs["warmup"].get("default") is True
    assert {d["split"] for d in configs["sft"]["data_files"]} == {"train", "validation"}
    # Body: provenance, counts, every filter with its drop count, contamination with the KernelBench version, plot,
    # schema, loading.
    for needle in (
        "curation run | `cur-pub`",
        "rollout-1",
        "tiny-llama",
        "NVIDIA H200",
        "kbfp-test",
        "`below_speedup_threshold`",
        "`duplicate_final_kernel`",
        "![Speedup",
        "gae_target",
        'load_dataset("opforge-test/kernels", "sft", revision="v1")',
        "### `critic` (schema v2)",
    ):
        assert needle in card, needle
    filt = {f["reason"]: f["dropped"] for f in result.summary["filters"]["sft"]}
    assert "| `too_long` | " in card and str(filt["too_long"]) in card.split("`too_long`")[1].split("\n")[0]

    import datasets

    for name in ("warmup", "sft", "critic"):
        ds = datasets.load_dataset(str(out), name, cache_dir=str(tmp_path / "hf-cache"))  # never a stale cache
        want = _rows_by_split(getattr(result, name))
        assert set(ds) == set(want)
        for split, rows in want.items():
            assert _normalize(ds[split].to_list()) == _normalize(rows)


def test_warmup_only_release_says_what_was_skipped(tmp_path):
    s = scenario()
    r = curate(s["tasks"], s["validation"], s["contamination"], [], CurateSettings(), "cur-cpu")
    out = publish_local(r, tmp_path / "cpu", None)
    card = (out / "README.md").read_text()
    assert [c["config_name"] for c in _front_matter(card)["configs"]] == ["warmup"]
    assert "no trajectories were given" in card and "no speedup plot" in card
    assert not (out / "data" / "sft").exists()
    import datasets

    ds = datasets.load_dataset(str(out))  # the default config: warmup
    assert sum(d.num_rows for d in ds.values()) == r.warmup.num_rows == 7


def test_dry_run_prints_the_plan_and_touches_nothing(result, tmp_path, hub):
    out = publish_local(result, tmp_path / "rel", None)
    before = len(hub.state.requests)
    rep = publish_hub(out, "opforge-test/dry", token=TOKEN, tag="v1", dry_run=True, endpoint=hub.url)
    assert len(hub.state.requests) == before and ("dataset", "opforge-test/dry") not in hub.state.repos
    plan = rep.plan()
    assert "[dry run]" in plan and "README.md" in plan and "data/sft/train-00000-of-00001.parquet" in plan
    with pytest.raises(PermissionError, match="HF_TOKEN"):
        env = os.environ.pop("HF_TOKEN", None)
        try:
            publish_hub(out, "opforge-test/dry", endpoint=hub.url)
        finally:
            if env is not None:
                os.environ["HF_TOKEN"] = env


def test_round_trip_through_the_hub_emulator(result, tmp_path, hub):
    """`opforge publish` (a real CLI process, HF_ENDPOINT at the emulator) then `datasets.load_dataset`."""
    from pipeline.curate.stage import save_result

    data_root = tmp_path / "opforge-data"
    save_result(result, data_root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_TELEMETRY="1")
    n_commits_before = sum(1 for m, p in hub.state.requests if p.endswith("/commit/main"))
    cli = [sys.executable, "-c", "from pipeline.cli import app; app()"]
    proc = subprocess.run(
        [
            *cli,
            "publish",
            "--set",
            f"data_root={data_root}",
            "--run-id",
            "cur-pub",
            "--repo",
            "opforge-test/kernels",
            "--tag",
            "v1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tagged v1" in proc.stdout
    repo = hub.state.repos[("dataset", "opforge-test/kernels")]
    assert repo.private and repo.tags["v1"] == repo.branches["main"]
    # Everything went up in exactly one commit (a release is never half-published).
    assert sum(1 for m, p in hub.state.requests if p.endswith("/commit/main")) == n_commits_before + 1
    head = repo.commits[repo.branches["main"]]
    assert "README.md" in head.files and any(p.startswith("data/critic/") for p in head.files)

    r = _load_subprocess(hub.url, "opforge-test/kernels", ["sft", "warmup", "critic"], "v1", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    loaded = json.loads(r.stdout)
    for name in ("sft", "warmup", "critic"):
        got = loaded[name]
        want = _rows_by_split(getattr(result, name))
        assert set(got) == set(want)
        for split, rows in want.items():
            assert _normalize(got[split]) == _normalize(json.loads(json.dumps(rows, default=str))), (name, split)
    # Private: without a token the repo does not exist.
    r = _load_subprocess(hub.url, "opforge-test/kernels", "sft", "v1", tmp_path / "anon", token=None)
    assert r.returncode != 0


def test_next_release_replaces_stale_shards_and_old_tags_still_load(result, tmp_path, hub):
    first = publish_local(result, tmp_path / "r1", None, max_shard_rows=2)
    rep1 = publish_hub(first, "opforge-test/releases", token=TOKEN, tag="r1", endpoint=hub.url)
    s = scenario()
    smaller = curate(s["tasks"], s["validation"], s["contamination"], s["trajectories"], CurateSettings(), "cur-2")
    second = publish_local(smaller, tmp_path / "r2", None)
    rep2 = publish_hub(second, "opforge-test/releases", token=TOKEN, tag="r2", endpoint=hub.url)
    repo = hub.state.repos[("dataset", "opforge-test/releases")]
    head = repo.commits[repo.branches["main"]]
    assert rep2.deletes and all(p not in head.files for p in rep2.deletes)
    assert sorted(p for p in head.files if p.startswith("data/")) == sorted(
        p.relative_to(second).as_posix() for p in (second / "data").rglob("*.parquet")
    )
    assert repo.tags["r1"] == rep1.commit_oid and repo.tags["r2"] == rep2.commit_oid
    r = _load_subprocess(hub.url, "opforge-test/releases", "sft", "r2", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sum(len(v) for v in json.loads(r.stdout).values()) == smaller.sft.num_rows
    r = _load_subprocess(hub.url, "opforge-test/releases", "sft", "r1", tmp_path)
    assert sum(len(v) for v in json.loads(r.stdout).values()) == result.sft.num_rows
    # Someone without rights on the namespace cannot publish there.
    from huggingface_hub.errors import HfHubHTTPError

    with pytest.raises(HfHubHTTPError):
        publish_hub(second, "opforge-test/releases", token="hf_bob", tag="r3", endpoint=hub.url)
    assert "r3" not in repo.tags


def test_a_bad_card_or_a_public_repo_publishes_nothing(result, tmp_path, hub):
    out = publish_local(result, tmp_path / "bad", None)
    publish_hub(out, "opforge-test/guarded", token=TOKEN, tag="ok", endpoint=hub.url)
    repo = hub.state.repos[("dataset", "opforge-test/guarded")]
    head = repo.branches["main"]
    card = (out / "README.md").read_text().replace("- n<1K", "- huge", 1)
    (out / "README.md").write_text(card)
    (out / "data" / "sft" / "extra.parquet").write_bytes(b"PAR1")
    with pytest.raises(ValueError, match="Invalid metadata"):
        publish_hub(out, "opforge-test/guarded", token=TOKEN, tag="bad", endpoint=hub.url)
    assert repo.branches["main"] == head and "bad" not in repo.tags  # nothing half-published
    from huggingface_hub import HfApi

    HfApi(endpoint=hub.url, token=TOKEN).create_repo("opforge-test/open", repo_type="dataset", private=False)
    with pytest.raises(PermissionError, match="public"):
        publish_hub(out, "opforge-test/open", token=TOKEN, tag="v1", endpoint=hub.url)


def test_a_commit_on_a_stale_head_is_refused_whole(hub, tmp_path):
    """publish_hub commits on top of the head it read: if another release landed in between, the Hub (and the
    emulator) refuse the whole commit with 412 instead of interleaving the two releases."""
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=hub.url, token=TOKEN)
    api.create_repo("opforge-test/race", repo_type="dataset", private=True)
    head = api.dataset_info("opforge-test/race").sha
    api.create_commit(
        "opforge-test/race",
        repo_type="dataset",
        commit_message="other release",
        operations=[CommitOperationAdd("data/a.parquet", b"A" * 10)],
    )
    with pytest.raises(HfHubHTTPError) as e:
        api.create_commit(
            "opforge-test/race",
            repo_type="dataset",
            commit_message="ours",
            parent_commit=head,
            operations=[CommitOperationAdd("data/b.parquet", b"B" * 10), CommitOperationAdd("README.md", b"# ours\n")],
        )
    assert e.value.response.status_code == 412
    files = api.list_repo_files("opforge-test/race", repo_type="dataset")
    assert "data/b.parquet" not in files and "README.md" not in files and "data/a.parquet" in files
