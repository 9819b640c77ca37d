"""pipeline.patchwatch: the one rule for run-time monkey patching (task validator and kernel evaluator)."""

import functools
import os

import pytest
import torch

from pipeline import patchwatch
from pipeline.inlining import inline
from pipeline.patchwatch import replaced, watched


def _fresh_class():
    class Target:
        def add(self, other):
            return other

        def mul(self, other):
            return other

    return Target


def _snap(cls):
    return watched(torch, (), (("Target", cls),))


def test_untouched_class_is_clean():
    cls = _fresh_class()
    before = _snap(cls)
    assert replaced(torch, before, _snap(cls)) == []


def test_candidate_replacement_new_name_and_deletion_are_named():
    cls = _fresh_class()
    before = _snap(cls)
    ns: dict = {}
    exec(compile("def add(self, other):\n    return self\n", "<candidate>", "exec"), ns)
    cls.add = ns["add"]
    cls.__le__ = lambda self, other: True
    del cls.mul
    assert replaced(torch, before, _snap(cls)) == ["Target.__le__", "Target.add", "Target.mul"]


def test_functools_wraps_does_not_pass_for_torch():
    # wraps copies __module__ ("torch._tensor") and __wrapped__: only the code's file tells the wrapper apart.
    cls = _fresh_class()
    cls.rsub = torch.Tensor.__rsub__
    before = _snap(cls)

    @functools.wraps(torch.Tensor.__rsub__)
    def rsub(self, other):
        return other

    assert rsub.__module__.startswith("torch") and rsub.__wrapped__ is torch.Tensor.__rsub__
    cls.rsub = rsub
    assert replaced(torch, before, _snap(cls)) == ["Target.rsub"]


def test_torch_own_wrapper_is_not_patching():
    # What importing dynamo does to e.g. torch.manual_seed: a wrapper whose code lives in torch's package.
    cls = _fresh_class()
    before = _snap(cls)
    home = os.path.dirname(os.path.abspath(torch.__file__))
    ns: dict = {}
    exec(
        compile("def add(self, other):\n    return other\n", os.path.join(home, "_dynamo", "eval_frame.py"), "exec"),
        ns,
    )
    cls.add = ns["add"]
    assert replaced(torch, before, _snap(cls)) == []
    assert patchwatch.from_torch(torch.Tensor.__rsub__, torch) and not patchwatch.from_torch(len, torch)


def test_inlining_replaces_the_import_lines():
    """The validation harness runs without the project: its project imports are pasted in (pipeline.inlining)."""
    src = (
        "from __future__ import annotations\n\nfrom pipeline.gpulock import held\n"
        "from pipeline.patchwatch import replaced, watched\n\nX = watched\nY = held\n"
    )
    out = inline(src, "pipeline.patchwatch", "pipeline.gpulock")
    assert "from pipeline" not in out and "def replaced(" in out and "class GpuLock" in out
    ns: dict = {}
    exec(compile(out, "<inlined>", "exec"), ns)
    assert ns["X"] is ns["watched"] and callable(ns["replaced"]) and ns["Y"] is ns["held"]
    with pytest.raises(ValueError):
        inline("x = 1\n", "pipeline.patchwatch")
