"""Paraphrases of KernelBench problems: the same computation written differently, by rewrite rules, each verified
numerically equal to its source (weights tied, outputs within 1e-4); and near-variants that change the function.

Rewrite kinds (KINDS), applied to the reference file's AST with the reference model's modules in hand:
- functional: modules as functional calls with explicitly created parameters (F.conv2d(x, self.w, self.b, ...));
- formula: activations, softmax/log-softmax/log-sum-exp and layer/batch/group/instance norms written out;
- matmul: matmul/mm/bmm/@ as einsum, linear layers as addmm / tensordot;
- conv_unfold: 2-D convolutions as unfold + matmul;
- reduction: mean as sum / n, max(dim).values as amax, sum as mean * n;
- algebra: division as multiplication by the reciprocal, subtraction as adding the negation, operands swapped;
- helpers: forward split into module-level helper functions and a helper class.
Reference code is KernelBench's (trusted) and the rewrites are ours: verification runs in this process.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass

from pipeline.decontam.slicing import batch_slice

KINDS = ("functional", "formula", "matmul", "conv_unfold", "reduction", "algebra", "helpers")

HELPERS = """
def _p_ln(x, w, b, shape, eps):
    dims = tuple(range(-len(shape), 0))
    mu = x.sum(dim=dims, keepdim=True) / float(torch.tensor(shape).prod())
    xc = x - mu
    var = (xc * xc).mean(dim=dims, keepdim=True)
    y = xc / torch.sqrt(var + eps)
    return y * w + b if w is not None else y


def _p_bn(x, w, b, eps):
    dims = [0] + list(range(2, x.dim()))
    mu = x.mean(dim=dims, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)
    shape = [1, -1] + [1] * (x.dim() - 2)
    y = (x - mu) * torch.rsqrt(var + eps)
    return y * w.view(shape) + b.view(shape) if w is not None else y


def _p_gn(x, groups, w, b, eps):
    n, c = x.shape[0], x.shape[1]
    g = x.reshape(n, groups, -1)
    mu = g.mean(dim=-1, keepdim=True)
    var = g.var(dim=-1, unbiased=False, keepdim=True)
    y = ((g - mu) / torch.sqrt(var + eps)).reshape(x.shape)
    shape = [1, -1] + [1] * (x.dim() - 2)
    return y * w.view(shape) + b.view(shape) if w is not None else y


def _p_in(x, w, b, eps):
    dims = list(range(2, x.dim()))
    mu = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, unbiased=False, keepdim=True)
    y = (x - mu) / torch.sqrt(var + eps)
    shape = [1, -1] + [1] * (x.dim() - 2)
    return y * w.view(shape) + b.view(shape) if w is not None else y


def _p_softmax(x, dim):
    e = torch.exp(x - torch.amax(x, dim=dim, keepdim=True))
    return e / torch.sum(e, dim=dim, keepdim=True)


def _p_log_softmax(x, dim):
    m = torch.amax(x, dim=dim, keepdim=True)
    return x - m - torch.log(torch.sum(torch.exp(x - m), dim=dim, keepdim=True))


def _p_lse(x, dim, keepdim=False):
    m = torch.amax(x, dim=dim, keepdim=True)
    out = m + torch.log(torch.sum(torch.exp(x - m), dim=dim, keepdim=True))
    return out if keepdim else out.squeeze(dim)


def _p_mean(x, dim=None, keepdim=False):
    if dim is None:
        return x.sum() / x.numel()
    s = torch.sum(x, dim=dim, keepdim=keepdim)
    return s / (x.numel() // max(s.numel(), 1))


def _p_conv2d_unfold(x, w, b, stride, padding, dilation):
    n, _, h, wd = x.shape
    oc, ic, kh, kw = w.shape
    cols = torch.nn.functional.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = torch.matmul(w.reshape(oc, -1), cols).reshape(n, oc, oh, ow)
    return out + b.view(1, -1, 1, 1) if b is not None else out
"""

# Activation calls -> formulas ({0} the argument source).
_FORMULAS = {
    "relu": "torch.clamp_min({0}, 0.0)",
    "sigmoid": "1.0 / (1.0 + torch.exp(-({0})))",
    "tanh": "(2.0 / (1.0 + torch.exp(-2.0 * ({0}))) - 1.0)",
    "gelu": "0.5 * ({0}) * (1.0 + torch.erf(({0}) / math.sqrt(2.0)))",
    "silu": "({0}) * torch.sigmoid({0})",
    "mish": "({0}) * torch.tanh(torch.log1p(torch.exp({0})))",
    "softplus": "torch.log1p(torch.exp({0}))",
    "hardsigmoid": "torch.clamp(({0}) / 6.0 + 0.5, 0.0, 1.0)",
    "hardswish": "({0}) * torch.clamp(({0}) + 3.0, 0.0, 6.0) / 6.0",
    "elu": "torch.where(({0}) > 0, {0}, torch.exp({0}) - 1.0)",
}
_ACT_MODULES = {
    "ReLU": "relu",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "GELU": "gelu",
    "SiLU": "silu",
    "Mish": "mish",
    "Softplus": "softplus",
    "Hardsigmoid": "hardsigmoid",
    "Hardswish": "hardswish",
    "ELU": "elu",
}


def _func_name(call: ast.Call) -> tuple[str, str]:
    """('torch'|'F'|'method', name) of a call like torch.relu(x), F.relu(x), torch.nn.functional.relu(x), x.relu()."""
    f = call.func
    if isinstance(f, ast.Attribute):
        base = ast.unparse(f.value)
        if base in ("torch", "F", "torch.nn.functional", "nn.functional"):
            return ("torch" if base == "torch" else "F"), f.attr
        return "method", f.attr
    return "", ""


def _kw(call: ast.Call, name: str, pos: int):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if len(call.args) > pos:
        return call.args[pos]
    return None


def _expr(src: str) -> ast.expr:
    return ast.parse(src, mode="eval").body


class _Rewriter(ast.NodeTransformer):
    def __init__(self, kind: str, modules: dict, rng: random.Random) -> None:
        self.kind, self.mods, self.rng = kind, modules, rng
        self.changed = 0
        self.new_params: dict[str, list[str]] = {}  # attr -> replacement __init__ lines
        self.renames: dict[str, str] = {}  # reference state_dict key -> paraphrase key

    def _self_call(self, node: ast.Call):
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id == "self"
            and f.attr in self.mods
            and len(node.args) == 1
            and not node.keywords
        ):
            return f.attr, self.mods[f.attr]
        return None, None

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        attr, mod = self._self_call(node)
        arg = ast.unparse(node.args[0]) if node.args else ""
        k = self.kind
        if mod is not None:
            t = type(mod).__name__
            out = None
            if k == "functional":
                out = self._functional(attr, mod, t, arg)
            elif k == "formula":
                out = self._module_formula(attr, mod, t, arg)
            elif k == "matmul" and t == "Linear":
                w, b = f"self.{attr}.weight", f"self.{attr}.bias"
                if mod.bias is not None and self.rng.random() < 0.5:
                    out = f"torch.tensordot({arg}, {w}, dims=([-1], [1])) + {b}"
                elif mod.bias is not None:
                    out = (
                        f"torch.addmm({b}, {arg}.reshape(-1, {arg}.shape[-1]), {w}.t()).reshape(*{arg}.shape[:-1], -1)"
                    )
                else:
                    out = f"torch.einsum('...i,oi->...o', {arg}, {w})"
            elif (
                k == "conv_unfold"
                and t == "Conv2d"
                and mod.groups == 1
                and isinstance(mod.padding, tuple)
                and mod.padding_mode == "zeros"
            ):
                b = f"self.{attr}.bias" if mod.bias is not None else "None"
                out = (
                    f"_p_conv2d_unfold({arg}, self.{attr}.weight, {b}, {tuple(mod.stride)}, {tuple(mod.padding)}, "
                    f"{tuple(mod.dilation)})"
                )
            elif k == "helpers":
                out = f"_p_apply(self.{attr}, {arg})"
            if out is not None:
                self.changed += 1
                return _expr(out)
            return node
        src, name = _func_name(node)
        if not src:
            return node
        x = ast.unparse(node.func.value) if src == "method" else arg
        if src == "method" and node.args:
            x = None  # x.mean(dim) etc. handled below through the keyword helpers
        out = None
        if k == "formula":
            one_arg = len(node.args) <= (0 if src == "method" else 1)
            if name in _FORMULAS and (x or arg) and not node.keywords and one_arg:
                out = _FORMULAS[name].format(x if src == "method" else arg)
            elif name in ("softmax", "log_softmax") and src != "method":
                d = _kw(node, "dim", 1)
                if d is not None and len(node.args) >= 1:
                    out = f"_p_{name}({arg}, {ast.unparse(d)})"
            elif name == "logsumexp" and src == "torch":
                d, kd = _kw(node, "dim", 1), _kw(node, "keepdim", 2)
                if d is not None:
                    out = f"_p_lse({arg}, {ast.unparse(d)}, {ast.unparse(kd) if kd is not None else 'False'})"
        elif k == "matmul" and name in ("matmul", "mm", "bmm") and src == "torch" and len(node.args) == 2:
            a, b = (ast.unparse(v) for v in node.args)
            out = f"torch.einsum('...ij,...jk->...ik', {a}, {b})"
        elif k == "reduction":
            if name == "mean" and src in ("torch", "method"):
                base = arg if src == "torch" else ast.unparse(node.func.value)
                rest = node.args[1:] if src == "torch" else node.args
                d = rest[0] if rest else _kw(node, "dim", 99)
                kd = _kw(node, "keepdim", 99)
                if len(rest) > 1:
                    kd = rest[1]
                dsrc = ast.unparse(d) if d is not None else "None"
                out = f"_p_mean({base}, {dsrc}, {ast.unparse(kd) if kd is not None else 'False'})"
        if out is not None:
            self.changed += 1
            return _expr(out)
        return node

    def visit_Subscript(self, node: ast.Subscript):
        self.generic_visit(node)
        # torch.max(x, dim=d)[0] -> torch.amax(x, dim=d)
        if (
            self.kind == "reduction"
            and isinstance(node.value, ast.Call)
            and isinstance(node.slice, ast.Constant)
            and node.slice.value == 0
        ):
            src, name = _func_name(node.value)
            call = node.value
            if name in ("max", "min") and src == "torch" and len(call.args) >= 1:
                d = _kw(call, "dim", 1)
                if d is not None:
                    kd = _kw(call, "keepdim", 2)
                    self.changed += 1
                    return _expr(
                        f"torch.a{name}({ast.unparse(call.args[0])}, dim={ast.unparse(d)}, "
                        f"keepdim={ast.unparse(kd) if kd is not None else 'False'})"
                    )
        return node

    def visit_BinOp(self, node: ast.BinOp):
        self.generic_visit(node)
        if self.kind == "matmul" and isinstance(node.op, ast.MatMult):
            self.changed += 1
            return _expr(f"torch.einsum('...ij,...jk->...ik', {ast.unparse(node.left)}, {ast.unparse(node.right)})")
        if self.kind != "algebra":
            return node
        left, right = ast.unparse(node.left), ast.unparse(node.right)
        if isinstance(node.op, ast.Div):
            self.changed += 1
            return _expr(f"({left}) * (1.0 / ({right}))")
        if isinstance(node.op, ast.Sub):
            self.changed += 1
            return _expr(f"({left}) + (-1.0) * ({right})")
        if isinstance(node.op, (ast.Add, ast.Mult)):
            self.changed += 1
            return ast.BinOp(node.right, node.op, node.left)
        return node

    def _module_formula(self, attr, mod, t, arg):
        if t in _ACT_MODULES:
            return _FORMULAS[_ACT_MODULES[t]].format(arg)
        w = f"self.{attr}.weight" if getattr(mod, "weight", None) is not None else "None"
        b = f"self.{attr}.bias" if getattr(mod, "bias", None) is not None else "None"
        if t == "LayerNorm":
            return f"_p_ln({arg}, {w}, {b}, {tuple(mod.normalized_shape)}, {mod.eps})"
        if t.startswith("BatchNorm") and mod.training:
            return f"_p_bn({arg}, {w}, {b}, {mod.eps})"
        if t == "GroupNorm":
            return f"_p_gn({arg}, {mod.num_groups}, {w}, {b}, {mod.eps})"
        if t.startswith("InstanceNorm") and not mod.track_running_stats:
            return f"_p_in({arg}, {w}, {b}, {mod.eps})"
        if t == "Softmax" and mod.dim is not None:
            return f"_p_softmax({arg}, {mod.dim})"
        if t == "LogSoftmax" and mod.dim is not None:
            return f"_p_log_softmax({arg}, {mod.dim})"
        return None

    def _param(self, attr: str, mod, name: str) -> str:
        t = getattr(mod, name, None)
        if t is None:
            return "None"
        new = f"{attr}_{name}"
        kind = "nn.Parameter" if name in ("weight", "bias") else "buffer"
        line = (
            f"self.{new} = nn.Parameter(torch.empty({tuple(t.shape)}))"
            if kind == "nn.Parameter"
            else f"self.register_buffer('{new}', torch.zeros({tuple(t.shape)}))"
        )
        self.new_params.setdefault(attr, []).append(line)
        self.renames[f"{attr}.{name}"] = new
        return f"self.{new}"

    def _functional(self, attr, mod, t, arg):
        if t == "Linear":
            return f"F.linear({arg}, {self._param(attr, mod, 'weight')}, {self._param(attr, mod, 'bias')})"
        m = re.fullmatch(r"Conv(Transpose)?([123])d", t)
        if m and mod.padding_mode == "zeros" and not isinstance(mod.padding, str):
            w, b = self._param(attr, mod, "weight"), self._param(attr, mod, "bias")
            if m.group(1):
                return (
                    f"F.conv_transpose{m.group(2)}d({arg}, {w}, {b}, stride={tuple(mod.stride)}, "
                    f"padding={tuple(mod.padding)}, output_padding={tuple(mod.output_padding)}, "
                    f"groups={mod.groups}, dilation={tuple(mod.dilation)})"
                )
            return (
                f"F.conv{m.group(2)}d({arg}, {w}, {b}, stride={tuple(mod.stride)}, padding={tuple(mod.padding)}, "
                f"dilation={tuple(mod.dilation)}, groups={mod.groups})"
            )
        if t == "LayerNorm":
            w, b = self._param(attr, mod, "weight"), self._param(attr, mod, "bias")
            return f"F.layer_norm({arg}, {tuple(mod.normalized_shape)}, {w}, {b}, {mod.eps})"
        if t == "GroupNorm":
            w, b = self._param(attr, mod, "weight"), self._param(attr, mod, "bias")
            return f"F.group_norm({arg}, {mod.num_groups}, {w}, {b}, {mod.eps})"
        if t.startswith("BatchNorm") and mod.training and mod.track_running_stats:
            w, b = self._param(attr, mod, "weight"), self._param(attr, mod, "bias")
            rm, rv = self._param(attr, mod, "running_mean"), self._param(attr, mod, "running_var")
            self.new_params[attr].append(f"self.{attr}_running_var.fill_(1.0)")
            self.renames[f"{attr}.num_batches_tracked"] = ""
            return f"F.batch_norm({arg}, {rm}, {rv}, {w}, {b}, True, {mod.momentum}, {mod.eps})"
        if t in _ACT_MODULES:
            return f"F.{_ACT_MODULES[t]}({arg})" if _ACT_MODULES[t] != "sigmoid" else f"torch.sigmoid({arg})"
        return None


@dataclass
class Paraphrase:
    source: str  # ref_id
    kinds: tuple[str, ...]
    code: str
    renames: dict[str, str]  # reference state_dict key -> paraphrase key ('' dropped)


def _modules_of(code: str) -> dict:
    import torch

    g: dict = {"__name__": "kb_ref"}
    exec(compile(code, "<ref>", "exec"), g)
    with torch.device("meta"):
        init = g["get_init_inputs"]() if "get_init_inputs" in g else []
        model = g["Model"](*init)
    return dict(model.named_children())


def _forward_defs(tree: ast.Module) -> list[ast.FunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            return [f for f in node.body if isinstance(f, ast.FunctionDef) and f.name != "__init__"]
    return []


def _init_def(tree: ast.Module) -> ast.FunctionDef | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    return f
    return None


def _replace_init_assign(init: ast.FunctionDef, attr: str, lines: list[str]) -> bool:
    for i, st in enumerate(init.body):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and ast.unparse(st.targets[0]) == f"self.{attr}":
            init.body[i : i + 1] = ast.parse("\n".join(lines)).body
            return True
    return False


def _helpers_split(tree: ast.Module) -> bool:
    """forward's body moved into a module-level function, called from a helper class's method."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    args = [a.arg for a in f.args.args]
                    impl = ast.FunctionDef(
                        name="_p_forward_impl",
                        args=f.args,
                        body=f.body,
                        decorator_list=[],
                        returns=None,
                        type_params=[],
                    )
                    tree.body.insert(tree.body.index(node), impl)
                    call = f"return _PRunner.run({', '.join(args)})"
                    f.body = ast.parse(call).body
                    runner = ast.parse(
                        "class _PRunner:\n    @staticmethod\n    def run(*a):\n        return _p_forward_impl(*a)\n"
                    ).body[0]
                    tree.body.insert(tree.body.index(node), runner)
                    return True
    return False


def paraphrase(code: str, kinds: list[str], rng: random.Random) -> Paraphrase | None:
    """Apply the rewrite kinds in order; None when one of them changes nothing (not applicable)."""
    tree = ast.parse(code)
    mods = _modules_of(code)
    renames: dict[str, str] = {}
    for kind in kinds:
        if kind == "helpers":
            rw = _Rewriter("helpers", mods, rng)
            for f in _forward_defs(tree):
                rw.visit(f)
            if not _helpers_split(tree):
                return None
            continue
        rw = _Rewriter(kind, mods, rng)
        for f in _forward_defs(tree):
            rw.visit(f)
        if not rw.changed:
            return None
        if rw.new_params:
            init = _init_def(tree)
            if init is None:
                return None
            for attr, lines in rw.new_params.items():
                if not _replace_init_assign(init, attr, lines):
                    return None
            mods = {a: m for a, m in mods.items() if a not in rw.new_params}
            renames.update(rw.renames)
    body = ast.unparse(ast.fix_missing_locations(tree))
    head = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    helpers = HELPERS + "\n\ndef _p_apply(m, x):\n    return m(x)\n"
    return Paraphrase("", tuple(kinds), head + helpers + "\n\n" + body + "\n", renames)


def runnable(code: str, max_params: int = 20_000_000, max_inputs: int = 20_000_000) -> bool:
    """The reference is small enough to run on a CPU here (sizes read on the meta device)."""
    import torch

    g: dict = {"__name__": "kb"}
    exec(compile(code, "<ref>", "exec"), g)
    with torch.device("meta"):
        m = g["Model"](*g.get("get_init_inputs", lambda: [])())
        ins = g["get_inputs"]()
    n_in = sum(t.numel() for t in batch_slice(ins) if isinstance(t, torch.Tensor))
    return sum(p.numel() for p in m.parameters()) <= max_params and n_in <= max_inputs


def tied_outputs(ref_code: str, para: Paraphrase, seed: int = 0, max_numel: int = 20_000_000):
    """(reference outputs, paraphrase outputs) with the paraphrase's weights taken from the reference (renamed),
    on the same (batch-sliced) inputs; None when the inputs are too large to run here."""
    import torch

    def load(code):
        g: dict = {"__name__": "kb"}
        exec(compile(code, "<p>", "exec"), g)
        return g

    gr, gp = load(ref_code), load(para.code)
    torch.manual_seed(seed)
    ref = gr["Model"](*gr.get("get_init_inputs", lambda: [])())
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0, 0.5)
    par = gp["Model"](*gp.get("get_init_inputs", lambda: [])())
    sd = {}
    for k, v in ref.state_dict().items():
        nk = para.renames.get(k, k)
        if nk:
            sd[nk] = v
    par.load_state_dict(sd, strict=True)
    err = None
    for ins in input_variants(gr, seed, max_numel):
        try:
            with torch.no_grad():
                return (
                    ref(*[t.clone() if isinstance(t, torch.Tensor) else t for t in ins]),
                    par(*[t.clone() if isinstance(t, torch.Tensor) else t for t in ins]),
                )
        except RuntimeError as e:  # this slice does not fit the model: the next one
            err = e
    if err is not None:
        raise err
    return None


def input_variants(g: dict, seed: int, max_numel: int):
    """Inputs to try, smallest first: every batch input cut to 2 rows, the first input cut, the whole inputs; made
    by get_inputs() when small, else random tensors of its shapes (dtype kept); those above max_numel skipped."""
    import torch

    torch.manual_seed(seed)
    with torch.device("meta"):
        meta = list(g["get_inputs"]())
    real = None
    if sum(t.numel() for t in meta if isinstance(t, torch.Tensor)) <= max_numel:
        torch.manual_seed(seed)
        real = list(g["get_inputs"]())
    for variant in ("all", "first", "none"):
        src = real if real is not None else meta
        ins = src if variant == "none" else batch_slice(src, first_only=variant == "first")
        if sum(t.numel() for t in ins if isinstance(t, torch.Tensor)) > max_numel:
            continue
        if real is None:
            ins = [
                (
                    torch.rand(t.shape, dtype=t.dtype)
                    if t.is_floating_point()
                    else torch.randint(0, 2, t.shape, dtype=t.dtype)
                )
                if isinstance(t, torch.Tensor)
                else t
                for t in ins
            ]
        yield ins


def equivalent(a, b, tol: float = 1e-4) -> bool:
    import torch

    fa = [a] if isinstance(a, torch.Tensor) else list(a)
    fb = [b] if isinstance(b, torch.Tensor) else list(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if not isinstance(x, torch.Tensor) or x.shape != y.shape:
            return False
        x, y = x.double(), y.double()
        if not torch.isfinite(x).all():
            return False
        if float((x - y).abs().max()) > tol * (1 + float(x.abs().max())):
            return False
    return True
