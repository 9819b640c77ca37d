"""Verify set_j: paraphrases must compute their KernelBench source's function (parameters tied), negatives must not.

For each set_j entry of ../manifest.json (KernelBench from $KERNELBENCH_PATH, else ../shared/kernelbench beside the
repository):
  * both models are built from the same constructor values: the file's get_init_inputs(), or, for the files in SMALL
    (paraphrases written at the source's own, CPU-prohibitive sizes), reduced values with the same argument structure;
    the constructor signatures of files and sources are the same, so SourceModel(*init) and FileModel(*init),
  * the source's 1-D parameters (biases, norm gains/shifts) are randomly perturbed so that ties are exercised,
  * the file's parameters are set from the source's by an explicit per-file tie function (transposes, folded scalars,
    augmented [W^T; b] matrices, flipped kernels ...); for p17, whose BatchNorms are written without affine
    parameters, the tie resets the source's BatchNorm gains/shifts to their init values (ones/zeros),
  * both are cast to float64 (resp. float32) first and then tied, so fused parameters are formed at that precision;
    both are run (default training mode) in float64 and float32 on the file's get_inputs() (seeded) or, for SMALL
    files, on a seeded small input of the same rank; paraphrases are also run on a second, signed input
    (2 * randn of the same shape) so that both sides of every clamp / min / relu are exercised.
Paraphrases pass when, on every input, the float64 max|diff| <= 1e-9 * max(1, max|ref|) and the float32 one
<= 1e-4 * max(1, max|ref|). Negatives pass when, on the file's input, the smallest float64 relative difference over
their tie variants exceeds 1e-3 (or the shapes differ).
"""

import os
import sys
import warnings

import torch

sys.dont_write_bytecode = True  # never write caches next to the KernelBench sources
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verify_common import cp, lin, verify_tied  # noqa: E402

warnings.filterwarnings("ignore", message="enable_nested_tensor is True")  # level3/28's sequence-first encoder



# --------------------------------------------------------------------------- reduced sizes for full-size paraphrases
def _triu_pair(n):
    return lambda: [torch.rand(n, n).triu(), torch.rand(n, n).triu()]


SMALL = {  # tag: (init, make_inputs, why)
    "p01": ([], _triu_pair(100), "4096x4096 -> 100x100, row tile 24"),
    "p04": ([64, 64, (3, 7)], lambda: [torch.rand(2, 64, 9, 11)], "input 8x64x512x512 -> 2x64x9x11"),
    "p06": ([16, 64, 3], lambda: [torch.rand(2, 16, 12, 12)], "input 128x16x256x256 -> 2x16x12x12"),
    "p07": ([3, 16, 3, 2, (16, 1, 1, 1)], lambda: [torch.rand(2, 3, 6, 7, 7)], "input 128x3x16x64x64 -> 2x3x6x7x7"),
    "p08": ([64, 64, 4, (64, 1, 1)], lambda: [torch.rand(2, 64, 5, 6)], "input 32x64x256x256 -> 2x64x5x6"),
    "p09": ([64, 64, 3, 2, 1, 1, (64, 1, 1), 2.0], lambda: [torch.rand(2, 64, 5, 5)], "input 128x64x128x128 -> 2x64x5x5"),
    "p10": ([16, 32, 3, 2, 1], lambda: [torch.rand(2, 16, 4, 5, 5)], "input 16x16x16x32x32 -> 2x16x4x5x5"),
    "p11": ([64, 64, 3, 1, 1, 2, 2, -1, 1], lambda: [4.0 * torch.rand(2, 64, 8, 8)],
            "input 128x64x256x256 -> 2x64x8x8 (x4 so the clip is active)"),
    "p14": ([64, 32, 10.0], lambda: [torch.rand(8, 64)], "8192x8192 linear, 1024 rows -> 64x32, 8 rows"),
    "p15": ([1000], lambda: [torch.rand(2, 3, 224, 224)], "batch 1024 -> 2 (224x224 fixed by the architecture)"),
    "p18": ([64, [32] * 16, 16], lambda: [torch.rand(8, 64)], "8192-[1024]*16-8192, 1024 rows -> 64-[32]*16-16, 8 rows"),
}


# --------------------------------------------------------------------------- paraphrase ties
def t_none(S, P):
    pass


def t_p01(S, P):
    P.tile = 24  # several row tiles at the reduced size


def t_p03(S, P):
    cp(P.taps, S.conv2d.weight[:, 0, :, 0])


def t_p04(S, P):
    c = S.conv_transpose2d
    g = c.groups
    ci, og, kh, kw = c.weight.shape
    w = c.weight.reshape(g, ci // g, og, kh, kw).transpose(1, 2).reshape(g * og, ci // g, kh, kw)
    cp(P.kernel, w.flip(2, 3))


def t_p05(S, P):
    cp(P.w_aug, torch.cat([S.gemm.weight.t(), S.gemm.bias[None]], 0))


def t_p06(S, P):
    O = S.conv.weight.shape[0]
    cp(P.col_weight, S.conv.weight.reshape(O, -1).t())
    cp(P.col_bias, S.conv.bias)


def t_p07(S, P):
    s = S.scaling_factor.reshape(-1)
    cp(P.kernel, S.conv.weight * s.view(-1, 1, 1, 1, 1))
    cp(P.kernel_bias, S.conv.bias * s)
    cp(P.gate, S.bias.reshape(-1))


def t_p08(S, P):
    cp(P.weight, S.conv_transpose.weight)
    cp(P.shift, S.conv_transpose.bias - S.bias.reshape(-1))


def t_p09(S, P):
    cp(P.weight, S.conv_transpose.weight)
    cp(P.shift, S.conv_transpose.bias + S.bias.reshape(-1))


def t_p10(S, P):  # conv bias and BN shift cancel in the centring
    cp(P.weight, S.conv_transpose.weight)
    cp(P.gain, S.batch_norm.weight)


def t_convt(S, P):  # p11, p13: functional transposed conv with the module's own layout
    lin(P, S.conv_transpose.weight, S.conv_transpose.bias)


def t_p12(S, P):
    cp(P.weight, S.conv_transpose.weight)
    cp(P.bias_plus, S.conv_transpose.bias + S.add_value)


def t_p14(S, P):
    d = S.divisor
    cp(P.w_io, S.linear.weight.t() / d)
    cp(P.b, S.linear.bias / d)


def t_p15(S, P):
    convs = [S.conv1, S.conv2, S.conv3, S.conv4, S.conv5]
    for c, w, b in zip(convs, P.conv_w, P.conv_b):
        cp(w, c.weight)
        cp(b, c.bias)
    for f, wt, b in zip([S.fc1, S.fc2, S.fc3], P.fc_wt, P.fc_b):
        cp(wt, f.weight.t())
        cp(b, f.bias)


def t_p16(S, P):
    cp(P.pos, S.pos_embedding)
    cp(P.cls, S.cls_token)
    cp(P.embed_w, S.patch_to_embedding.weight.t())
    cp(P.embed_b, S.patch_to_embedding.bias)
    for layer, blk in zip(S.transformer.layers, P.blocks):
        a = layer.self_attn
        cp(blk.qkv_w, a.in_proj_weight.t())
        cp(blk.qkv_b, a.in_proj_bias)
        cp(blk.o_w, a.out_proj.weight.t())
        cp(blk.o_b, a.out_proj.bias)
        cp(blk.up_w, layer.linear1.weight.t())
        cp(blk.up_b, layer.linear1.bias)
        cp(blk.down_w, layer.linear2.weight.t())
        cp(blk.down_b, layer.linear2.bias)
        cp(blk.g1, layer.norm1.weight)
        cp(blk.b1, layer.norm1.bias)
        cp(blk.g2, layer.norm2.weight)
        cp(blk.b2, layer.norm2.bias)
    cp(P.head1_w, S.mlp_head[0].weight.t())
    cp(P.head1_b, S.mlp_head[0].bias)
    cp(P.head2_w, S.mlp_head[3].weight.t())
    cp(P.head2_b, S.mlp_head[3].bias)


def t_p17(S, P):
    def stage(src, dst):
        seq = src.double_conv
        cp(dst.k1, seq[0].weight)  # seq[0].bias / seq[3].bias: removed by the batch statistics
        cp(dst.k2, seq[3].weight)
        for bn in (seq[1], seq[4]):  # the file writes BatchNorm without affine: reset to init values
            with torch.no_grad():
                bn.weight.fill_(1.0)
                bn.bias.zero_()

    for src, dst in zip([S.encoder1, S.encoder2, S.encoder3, S.encoder4], P.down):
        stage(src, dst)
    stage(S.bottleneck, P.mid)
    for up, dst in zip([S.upconv4, S.upconv3, S.upconv2, S.upconv1], P.ups):
        cp(dst.w, up.weight)
        cp(dst.b, up.bias)
    for src, dst in zip([S.decoder4, S.decoder3, S.decoder2, S.decoder1], P.fuse):
        stage(src, dst)
    cp(P.head_w, S.final_conv.weight[:, :, 0, 0])
    cp(P.head_b, S.final_conv.bias)


def t_p18(S, P):
    lins = [m for m in S.network if isinstance(m, torch.nn.Linear)]
    for l, m in zip(lins, P.mats):
        cp(m, torch.cat([l.weight.t(), l.bias[None]], 0))


TIES = {
    "p01": t_p01, "p02": t_none, "p03": t_p03, "p04": t_p04, "p05": t_p05, "p06": t_p06, "p07": t_p07,
    "p08": t_p08, "p09": t_p09, "p10": t_p10, "p11": t_convt, "p12": t_p12, "p13": t_convt, "p14": t_p14,
    "p15": t_p15, "p16": t_p16, "p17": t_p17, "p18": t_p18,
}
NOTES = {"p17": "source BN gains/shifts reset to 1/0"}


# --------------------------------------------------------------------------- negative tie variants
def n_state_dict(S, P):  # same module structure and parameter names as the source
    P.load_state_dict(S.state_dict())


def n01_scaled(c):
    def f(S, P):
        cp(P.weight, S.conv_transpose.weight * c)
        cp(P.shift, (S.conv_transpose.bias + S.bias.reshape(-1)) * c)

    f.__name__ = f"scale{c:.2f}"
    return f


def n05_plain(S, P):
    src = [m for m in S.network if isinstance(m, torch.nn.Linear)]
    dst = [m for m in P.network if isinstance(m, torch.nn.Linear)]
    for a, b in zip(src, dst):
        lin(b, a.weight, a.bias)


NEG_TIES = {
    "n01": [n01_scaled(c) for c in [0.25, 0.5, 0.75, 1.0, 1.5, 2.0]],  # also the weights rescaled by 1/s etc.
    "n02": [t_none],
    "n03": [t_none],
    "n04": [n_state_dict],
    "n05": [n05_plain],
    "n06": [n_state_dict],
}
NEG_NOTES = {
    "n01": "best of 6 rescalings of the merged conv",
    "n02": "no params", "n03": "no params",
    "n04": "plain tie", "n05": "plain tie", "n06": "state_dict tie",
}


if __name__ == "__main__":
    sys.exit(verify_tied("set_j", TIES, NEG_TIES, NEG_NOTES, SMALL, 24, notes=NOTES))
