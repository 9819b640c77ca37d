"""Hub releases that cannot lie (against tests/hub_emulator.py): the tag is checked before the commit, a failed
tag rolls the commit back, a republish is a no-op, the token comes from `hf auth login`, the catalog records it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hub_emulator import HubEmulator

from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import scenario
from pipeline.publish.hub import ReleaseConflict
from pipeline.publish.stage import publish_hub, publish_local

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "hf_emulator_token_carol"


@pytest.fixture(scope="module")
def hub():
    with HubEmulator(tokens={TOKEN: "carol"}, orgs={"carol": ["rel"]}) as emu:
        yield emu


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    s = scenario()
    tmp = tmp_path_factory.mktemp("rel")
    one = curate(s["tasks"], s["validation"], s["contamination"], s["trajectories"], CurateSettings(), "rel-1")
    two = curate(s["tasks"][:-2], s["validation"], s["contamination"], s["trajectories"], CurateSettings(), "rel-2")
    return publish_local(one, tmp / "one", None), publish_local(two, tmp / "two", None)


def _head(hub, repo):
    r = hub.state.repos[("dataset", repo)]
    return r.branches["main"], dict(r.commits[r.branches["main"]].files), dict(r.tags)


def test_existing_tag_on_other_content_refuses_before_any_commit(hub, folders):
    one, two = folders
    publish_hub(one, "rel/a", token=TOKEN, tag="v1", endpoint=hub.url)
    before = _head(hub, "rel/a")
    with pytest.raises(ReleaseConflict, match="already names commit"):
        publish_hub(two, "rel/a", token=TOKEN, tag="v1", endpoint=hub.url)
    assert _head(hub, "rel/a") == before  # nothing published
    # The same content under the same tag: already published, nothing written.
    rep = publish_hub(one, "rel/a", token=TOKEN, tag="v1", endpoint=hub.url)
    assert rep.already_published and rep.commit_oid == before[2]["v1"] and _head(hub, "rel/a") == before


def test_a_failed_tag_rolls_the_commit_back(hub, folders):
    one, two = folders
    publish_hub(one, "rel/b", token=TOKEN, tag="v1", endpoint=hub.url)
    head, files, tags = _head(hub, "rel/b")
    # The Hub refuses a tag named like a branch (409), after the commit went in: the release must not stay live.
    with pytest.raises(ReleaseConflict, match="rolled back"):
        publish_hub(two, "rel/b", token=TOKEN, tag="main", endpoint=hub.url)
    new_head, new_files, new_tags = _head(hub, "rel/b")
    assert new_head != head and new_files == files and new_tags == tags  # head content restored, no new tag


def test_token_from_hf_auth_login_and_release_recorded(hub, folders, tmp_path):
    """A real `opforge publish` process with no HF_TOKEN: the token saved by `hf auth login` ($HF_HOME/token)."""
    from pipeline.catalog import Catalog
    from pipeline.curate.stage import save_result

    s = scenario()
    data = tmp_path / "data"
    res = curate(s["tasks"], s["validation"], s["contamination"], s["trajectories"], CurateSettings(), "rel-cli")
    cat = Catalog(data / "catalog.duckdb", data)
    cat.start_run("rel-cli", {"rollout": {"api_key": "sk-secret-xyz"}}, "test")
    save_result(res, data)
    cat.finish_run("rel-cli")
    home = tmp_path / "hf-home"
    home.mkdir()
    (home / "token").write_text(TOKEN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(home), HF_HUB_DISABLE_TELEMETRY="1")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "flows.cli",
            "publish",
            "--set",
            f"data_root={data}",
            "--run-id",
            "latest",
            "--repo",
            "rel/cli",
            "--tag",
            "v7",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    repo = hub.state.repos[("dataset", "rel/cli")]
    rel = cat.sql("SELECT run_id, repo_id, tag, commit_oid, files FROM releases").to_pylist()
    assert (
        rel
        == [
            {
                "run_id": "rel-cli",
                "repo_id": "rel/cli",
                "tag": "v7",
                "commit_oid": repo.tags["v7"],
                "files": rel[0]["files"],
            }
        ]
        and rel[0]["files"] > 0
    )
    stored = (data / "catalog.duckdb").read_bytes()
    assert TOKEN.encode() not in stored and b"sk-secret-xyz" not in stored
    assert json.loads(cat.sql("SELECT config FROM runs").column(0)[0].as_py())["rollout"]["api_key"] == "<redacted>"
