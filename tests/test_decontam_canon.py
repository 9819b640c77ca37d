"""Canonicalization invariances: what a disguise changes must not change the canonical views."""

from __future__ import annotations

import random
import zlib

import pytest

from pipeline.decontam.calibration.disguise import TRANSFORMS, disguise
from pipeline.decontam.canon import canonicalize
from pipeline.decontam.views import jaccard, task_views

BASE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv, ReLU, bias."""
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)  # convolution
        x = torch.relu(x)
        x = x + self.bias
        return x

batch_size = 128
in_channels = 3
out_channels = 16
height, width = 32, 32
kernel_size = 3
bias_shape = (out_channels, 1, 1)

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
'''

# The same computation spelled differently by hand (not by our own transforms): F.relu via a module attribute,
# torch.add, other names, other constants, a docstring moved, __init__ reordered, a dead line, 2-space indent.
HAND_DISGUISED = '''
import torch
from torch import nn
import torch.nn.functional as F

class FusedBlock(nn.Module):
  def __init__(self, cin, cout, k, bshape):
    super().__init__()
    self.act = nn.ReLU(inplace=True)
    self.offset = nn.Parameter(torch.randn(bshape))
    self.c = nn.Conv2d(cin, cout, k)
  def forward(self, inp):
    """Forward."""
    unused = inp.shape
    h = self.c(inp)
    h = self.act(h)
    return torch.add(h, self.offset)

N = 7
CIN = 64
COUT = 8
H, W = 224, 224
K = 5
bshape = (COUT, 1, 1)

def get_inputs():
  return [torch.rand(N, CIN, H, W)]

def get_init_inputs():
  return [CIN, COUT, K, bshape]
'''


def _sim(a: str, b: str) -> tuple[float, float]:
    va, vb = task_views(a), task_views(b)
    return jaccard(va.sets["canon"], vb.sets["canon"]), jaccard(va.sets["ops"], vb.sets["ops"])


def test_ops_signature_resolves_module_attributes_and_spellings():
    assert canonicalize(BASE).ops == ["conv2d", "relu", "add"]
    assert canonicalize(HAND_DISGUISED).ops == ["conv2d", "relu", "add"]


@pytest.mark.parametrize(
    "spelling",
    ["torch.relu(x)", "F.relu(x)", "torch.nn.functional.relu(x)", "x.relu()", "nn.ReLU()(x)", "torch.relu_(x)"],
)
def test_relu_spellings_are_one_op(spelling):
    code = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
        f"class M(nn.Module):\n    def forward(self, x):\n        return {spelling}\n"
    )
    assert canonicalize(code).ops == ["relu"]


@pytest.mark.parametrize(
    "spelling", ["a @ b", "torch.matmul(a, b)", "torch.mm(a, b)", "torch.bmm(a, b)", "a.matmul(b)"]
)
def test_matmul_spellings_are_one_op(spelling):
    code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, a, b):\n        return {spelling}\n"
    assert canonicalize(code).ops == ["matmul"]


def test_add_spellings_and_identity_ops():
    for body in ("x + y", "torch.add(x, y)", "x.add(y)"):
        code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, x, y):\n        return {body}\n"
        assert canonicalize(code).ops == ["add"], body
    noop = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        x = x * 1.0\n"
        "        x = x.contiguous()\n        x += 0\n        dead = x.sum()\n        return torch.tanh(x)\n"
    )
    assert canonicalize(noop).ops == ["tanh"]


def test_hand_disguised_copy_scores_high_and_unrelated_task_low():
    canon, ops = _sim(BASE, HAND_DISGUISED)
    assert ops == 1.0
    assert canon >= 0.85
    other = BASE.replace("torch.relu(x)", "torch.sigmoid(x)").replace("x = x + self.bias", "x = x * self.bias")
    canon2, ops2 = _sim(BASE, other)
    assert ops2 < 0.5


def test_reordered_operators_lower_the_ops_view():
    swapped = BASE.replace(
        "x = torch.relu(x)\n        x = x + self.bias", "x = x + self.bias\n        x = torch.relu(x)"
    )
    canon, ops = _sim(BASE, swapped)
    assert ops < 0.7  # the same ops in another order are another problem


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_each_disguise_keeps_canonical_views(name):
    for seed in range(3):
        code = disguise(BASE, [name], random.Random(seed))
        canon, ops = _sim(BASE, code)
        assert ops == 1.0, (name, seed)
        assert canon >= 0.9, (name, seed, canon)


def test_names_and_constants_erased_exactly():
    renamed = (
        BASE.replace("Model", "Net")
        .replace("in_channels", "ci")
        .replace("bias", "b0")
        .replace("128", "64")
        .replace("= 3", "= 8")
        .replace("self.conv", "self.c1")
    )
    canon, ops = _sim(BASE, renamed)
    assert canon == 1.0 and ops == 1.0


def test_reserved_prefixes_in_user_names_do_not_collide():
    code = BASE.replace("batch_size", "P_l").replace("bias_shape", "OP_shape")
    canon, _ = _sim(BASE, code)
    assert canon == 1.0


@pytest.mark.parametrize(
    "bad", ["def f(:\n  pass", "", "\x00\x01", "x = 1\n" * 100_000, "x = (" * 500, "import torch\nx = 1 +", None]
)
def test_bad_code_gives_a_reason_not_a_crash(bad):
    c = canonicalize(bad)
    assert not c.ok and c.reason in ("unparseable", "empty_code", "too_deep", "too_large")
    v = task_views(bad)
    assert not v.parse_ok


def _restructured() -> dict[str, str]:
    fwd = """    def forward(self, x):
        x = self.conv(x)  # convolution
        x = torch.relu(x)
        x = x + self.bias
        return x"""
    return {
        "helper_method": BASE.replace(
            fwd,
            "    def _block(self, t):\n        t = self.conv(t)\n"
            "        return torch.relu(t)\n\n    def forward(self, x):\n"
            "        return self._block(x) + self.bias",
        ),
        "sequential": BASE.replace(
            "self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)",
            "self.body = nn.Sequential(nn.Conv2d(in_channels, out_channels, kernel_size), nn.ReLU())",
        ).replace("x = self.conv(x)  # convolution\n        x = torch.relu(x)", "x = self.body(x)"),
        "inplace": BASE.replace("x = torch.relu(x)", "x.relu_()").replace("x = x + self.bias", "x += self.bias"),
        "functional_conv": BASE.replace(
            "self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)",
            "self.weight = nn.Parameter(torch.randn(out_channels, in_channels, kernel_size, kernel_size))",
        ).replace("x = self.conv(x)", "x = torch.nn.functional.conv2d(x, self.weight)"),
        "one_liner": BASE.replace(
            fwd, "    def forward(self, x):\n        return torch.relu(self.conv(x)) + self.bias"
        ),
        "hand_disguised": HAND_DISGUISED,
    }


def test_restructured_copies_are_flagged_and_new_compositions_are_not():
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import RefProblem

    ref = [RefProblem("level2/1_base", 2, "1_base", BASE)]
    positives = _restructured()
    negatives = {
        "other_ops": BASE.replace("torch.relu(x)", "torch.sigmoid(x)").replace("x + self.bias", "x * self.bias"),
        "extra_ops": BASE.replace(
            "x = x + self.bias", "x = torch.tanh(x)\n        x = x - self.bias\n        x = torch.softmax(x, dim=1)"
        ),
        "reordered": BASE.replace(
            "x = torch.relu(x)\n        x = x + self.bias", "x = x + self.bias\n        x = torch.relu(x)"
        ),
    }
    rows = list(positives.items()) + list(negatives.items())
    out = {r["task_id"]: r for r in decontaminate(rows, ref, DecontamSettings(semantic=False)).to_pylist()}
    for tid in positives:
        assert out[tid]["contaminated"], out[tid]
    for tid in negatives:
        assert not out[tid]["contaminated"], out[tid]


def test_fast_walkers_and_unparse_equal_the_ast_module(kernelbench_path):
    import ast

    from pipeline.decontam.astwalk import bfs, preorder, statements_bfs, unparse
    from pipeline.kernelbench import load_reference

    def rec(n):
        yield n
        for c in ast.iter_child_nodes(n):
            yield from rec(c)

    codes = [r.code for r in load_reference(kernelbench_path)[::9]] + [BASE, HAND_DISGUISED]
    codes.append("try:\n    import x\nexcept E as e:\n    def f(): pass\nmatch y:\n    case 1:\n        import z\n")
    for code in codes:
        tree = ast.parse(code)
        assert bfs(tree) == list(ast.walk(tree))
        assert preorder(tree) == list(rec(tree))
        stmt_like = (ast.stmt, ast.excepthandler, ast.match_case, ast.Module)
        assert statements_bfs(tree) == [n for n in ast.walk(tree) if isinstance(n, stmt_like)]
        assert unparse(tree) == ast.unparse(tree)


def test_fast_normalized_md5_equals_kernelbench_hash(kernelbench_path):
    import ast

    from pipeline.decontam.views import fast_normalized_md5
    from pipeline.identity import normalized_md5
    from pipeline.kernelbench import load_reference

    codes = [r.code for r in load_reference(kernelbench_path)]
    rng = random.Random(0)
    codes += [disguise(c, ["docs_comments", "formatting"], rng) for c in codes[::5]]
    codes += [
        'x = "a#b" # c\ny = 1\n',
        "s = '''\n# not a comment\n''' # yes\n",
        'f"{a!r}#x" \\\n + "q"  # z\n',
        "r'\\'' # c\n",
        'x = b\'#\' + rb"#\\"#" # t\n',
        "a = [\n 1, # c\n 2]\n",
        "u'x' 'y#'#z\n",
    ]
    for code in codes:
        ast.parse(code)
        assert fast_normalized_md5(code, parsed=True) == normalized_md5(code), code[:200]
    assert fast_normalized_md5("x = '#\n") == normalized_md5("x = '#\n")  # unparseable: the tokenizer path


def _tokens(code: str) -> list[str]:
    c = canonicalize(code)
    assert c.ok, c.reason
    return c.tokens


def test_module_constants_read_the_same_as_literals():
    """Sizes in module-level constants (KernelBench's layout) or written inline, computed or not: one task. A
    function parameter of the same name is not a constant."""
    inline = (
        BASE.split("batch_size = 128")[0]
        + """
def get_inputs():
    return [torch.rand(128, 3, 16 * 2, 32)]

def get_init_inputs():
    return [3, 16, 3, (16, 1, 1)]
"""
    )
    assert _tokens(inline) == _tokens(BASE)
    canon = canonicalize(BASE)
    assert "p1" in canon.text and "MOD_conv2d(p1, p2, p3)" in canon.text  # __init__'s parameters stay parameters


def test_helper_methods_aliases_keywords_and_clamp_relu_are_erased():
    restructured = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, bshape):
        super().__init__()
        self.layer = nn.Conv2d(in_channels=cin, out_channels=cout, kernel_size=k)
        self.offset = nn.Parameter(torch.randn(bshape))

    def _act(self, t):
        return t.clamp(min=0.0)

    def forward(self, inp):
        return self._act(self.layer(inp)).add(self.offset)


Model = Block


def get_inputs():
    return [torch.rand(128, 3, 32, 32)]


def get_init_inputs():
    return [3, 16, 3, (16, 1, 1)]
"""
    assert _tokens(restructured) == _tokens(BASE)
    assert canonicalize(restructured).ops == ["conv2d", "relu", "add"]
    # a helper used twice, or a clamp with an upper bound, is not erased
    assert canonicalize(BASE.replace("torch.relu(x)", "torch.clamp(x, min=0, max=6)")).ops == [
        "conv2d",
        "clamp",
        "add",
    ]


def test_new_disguises_are_flagged_with_their_source(kernelbench_path):
    """Constants written inline and a step moved into a helper (the calibration's held-out transforms), alone and
    together, on every level-2 problem of a sample: flagged, nearest problem right."""
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import load_reference

    refs = load_reference(kernelbench_path)
    rng = random.Random(5)
    sample = rng.sample([r for r in refs if r.level == 2], 12)
    rows = []
    for r in sample:
        for names in (["inline_constants"], ["extract_helper"], ["constants", "inline_constants", "extract_helper"]):
            code = disguise(r.code, names, random.Random(zlib.crc32(r.ref_id.encode())))
            assert code != r.code
            rows.append((f"{r.ref_id}|{'+'.join(names)}", code))
    out = decontaminate(rows, refs, DecontamSettings()).to_pylist()
    for row in out:
        assert row["contaminated"], row
        assert row["nearest_ref"] == row["task_id"].split("|")[0], row


GEMM_VARIANTS = {
    "functional_linear": (
        "self.gemm = nn.Linear(in_features, out_features)",
        "self.w = nn.Parameter(torch.randn(out_features, in_features))\n"
        "        self.b = nn.Parameter(torch.zeros(out_features))",
        "x = self.gemm(x)",
        "x = torch.nn.functional.linear(x, self.w, self.b)",
    ),
    "matmul_t_plus_bias": (
        "self.gemm = nn.Linear(in_features, out_features)",
        "self.w = nn.Parameter(torch.randn(out_features, in_features))\n"
        "        self.b = nn.Parameter(torch.zeros(out_features))",
        "x = self.gemm(x)",
        "x = x @ self.w.t() + self.b",
    ),
    "einsum": (None, None, "x = self.gemm(x)", "x = torch.einsum('bi,oi->bo', x, self.gemm.weight) + self.gemm.bias"),
    "lambda_activation": (
        "self.leaky_relu = nn.LeakyReLU(negative_slope)",
        "self.leaky_relu = lambda t: torch.nn.functional.leaky_relu(t, negative_slope)",
        None,
        None,
    ),
}


@pytest.mark.parametrize("variant", sorted(GEMM_VARIANTS))
def test_gemm_rewrites_are_the_same_problem(kernelbench_path, variant):
    """nn.Linear written as F.linear with explicit weights, `x @ w.t() + b`, a two-operand einsum plus the bias, or
    an activation stored as a lambda: the same ordered operators as level2/12, flagged with it as nearest."""
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import load_reference

    refs = load_reference(kernelbench_path)
    src = next(r for r in refs if r.ref_id == "level2/12_Gemm_Multiply_LeakyReLU").code
    a, b, c, d = GEMM_VARIANTS[variant]
    code = src.replace(a, b) if a else src
    code = code.replace(c, d) if c else code
    assert code != src
    assert canonicalize(code).ops == canonicalize(src).ops == ["linear", "mul", "leakyrelu"]
    row = decontaminate([("v", code)], refs, DecontamSettings()).to_pylist()[0]
    assert row["contaminated"] and row["nearest_ref"] == "level2/12_Gemm_Multiply_LeakyReLU", row


# Each named activation and formulas a copier would write for it (spelled out in elementary ops).
FORMULA_SPELLINGS = {
    "swish": [
        "F.silu(x)",
        "nn.SiLU()(x)",
        "x * torch.sigmoid(x)",
        "torch.sigmoid(x) * x",
        "x.sigmoid() * x",
        "x / (1.0 + torch.exp(-x))",
        "torch.mul(x, torch.sigmoid(x))",
    ],
    "sigmoid": ["torch.sigmoid(x)", "1.0 / (1.0 + torch.exp(-x))", "torch.reciprocal(1 + torch.exp(-x))"],
    "gelu": [
        "F.gelu(x)",
        "0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))",
        "x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))",
        "0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))",
    ],
    "softplus": ["F.softplus(x)", "torch.log(1 + torch.exp(x))", "torch.log1p(torch.exp(x))"],
    "mish": ["F.mish(x)", "x * torch.tanh(F.softplus(x))", "x * torch.tanh(torch.log1p(torch.exp(x)))"],
    "hardswish": [
        "F.hardswish(x)",
        "x * F.relu6(x + 3) / 6",
        "x * torch.clamp(x + 3, 0, 6) / 6",
        "x * F.hardsigmoid(x)",
    ],
    "hardsigmoid": ["F.hardsigmoid(x)", "F.relu6(x + 3.0) / 6.0", "torch.clamp(x + 3, 0, 6) / 6"],
    "leakyrelu": [
        "F.leaky_relu(x, 0.2)",
        "torch.where(x > 0, x, 0.2 * x)",
        "torch.where(x > 0, x, x * 0.2)",
        "torch.maximum(x, 0.2 * x)",
    ],
    "relu": ["torch.relu(x)", "torch.where(x > 0, x, 0.0)", "torch.maximum(x, torch.zeros_like(x))"],
}


@pytest.mark.parametrize("op", sorted(FORMULA_SPELLINGS))
def test_spelled_out_activations_read_as_the_named_op(op):
    for body in FORMULA_SPELLINGS[op]:
        code = (
            "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
            f"class M(nn.Module):\n    def forward(self, x):\n        return {body}\n"
        )
        assert canonicalize(code).ops == [op], body


@pytest.mark.parametrize(
    "body",
    [
        "e = torch.exp(x - x.max(dim=1, keepdim=True)[0])\n        return e / e.sum(dim=1, keepdim=True)",
        "e = torch.exp(x - torch.amax(x, dim=1, keepdim=True))\n        return e / torch.sum(e, dim=1, keepdim=True)",
        "return torch.exp(x) / torch.exp(x).sum(dim=1, keepdim=True)",
    ],
)
def test_spelled_out_softmax_reads_as_softmax(body):
    code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        {body}\n"
    ref = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n"
    )
    assert canonicalize(code).ops == ["softmax"]
    assert canonicalize(code).text == canonicalize(ref).text
    logsm = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x - torch.logsumexp(x, dim=1, keepdim=True)\n"
    )
    assert canonicalize(logsm).ops == ["logsoftmax"]


def test_formulas_that_are_not_activations_are_left_alone():
    for body, ops in (
        ("x * torch.sigmoid(y)", ["sigmoid", "mul"]),
        ("x / (1.0 + torch.exp(y))", ["exp", "add", "mul"]),  # a division reads `mul` (reciprocal)
        ("torch.exp(x) / torch.exp(y).sum()", ["exp", "exp", "sum", "mul"]),
        ("torch.where(x > 0, y, 0.2 * x)", ["mul", "where"]),
    ):  # a comparison is no op
        code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, x, y):\n        return {body}\n"
        got = canonicalize(code).ops
        assert sorted(got) == sorted(ops), (body, got)


@pytest.mark.parametrize(
    "op,bodies",
    [
        (
            "rmsnorm",
            [
                "x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)",
                "x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + self.eps)",
                "x / torch.sqrt((x * x).mean(1, keepdim=True) + 1e-5)",
            ],
        ),
        ("mean", ["torch.mean(x, dim=1)", "torch.sum(x, dim=1) / x.shape[1]", "x.sum(1) / x.size(1)"]),
        (
            "layernorm",
            [
                "(x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)",
                "(x - x.mean(-1, keepdim=True)) / torch.sqrt(((x - x.mean(-1, keepdim=True)) ** 2)"
                ".mean(-1, keepdim=True) + 1e-5) * self.w + self.b",
            ],
        ),
    ],
)
def test_written_out_reductions_and_norms_read_as_one_op(op, bodies):
    for body in bodies:
        code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return {body}\n"
        assert canonicalize(code).ops == [op], body


def test_norm_spellings_agree():
    forms = [
        "x / torch.norm(x, p=2, dim=1, keepdim=True)",
        "F.normalize(x, p=2, dim=1)",
        "x / torch.sqrt(torch.sum(x * x, dim=1, keepdim=True))",
        "x / torch.linalg.norm(x, dim=1, keepdim=True)",
        "x / torch.linalg.vector_norm(x, dim=1, keepdim=True)",
    ]
    for body in forms:
        code = (
            "import torch\nimport torch.nn.functional as F\nclass M(torch.nn.Module):\n"
            f"    def forward(self, x):\n        return {body}\n"
        )
        assert canonicalize(code).ops == ["norm", "mul"], body


def test_scaling_clamping_and_list_built_layers_read_alike():
    # Found by hand-disguised copies of level2/100 (ConvTranspose3d_Clamp_Min_Divide) and level3/1 (MLP) that
    # were missed: a division written as a product with the reciprocal, one-sided clamps written as clamp_min or
    # as maximum against torch.full_like, and layers collected with `+=` in a loop.
    def ops(init: str, body: str, params: str = "lo, d") -> list[str]:
        code = (
            "import torch\nimport torch.nn as nn\nclass M(nn.Module):\n"
            f"    def __init__(self, {params}):\n        super().__init__()\n{init}"
            f"    def forward(self, x):\n        return {body}\n"
        )
        return canonicalize(code).ops

    keep = "        self.lo, self.d = lo, d\n"
    want = ops(keep, "torch.clamp(x, min=self.lo) / self.d")
    assert want == ["clamp", "mul"]
    assert ops(keep, "x.clamp_min(self.lo) * (1.0 / self.d)") == want
    assert ops(keep, "torch.div(torch.maximum(x, torch.full_like(x, self.lo)), self.d)") == want
    assert ops("        self.lo = lo\n        self.s = 1.0 / d\n", "torch.clamp(x, self.lo) * self.s") == want
    built = {
        "append": "        for a, b in zip(dims[:-1], dims[1:]):\n            layers.append(nn.Linear(a, b))\n"
        "            layers.append(nn.ReLU())\n",
        "+=": "        for a, b in zip(dims[:-1], dims[1:]):\n            layers += [nn.Linear(a, b), nn.ReLU()]\n",
        "= +": "        for a, b in zip(dims[:-1], dims[1:]):\n            layers = layers + [nn.Linear(a, b), nn.ReLU()]\n",
    }
    seqs = {
        k: ops(
            "        dims = [n] + list(ws)\n        layers = []\n"
            + v
            + "        layers.append(nn.Linear(dims[-1], m))\n        self.net = nn.Sequential(*layers)\n",
            "self.net(x)",
            "n, ws, m",
        )
        for k, v in built.items()
    }
    assert seqs["append"] == ["linear", "relu", "linear"] and seqs["+="] == seqs["append"] == seqs["= +"]


def test_torch_linalg_and_special_functions_are_operators():
    # A fresh-clone run once dropped bessel -> ConvTranspose3d -> cholesky as KernelBench's single ConvTranspose3d:
    # torch.special / torch.linalg calls were not read as operators.
    code = (
        "import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.c = nn.ConvTranspose3d(4, 8, 3)\n"
        "    def forward(self, h):\n        h = torch.special.modified_bessel_k1(h)\n        h = self.c(h)\n"
        "        return torch.linalg.cholesky_ex(h)[0]\n"
    )
    assert canonicalize(code).ops == ["modifiedbesselk1", "convtranspose3d", "choleskyex"]
    assert (
        canonicalize(code.replace("torch.special.modified_bessel_k1(h)", "torch.special.expit(h)")).ops[0] == "sigmoid"
    )


def test_long_products_are_not_searched_pairwise(monkeypatch):
    # Hostile code: hundreds of factors in one product. Pairs are searched only in products of at most
    # _MAX_FACTORS factors (each pair is compared), so the work per product node is bounded.
    from pipeline.decontam import formulas

    seen: list[int] = []
    real = formulas._Fuser._fuse_product
    monkeypatch.setattr(
        formulas._Fuser, "_fuse_product", lambda self, fs, d: seen.append(len(fs)) or real(self, fs, d)
    )
    body = "*".join(f"torch.sigmoid(x + {i})" for i in range(300)) + " * x * torch.sigmoid(x)"
    code = f"import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return {body}\n"
    assert canonicalize(code).ok
    assert seen and max(seen) <= formulas._MAX_FACTORS
    short = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        return 2.0 * x * torch.sigmoid(x)\n"
    )
    assert canonicalize(short).ops == ["swish", "mul"]


def test_looked_through_temporary_still_read_elsewhere_is_not_shared():
    # `e` is read twice: the softmax is fused from its value while `e` itself stays; the input must keep one name.
    code = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        e = torch.exp(x - x.max(dim=1, keepdim=True)[0])\n"
        "        return e / e.sum(dim=1, keepdim=True), e\n"
    )
    text = canonicalize(code).text
    assert "OP_softmax(p1, NUM)" in text and "OP_sub(p1, OP_max(p1," in text


@pytest.mark.parametrize(
    "body",
    [
        "x * torch.tanh(F.softplus())",
        "x / torch.sqrt(torch.mean(torch.pow()) + 1)",
        "torch.exp() / torch.exp().sum()",
        "torch.where(x > 0)",
        "F.normalize()",
        "x * torch.rsqrt()",
        "torch.log(1 + torch.exp())",
        "torch.sum() / x.shape[1]",
    ],
)
def test_malformed_formula_calls_do_not_crash(body):
    # Candidate code is untrusted: calls with missing arguments parse and must canonicalize (the first two raised
    # IndexError in the first version of formulas.py; a 4,000-expression random fuzz now raises nothing).
    code = (
        "import torch\nimport torch.nn.functional as F\nclass M(torch.nn.Module):\n"
        f"    def forward(self, x):\n        return {body}\n"
    )
    assert canonicalize(code).ok


@pytest.mark.parametrize(
    "forward",
    [
        "        with torch.no_grad():\n            x = self.conv(x)\n            x = torch.relu(x)\n            x = x + self.bias\n"
        "        return x\n",
        "        for _ in range(1):\n            x = self.conv(x)\n            x = torch.relu(x)\n            x = x + self.bias\n"
        "        return x\n",
        "        steps = [self.conv, torch.relu, lambda t: t + self.bias]\n        for f in steps:\n            x = f(x)\n"
        "        return x\n",
        "        for f in (self.conv, torch.relu):\n            x = f(x)\n        return x + self.bias\n",
    ],
)
def test_steps_in_with_blocks_and_literal_loops_read_as_steps(forward):
    code = (
        BASE.split("    def forward(self, x):\n")[0]
        + "    def forward(self, x):\n"
        + forward
        + "\nbatch_size = 128\nin_channels = 3\nout_channels = 16\nheight, width = 32, 32\nkernel_size = 3\n"
        "bias_shape = (out_channels, 1, 1)\n\ndef get_inputs():\n    return [torch.rand(batch_size, in_channels, "
        "height, width)]\n\ndef get_init_inputs():\n    return [in_channels, out_channels, kernel_size, bias_shape]\n"
    )
    assert canonicalize(code).ops == ["conv2d", "relu", "add"]
    canon, ops = _sim(BASE, code)
    assert ops == 1.0 and canon >= 0.9, canon


def test_loops_that_are_not_plain_sequences_stay_loops():
    code = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        for f in [torch.relu, torch.tanh]:\n            if x.sum() > 0:\n                break\n"
        "            x = f(x)\n        for i in range(100):\n            x = x * 2\n        return x\n"
    )
    text = canonicalize(code).text
    assert text.count("for ") == 2


def test_nested_literal_loops_do_not_multiply():
    # Hostile code: ten nested loops over 8 items each. Only a loop without an inner loop is unrolled, so the
    # canonical form grows by at most 8x, not 8 ** 10.
    body, ind = "", 8
    for d in range(10):
        body += " " * ind + f"for f{d} in [1, 2, 3, 4, 5, 6, 7, 8]:\n"
        ind += 4
    code = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        + body
        + " " * ind
        + "x = torch.relu(x)\n        return x\n"
    )
    r = canonicalize(code)
    assert r.ok and r.ops == ["relu"] * 8


def test_a_step_list_changed_before_the_loop_is_not_unrolled():
    code = (
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        steps = [torch.relu]\n"
        "        steps.append(torch.tanh)\n        for f in steps:\n            x = f(x)\n        return x\n"
    )
    assert "for " in canonicalize(code).text


def test_comprehension_over_a_container_of_own_modules_runs_their_ops():
    # A Fire-module-like block: a submodule class used directly and inside an nn.ModuleList that a comprehension
    # iterates; every branch's ops count, in order, and no class name is taken for an operator.
    code = (
        "import torch\nimport torch.nn as nn\nclass B(nn.Module):\n    def __init__(self, i, o, k):\n"
        "        super().__init__()\n        self.c = nn.Conv2d(i, o, k)\n        self.a = nn.ReLU()\n"
        "    def forward(self, x):\n        return self.a(self.c(x))\n"
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.r = B(3, 8, 1)\n"
        "        self.bs = nn.ModuleList([B(8, 16, 1), B(8, 16, 3)])\n"
        "    def forward(self, x):\n        s = self.r(x)\n        return torch.cat([b(s) for b in self.bs], 1)\n"
    )
    assert canonicalize(code).ops == ["conv2d", "relu", "conv2d", "relu", "conv2d", "relu", "cat"]
    loop = code.replace(
        "        return torch.cat([b(s) for b in self.bs], 1)\n",
        "        outs = []\n        for b in self.bs:\n            outs.append(b(s))\n"
        "        return torch.cat(outs, 1)\n",
    )
    assert canonicalize(loop).ops == canonicalize(code).ops


def test_modules_registered_other_ways_keep_their_ops():
    # Hand-restructured copies of level2/12 (Gemm_Multiply_LeakyReLU) that lost operators before: modules given
    # to add_module / register_module / setattr, an nn.Sequential over an OrderedDict, a functools.partial of a
    # functional op, and a functional op stored as an attribute.
    def ops(init: str, body: str) -> list[str]:
        code = (
            "import functools\nfrom collections import OrderedDict\nimport torch\nimport torch.nn as nn\n"
            "import torch.nn.functional as F\nclass M(nn.Module):\n    def __init__(self, i, o, k, s):\n"
            f"        super().__init__()\n        self.k = k\n{init}    def forward(self, x):\n"
            f"        return {body}\n"
        )
        return canonicalize(code).ops

    want = ops(
        "        self.fc = nn.Linear(i, o)\n        self.act = nn.LeakyReLU(s)\n", "self.act(self.fc(x) * self.k)"
    )
    assert want == ["linear", "mul", "leakyrelu"]
    body = "self.act(self.fc(x) * self.k)"
    assert (
        ops(
            "        self.add_module('fc', nn.Linear(i, o))\n        self.register_module('act', nn.LeakyReLU(s))\n",
            body,
        )
        == want
    )
    assert ops("        setattr(self, 'fc', nn.Linear(i, o))\n        self.act = nn.LeakyReLU(s)\n", body) == want
    assert (
        ops(
            "        self.fc = nn.Linear(i, o)\n        self.act = functools.partial(F.leaky_relu, negative_slope=s)\n",
            body,
        )
        == want
    )
    assert ops("        self.fc = nn.Linear(i, o)\n        self.act = F.leaky_relu\n", body) == want
    for mapping in (
        "OrderedDict([('fc', nn.Linear(i, o)), ('act', nn.LeakyReLU(s))])",
        "OrderedDict(fc=nn.Linear(i, o), act=nn.LeakyReLU(s))",
    ):
        got = ops(f"        self.seq = nn.Sequential({mapping})\n", "self.seq(x * 1.0) * self.k")
        assert got == ["linear", "leakyrelu", "mul"], (mapping, got)
    # a module picked from a ModuleDict by its key runs that module only
    assert (
        ops(
            "        self.d = nn.ModuleDict({'act': nn.LeakyReLU(s), 'fc': nn.Linear(i, o)})\n",
            "self.d['act'](self.d['fc'](x) * self.k)",
        )
        == want
    )
    assert (
        ops(
            "        self.d = nn.ModuleDict(OrderedDict(act=nn.LeakyReLU(s), fc=nn.Linear(i, o)))\n",
            "self.d['act'](self.d['fc'](x) * self.k)",
        )
        == want
    )
