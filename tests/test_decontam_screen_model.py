"""What a worker's screen reads of a problem's model (the layouts tried, whether it has filters) is the same in a
fresh worker and in one that dropped the model (it keeps a few, while their probe outputs stay cached): a screen's
decision never depends on what the worker ran before."""

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
    g["_CANON_MODEL"].clear()  # as the worker does past 32 models
    assert {code: (g["_layouts"](code), g["_filters"](code)) for code in (CONV, LINEAR)} == fresh
    # past 32 other models, the first ones are built again when read
    for k in range(40):
        g["_model_of"](LINEAR.replace("nn.Linear(16, 8)", f"nn.Linear(16, {k + 1})"))
    assert (g["_layouts"](CONV), g["_filters"](CONV)) == fresh[CONV]
