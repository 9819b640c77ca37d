"""Functional confirmation decided on meta tensors where a run cannot change the decision, through the real jail.

The jailed run asks the reference first, on meta tensors, which of the candidate's input variants it takes (a
reference whose layers do not fit the candidate's inputs raises, as the real run would), and, for a pair that only
a match can flag (not a possible near_variant), stops at outputs whose shapes differ on meta. Both directions:
a paraphrase still runs and matches; a pair that could be a near_variant (a reduction over another dim: other
output shapes) still runs to its end and is decided near_variant.
"""

from __future__ import annotations

import json

import pytest

from pipeline.decontam.settings import DecontamSettings
from tests._linear_tasks import linear_tasks

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
# The problem, a paraphrase, inputs its layer does not take, outputs of another shape (tests/_linear_tasks.py).
LINEAR, LINEAR_PARA, OTHER_WIDTH, OTHER_OUT = linear_tasks(HEAD)
# OTHER_WIDTH: the reference raises; OTHER_OUT: no match possible (outputs of another shape).
# A transposed convolution whose channels do not fit: meta kernels do not check them (the real run raises).
CONVT = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.up = nn.ConvTranspose2d(c, 4, 3)

    def forward(self, x):
        return torch.tanh(self.up(x))

def get_inputs():
    return [torch.randn(2, %d, 6, 6)]

def get_init_inputs():
    return [%d]
"""
)
# A near-variant with outputs of another shape (the sum over another dim; SiLU written out, which the graphs erase).
SUM_REF = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.empty(24))

    def forward(self, x):
        return torch.sum(F.silu(x * self.scale) + torch.tanh(x), dim=1)

def get_inputs():
    return [torch.randn(4, 16, 24)]

def get_init_inputs():
    return []
"""
)
SUM_VARIANT = (
    HEAD
    + """class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(torch.empty(24))

    def forward(self, inp):
        h = inp * self.gain
        return (h * torch.sigmoid(h) + torch.tanh(inp)).sum(2)

def get_inputs():
    return [torch.randn(4, 16, 24)]

def get_init_inputs():
    return []
"""
)


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> DecontamSettings:
    return DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path_factory.mktemp("semmeta")))


@pytest.fixture(scope="module")
def reports(settings):
    from pipeline.decontam.semantic import confirm_pairs

    pairs = [
        (LINEAR_PARA, LINEAR),
        (LINEAR_PARA, LINEAR),
        (OTHER_WIDTH, LINEAR),
        (OTHER_WIDTH, LINEAR),
        (OTHER_OUT, LINEAR),
        (OTHER_OUT, LINEAR),
        (CONVT % (4, 4), CONVT % (8, 8)),
        (CONVT % (4, 4), CONVT % (8, 8)),
    ]
    full = [True, False] * 4
    return confirm_pairs(pairs, settings, full)


def test_a_paraphrase_still_runs_and_matches_in_both_modes(reports):
    for rep in reports[:2]:
        assert rep["ok"] and rep["equivalent"] and rep["max_abs_diff"] <= 1e-4, rep
        assert rep["mapping"] and not rep.get("on_meta"), rep


def test_inputs_the_reference_rejects_end_before_any_run(reports):
    for rep in reports[2:4]:
        assert not rep["ok"] and rep["reason"] == "exception" and not rep["equivalent"], rep
        assert "64" in rep["error"] and "48" in rep["error"], rep  # the reference's shape check, named


def test_outputs_of_other_shapes_stop_on_meta_only_where_no_near_variant_is_possible(reports):
    full, match = reports[4:6]
    assert full["ok"] and full["ref_shapes"] == [[2, 32]] and full["cand_shapes"] == [[2, 16]], full
    assert not full["equivalent"] and "unmatched_ref" in full and not full.get("on_meta")  # ran for real
    assert match["reason"] == "output_shapes_differ" and match["on_meta"] and not match["equivalent"], match
    assert match["ref_shapes"] == [[2, 32]] and match["cand_shapes"] == [[2, 16]]


def test_a_check_meta_skips_is_still_made_by_the_real_run(reports):
    full, match = reports[6:8]
    # meta kernels let the channels through; the real run (full) raises as before; match-only stops earlier
    assert not full["ok"] and full["reason"] == "exception" and "channels" in full["error"], full
    assert not match["equivalent"] and match["reason"] in ("exception", "output_shapes_differ"), match


def test_a_full_report_serves_a_match_only_request(settings, reports):
    import pipeline.decontam.semantic as sem

    sem._MEM.clear()
    starts = sem.STATS["worker_starts"]
    again = sem.confirm_pairs([(OTHER_OUT, LINEAR)], settings, [False])
    assert again[0]["reason"] == "output_shapes_differ"  # its own cached report
    again = sem.confirm_pairs([(OTHER_OUT, LINEAR + "\n# v2\n")], settings, [True])
    assert again[0]["ok"] and again[0]["cand_shapes"] == [[2, 16]]
    served = sem.confirm_pairs([(OTHER_OUT, LINEAR + "\n# v2\n")], settings, [False])
    assert served[0]["ok"] and served[0]["wall_s"] == again[0]["wall_s"], served  # the full report itself
    assert sem.STATS["worker_starts"] == starts + 1  # only the new full pair ran


def test_a_near_variant_with_other_output_shapes_still_runs_and_is_decided(settings):
    """The semantic pass asks for a full run where the graphs allow a near_variant (here: one op's dim changed),
    and its outputs of another shape make the row a near_variant (the token views, which would flag this copy
    first, are left out: their columns say the row is clean)."""
    from pipeline.decontam.semantic import SemanticReference, semantic_pass

    ref = SemanticReference([SUM_REF], settings)
    cols = {"reason": [""], "contaminated": [False], "parse_ok": [True], "nearest_ref": [""], "score": [0.0]}
    out = semantic_pass([SUM_VARIANT], cols, [SUM_REF], ["level1/900_sum"], ref, settings)
    assert cols["reason"] == ["near_variant"] and out["near_variant"] == [True], (cols, out["evidence"])
    ev = json.loads(out["evidence"][0])
    assert ev["tried"][0]["status"] == "ran" and not ev["tried"][0]["equivalent"], ev


def test_a_candidates_pairs_share_one_child_each_under_its_own_time_limit(settings):
    """All of a candidate's pairs run in one forked child; a pair past its limit (a problem whose forward never
    ends) times out alone: the candidate's next pair still runs and matches."""
    from pipeline.decontam.semantic import confirm_pairs

    endless = LINEAR.replace("        return torch.relu(self.fc(x))", "        while True:\n            pass")
    fast = settings.model_copy(update={"confirm_timeout_s": 2.0})
    reps = confirm_pairs([(LINEAR_PARA + "\n# again\n", endless), (LINEAR_PARA + "\n# again\n", LINEAR)], fast)
    assert reps[0]["reason"] == "timeout" and not reps[0]["equivalent"], reps[0]
    assert reps[1]["ok"] and reps[1]["equivalent"], reps[1]
