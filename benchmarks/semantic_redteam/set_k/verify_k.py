"""Verify set_k: paraphrases must compute their KernelBench source's function (parameters tied), negatives must not.

For each set_k entry of ../manifest.json (KernelBench from $KERNELBENCH_PATH, else ../shared/kernelbench beside the
repository):
  * both models are built from the same constructor values: the file's get_init_inputs(), or, for the files in SMALL
    (paraphrases written at the source's own, CPU-prohibitive sizes), reduced values with the same argument structure;
  * the source's 1-D parameters (biases, norm gains/shifts) are randomly perturbed so that ties are exercised;
  * the file's parameters are set from the source's by an explicit per-file tie function (transposes, folded
    offsets, flattened biases ...), after both are cast to the comparison's precision;
  * both are run (default training mode: batch statistics) in float64 and float32 on the file's get_inputs()
    (seeded) or a seeded small input of the same rank, and, for paraphrases, also on a signed input (2 * randn).
Paraphrases pass when, on every input, float64 max|diff| <= 1e-9 * max(1, max|ref|) and float32 <= 1e-4 * max(1,
max|ref|). Negatives pass when the smallest float64 relative difference over their tie variants exceeds 1e-3 (or the
shapes differ).
"""

import os
import sys

import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from verify_common import cp, lin, verify_tied  # noqa: E402


SMALL = {  # tag: (init, make_inputs, why)
    "p01": ([8], lambda: [torch.rand(4, 8, 6, 7)], "input 64x64x512x512 -> 4x8x6x7, 8 features"),
    "p02": ([6, 10, 3], lambda: [torch.rand(2, 6, 9, 13)], "input 8x64x512x1024, 64->128 ch -> 2x6x9x13, 6->10 ch"),
    "p06": ([48, 40], lambda: [torch.rand(32, 48)], "16384x4096 @ 4096x4096 -> 32x48 @ 48x40"),
    "p09": ([8, 64, 3], lambda: [torch.rand(2, 8, 10, 12)], "input 128x8x128x128 -> 2x8x10x12"),
    "p11": ([8, 64, 3, 0.5, 0.2], lambda: [torch.rand(2, 8, 10, 11)], "input 128x8x256x256 -> 2x8x10x11"),
    "p12": ([64, 48, 2.0], lambda: [torch.rand(16, 64)], "1024x8192 @ 8192x8192 -> 16x64 @ 64x48"),
    "p14": ([3, 16, 3, 2, 1, 4, 1e-5], lambda: [torch.rand(2, 3, 4, 5, 6)], "input 128x3x16x32x32 -> 2x3x4x5x6"),
}


# --------------------------------------------------------------------------- paraphrase ties
def t_none(S, P):
    pass


def t_p01(S, P):
    cp(P.gamma, S.bn.weight)
    cp(P.beta, S.bn.bias)


def t_p02(S, P):
    w = S.conv2d.weight
    cp(P.w_cols, w.reshape(w.shape[0], -1).t())
    assert S.conv2d.bias is None and P.b is None


def t_p06(S, P):
    cp(P.w_t, S.gemm.weight.t())
    cp(P.bias, S.gemm.bias)
    cp(P.norm.scale, S.batch_norm.weight)
    cp(P.norm.shift, S.batch_norm.bias)


def t_p07(S, P):
    lin_like(P.kernel, P.offset, S.matmul)


def lin_like(w, b, mod):
    cp(w, mod.weight)
    cp(b, mod.bias)


def t_p08(S, P):
    cp(P.W, S.linear.weight.t())
    cp(P.b, S.linear.bias)


def t_p09(S, P):
    lin_like(P.filters, P.filter_bias, S.conv)


def t_p10(S, P):
    lin_like(P.weight, P.conv_bias, S.conv)
    cp(P.channel_offset, S.bias.reshape(-1))


def t_p11(S, P):
    cp(P.body[0].weight, S.conv.weight)
    cp(P.body[0].bias, S.conv.bias - (S.subtract_value_1 + S.subtract_value_2))


def t_p12(S, P):
    cp(P.proj, S.gemm.weight.t())
    cp(P.proj_bias, S.gemm.bias)


def t_p13(S, P):
    cp(P.assign_w, S.clusters.t())
    cp(P.bn_gain, S.batch_norm.weight)
    cp(P.bn_bias, S.batch_norm.bias)
    cp(P.centroids, S.clusters2[0].t())


def t_p14(S, P):
    lin_like(P.up_w, P.up_b, S.conv_transpose)
    cp(P.gn.g, S.group_norm.weight)
    cp(P.gn.h, S.group_norm.bias)


TIES = {
    "p01": t_p01, "p02": t_p02, "p03": t_none, "p04": t_none, "p05": t_none, "p06": t_p06, "p07": t_p07,
    "p08": t_p08, "p09": t_p09, "p10": t_p10, "p11": t_p11, "p12": t_p12, "p13": t_p13, "p14": t_p14,
}


# --------------------------------------------------------------------------- negative tie variants
def n_state_dict(S, P):
    P.load_state_dict(S.state_dict())


def n02_tie(S, P):
    lin(P.gemm, S.gemm.weight, S.gemm.bias)
    cp(P.gamma, S.batch_norm.weight)
    cp(P.beta, S.batch_norm.bias)


NEG_TIES = {"n01": [t_none], "n02": [n02_tie], "n03": [n_state_dict], "n04": [t_none], "n05": [n_state_dict]}
NEG_NOTES = {"n01": "no params", "n02": "gemm + affine tie", "n03": "state_dict tie", "n04": "no params",
             "n05": "state_dict tie"}


if __name__ == "__main__":
    sys.exit(verify_tied("set_k", TIES, NEG_TIES, NEG_NOTES, SMALL, 19))
