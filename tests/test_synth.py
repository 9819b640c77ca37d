"""Seed catalog mining, the programmatic composer, the synth stage and CLIs."""

from __future__ import annotations

import collections
import random

import pyarrow.parquet as pq
import pytest

from pipeline.synth.catalog import MiningReport, build_catalog, load_catalog, read_catalog, write_catalog
from pipeline.synth.composer import compose_task, profile, sample_n_ops
from pipeline.synth.settings import SynthSettings

MIX = SynthSettings().op_mix


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()  # the cached / packaged Parquet (mining all of torch takes ~2 min)


def test_mining_a_subset_runs_every_op_and_measures_behaviour(tmp_path):
    import torch

    rep = MiningReport()
    ops = build_catalog(sources=["torch.nn"], limit=45, report=rep)
    assert rep.tried == 45 and rep.runnable == len(ops) >= 25
    assert set(rep.failures).isdisjoint(o.name for o in ops)  # failures are recorded, not returned
    by = {o.name: o for o in ops}
    assert by["torch.nn.AlphaDropout"].stochastic and not by["torch.nn.AlphaDropout"].composable
    # BatchNorm differs between train and eval unless built without running stats: mining found that variant.
    bn = by["torch.nn.BatchNorm2d"]
    assert bn.ctor_args.get("track_running_stats") is False and bn.composable and not bn.mode_dependent
    assert by["torch.nn.Conv2d"].ctor_args["in_channels"] == "$C" and 4 in by["torch.nn.Conv2d"].input_ranks
    assert by["torch.nn.CELU"].pointwise
    # Round trip through the seed_operators table, then prove an entry runs again.
    path = write_catalog(ops, tmp_path / "ops.parquet")
    assert pq.read_schema(path).metadata[b"opforge.table"] == b"seed_operators"
    again = read_catalog(path)
    assert [o.name for o in again] == [o.name for o in ops]
    conv = next(o for o in again if o.name == "torch.nn.Conv2d")
    m = torch.nn.Conv2d(in_channels=8, out_channels=12, kernel_size=conv.ctor_args["kernel_size"])
    assert m(torch.randn(2, 8, 12, 12)).shape[1] == 12


def test_mining_functions_classifies_kinds():
    ops = {o.name: o for o in build_catalog(sources=["torch"], limit=120)}
    assert ops["torch.abs"].kind == "pointwise" and ops["torch.abs"].pointwise
    assert ops["torch.add"].arity == 2 and ops["torch.add"].kind == "binary_pointwise"
    assert ops["torch.amax"].kind == "reduction"
    assert ops["torch.cumsum"].kind == "scan" if "torch.cumsum" in ops else True
    assert ops["torch.bmm"].other_shape == "matmul" and ops["torch.bmm"].kind == "linalg"
    assert ops["torch.acos"].domain == "unit" and ops["torch.acos"].out_range == "positive"


def test_full_catalog_has_300_runnable_ops(catalog):
    assert len(catalog) >= 300
    composable = [o for o in catalog if o.composable]
    assert len(composable) >= 300
    sources = collections.Counter(o.source for o in catalog)
    assert {"torch.nn", "torch.nn.functional", "torch", "torch.linalg", "torch.special", "torch.fft"} <= set(sources)
    kinds = {o.kind for o in composable}
    assert {"pointwise", "reduction", "scan", "linalg", "convolution", "normalization", "pooling"} <= kinds
    assert all(not o.stochastic for o in composable)


def test_op_count_mix_follows_settings():
    rng = random.Random(0)
    counts = collections.Counter(sample_n_ops(rng, MIX) for _ in range(20000))
    assert abs(counts[2] / 20000 - 0.838) < 0.015 and abs(counts[1] / 20000 - 0.034) < 0.006
    only3 = collections.Counter(sample_n_ops(rng, {3: 1.0}) for _ in range(100))
    assert only3 == {3: 100}


def test_composer_is_reproducible_runnable_and_varied(catalog):
    import torch

    tasks = [compose_task(catalog, s, MIX, profile("small")) for s in range(12)]
    again = compose_task(catalog, 5, MIX, profile("small"))
    assert again.code == tasks[5].code and again.ops == tasks[5].ops
    assert len({t.code for t in tasks}) == 12
    styles = collections.Counter()
    for t in tasks:
        assert t.data_source == f"{t.data_source.split('#')[0]}#{len(t.ops)}"
        ns: dict = {}
        exec(compile(t.code, "<task>", "exec"), ns)  # our own composer's output, on tiny sizes
        model = ns["Model"](*ns["get_init_inputs"]())
        out = model(*ns["get_inputs"]())
        assert isinstance(out, torch.Tensor) and out.is_floating_point() and out.numel() > 1
        styles["init_inputs" if ns["get_init_inputs"]() else "inline"] += 1
        styles[
            "method_call"
            if any(f"x.{o.rsplit('.', 1)[-1]}(" in t.code or f"h.{o.rsplit('.', 1)[-1]}(" in t.code for o in t.ops)
            else "fn_call"
        ] += 1
    assert styles["init_inputs"] and styles["inline"]


def test_gpu_profile_sizes_hit_the_estimated_window(catalog):
    prof = profile("gpu", (2.0, 40.0))
    ests = [compose_task(catalog, s, MIX, prof).est_ms for s in range(10)]
    assert sum(1.0 <= e <= 100.0 for e in ests) >= 8, ests


def _meta_bytes(code: str) -> tuple[int, int]:
    """(largest input, output bytes) of a task, run on meta tensors."""
    import torch

    ns: dict = {}
    exec(code, ns)
    with torch.device("meta"), torch.no_grad():
        xs = ns["get_inputs"]()
        y = ns["Model"](*ns["get_init_inputs"]())(*xs)
    ys = y if isinstance(y, (list, tuple)) else [y]
    size = lambda ts: [t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor)]  # noqa: E731
    return max(size(xs)), sum(size(ys))


def test_gpu_profile_never_composes_a_task_only_to_be_dropped_for_its_size(catalog):
    """Every tensor of a gpu-profile chain stays within the validator's largest output (2 GiB by default): a quarter
    of the 500 tasks composed before had outputs past it, each validated on a GPU only to be output_too_large."""
    from pipeline.validate.settings import ValidateSettings

    limit = ValidateSettings().max_output_mb * 2**20
    sizes = [_meta_bytes(compose_task(catalog, s, MIX, profile("gpu", (2.0, 40.0))).code) for s in range(40)]
    assert all(out <= limit and inp <= limit for inp, out in sizes), sizes
    # A smaller cap holds too (with a window that 64 MiB tensors can reach)
    small = [compose_task(catalog, s, MIX, profile("gpu", (0.01, 1.0), max_tensor_mb=64)) for s in range(10)]
    assert all(max(_meta_bytes(c.code)) <= 64 * 2**20 for c in small)


def test_gpu_profile_draws_another_chain_when_one_cannot_reach_the_window(catalog):
    """A chain too light to come within half the target's lower bound at the size cap is not a task (the runtime
    window would drop it after a GPU validation): the composer draws another, and says so when none reaches it."""
    from pipeline.synth.composer import CompositionError

    prof = profile("gpu", (2.0, 40.0), max_tensor_mb=1)  # 1 MiB tensors: nothing gets near 1 ms
    with pytest.raises(CompositionError, match="below the target window"):
        compose_task(catalog, 0, MIX, prof)
    ests = [compose_task(catalog, s, MIX, profile("gpu", (2.0, 40.0))).est_ms for s in range(10)]
    assert all(e >= 1.0 for e in ests), ests


def test_synthesize_rows_match_the_tasks_schema(catalog):
    from pipeline.identity import task_id
    from pipeline.synth.stage import synthesize

    t = synthesize(SynthSettings(n=5, seed=3, size_profile="small"), "run-x", catalog=catalog)
    assert t.num_rows == 5 and t.schema.metadata[b"opforge.table"] == b"tasks"
    for r in t.to_pylist():
        assert r["task_id"] == task_id(r["code"]) and r["composer"] == "programmatic" and r["compose_reason"] == ""
        assert r["data_source"].endswith(f"#{len(r['ops'])}")
    t2 = synthesize(SynthSettings(n=5, seed=3, size_profile="small"), "run-y", catalog=catalog)
    assert t2.column("code").to_pylist() == t.column("code").to_pylist()


def test_cli_synth_and_ops(tmp_path, ray_local):
    from typer.testing import CliRunner

    from pipeline.catalog import Catalog
    from pipeline.cli import app

    root = tmp_path / "data"
    args = ["synth", "--n", "3", "--seed", "7", "--device", "cpu", "--run-id", "r1", "--set", f"data_root={root}"]
    args += ["--set", "validate.check_compile=false", "--set", "validate.timeout_s=90"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    cat = Catalog(root / "catalog.duckdb", root)
    assert cat.sql("SELECT count(*) AS n FROM tasks").to_pylist()[0]["n"] == 3
    v = cat.sql("SELECT task_id, valid, reason FROM validation").to_pylist()
    assert len(v) == 3 and all(row["reason"] == "" or not row["valid"] for row in v)
    st = cat.sql("SELECT stage, rows_in FROM stages WHERE run_id = 'r1' ORDER BY stage").to_pylist()
    assert [s["stage"] for s in st] == ["synthesize", "validate"]  # the runner's stage names, as in `opforge run`
    # The command resumes like the flows: a rerun of the same run reuses every shard and writes no new row.
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "(1 shards reused)" in again.output, again.output
    assert cat.sql("SELECT count(*) AS n FROM validation").to_pylist()[0]["n"] == 3
    r = CliRunner().invoke(app, ["ops", "show", "torch.nn.Conv2d"])
    assert r.exit_code == 0 and '"convolution"' in r.output
    r = CliRunner().invoke(app, ["ops", "list", "--kind", "scan"])
    assert r.exit_code == 0 and "cumsum" in r.output
    assert CliRunner().invoke(app, ["ops", "show", "no_such_op"]).exit_code == 1
