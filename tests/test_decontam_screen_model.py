"""What a worker's screen reads of a problem's model (the layouts tried, whether it has filters) is the same in a
fresh worker and in one that dropped the model (it keeps those read last up to a weight budget, while their probe
outputs stay cached): a screen's decision never depends on what the worker ran before. And a large model read once
does not push out the small ones most pairs read again."""

from __future__ import annotations

from pipeline.decontam.jailed import WORKER

CONV = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))

def get_inputs():
    return [torch.randn(2, 3, 16, 16)]

def get_init_inputs():
    return []
"""
LINEAR = CONV.replace("nn.Conv2d(3, 8, 3)", "nn.Linear(16, 8)").replace("(2, 3, 16, 16)", "(2, 16)")


def _worker() -> dict:
    g = {"PAYLOAD": {}, "__name__": "worker"}
    exec(compile(WORKER.split("# Warm up here")[0], "<worker>", "exec"), g)  # its functions, before its job loop
    return g


def test_a_dropped_model_is_read_as_a_fresh_worker_reads_it():
    g = _worker()
    fresh = {code: (g["_layouts"](code), g["_filters"](code)) for code in (CONV, LINEAR)}
    assert fresh[CONV] == (["flat", "t", "hwio"], True)  # a filter: its layouts, and the constant probe
    assert fresh[LINEAR] == (["flat", "t2"], False)
    g["_CANON_MODEL"].clear()  # as if the worker had dropped them
    g["_CANON_WEIGHTS"].clear()
    assert {code: (g["_layouts"](code), g["_filters"](code)) for code in (CONV, LINEAR)} == fresh
    # past the budget of weights, the least recently read are dropped, and built again when read
    g["MODELS_KEEP"] = 2_000
    for k in range(40):
        g["_model_of"](LINEAR.replace("nn.Linear(16, 8)", f"nn.Linear(16, {k + 1})"))
    assert CONV not in g["_CANON_MODEL"]
    assert sum(g["_CANON_WEIGHTS"].values()) <= 2_000
    assert (g["_layouts"](CONV), g["_filters"](CONV)) == fresh[CONV]


def test_large_models_read_once_do_not_push_out_the_small_ones():
    g = _worker()
    g["MODELS_KEEP"], g["LARGE_MODEL"] = 1_000, 500  # the tiers' sizes scaled down (8 small ones: 612 weights)
    small = [LINEAR.replace("nn.Linear(16, 8)", f"nn.Linear(16, {k + 1})") for k in range(8)]
    for code in small:
        g["_model_of"](code)
    built = []
    for k in range(20):  # one-off large problems (rebuilt at candidates' arguments), the small ones read between
        g["_model_of"](LINEAR.replace("nn.Linear(16, 8)", f"nn.Linear(16, {30 + k})"))
        built.append(LINEAR.replace("nn.Linear(16, 8)", f"nn.Linear(16, {30 + k})"))
        g["_model_of"](small[k % len(small)])
    assert all(code in g["_CANON_MODEL"] for code in small)
    large = [c for c in built if c in g["_CANON_MODEL"]]
    assert large == built[-len(large) :] and 0 < len(large) < len(built)  # the large ones read last kept, in budget
    assert sum(g["_CANON_WEIGHTS"][c] for c in large) <= 1_000
    # the small one read least recently goes first when the small tier is full
    g["_model_of"](LINEAR.replace("nn.Linear(16, 8)", "nn.Linear(16, 25)"))  # 425 weights: small
    assert small[4] not in g["_CANON_MODEL"] and small[3] in g["_CANON_MODEL"]


def test_scales_a_candidate_reports_never_make_a_fold_of_zero_infinity_or_nan():
    """The fold factors read from the candidate's reported scales (its trace's `canon["scales"]`, which it
    controls): a ratio of 0, infinity or nan, or outside 1e-3..1e3 as the child reads ratios, is no factor, so no
    probe divides by it or writes it into a report."""
    g = _worker()
    assert g["_one_fold"]([2.0, 1.0, 2.0]) == 2.0
    assert g["_one_fold"]([2.0, 3.0]) is None  # two factors: none
    for bad in (0.0, 1e-5, 1e5, float("inf"), float("nan")):
        assert g["_one_fold"]([bad, 1.0]) is None
        assert g["_one_fold"]([bad, 2.0]) == 2.0
    weight, bias = g["_natural_of"](CONV)[0], g["_natural_of"](CONV)[1]
    assert g["_fold_ratios"](CONV, [[8, bias], [216, 2 * weight]]) is not None  # a weight made at twice the scale
    for bad in (5e-324, 1e308, float("nan")):  # ratios near 0 or past any float
        assert g["_fold_ratios"](CONV, [[8, bias], [216, bad]]) is None


def test_outputs_of_other_shapes_end_a_probe_after_one_layout_unless_values_decide_the_shapes():
    """A problem whose canonical outputs have other shapes than the candidate's, shapes its inputs' shapes alone
    decide, differs in every layout and at every weight value: its pair ends after the first layout (the report
    says so). Where an op whose output's shape reads values ran (a mask's selection), every probe is tried as
    before; and a copy still agrees."""
    g = _worker()
    strided = CONV.replace("nn.Conv2d(3, 8, 3)", "nn.Conv2d(3, 8, 3, stride=2)")
    canon = g["trace"](strided)["sig"]["canon"]
    rep = g["_canon_screen"](CONV, canon)
    assert rep["reason"] == "probe_differs" and rep["layouts"] == ["flat"]
    assert rep["shapes"] == [[[2, 8, 14, 14]], [[2, 8, 7, 7]]]
    assert not any(k[0] == CONV and k[2] != "flat" for k in g["_CANON"])  # no other layout ran
    masked = CONV.replace("return torch.relu(self.conv(x))", "y = self.conv(x)\n        return y[y > 0]")
    rep = g["_canon_screen"](masked, canon)
    assert rep["reason"] == "probe_differs" and rep["layouts"] == ["flat", "t", "hwio"] and "shapes" not in rep
    assert g["_canon_screen"](CONV, g["trace"](CONV.replace("self.conv", "self.c"))["sig"]["canon"]) == {}


NORMED = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)
        self.gn = nn.GroupNorm(2, 8)
        self.c = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        return torch.relu(self.gn(self.fc(x)) - self.c)

def get_inputs():
    return [torch.randn(4, 16)]

def get_init_inputs():
    return []
"""
# the same written out: no affine for the norm, the constant a float; TAIL varies
UNPARAMETRIZED = """import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        z = self.fc(x).view(x.shape[0], 2, 4)
        z = (z - z.mean(-1, keepdim=True)) / torch.sqrt(z.var(-1, unbiased=False, keepdim=True) + 1e-5)
        return TAIL

def get_inputs():
    return [torch.randn(4, 16)]

def get_init_inputs():
    return []
"""


def test_the_problems_constants_a_candidate_leaves_out_are_probed_at_their_value():
    """The problem's parameters its constructor makes one value (a norm's ones and zeros, a tensor of a constant)
    that the candidate's weights leave over are probed at that value (a second regime), so a copy without them
    agrees; a copy that leaves out a drawn weight, or a candidate whose tail differs, does not."""
    g = _worker()
    copy = g["trace"](UNPARAMETRIZED.replace("TAIL", "torch.relu(z.view(x.shape[0], 8) - 0.5)"))["sig"]["canon"]
    params = [n for n, _ in g["_model_of"](NORMED).named_parameters()]
    assert [params[i] for i in g["_kept"](NORMED, copy["scales"])] == ["c", "gn.weight", "gn.bias"]
    assert g["_canon_screen"](NORMED, copy) == {}
    other = g["trace"](UNPARAMETRIZED.replace("TAIL", "torch.relu(z.view(x.shape[0], 8) + 0.5)"))["sig"]["canon"]
    rep = g["_canon_screen"](NORMED, other)
    assert rep["reason"] == "probe_differs" and rep["kept"] == list(g["_kept"](NORMED, copy["scales"])), rep
    # a drawn weight (the Linear's bias) left out is no constant of the problem's: not kept
    nobias = UNPARAMETRIZED.replace("nn.Linear(16, 8)", "nn.Linear(16, 8, bias=False)")
    scales = g["trace"](nobias.replace("TAIL", "z"))["sig"]["canon"]["scales"]
    assert g["_kept"](NORMED, scales) == ()
