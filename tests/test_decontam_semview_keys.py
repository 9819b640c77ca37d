"""A semantic view's lookup keys (input, ranks, resize and probe keys, its constructor's literals) are made once per
view: the shortlists read every problem's keys once per candidate."""

from __future__ import annotations

import numpy as np

import pipeline.decontam.semantic as sem
from pipeline.decontam.graphfp import SemGraph


def _view() -> sem.SemView:
    summary = SemGraph(inputs=[[8, 64]], params=[[16, 64], [16]])
    sig = {
        "inputs": [[[8, 64], "float32"]],
        "outputs": [[[8, 16], "float32"]],
        "init": ["l", [["i", 64], ["i", 16]]],
    }
    return sem.SemView(True, "", np.zeros(0, dtype=np.uint32), summary, sig=sig)


def test_keys_are_made_once_and_equal_a_fresh_views(monkeypatch):
    calls = []
    real = sem._literal_ok
    monkeypatch.setattr(sem, "_literal_ok", lambda lit, depth=0: calls.append(1) or real(lit, depth))
    v = _view()
    first = [v.init, v.ranks_key, v.resize_key, v.input_key, v.rowless_key, v.probe_key]
    n = len(calls)
    assert n and [v.init, v.ranks_key, v.resize_key, v.input_key, v.rowless_key, v.probe_key] == first
    assert len(calls) == n  # read again: nothing made again
    assert first[0] == ["l", [["i", 64], ["i", 16]]] and first[2] and first[5] == ""
    assert first == [
        getattr(_view(), k) for k in ("init", "ranks_key", "resize_key", "input_key", "rowless_key", "probe_key")
    ]
