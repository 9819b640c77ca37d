"""Verify set_g: paraphrases must match their KernelBench source (weights tied), negatives must not.

Set g folds parameters together (a scale into a norm's gain and shift or into a filter, a bias and a constant into
one vector, [W|b] applied to the input with a column of ones), merges constructor arguments, stores filters
channels-last and unrolls recurrent cells by hand. For each set_g entry of ../manifest.json: the source built at
the file's own constructor values (or those named in SPEC where its arguments were merged or dropped), its
vector-like parameters perturbed, the file's parameters set from the source's by an explicit tie (the fold
included), both run on the file's get_inputs() in float64 and float32. Paraphrases pass when both relative
differences are <= 1e-4 of max(1, max|ref|); negatives when the float64 one is > 1e-3.
"""
import copy, json, os, sys
import torch

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # manifest keys are relative to this
sys.path.insert(0, ROOT)
from verify_common import KB, cp, load  # noqa: E402


def perturb(model, gen):
    # every vector-like parameter (1-D, or (C,1,1) shaped) is moved so ties are exercised
    with torch.no_grad():
        for p in model.parameters():
            if p.numel() == max(p.shape, default=1):
                p.add_(0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def cat_wb(lin):
    return torch.cat([lin.weight, lin.bias[:, None]], 1)


# ---------------------------------------------------------------- ties (S: source, P: paraphrase)
def t_none(S, P): pass
def t01(S, P):
    cp(P.filt, S.conv.weight); cp(P.fb, S.conv.bias)
    s = S.scale.reshape(-1)
    cp(P.gain, S.group_norm.weight * s); cp(P.shift, S.group_norm.bias * s)
def t02(S, P):
    s = S.scale.reshape(-1)
    cp(P.conv.weight, S.conv.weight * s[:, None, None, None])
    cp(P.conv.bias, (S.conv.bias + S.bias.reshape(-1)) * s)
    cp(P.norm.weight, S.group_norm.weight); cp(P.norm.bias, S.group_norm.bias)
def t03(S, P): cp(P.aug, cat_wb(S.gemm) * S.multiplier)
def t04(S, P): cp(P.block, cat_wb(S.matmul).t())
def t05(S, P):
    m, c = S.multiply_value, S.subtract_value
    cp(P.w, S.linear.weight * m); cp(P.off, (S.linear.bias - c) * m)
def t06(S, P):
    cp(P.kern, S.conv.weight.reshape(S.conv.weight.shape[0], -1)); cp(P.b, S.conv.bias - S.subtract1_value)
def t07(S, P):
    cp(P.A, cat_wb(S.gemm).t()); cp(P.gamma, S.group_norm.weight); cp(P.beta, S.group_norm.bias)
def t08(S, P):
    cp(P.conv.weight, S.conv.weight); cp(P.conv.bias, S.conv.bias - S.subtract_value)
def t09(S, P): cp(P.W, S.weight)
def t10(S, P):
    lins = [m for m in S.network if isinstance(m, torch.nn.Linear)]
    for i, l in enumerate(lins):
        cp(P.ws[i], l.weight.t()); cp(P.bs[i], l.bias)
def t11(S, P): cp(P.w_ohwi, S.conv.weight.permute(0, 2, 3, 1)); cp(P.b, S.conv.bias)
def t12(S, P):
    cp(P.w_hwio, S.conv.weight.permute(2, 3, 1, 0)); cp(P.b, S.conv.bias); cp(P.gain, S.multiplier)
def t13(S, P): cp(P.kernel, S.conv.weight.permute(2, 3, 1, 0)); cp(P.offset, S.conv.bias)
def t14(S, P):
    d = S.divisor
    cp(P.filt, S.conv.weight.permute(0, 2, 3, 1) / d); cp(P.bias, S.conv.bias / d)
def t15(S, P): cp(P.taps, S.conv2d.weight[:, 0].permute(1, 2, 0))
def t16(S, P):
    g = S.gru; H = P.n_hid
    for l in range(P.n_layers):
        wi, wh = getattr(g, f"weight_ih_l{l}"), getattr(g, f"weight_hh_l{l}")
        bi, bh = getattr(g, f"bias_ih_l{l}"), getattr(g, f"bias_hh_l{l}")
        for j, (W, U, b, c) in enumerate([(P.Wr, P.Ur, P.br, P.cr), (P.Wz, P.Uz, P.bz, P.cz), (P.Wn, P.Un, P.bn, P.cn)]):
            sl = slice(j * H, (j + 1) * H)
            cp(W[l], wi[sl].t()); cp(U[l], wh[sl].t()); cp(b[l], bi[sl]); cp(c[l], bh[sl])
def t17(S, P):
    for l, cell in enumerate(P.cells):
        L = S.lstm
        cp(cell.weight, torch.cat([getattr(L, f"weight_ih_l{l}"), getattr(L, f"weight_hh_l{l}")], 1))
        cp(cell.bias, getattr(L, f"bias_ih_l{l}") + getattr(L, f"bias_hh_l{l}"))
def t18(S, P):
    g = S.gru; H = P.H
    for l in range(P.L):
        bi, bh = getattr(g, f"bias_ih_l{l}"), getattr(g, f"bias_hh_l{l}")
        cp(P.wx[l], getattr(g, f"weight_ih_l{l}").t()); cp(P.wh[l], getattr(g, f"weight_hh_l{l}").t())
        cp(P.b_rz[l], bi[: 2 * H] + bh[: 2 * H]); cp(P.bx_n[l], bi[2 * H:]); cp(P.bh_n[l], bh[2 * H:])
def t19(S, P):
    n_in = S.input_size
    cp(P.Wx, S.i2h.weight[:, :n_in]); cp(P.Wh, S.i2h.weight[:, n_in:]); cp(P.bh, S.i2h.bias)
    cp(P.Wo, S.h2o.weight); cp(P.bo, S.h2o.bias)
def t22(S, P): cp(P.lin.weight, S.linear.weight); cp(P.lin.bias, S.linear.bias)
def t23(S, P):
    cp(P.k1, S.conv1.weight.permute(0, 2, 3, 1)); cp(P.c1, S.conv1.bias)
    cp(P.k2, S.conv2.weight.permute(0, 2, 3, 1)); cp(P.c2, S.conv2.bias)
    for m, d, f in ((P.m1, P.d1, S.fc1), (P.m2, P.d2, S.fc2), (P.m3, P.d3, S.fc3)):
        cp(m, f.weight.t()); cp(d, f.bias)
def t24(S, P):
    f = S.scaling_factor
    cp(P.conv.weight, S.conv.weight); cp(P.conv.bias, S.conv.bias)
    cp(P.gamma, S.bn.weight * f); cp(P.beta, S.bn.bias * f)
# negatives
def tn04(S, P): P.gru.load_state_dict(S.gru.state_dict())
def tn05(S, P): cp(P.aug, cat_wb(S.gemm))
def tn06(S, P):
    P.conv.load_state_dict(S.conv.state_dict()); P.gn.load_state_dict(S.group_norm.state_dict()); cp(P.scale, S.scale)
def tn08(S, P):
    cp(P.lin.weight, S.gemm.weight); cp(P.lin.bias, S.gemm.bias)
    cp(P.gamma, S.group_norm.weight); cp(P.beta, S.group_norm.bias)

# key -> (source init (None: the file's own), tie)
SPEC = {
    "set_g/para/p01_groupstat_scaled_gain_pool.py": ([6, 24, 3, 6, (24, 1, 1), 2, 0.0, 1.0], t01),
    "set_g/para/p02_prescaled_conv_sigmoid_groupnorm.py": ([5, 16, 3, 4, (16, 1, 1), (16, 1, 1)], t02),
    "set_g/para/p03_augmented_affine_leaky.py": (None, t03),
    "set_g/para/p04_augmented_einsum_residual_scale.py": (None, t04),
    "set_g/para/p05_merged_offset_rectified_affine.py": (None, t05),
    "set_g/para/p06_unfold_conv_tanh_pool.py": (None, t06),
    "set_g/para/p07_augmented_gemm_groupstats_window.py": (None, t07),
    "set_g/para/p08_tuple_channels_hswish_pool_mish.py": ([5, 14, 3, 0.5, 2], t08),
    "set_g/para/p09_pair_dims_column_sum.py": ([40, 56, 1.5], t09),
    "set_g/para/p10_width_list_relu_stack.py": ([30, [44, 26], 12], t10),
    "set_g/para/p11_channels_last_relu_hswish.py": (None, t11),
    "set_g/para/p12_hwio_unfold_gain_leaky_erf.py": (None, t12),
    "set_g/para/p13_hwio_double_mish_formula.py": (None, t13),
    "set_g/para/p14_ohwi_prescaled_leaky.py": (None, t14),
    "set_g/para/p15_depthwise_shifted_taps.py": (None, t15),
    "set_g/para/p16_gru_explicit_gates_stack.py": (None, t16),
    "set_g/para/p17_lstm_fused_concat_final_hidden.py": (None, t17),
    "set_g/para/p18_gru_merged_gate_bias_last_state.py": (None, t18),
    "set_g/para/p19_split_elman_tensordot_readout.py": (None, t19),
    "set_g/para/p20_einsum_attention_explicit_softmax.py": (None, t_none),
    "set_g/para/p21_channel_rms_vector_norm.py": (None, t_none),
    "set_g/para/p22_collapsed_row_total.py": (None, t22),
    "set_g/para/p23_lenet_functional_channels_last.py": (None, t23),
    "set_g/para/p24_conv_batchstats_prescaled_affine.py": (None, t24),
    "set_g/para/p25_triangular_prefix_matmul.py": (None, t_none),
    "set_g/neg/n01_channels_last_hswish_no_rectify.py": (None, t11),
    "set_g/neg/n02_square_product_second_transposed.py": (None, t_none),
    "set_g/neg/n03_softmax_over_rows_axis.py": (None, t_none),
    "set_g/neg/n04_gru_reset_before_matmul.py": (None, tn04),
    "set_g/neg/n05_augmented_affine_leaky_tanh.py": (None, tn05),
    "set_g/neg/n06_scale_before_groupstats_pool.py": (None, tn06),
    "set_g/neg/n07_running_mean_tril.py": (None, t_none),
    "set_g/neg/n08_strided_groups_hardtanh.py": (None, tn08),
}


def run(S, P, inputs, f64):
    S, P = copy.deepcopy(S), copy.deepcopy(P)
    ins = [x.double() if torch.is_tensor(x) and x.is_floating_point() and f64 else x for x in inputs]
    if f64:
        S, P = S.double(), P.double()
    with torch.no_grad():
        o = P(*[x.clone() for x in ins]); r = S(*[x.clone() for x in ins])
    if o.shape != r.shape:
        return float("inf"), float("inf")
    d = (o.double() - r.double()).abs().max().item(); mx = r.abs().max().item()
    return d, d / max(1.0, mx)


def main():
    man = {k: v for k, v in json.load(open(os.path.join(ROOT, "manifest.json"))).items() if k.startswith("set_g/")}
    assert set(man) == set(SPEC), set(man) ^ set(SPEC)
    ok_all = True
    for i, (key, e) in enumerate(sorted(man.items())):
        src_init, tie = SPEC[key]
        fm = load(os.path.join(ROOT, key), f"f{i}"); sm = load(os.path.join(KB, e["source"] + ".py"), f"s{i}")
        init = fm.get_init_inputs()
        torch.manual_seed(0); P = fm.Model(*init)
        torch.manual_seed(0); S = sm.Model(*(src_init if src_init is not None else init))
        perturb(S, torch.Generator().manual_seed(123))
        tie(S, P)
        torch.manual_seed(1); inputs = fm.get_inputs()
        d64, r64 = run(S, P, inputs, True); d32, r32 = run(S, P, inputs, False)
        ok = (r32 <= 1e-4 and r64 <= 1e-4) if e["kind"] == "para" else r64 > 1e-3
        ok_all &= ok
        print(f"{e['kind']:4} {key:52} {e['source']:52} diff64 {d64:9.2e} rel64 {r64:9.2e} rel32 {r32:9.2e}  {'PASS' if ok else 'FAIL'}")
    print("ALL PASS" if ok_all else "SOME FAILED")


if __name__ == "__main__":
    main()
