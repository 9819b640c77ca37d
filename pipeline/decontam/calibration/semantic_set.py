"""The semantic calibration set: verified paraphrases of KernelBench problems (positives), near-variants (one change
of meaning), and genuinely different tasks (negatives), built at run time from the reference files.

- paraphrases: each rewrite kind of pipeline.decontam.calibration.paraphrase alone, and combinations of 3-5
  kinds, plus HAND_WRITTEN ones; kept only when numerically equal to the source (weights tied, within 1e-4);
- near-variants: the source with one change of meaning (an activation swapped, a reduction/softmax dim moved, a
  constant changed), kept only when numerically different from it;
- different: new operator compositions (negatives.random_composition) whose ordered ops are no problem's.
"""

from __future__ import annotations

import ast
import random
import signal
from dataclasses import dataclass

from pipeline.decontam.calibration.paraphrase import (
    KINDS,
    Paraphrase,
    equivalent,
    input_variants,
    paraphrase,
    runnable,
    tied_outputs,
)
from pipeline.kernelbench import RefProblem


@dataclass
class SemExample:
    example_id: str
    code: str
    label: str  # paraphrase | near_variant | different
    kind: str  # rewrite kinds joined by '+', the mutation, or 'composition'
    source: str  # ref_id ('' for different)


_SWAP = {
    "relu": "gelu",
    "gelu": "relu",
    "sigmoid": "tanh",
    "tanh": "sigmoid",
    "softmax": "log_softmax",
    "log_softmax": "softmax",
    "mean": "sum",
    "sum": "mean",
    "amax": "amin",
    "max": "min",
    "min": "max",
    "silu": "mish",
    "mish": "silu",
    "elu": "selu",
    "selu": "elu",
    "softplus": "relu",
}


class _Mutate(ast.NodeTransformer):
    def __init__(self, mode: str, pick: int) -> None:
        self.mode, self.pick, self.seen, self.done = mode, pick, 0, False

    def _hit(self) -> bool:
        self.seen += 1
        return self.seen - 1 == self.pick and not self.done

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        if self.mode == "swap_op" and isinstance(f, ast.Attribute) and f.attr in _SWAP and self._hit():
            f.attr = _SWAP[f.attr]
            self.done = True
        if self.mode == "move_dim":
            for k in node.keywords:
                if (
                    k.arg == "dim"
                    and isinstance(k.value, ast.Constant)
                    and isinstance(k.value.value, int)
                    and self._hit()
                ):
                    k.value = ast.Constant(0 if k.value.value not in (0,) else -1)
                    self.done = True
        return node

    def visit_Constant(self, node: ast.Constant):
        if self.mode == "constant" and isinstance(node.value, float) and node.value not in (0.0,) and self._hit():
            self.done = True
            return ast.Constant(node.value * 1.7 + 0.3)
        return node


def mutate(code: str, mode: str, pick: int) -> str | None:
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            m = _Mutate(mode, pick)
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    m.visit(f)
            if m.done:
                return ast.unparse(tree)
    return None


def _outputs(code: str, seed: int = 0):
    import torch

    g: dict = {"__name__": "kb"}
    exec(compile(code, "<m>", "exec"), g)
    torch.manual_seed(seed)
    m = g["Model"](*g.get("get_init_inputs", lambda: [])())
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    for ins in input_variants(g, seed, 20_000_000):
        try:
            with torch.no_grad():
                return m(*ins)
        except RuntimeError:
            continue
    raise RuntimeError("no input variant runs")


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def build_semantic_set(
    reference: list[RefProblem],
    seed: int = 0,
    max_refs: int = 60,
    combos: int = 1,
    n_different: int = 60,
    time_s: int = 10,
    kinds: tuple[str, ...] = KINDS,
    with_variants: bool = True,
    with_hand: bool = True,
) -> list[SemExample]:
    """The labelled set (verified in this process: reference code is KernelBench's, rewrites are ours)."""
    import torch

    from pipeline.decontam.calibration.negatives import random_composition
    from pipeline.decontam.canon import canonicalize

    torch.set_num_threads(1)
    rng = random.Random(seed)
    pool = [r for r in reference if r.level in (1, 2, 3)]
    rng.shuffle(pool)
    out: list[SemExample] = []
    old = signal.signal(signal.SIGALRM, _alarm)
    used = 0
    try:
        for r in pool:
            if used >= max_refs:
                break
            try:
                signal.alarm(time_s)
                if not runnable(r.code):
                    continue
                made = 0
                plans = [[k] for k in kinds]
                for _ in range(combos):
                    plans.append(sorted(rng.sample(kinds, rng.randint(3, min(5, len(kinds)))), key=KINDS.index))
                for plan in plans:
                    p = paraphrase(r.code, plan, rng)
                    if p is None:
                        continue
                    got = tied_outputs(r.code, p)
                    if got is not None and equivalent(*got):
                        out.append(
                            SemExample(
                                f"para:{r.ref_id}:{'+'.join(plan)}", p.code, "paraphrase", "+".join(plan), r.ref_id
                            )
                        )
                        made += 1
                if with_variants:
                    for mode in ("swap_op", "move_dim", "constant"):
                        code = mutate(r.code, mode, 0)
                        if code is None:
                            continue
                        try:
                            a, b = _outputs(r.code), _outputs(code)
                        except Exception:
                            continue  # a variant that does not run is no variant
                        if not equivalent(a, b):
                            out.append(SemExample(f"var:{r.ref_id}:{mode}", code, "near_variant", mode, r.ref_id))
                used += made > 0
            except Exception:
                continue
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, old)
    if with_hand:
        by_id = {r.ref_id: r for r in reference}
        for rid, code in HAND_WRITTEN.items():
            if rid in by_id:
                out.append(SemExample(f"hand:{rid}", code, "paraphrase", "hand", rid))
    ref_sigs = {tuple(canonicalize(r.code).ops) for r in reference}
    k = 0
    while sum(e.label == "different" for e in out) < n_different and k < n_different * 20:
        k += 1
        code = random_composition(rng)
        if tuple(canonicalize(code).ops) not in ref_sigs:
            out.append(SemExample(f"diff:{k}", code, "different", "composition", ""))
    return out


def check_hand_written(reference: list[RefProblem]) -> dict[str, bool]:
    """Each hand-written paraphrase numerically equal to its source (weights tied by name, else by shape order)."""
    by_id = {r.ref_id: r for r in reference}
    res = {}
    for rid, code in HAND_WRITTEN.items():
        p = Paraphrase(rid, ("hand",), code, HAND_RENAMES.get(rid, {}))
        got = tied_outputs(by_id[rid].code, p)
        res[rid] = got is not None and equivalent(*got)
    return res


# Hand paraphrases (several kinds at once each), written from the reference problem's meaning, not its text.
HAND_WRITTEN = {
    "level1/23_Softmax": """
import torch
from torch import nn

def _stable_exp(t):
    shifted = t - t.max(dim=1, keepdim=True).values
    return shifted.exp()

class Net(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, inp):
        num = _stable_exp(inp)
        return num * num.sum(dim=1, keepdim=True).reciprocal()

Model = Net
batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
""",
    "level1/40_LayerNorm": """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(normalized_shape))
        self.beta = nn.Parameter(torch.zeros(normalized_shape))
        self.k = len(normalized_shape)

    def forward(self, x):
        axes = tuple(range(x.ndim - self.k, x.ndim))
        centered = x - x.mean(dim=axes, keepdim=True)
        inv = (centered.pow(2).mean(dim=axes, keepdim=True) + 1e-5).rsqrt()
        return torch.addcmul(self.beta, centered * inv, self.gamma)

batch_size = 16
features = 64
dim1 = 256
dim2 = 256

def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]

def get_init_inputs():
    return [(features, dim1, dim2)]
""",
    "level1/1_Square_matrix_multiplication_": """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("ik,kj->ij", A, B)

N = 2048 * 2

def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]

def get_init_inputs():
    return []
""",
    # BatchNorm written out (batch statistics, as in training mode), the Linear as addmm, the scale after it
    "level2/39_Gemm_Scale_BatchNorm": """
import torch
import torch.nn as nn


def _standardise_over_batch(z, gamma, beta, eps):
    centred = z - z.sum(0, keepdim=True) / z.shape[0]
    spread = (centred * centred).mean(0, keepdim=True)
    return centred * torch.rsqrt(spread + eps) * gamma + beta


class ScaledProjection(nn.Module):
    def __init__(self, n_in, n_out, scale_shape, eps=1e-05, momentum=0.1):
        super().__init__()
        self.w = nn.Parameter(torch.empty(n_out, n_in))
        self.b = nn.Parameter(torch.empty(n_out))
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.gamma = nn.Parameter(torch.ones(n_out))
        self.beta = nn.Parameter(torch.zeros(n_out))
        self.eps = eps

    def forward(self, x):
        z = torch.addmm(self.b, x, self.w.t()) * self.scale
        return _standardise_over_batch(z, self.gamma, self.beta, self.eps)


Model = ScaledProjection
batch_size = 16384
in_features = 4096
out_features = 4096
scale_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
""",
}
HAND_RENAMES = {
    "level1/40_LayerNorm": {"ln.weight": "gamma", "ln.bias": "beta"},
    "level2/39_Gemm_Scale_BatchNorm": {
        "gemm.weight": "w",
        "gemm.bias": "b",
        "bn.weight": "gamma",
        "bn.bias": "beta",
        "bn.running_mean": "",
        "bn.running_var": "",
        "bn.num_batches_tracked": "",
    },
}
