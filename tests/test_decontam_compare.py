"""The functional confirmation compares float32 outputs in float32 (jailed._compared): the difference of two float32
values is rounded once (2**-24 relative), far inside the 1e-4 tolerance, so a copy scaled within the tolerance still
matches and one scaled past it does not; float64 outputs are compared in float64. Through the real jail."""

from __future__ import annotations

import pytest

from pipeline.decontam.settings import DecontamSettings

PROBLEM = """# compared
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 16)

    def forward(self, x):
        return torch.tanh(self.fc(x)){cast}{scale}

def get_inputs():
    return [torch.randn(4, 32)]

def get_init_inputs():
    return []
"""


def code(scale: str = "", cast: str = "") -> str:
    return PROBLEM.replace("{scale}", scale).replace("{cast}", cast)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from pipeline.decontam.semantic import confirm_pairs

    s = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path_factory.mktemp("compare")))
    pairs = [
        (code(" * (1 + 1e-6)"), code()),  # within the tolerance: the same function
        (code(" * (1 + 1e-3)"), code()),  # past it
        (code(" * (1 + 1e-6)", ".double()"), code(cast=".double()")),
        (code(" * (1 + 1e-3)", ".double()"), code(cast=".double()")),
    ]
    return confirm_pairs(pairs, s)


def test_float32_outputs_match_within_the_tolerance_only(reports):
    near, far = reports[0], reports[1]
    assert near["ok"] and near["equivalent"] and 0 < near["max_abs_diff"] < 1e-5, near
    assert far["ok"] and not far["equivalent"] and far["max_abs_diff"] > 1e-4, far


def test_float64_outputs_are_compared_in_float64(reports):
    near, far = reports[2], reports[3]
    assert near["ok"] and near["equivalent"] and 0 < near["max_abs_diff"] < 1e-5, near
    assert far["ok"] and not far["equivalent"] and far["max_abs_diff"] > 1e-4, far
    assert near["ref_shapes"] == near["cand_shapes"] == [[2, 16]]  # the first 2 rows, as every confirmation
