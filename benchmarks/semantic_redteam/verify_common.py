"""What the red-team sets' verification scripts (set_*/verify_*.py) share: where KernelBench is, loading a file as a
module, copying a tie, perturbing 1-D parameters so that ties are exercised."""

import importlib.util
import os
import sys

import torch

sys.dont_write_bytecode = True  # never write caches next to the KernelBench sources

ROOT = os.path.dirname(os.path.abspath(__file__))  # manifest keys are relative to this (".../semantic_redteam")
KB = os.environ.get("KERNELBENCH_PATH") or os.path.join(
    os.path.dirname(os.path.dirname(ROOT)), "..", "shared", "kernelbench"
)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cp(dst, src):
    with torch.no_grad():
        assert dst.shape == src.shape, (tuple(dst.shape), tuple(src.shape))
        dst.copy_(src)


def perturb(model, gen):
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() <= 1:
                p.add_(0.3 * torch.randn(p.shape, generator=gen))
