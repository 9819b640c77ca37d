"""Validation traces each valid task for the semantic view (the same tracer, in the same jailed process as its
checks) and decontamination uses that trace instead of tracing again; a trace made for another code, tracer or
torch, or one that timed out (validation's time left), is not used (a failure of the code's own is:
tests/test_decontam_screen.py). Real validation harness, real jail."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from pipeline.decontam.jailed import carried, code_key, ready_fingerprint
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import load_reference
from pipeline.validate.settings import ValidateSettings

# Softmax by hand: a paraphrase of level1/23_Softmax (the token views miss it; the semantic view and the functional
# confirmation find it).
SOFTMAX = """
import torch
import torch.nn as nn


def _stable_exp(t: torch.Tensor) -> torch.Tensor:
    shifted = t - t.max(dim=1, keepdim=True).values
    return shifted.exp()


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, inp):
        num = _stable_exp(inp)
        return num * num.sum(dim=1, keepdim=True).reciprocal()


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
"""
# Valid, but its forward never ends on meta tensors (the tracer's): the trace times out, the validation stands.
HANGS_ON_META = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 16)

    def forward(self, x):
        while x.is_meta:
            pass
        return torch.relu(self.lin(x))

def get_inputs():
    return [torch.randn(8, 32)]

def get_init_inputs():
    return []
"""
INVALID = SOFTMAX.replace("return [torch.randn(16, 256)]", "return [torch.ones(16, 256)]")  # fixed inputs


@pytest.fixture(scope="module")
def validated():
    from pipeline.validate.stage import validate

    codes = [SOFTMAX, HANGS_ON_META, INVALID]
    settings = ValidateSettings(timeout_s=60, memory_mb=3072, check_compile=False, trace_s=10.0)
    rows = validate(pa.table({"code": codes}), settings, "cpu").to_pylist()
    return dict(zip(("softmax", "hangs", "invalid"), rows)), codes


def test_a_valid_task_carries_its_trace_keyed_by_its_code(validated):
    rows, codes = validated
    r = rows["softmax"]
    assert r["valid"], r
    rec = json.loads(r["semantic_trace"])
    assert rec["key"] == code_key(SOFTMAX) and rec["ok"] and json.loads(rec["graph"])["nodes"], rec
    assert ready_fingerprint(rec) is not None  # fingerprinted where it was made: decontamination reads it ready
    assert 0 < rec["cpu_s"] < 10 and rec["wall_s"] > 0  # its cost, measured in the harness
    assert carried(r["semantic_trace"], SOFTMAX) is not None
    # made for this code only: another code (a copy that only claims it) does not get it
    assert carried(r["semantic_trace"], SOFTMAX + "\n# other\n") is None
    assert carried(r["semantic_trace"].replace(rec["key"], "0" * 64), SOFTMAX) is None


def test_a_trace_that_never_ends_costs_the_trace_only(validated):
    rows, _ = validated
    r = rows["hangs"]
    assert r["valid"] and r["reason"] == "", r  # the checks ran on real tensors and passed
    rec = json.loads(r["semantic_trace"])
    assert rec["ok"] is False and rec["reason"] == "timeout" and rec["wall_s"] < 20, rec
    assert carried(r["semantic_trace"], HANGS_ON_META) is None  # decontamination traces it itself


def test_an_invalid_task_has_no_trace(validated):
    rows, _ = validated
    assert not rows["invalid"]["valid"] and rows["invalid"]["semantic_trace"] is None


def test_decontamination_uses_the_carried_trace_and_gets_the_same_view(validated, kernelbench_path, tmp_path):
    from pipeline.decontam.semantic import cache_dir, semantic_views
    from pipeline.decontam.stage import decontaminate

    rows, _ = validated
    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    reference = [by_id["level1/23_Softmax"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "sem"))
    trace = rows["softmax"]["semantic_trace"]
    cands = pa.table(
        {
            "task_id": ["carried", "forged"],
            "code": [SOFTMAX, SOFTMAX.replace("256", "128")],
            # the second row holds the first one's trace: made for another code, not used
            "semantic_trace": [trace, trace],
        }
    )
    out = {r["task_id"]: r for r in decontaminate(cands, reference, settings).to_pylist()}
    for tid in ("carried", "forged"):
        r = out[tid]
        assert r["contaminated"] and r["reason"] == "functional_match", r
        assert r["nearest_ref"] == "level1/23_Softmax" and r["semantic_status"] == "traced", r

    def in_cache(code: str) -> bool:
        k = code_key(code)
        return (cache_dir(settings) / k[:2] / f"{k}.json").exists()

    assert not in_cache(SOFTMAX)  # not traced again: the carried trace was its view
    assert in_cache(SOFTMAX.replace("256", "128"))  # traced here: the trace it carried was another code's
    # the carried trace and decontamination's own trace give the same view
    own = semantic_views([SOFTMAX], settings.model_copy(update={"semantic_cache_dir": str(tmp_path / "own")}))[0]
    via = semantic_views([SOFTMAX], settings, {SOFTMAX: trace})[0]
    assert own.ok and via.ok and set(own.features.tolist()) == set(via.features.tolist())
