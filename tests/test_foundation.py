"""Foundation: typed config, KernelBench loading from every source kind, the executor on a real local Ray."""

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config import OpforgeConfig, load_config, new_run_id
from pipeline.executor import Resources, map_items
from pipeline.kernelbench import KernelBenchNotFound, fingerprint, load_reference

ROOT = Path(__file__).resolve().parents[1]


def test_config_defaults_yaml_and_overrides(tmp_path):
    cfg = load_config()
    assert cfg.data_root == Path("./opforge-data")
    assert cfg.synth.composer == "programmatic"
    f = tmp_path / "c.yaml"
    f.write_text("data_root: /tmp/x\nsynth:\n  n: 7\nvalidate:\n  timeout_s: 5\n")
    cfg = load_config(f, ["synth.n=9", "ray.num_cpus=2", "rollout.model=null"])
    assert cfg.data_root == Path("/tmp/x") and cfg.synth.n == 9 and cfg.ray.num_cpus == 2
    assert cfg.validate_.timeout_s == 5
    assert cfg.dump()["validate"]["timeout_s"] == 5  # dumps under the YAML key


def test_config_rejects_unknown_keys_and_bad_values(tmp_path):
    with pytest.raises(Exception, match="bogus"):
        load_config(None, ["bogus=1"])
    with pytest.raises(Exception, match="n"):
        load_config(None, ["synth.n=many"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        load_config(None, ["synth.n"])


def test_run_ids_are_unique_and_sortable():
    a, b = new_run_id(), new_run_id()
    assert a != b and len(a) == len(b)
    assert OpforgeConfig().with_run_id().run_id


def test_kernelbench_from_dir_parent_and_parquet(kernelbench_path, tmp_path):
    probs = load_reference(kernelbench_path)
    assert len(probs) == 270
    assert {p.level for p in probs} == {1, 2, 3, 4}
    assert any(p.ref_id == "level1/19_ReLU" for p in probs)
    # A parent folder holding KernelBench/ (as in a repo checkout).
    (tmp_path / "repo").mkdir()
    os.symlink(kernelbench_path, tmp_path / "repo" / "KernelBench")
    assert fingerprint(load_reference(tmp_path / "repo")) == fingerprint(probs)
    # A Parquet file in the HF dataset's column layout.
    rows = [{"code": p.code, "level": p.level, "name": p.name + ".py", "problem_id": i} for i, p in enumerate(probs)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "kb.parquet")
    assert fingerprint(load_reference(tmp_path / "kb.parquet")) == fingerprint(probs)


def test_kernelbench_missing_says_what_to_do(tmp_path):
    with pytest.raises(KernelBenchNotFound, match="level1"):
        load_reference(tmp_path)
    with pytest.raises(KernelBenchNotFound, match="KERNELBENCH_PATH"):
        load_reference("no/such-dataset-here-offline")


def _square(x: int) -> int:
    return x * x


def test_map_items_local_and_on_ray(ray_local):
    seen = []
    assert map_items(_square, range(5), use_ray=False) == [0, 1, 4, 9, 16]
    out = map_items(_square, range(20), Resources(cpus=1), use_ray=True, on_result=lambda i, r: seen.append(i))
    assert out == [i * i for i in range(20)] and sorted(seen) == list(range(20))


def test_cli_help_lists_commands():
    out = subprocess.run(
        [sys.executable, "-m", "flows.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    for cmd in ("sql", "schemas"):
        assert cmd in out.stdout
