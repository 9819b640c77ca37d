"""Clean tasks for calibration: new operator compositions in KernelBench format, and hard ones derived from a
reference problem by replacing its operators so that it keeps only one or two of them.

Both are checked against the references' operator signatures: a "negative" whose ordered ops equal a reference
problem's is that problem written anew, and is not used as a negative.
"""

from __future__ import annotations

import ast
import random

# Leading ops: (constructor in __init__ or None, forward expression, input rank, output channels symbol)
_BASES = {
    "conv2d": ("nn.Conv2d(in_channels, out_channels, kernel_size)", "self.base({x})", 4),
    "conv3d": ("nn.Conv3d(in_channels, out_channels, kernel_size)", "self.base({x})", 5),
    "convtranspose2d": ("nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=2)", "self.base({x})", 4),
    "convtranspose3d": ("nn.ConvTranspose3d(in_channels, out_channels, kernel_size)", "self.base({x})", 5),
    "conv1d": ("nn.Conv1d(in_channels, out_channels, kernel_size)", "self.base({x})", 3),
    "linear": ("nn.Linear(in_features, out_features)", "self.base({x})", 2),
    "matmul": ("nn.Parameter(torch.randn(in_features, out_features))", "torch.matmul({x}, self.base)", 2),
}
# Following ops: forward expressions with spelling variants; {c} a constant; channel-wise params in __init__.
_OPS: dict[str, list[str]] = {
    "relu": ["torch.relu({x})", "F.relu({x})", "{x}.relu()"],
    "gelu": ["F.gelu({x})", "torch.nn.functional.gelu({x})"],
    "sigmoid": ["torch.sigmoid({x})", "{x}.sigmoid()"],
    "tanh": ["torch.tanh({x})", "{x}.tanh()"],
    "mish": ["F.mish({x})"],
    "hardswish": ["F.hardswish({x})"],
    "softplus": ["F.softplus({x})"],
    "elu": ["F.elu({x})"],
    "selu": ["torch.selu({x})"],
    "silu": ["F.silu({x})"],
    "leakyrelu": ["F.leaky_relu({x}, negative_slope={c})"],
    "hardtanh": ["F.hardtanh({x}, min_val=-{c}, max_val={c})"],
    "clamp": ["torch.clamp({x}, min=-{c}, max={c})"],
    "mul": ["{x} * {c}", "torch.mul({x}, {c})"],
    "div": ["{x} / {c}"],
    "sub": ["{x} - {c}"],
    "add": ["{x} + self.bias", "torch.add({x}, self.bias)"],
    "exp": ["torch.exp({x})"],
    "abs": ["torch.abs({x})"],
    "square": ["{x} * {x}", "torch.pow({x}, 2)"],
    "sum": ["torch.sum({x}, dim=1, keepdim=True)"],
    "mean": ["torch.mean({x}, dim=1, keepdim=True)", "{x}.mean(dim=1, keepdim=True)"],
    "max": ["torch.amax({x}, dim=1, keepdim=True)"],
    "logsumexp": ["torch.logsumexp({x}, dim=1, keepdim=True)"],
    "softmax": ["torch.softmax({x}, dim=1)", "F.softmax({x}, dim=1)"],
    "logsoftmax": ["F.log_softmax({x}, dim=1)"],
    "dropout": ["self.drop({x})"],
    "groupnorm": ["self.gn({x})"],
    "layernorm_last": ["F.layer_norm({x}, {x}.shape[-1:])"],
    "cumsum": ["torch.cumsum({x}, dim=1)"],
    "residual": ["{x} + {x}.detach() * {c}"],
    "norm": ["F.normalize({x}, dim=1)"],
}
_INIT_FOR = {
    "add": "self.bias = nn.Parameter(torch.randn(bias_shape))",
    "dropout": "self.drop = nn.Dropout(p={c})",
    "groupnorm": "self.gn = nn.GroupNorm(groups, out_channels)",
}
_VAR = ["x", "out", "y", "h", "t"]
_DOC = ["Model that applies {ops}.", "A {ops} fusion.", "Performs {ops} in sequence.", ""]


def compose(ops: list[str], base: str, rng: random.Random) -> str:
    """A KernelBench-format task: `base` followed by `ops` (names from _OPS)."""
    ctor, fwd, rank = _BASES[base]
    x = rng.choice(_VAR)
    c = lambda: repr(round(rng.uniform(0.05, 3.0), 3))  # noqa: E731
    init = [f"self.base = {ctor}"] + [_INIT_FOR[o].format(c=c()) for o in dict.fromkeys(ops) if o in _INIT_FOR]
    body = [f"{x} = {fwd.format(x=x)}"] + [f"{x} = {rng.choice(_OPS[o]).format(x=x, c=c())}" for o in ops]
    doc = rng.choice(_DOC).format(ops=", ".join([base, *ops]))
    linear = base in ("linear", "matmul")
    params = ["in_features", "out_features"] if linear else ["in_channels", "out_channels", "kernel_size"]
    if "add" in ops:
        params.append("bias_shape")
    if "groupnorm" in ops:
        params.append("groups")
    spatial = {3: ["length"], 4: ["height", "width"], 5: ["depth", "height", "width"]}.get(rank, [])
    lines = [
        "import torch",
        "import torch.nn as nn",
        "import torch.nn.functional as F",
        "",
        "",
        "class Model(nn.Module):",
    ]
    if doc:
        lines.append(f'    """{doc}"""')
    lines.append(f"    def __init__(self, {', '.join(params)}):")
    lines.append("        super().__init__()")
    lines += ["        " + s for s in init]
    lines += ["", f"    def forward(self, {x}):"] + ["        " + s for s in body] + [f"        return {x}", "", ""]
    dims = {
        "batch_size": rng.choice([16, 32, 64, 128, 256]),
        "groups": rng.choice([4, 8]),
        "kernel_size": rng.choice([3, 5]),
    }
    if linear:
        dims.update(in_features=rng.choice([256, 512, 1024, 4096]), out_features=rng.choice([256, 512, 2048]))
    else:
        dims.update(in_channels=rng.choice([3, 8, 16, 32]), out_channels=rng.choice([16, 32, 64]))
        for s in spatial:
            dims[s] = rng.choice([16, 32, 64, 128])
    for k, v in dims.items():
        if k in params or k == "batch_size" or k in spatial:
            lines.append(f"{k} = {v}")
    if "add" in ops:
        lines.append(
            "bias_shape = (out_features,)" if linear else "bias_shape = (out_channels," + " 1," * len(spatial) + ")"
        )
    shape = ["batch_size", "in_features"] if linear else ["batch_size", "in_channels", *spatial]
    lines += [
        "",
        "",
        "def get_inputs():",
        f"    return [torch.rand({', '.join(shape)})]",
        "",
        "",
        "def get_init_inputs():",
        f"    return [{', '.join(params)}]",
        "",
    ]
    return "\n".join(lines)


def random_composition(rng: random.Random) -> str:
    base = rng.choice(sorted(_BASES))
    ops = rng.sample(sorted(_OPS), rng.randint(1, 5))
    return compose(ops, base, rng)


_UNARY = [
    "relu",
    "gelu",
    "sigmoid",
    "tanh",
    "mish",
    "hardswish",
    "softplus",
    "elu",
    "selu",
    "silu",
    "softsign",
    "hardsigmoid",
    "logsigmoid",
    "tanhshrink",
    "relu6",
]


def _is_site(n: ast.AST) -> bool:
    if isinstance(n, ast.BinOp):
        return True
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and bool(n.args or isinstance(n.func.value, ast.Name))
    )


class _Mutate(ast.NodeTransformer):
    """Replace the chosen operator sites of forward (calls, binary operators) by other operators."""

    def __init__(self, replace: set[int], rng: random.Random) -> None:
        self.replace, self.rng, self.i = replace, rng, -1

    def _visit_site(self, node: ast.AST) -> ast.AST:
        self.generic_visit(node)
        self.i += 1
        if self.i not in self.replace:
            return node
        arg = node.left if isinstance(node, ast.BinOp) else node.args[0] if node.args else node.func.value
        if isinstance(node, ast.BinOp) and self.rng.random() < 0.4:
            others = [op for op in (ast.Add(), ast.Sub(), ast.Mult(), ast.Div()) if type(op) is not type(node.op)]
            return ast.BinOp(node.left, self.rng.choice(others), node.right)
        new = ast.parse(f"torch.nn.functional.{self.rng.choice(_UNARY)}(_)", mode="eval").body
        new.args = [arg]
        return new

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        return self._visit_site(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self._visit_site(node) if _is_site(node) else self.generic_visit(node)


def op_sites(code: str) -> int:
    tree = ast.parse(code)
    fwd = next((f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    return 0 if fwd is None else sum(1 for n in ast.walk(fwd) if _is_site(n))


def mutate_reference(code: str, rng: random.Random, keep: int) -> str | None:
    """Replace all but `keep` of a reference problem's operator sites in forward by other operators, and wrap
    the result in one more: the task shares at most `keep` operators with its source. None when too small."""
    n = op_sites(code)
    if n <= keep:
        return None
    tree = ast.parse(code)
    fwd = next(f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "forward")
    _Mutate(set(rng.sample(range(n), n - keep)), rng).visit(fwd)
    ret = fwd.body[-1]
    if isinstance(ret, ast.Return) and ret.value is not None:
        wrapped = ast.parse(f"torch.nn.functional.{rng.choice(_UNARY)}(_)", mode="eval").body
        wrapped.args = [ret.value]
        ret.value = wrapped
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
