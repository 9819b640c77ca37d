"""Confirmations screened before the candidate's fork, and failed traces carried as final; through the real jail.

The trace (tracer 7) reports the task's inputs' shapes and dtypes; the jailed worker runs the problem (trusted code,
nothing of the candidate's) on meta tensors of them, the way a confirmation would first, and a pair whose problem
rejects every input variant is decided there (the same report and error the run gives) without forking the
candidate; so is a pair only a match can flag whose outputs, on the first input variant the problem takes, have other
shapes than the candidate's trace reported on it (`output_shapes_differ`). Both directions: a paraphrase still runs
and matches, a problem that takes integer indices is not rejected for want of dtypes, a pair that could be a
near_variant still runs, and a task whose trace lies about its inputs hides only itself.
"""

from __future__ import annotations

import json

import pytest

from pipeline.decontam.settings import DecontamSettings
from tests._linear_tasks import linear_tasks

# "# screened": codes of their own (no other test file traces them)
HEAD = "# screened\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
TAIL = "\ndef get_init_inputs():\n    return []\n"
# The problem, a paraphrase, inputs its layer does not take, outputs of another shape (tests/_linear_tasks.py).
LINEAR, LINEAR_PARA, OTHER_WIDTH, OTHER_OUT = linear_tasks(HEAD)
# OTHER_WIDTH is decided by the screen; OTHER_OUT's outputs have another shape.
# Lies on meta tensors: 48 features there (its trace's), 64 for real. Its pair is screened out: it hides itself
# only, as it did before the screen (the confirmation's first step asks its get_inputs on meta).
LIAR = LINEAR_PARA.replace(
    "    return [torch.randn(8, 64)]", "    x = torch.randn(8, 64)\n    return [x[:, :48] if x.is_meta else x]"
).replace(
    "    def forward(self, x):\n", "    def forward(self, x):\n        if x.is_meta:\n            return x.relu()\n", 1
)
# Integer indices: on float meta tensors of the same shape the problem would raise; with the traced dtype it runs.
EMBED = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)

    def forward(self, idx):
        return torch.tanh(self.emb(idx))

def get_inputs():
    return [torch.randint(0, 100, (4, 8))]
"""
    + TAIL
)
EMBED_PARA = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.empty(100, 16))

    def forward(self, idx):
        e = F.embedding(idx, self.table)
        return 2 * torch.sigmoid(2 * e) - 1

def get_inputs():
    return [torch.randint(0, 100, (4, 8))]
"""
    + TAIL
)


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> DecontamSettings:
    return DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path_factory.mktemp("screen")))


@pytest.fixture(scope="module")
def screened(settings):
    """Each pair twice: screened (the trace's signature sent along) and not (a fresh key: the code plus a comment)."""
    from pipeline.decontam.semantic import confirm_pairs, semantic_views

    cands = [LINEAR_PARA, OTHER_WIDTH, LIAR, EMBED_PARA, OTHER_OUT, OTHER_OUT]
    refs = [LINEAR, LINEAR, LINEAR, EMBED, LINEAR, LINEAR + "\n# full\n"]
    full = [True, True, True, True, False, True]
    views = semantic_views(cands, settings)
    sigs = {c: v.sig for c, v in zip(cands, views)}
    reps = confirm_pairs(list(zip(cands, refs)), settings, full, sigs)
    plain = confirm_pairs([(c + "\n# plain\n", r) for c, r in zip(cands, refs)], settings, full)
    return views, reps, plain


def test_the_trace_reports_input_and_output_shapes_and_dtypes(screened):
    views, _, _ = screened
    sig = views[0].sig
    assert views[0].ok and sig["inputs"] == [[[8, 64], "float32"]] and sig["params"] == 32 * 64 + 32, sig
    assert sig["outputs"] == [[[8, 32], "float32"]] and sig["sliced"] == [[[[2, 32], "float32"]]] * 2 + [None], sig
    assert sig["sliced_at"] == 20_000_000  # no cut variant: two rows fit the confirmation's budget
    assert views[2].sig["inputs"] == [[[8, 48], "float32"]]  # what the liar shows on meta tensors
    assert views[3].sig["inputs"] == [[[4, 8], "int64"]], views[3].sig


def test_a_pair_the_problem_rejects_is_decided_without_the_candidate(screened):
    _, reps, plain = screened
    rep, run = reps[1], plain[1]
    assert rep["screened"] and rep["reason"] == "exception" and not rep["equivalent"], rep
    # the same decision and the same error as the run in the candidate's child
    assert not run["ok"] and run["reason"] == "exception" and not run["equivalent"] and not run.get("screened")
    assert rep["error"] == run["error"] and "48" in rep["error"] and "64" in rep["error"], (rep, run)


def test_other_output_shapes_are_decided_only_where_no_near_variant_is_possible(screened):
    _, reps, plain = screened
    match, full = reps[4], reps[5]
    assert match["screened"] and match["reason"] == "output_shapes_differ" and not match["equivalent"], match
    keys = ("ok", "reason", "on_meta", "ref_shapes", "cand_shapes")
    assert {k: match[k] for k in keys} == {k: plain[4][k] for k in keys}, (match, plain[4])  # the run's report
    assert full["ok"] and not full.get("screened") and full["cand_shapes"] == [[2, 16]], full  # ran for real


def test_a_paraphrase_still_runs_and_matches(screened):
    _, reps, plain = screened
    for rep in (reps[0], plain[0]):
        assert rep["ok"] and rep["equivalent"] and not rep.get("screened"), rep


def test_dtypes_keep_a_problem_that_takes_integer_indices(screened):
    _, reps, plain = screened
    for rep in (reps[3], plain[3]):
        assert rep["ok"] and rep["equivalent"] and not rep.get("screened"), rep


def test_a_task_that_lies_in_its_trace_hides_only_itself(screened):
    _, reps, plain = screened
    assert reps[2]["screened"] and not reps[2]["equivalent"]  # hidden by its own lie
    # as the confirmation's own first step on meta tensors (the candidate's get_inputs there) hid it before
    assert plain[2]["reason"] == "exception" and not plain[2]["equivalent"], plain[2]
    assert reps[0]["equivalent"] and reps[3]["equivalent"]  # the others in the same worker are unaffected


def test_a_failed_trace_is_carried_as_final_unless_the_process_failed_it(settings, tmp_path):
    from pipeline.decontam.jailed import carried, carry
    from pipeline.decontam.semantic import cache_dir, semantic_views

    code = OTHER_WIDTH + "\n# carried failure\n"

    def rec(**kw) -> str:
        return carry(json.dumps({"ok": False, "wall_s": 0.01, **kw}), code)

    failed = rec(reason="exception", error="RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    assert carried(failed, code)["reason"] == "exception"
    assert carried(failed, code + " ") is None  # another code's
    assert carried(rec(reason="graph_too_large"), code) is not None
    for transient in (
        rec(reason="timeout", limit_s=3.0),
        rec(reason="exception", error="MemoryError: "),
        rec(reason="exception", error="RecursionError: maximum recursion depth exceeded"),
        rec(reason="exception", error="RuntimeError: Tried to register an operator (mylib::f) ... already"),
        rec(reason="jail_timeout"),
        rec(reason="crashed"),
    ):
        assert carried(transient, code) is None, transient
    s = settings.model_copy(update={"semantic_cache_dir": str(tmp_path / "fresh")})
    v = semantic_views([code], s, {code: failed})[0]
    assert not v.ok and v.reason == "exception" and v.cached  # taken as it came: not traced again
    assert not any(cache_dir(s).rglob("*.json"))


# Inputs too large for a confirmation even at two rows (2 x 3 x 2048 x 2048 = 25M elements past the 20M budget): the
# run cuts their trailing dims (jailed._cut), and the trace reports the outputs on the same cut (`sliced`'s third).
BIG = (
    """
def get_inputs():
    return [torch.randn(4, 3, 2048, 2048)]
"""
    + TAIL
)
CONV = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))
"""
    + BIG
)
CONV_PARA = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.empty(8, 3, 3, 3))
        self.b = nn.Parameter(torch.empty(8))

    def forward(self, x):
        return F.conv2d(x, self.w, self.b).clamp_min(0)
"""
    + BIG
)
CONV_STRIDED = CONV_PARA.replace("F.conv2d(x, self.w, self.b)", "F.conv2d(x, self.w, self.b, stride=2)")


def test_outputs_on_cut_inputs_are_screened_and_a_paraphrase_still_matches(settings):
    """A pair whose inputs only fit cut: the candidate's outputs on the cut (its trace's) against the problem's dry
    run on the same cut decide `output_shapes_differ` without its child, with the report the run gives; a
    paraphrase at the same sizes still runs on the cut and matches."""
    from pipeline.decontam.semantic import confirm_pairs, semantic_views

    cands = [CONV_STRIDED, CONV_PARA]
    views = semantic_views(cands, settings)
    sig = views[0].sig
    assert sig["sliced"][0] == [[[2, 8, 1023, 1023], "float32"]], sig  # two rows: past the budget
    assert sig["sliced"][2] == [[[2, 8, 127, 127], "float32"]] and sig["sliced_at"] == 20_000_000, sig  # 256 x 256
    sigs = {c: v.sig for c, v in zip(cands, views)}
    reps = confirm_pairs([(c, CONV) for c in cands], settings, [False, False], sigs)
    plain = confirm_pairs([(CONV_STRIDED + "\n# plain\n", CONV)], settings, [False])[0]
    rep = reps[0]
    assert rep["screened"] and rep["reason"] == "output_shapes_differ" and not rep["equivalent"], rep
    keys = ("ok", "reason", "on_meta", "ref_shapes", "cand_shapes")
    assert {k: rep[k] for k in keys} == {k: plain[k] for k in keys}, (rep, plain)  # the run's own report
    assert reps[1]["ok"] and reps[1]["equivalent"] and not reps[1].get("screened"), reps[1]
    assert reps[1]["inputs"] == "cut", reps[1]
