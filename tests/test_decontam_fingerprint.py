"""A trace's fingerprint is made once, where the trace is made (validation's `carry`, decontamination's trace cache:
jailed.pack), and read back ready; it is read only with the graph it was made of, and a report cannot bring its own.
Traces through the real jail."""

from __future__ import annotations

import json

import pytest

from pipeline.decontam.settings import DecontamSettings

HEAD = "# fingerprinted\nimport torch\nimport torch.nn as nn\n\n"
TAIL = "\ndef get_inputs():\n    return [torch.randn(8, 64)]\n\ndef get_init_inputs():\n    return []\n"
LINEAR = (
    HEAD
    + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    + "        self.fc = nn.Linear(64, 32)\n\n    def forward(self, x):\n        return torch.relu(self.fc(x))\n"
    + TAIL
)
SOFTMAX = (
    HEAD + "class Model(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1) * 2.0\n" + TAIL
)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """Both codes traced in the jail into a fresh cache; the records as the cache stores them."""
    import pipeline.decontam.semantic as sem
    from pipeline.decontam.jailed import code_key

    s = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path_factory.mktemp("fp")))
    views = sem.semantic_views([LINEAR, SOFTMAX], s)
    root = sem.cache_dir(s)
    recs = [json.loads((root / code_key(c)[:2] / f"{code_key(c)}.json").read_text()) for c in (LINEAR, SOFTMAX)]
    return views, recs, s


def _same(a, b) -> None:
    assert a.ok and b.ok, (a, b)
    assert a.features.tolist() == b.features.tolist()
    assert (a.summary.top, a.summary.detail, a.summary.inputs) == (b.summary.top, b.summary.detail, b.summary.inputs)


def test_the_cache_stores_the_fingerprint_and_the_view_reads_it_ready(traced):
    from pipeline.decontam.graphfp import normalize
    from pipeline.decontam.jailed import graph_of, ready_fingerprint
    from pipeline.decontam.semantic import _view_of

    views, recs, _ = traced
    for v, rec in zip(views, recs):
        assert isinstance(rec["graph"], str) and ready_fingerprint(rec) is not None, rec.keys()
        # the view read ready is the view normalized from the nodes (a record stored before fingerprints)
        nodes, top = graph_of(rec)
        old = {k: x for k, x in rec.items() if k not in ("graph", "fp")} | {"nodes": nodes, "top": top}
        _same(_view_of(rec, True), _view_of(old, True))
        _same(_view_of(rec, True), v)
        # the whole graph (the auditor's report) is rebuilt from the stored nodes on first use
        assert _view_of(rec, True).graph.labels == normalize(nodes, top).labels
    assert views[0].features.tolist() != views[1].features.tolist()


def test_a_fingerprint_is_read_only_with_the_graph_it_was_made_of(traced, monkeypatch):
    import pipeline.decontam.graphfp as graphfp
    from pipeline.decontam.jailed import ready_fingerprint
    from pipeline.decontam.semantic import _view_of

    views, (lin, soft), _ = traced
    spliced = {**lin, "graph": soft["graph"]}  # the linear's fingerprint beside the softmax's graph
    assert ready_fingerprint(spliced) is None
    _same(_view_of(spliced, True), views[1])  # the graph's own view, made from its nodes
    monkeypatch.setattr(graphfp, "FP_VERSION", graphfp.FP_VERSION + "-next")
    assert ready_fingerprint(lin) is None  # made by another fingerprint version: made again
    _same(_view_of(lin, True), views[0])


def test_a_report_cannot_bring_its_own_fingerprint(traced):
    from pipeline.decontam.jailed import carried, carry, fp_key, graph_of
    from pipeline.decontam.semantic import _view_of

    views, (lin, soft), _ = traced
    nodes, top = graph_of(lin)
    # the linear's report with the softmax's fingerprint, keyed by the linear's own graph text
    forged = {**soft["fp"], "of": fp_key(json.dumps({"nodes": nodes, "top": top}))}
    report = {"ok": True, "nodes": nodes, "top": top, "sig": lin.get("sig"), "fp": forged, "wall_s": 0.01}
    rec = carried(carry(json.dumps(report), LINEAR), LINEAR)
    assert rec["fp"]["features"] != soft["fp"]["features"]  # made by carry from the nodes, the forged one dropped
    _same(_view_of(rec, True), views[0])


def _cat_of(branches: str) -> str:
    body = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.cat([" + branches + "], dim=1)\n"
    return HEAD + body + TAIL


def test_what_a_cat_joins_is_part_of_its_graph(tmp_path):
    """Tensors passed to an op as a list (cat, stack) are its operands: two models that join other branches have
    other graphs (the list's tensors had been cut off from the outputs, so any model ending in a cat had the same
    few-node graph, and a GRU written with a stack matched a Fire module's structure)."""
    import pipeline.decontam.semantic as sem

    s = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "cache"))
    a, b, c = sem.semantic_views(
        [_cat_of("torch.relu(x), torch.sigmoid(x)"), _cat_of("torch.tanh(x) * 2, torch.exp(x)"), _cat_of("x, x")], s
    )
    assert a.ok and b.ok and c.ok, (a, b, c)
    assert a.features.tolist() != b.features.tolist()
    assert len(a.features) > len(c.features)  # the branches' ops count, not only the cat's
    assert any("relu" in x for x in a.graph.labels) and any("exp" in x for x in b.graph.labels), a.graph.labels
