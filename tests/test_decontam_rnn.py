"""KernelBench's LSTM/GRU problems unroll to more than 4,000 ops on meta tensors: their semantic view is the first
ops of the forward, marked truncated, used only to pick problems for the functional confirmation. A paraphrase of
one is confirmed with its source; an RNN task that computes something else is neither a match nor a near-variant
(a truncated graph cannot show what changed). Real jail."""

from __future__ import annotations

import random

import pytest

from pipeline.decontam.calibration.paraphrase import equivalent, paraphrase, tied_outputs
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import load_reference

LSTM, GRU_HIDDEN = "level3/36_LSTMHn", "level3/40_GRUHidden"


@pytest.fixture(scope="module")
def rnn_run(kernelbench_path, tmp_path_factory):
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    para = paraphrase(by_id[LSTM].code, ["functional"], random.Random(0))
    assert para is not None and equivalent(*tied_outputs(by_id[LSTM].code, para))
    # the same LSTM, its output doubled: another function (a new composition around a KernelBench RNN)
    other = para.code.replace("return state[0]", "return state[0] * 2.0")
    assert other != para.code
    settings = DecontamSettings(
        semantic=True, workers=2, semantic_cache_dir=str(tmp_path_factory.mktemp("semcache-rnn"))
    )
    rows = decontaminate([("para", para.code), ("other", other)], [by_id[LSTM], by_id[GRU_HIDDEN]], settings)
    return {r["task_id"]: r for r in rows.to_pylist()}


def test_rnn_paraphrase_is_confirmed_through_its_truncated_view(rnn_run):
    r = rnn_run["para"]
    assert r["semantic_status"] == "truncated", r
    assert r["contaminated"] and r["reason"] == "functional_match" and r["nearest_ref"] == LSTM, r


def test_rnn_that_computes_something_else_is_not_flagged(rnn_run):
    r = rnn_run["other"]
    assert r["semantic_status"] == "truncated", r
    assert not r["contaminated"] and r["reason"] == "" and not r["near_variant"], (r["reason"], r["evidence"][:400])
