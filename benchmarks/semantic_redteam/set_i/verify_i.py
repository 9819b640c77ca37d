"""Verify set_i: paraphrases must match their KernelBench source (weights tied), negatives must not.

For each set_i entry of ../manifest.json (KernelBench from $KERNELBENCH_PATH, else ../shared/kernelbench beside the
repository):
  * the source problem is built at the file's own constructor values, SourceModel(*SRC_INIT[tag](file_init)); the
    mapping is the identity except for the two files whose constructor signature differs from the source's
    (p07: no out_channels / groups arguments, both equal in_channels; p12: the scaling factor 2.0 is a constant),
  * 1-D source parameters (biases, norm gains/shifts) are randomly perturbed, and so are source parameters that are
    still constant at initialisation (e.g. a zero class token), so that ties are exercised,
  * the file's parameters are set from the source's by an explicit per-file tie function,
  * both are run (default training mode) in float64 and in float32 on the file's get_inputs() (seeded), or, for the
    files listed in SMALL (whose get_inputs() are far too large for a CPU check, or which need explicit states), on a
    seeded small input of the same rank; the reason is printed in the notes column,
  * p01 (source draws its initial LSTM states with torch.randn inside forward when none are given) is compared with
    explicit seeded states in float32/float64, and additionally on its own get_inputs() (states drawn inside
    forward) in float32 with the global RNG re-seeded identically before each model call.
Paraphrases pass when the float64 max|diff| <= 1e-4 * max(1, max|ref|) and the float32 one too.
Negatives are checked under every tie variant listed for them and pass when the SMALLEST float64 relative difference
over the variants exceeds 1e-3 (or the shapes differ); the spread (max - min) of the source's output is printed too,
to show that the output is not nearly constant.
"""

import copy
import os
import sys

import torch

sys.dont_write_bytecode = True  # never write caches next to the KernelBench sources
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from verify_common import cp, lin, verify  # noqa: E402

PARA_TOL = 1e-4
NEG_MIN = 1e-3
SET = "set_i"


# --------------------------------------------------------------------------- source constructor mapping
SRC_INIT = {
    # p07: (C, kh, kw, sh, sw, ph, pw, dh, dw) -> (C, C, kh, kw, sh, sw, ph, pw, dh, dw, groups=C, bias=False)
    "p07": lambda a: [a[0], a[0]] + list(a[1:9]) + [a[0], False],
    "p12": lambda a: list(a) + [2.0],  # GAIN = 2.0 constant in the file
}


# --------------------------------------------------------------------------- small inputs
def _lstm_states(L, B, H):
    return [torch.rand(L, B, H), torch.rand(L, B, H)]


SMALL = {
    "p01": (lambda: [torch.rand(3, 6, 10)] + _lstm_states(2, 3, 16),
            "explicit seeded h0/c0 (source draws float32 randn states otherwise)"),
    "p05": (lambda: [torch.rand(2, 32, 300)], "get_inputs is 32x32x131072"),
    "p07": (lambda: [torch.rand(2, 128, 20, 30)], "get_inputs is 32x128x128x256"),
    "p08": (lambda: [0.9 + 0.2 * torch.rand(4, 600)], "get_inputs is 32768x32768; values in [0.9,1.1], 3 blocks"),
    "p10": (lambda: [torch.rand(4, 64, 11, 11)], "get_inputs is 512x64x32x32; odd 13x13 map tests the pool crop"),
    "p11": (lambda: [torch.rand(2, 64, 16, 16)], "get_inputs is 16x64x512x512"),
    "p13": (lambda: [torch.rand(2, 8, 6, 8, 8)], "get_inputs is 64x8x32x64x64"),
    "p16": (lambda: [torch.rand(2, 3, 101, 101)], "get_inputs is 64x3x512x512; 101 exercises ceil_mode"),
}


# --------------------------------------------------------------------------- ties
def t_none(S, P):
    pass


def _rnn(S_rnn, l, suffix=""):
    return [getattr(S_rnn, f"{n}_l{l}{suffix}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def t_p01(S, P):
    assert len(P.cells) == S.lstm.num_layers
    for l, cell in enumerate(P.cells):
        w_ih, w_hh, b_ih, b_hh = _rnn(S.lstm, l)
        cp(cell.W_ih, w_ih)
        cp(cell.W_hh, w_hh)
        cp(cell.b_ih, b_ih)
        cp(cell.b_hh, b_hh)
    lin(P.head, S.fc.weight, S.fc.bias)


def t_p02(S, P):
    for l in range(S.lstm.num_layers):
        for d, suf in enumerate(["", "_reverse"]):
            w_ih, w_hh, b_ih, b_hh = _rnn(S.lstm, l, suf)
            cp(P.w_ih[2 * l + d], w_ih)
            cp(P.w_hh[2 * l + d], w_hh)
            cp(P.b_ih[2 * l + d], b_ih)
            cp(P.b_hh[2 * l + d], b_hh)
    lin(P.fc, S.fc.weight, S.fc.bias)


def t_p03(S, P):
    assert len(P.layers) == S.gru.num_layers
    for l, dirs in enumerate(P.layers):
        for d, suf in enumerate(["", "_reverse"]):
            w_ih, w_hh, b_ih, b_hh = _rnn(S.gru, l, suf)
            cp(dirs[d].weight_ih, w_ih)
            cp(dirs[d].weight_hh, w_hh)
            cp(dirs[d].bias_ih, b_ih)
            cp(dirs[d].bias_hh, b_hh)


def t_p04(S, P):
    for l in range(S.gru.num_layers):
        for d, suf in enumerate(["", "_reverse"]):
            w_ih, w_hh, b_ih, b_hh = _rnn(S.gru, l, suf)
            cp(P.W_ih[2 * l + d], w_ih)
            cp(P.W_hh[2 * l + d], w_hh)
            cp(P.b_ih[2 * l + d], b_ih)
            cp(P.b_hh[2 * l + d], b_hh)


def t_p05(S, P):
    cp(P.weight, S.conv1d_transpose.weight)
    assert S.conv1d_transpose.bias is None and P.bias is None


def t_p06(S, P):
    cp(P.weight, S.conv2d.weight)
    assert S.conv2d.bias is None and P.bias is None


def t_p07(S, P):
    cp(P.weight, S.conv2d.weight[:, 0])
    assert S.conv2d.bias is None and P.bias is None


def t_p09(S, P):
    cp(P.weight, S.conv.weight)
    cp(P.bias, S.conv.bias)
    cp(P.gamma, S.group_norm.weight)
    cp(P.beta, S.group_norm.bias)


def t_p10(S, P):
    lin(P.block[0], S.conv_transpose.weight, S.conv_transpose.bias)
    lin(P.block[1], S.batch_norm.weight, S.batch_norm.bias)
    lin(P.block[4], S.group_norm.weight, S.group_norm.bias)


def t_p11(S, P):
    cp(P.weight, S.conv_transpose.weight)
    cp(P.conv_bias, S.conv_transpose.bias)
    cp(P.bias, S.bias)


def t_p13(S, P):
    lin(P.features[0], S.conv.weight, S.conv.bias)
    cp(P.offset, S.bias)


def _encoder(blk, layer, attn, qkv_name="qkv", proj_name="proj"):
    lin(getattr(attn, qkv_name), layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
    lin(getattr(attn, proj_name), layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias)


def t_p14(S, P):
    cp(P.patch_weight, S.conv1.weight)
    cp(P.patch_bias, S.conv1.bias)
    cp(P.proj_weight, S.linear_proj.weight)
    cp(P.proj_bias, S.linear_proj.bias)
    cp(P.cls_token, S.cls_token)
    assert len(P.blocks) == len(S.transformer_layers)
    for blk, layer in zip(P.blocks, S.transformer_layers):
        _encoder(blk, layer, blk.attn)
        lin(blk.norm1, layer.norm1.weight, layer.norm1.bias)
        lin(blk.norm2, layer.norm2.weight, layer.norm2.bias)
        lin(blk.mlp[0], layer.linear1.weight, layer.linear1.bias)
        lin(blk.mlp[2], layer.linear2.weight, layer.linear2.bias)
    lin(P.head, S.fc_out.weight, S.fc_out.bias)


def _cnr(dst, conv, bn):
    cp(dst.weight, conv.weight)
    cp(dst.gamma, bn.weight)
    cp(dst.beta, bn.bias)


def t_p15(S, P):
    seq = S.model
    _cnr(P.stem, seq[0][0], seq[0][1])
    assert len(P.units) == len(seq) - 2
    for i, unit in enumerate(P.units):
        blk = seq[i + 1]
        _cnr(unit.depthwise, blk[0], blk[1])
        _cnr(unit.pointwise, blk[3], blk[4])
    lin(P.classifier, S.fc.weight, S.fc.bias)


def t_p16(S, P):
    assert len(P.body) == len(S.features)
    for mine, theirs in zip(P.body, S.features):
        if isinstance(theirs, torch.nn.Conv2d):
            lin(mine, theirs.weight, theirs.bias)
        elif hasattr(theirs, "squeeze"):
            lin(mine.squeeze, theirs.squeeze.weight, theirs.squeeze.bias)
            lin(mine.e1, theirs.expand1x1.weight, theirs.expand1x1.bias)
            lin(mine.e3, theirs.expand3x3.weight, theirs.expand3x3.bias)
    lin(P.score, S.classifier[1].weight, S.classifier[1].bias)


TIES = {
    "p01": t_p01, "p02": t_p02, "p03": t_p03, "p04": t_p04, "p05": t_p05, "p06": t_p06, "p07": t_p07,
    "p08": t_none, "p09": t_p09, "p10": t_p10, "p11": t_p11, "p12": t_p11, "p13": t_p13, "p14": t_p14,
    "p15": t_p15, "p16": t_p16,
}


# --------------------------------------------------------------------------- negative tie variants
def n01_igo(S, P):
    """source's input, cell-candidate and output gate blocks; the forget block is dropped"""
    H = S.lstm.hidden_size
    keep = torch.cat([torch.arange(0, H), torch.arange(2 * H, 4 * H)])
    for l in range(S.lstm.num_layers):
        w_ih, w_hh, b_ih, b_hh = _rnn(S.lstm, l)
        cp(P.W_ih[l], w_ih[keep])
        cp(P.W_hh[l], w_hh[keep])
        cp(P.b_ih[l], b_ih[keep])
        cp(P.b_hh[l], b_hh[keep])
    lin(P.fc, S.fc.weight, S.fc.bias)


def n02_plain(S, P):
    for l, layer in enumerate(P.layers):
        w_ih, w_hh, b_ih, b_hh = _rnn(S.gru, l)
        cp(layer.W_ih, w_ih)
        cp(layer.W_hh, w_hh)
        cp(layer.b_ih, b_ih)
        cp(layer.b_hh, b_hh)


def n03_plain(S, P):
    lin(P.conv_transpose, S.conv_transpose.weight, S.conv_transpose.bias)
    cp(P.bias, S.bias)


def n04_plain(S, P):
    lin(P.conv_transpose, S.conv_transpose.weight, S.conv_transpose.bias)
    lin(P.batch_norm, S.batch_norm.weight, S.batch_norm.bias)
    cp(P.norm_weight, S.group_norm.weight)
    cp(P.norm_bias, S.group_norm.bias)


def n05_plain(S, P):
    lin(P.conv_transpose, S.conv_transpose.weight, S.conv_transpose.bias)


def n06_plain(S, P):
    lin(P.conv1, S.conv1.weight, S.conv1.bias)
    lin(P.linear_proj, S.linear_proj.weight, S.linear_proj.bias)
    cp(P.cls_token, S.cls_token)
    for blk, layer in zip(P.blocks, S.transformer_layers):
        _encoder(blk, layer, blk)
        lin(blk.norm1, layer.norm1.weight, layer.norm1.bias)
        lin(blk.norm2, layer.norm2.weight, layer.norm2.bias)
        lin(blk.fc1, layer.linear1.weight, layer.linear1.bias)
        lin(blk.fc2, layer.linear2.weight, layer.linear2.bias)
    lin(P.fc_out, S.fc_out.weight, S.fc_out.bias)


NEG_TIES = {
    "n01": [n01_igo],
    "n02": [n02_plain],
    "n03": [n03_plain],
    "n04": [n04_plain],
    "n05": [n05_plain],
    "n06": [n06_plain],
}
NOTES = {
    "n01": "tie keeps the source's i/g/o gate rows",
    "n02": "plain tie",
    "n03": "plain tie",
    "n04": "group-norm affine used as the per-channel affine",
    "n05": "plain tie",
    "n06": "plain tie (post-norm layers' weights into pre-norm blocks)",
}


# --------------------------------------------------------------------------- driver
def perturb_constants(model, gen):
    """Source parameters of any rank that are still constant (zeros / ones init) get noise too."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and p.numel() > 1 and bool((p == p.flatten()[0]).all()):
                p.add_(0.3 * torch.randn(p.shape, generator=gen))


def rng_path_check(S, P, inputs):
    """float32, both models run on `inputs` with the global RNG re-seeded identically before each call."""
    S, P = copy.deepcopy(S), copy.deepcopy(P)
    with torch.no_grad():
        torch.manual_seed(7)
        out = P(*[x.clone() for x in inputs])
        torch.manual_seed(7)
        ref = S(*[x.clone() for x in inputs])
    if out.shape != ref.shape:
        return float("inf")
    return (out - ref).abs().max().item() / max(1.0, ref.abs().max().item())


def extra(row):
    """p01 also on its own get_inputs() (states drawn inside forward, the RNG re-seeded alike); a negative's note the
    spread of its source's output (not nearly constant)."""
    if row["kind"] == "para":
        if row["tag"] != "p01":
            return True, ""
        torch.manual_seed(1)
        r = rng_path_check(row["S"], row["P"], row["file_mod"].get_inputs())
        return r <= PARA_TOL, f"states drawn in forward (same seed), float32 rel {r:.2e}"
    with torch.no_grad():
        ref = copy.deepcopy(row["S"]).double()(*[x.double() for x in row["inputs"]])
    return True, f"source output spread {(ref.max() - ref.min()).item():.3g}"


if __name__ == "__main__":
    sys.exit(verify(SET, TIES, NEG_TIES, NOTES, PARA_TOL, NEG_MIN, src_init=SRC_INIT, small=SMALL,
                    perturb_more=perturb_constants, both_precisions=True, extra=extra, expect=22))
