"""Activation functions written out in elementary ops read as the named op, on the normalized tree.

`x * sigmoid(x)` is `silu(x)`, `x / (1 + exp(-x))` too, `0.5 * x * (1 + erf(x / sqrt(2)))` is `gelu(x)`,
`exp(x - max) / sum(exp(x - max))` is `softmax(x)`, `sqrt(sum(x * x))` is `norm(x)`, `sum(x, d) / x.shape[d]` is
`mean(x, d)`, and the normalizations written out (RMSNorm, LayerNorm, `F.normalize`) read as their op: a task
that spells an operator out is the same task as one that calls it, in either direction (KernelBench itself
writes Swish as `x * torch.sigmoid(x)` and RMSNorm as `x / sqrt(mean(x ** 2) + eps)`). Works on the tree
after `_Normalizer` (calls are `OP_<name>(...)`, numbers are `NUM`) and after single-use temporaries were inlined;
a temporary read twice (`e = exp(..); e / e.sum()`) is looked through when it is assigned once.
"""

from __future__ import annotations

import ast
import copy

from pipeline.decontam.astwalk import FastTransformer, names

# A function is rewritten only if one of these ops occurs in it (most tasks: none, and no second walk).
TRIGGERS = frozenset(
    {
        "OP_sigmoid",
        "OP_exp",
        "OP_erf",
        "OP_tanh",
        "OP_relu6",
        "OP_hardtanh",
        "OP_clamp",
        "OP_where",
        "OP_logsumexp",
        "OP_log",
        "OP_log1p",
        "OP_softplus",
        "OP_maximum",
        "OP_hardsigmoid",
        "OP_softmax",
        "OP_reciprocal",
        "OP_sqrt",
        "OP_rsqrt",
        "OP_pow2",
        "OP_normalize",
        "OP_sum",
        "OP_mean",
        "OP_var",
    }
)
_LOAD = ast.Load()
# Longer products are not searched for activation pairs (each pair is compared; hostile code can nest hundreds).
_MAX_FACTORS = 16
_NOT_COMPUTE = frozenset({"__init__", "get_inputs", "get_init_inputs"})  # where no activation is computed


def _op(n: ast.AST) -> str | None:
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith("OP_"):
        return n.func.id[3:]
    return None


def _mk(op: str, args: list[ast.expr]) -> ast.Call:
    # Copies: an argument can come from a looked-through temporary's value, which stays in the tree when the
    # temporary is still read elsewhere, and one node in two places would be renamed twice.
    return ast.Call(func=ast.Name(id=f"OP_{op}", ctx=_LOAD), args=[copy.deepcopy(a) for a in args], keywords=[])


def _const(n: ast.AST) -> bool:
    """A number: `NUM`, or math/arithmetic on numbers only (`math.sqrt(2.0)` reads `P_math_sqrt(NUM)`)."""
    if isinstance(n, ast.Name):
        return n.id == "NUM" or n.id.startswith("P_math_")
    if (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and (
            n.func.id.startswith("P_math_")
            or n.func.id in ("OP_add", "OP_sub", "OP_mul", "OP_div", "OP_pow", "OP_neg", "OP_sqrt")
        )
    ):
        return all(_const(a) for a in n.args)
    return False


def _scalar(e: ast.AST, attrs: bool) -> bool:
    """A number, or with `attrs` also a module attribute (`self.eps`, `self.negative_slope`)."""
    return _const(e) or attrs and isinstance(e, ast.Attribute)


def _args2(n: ast.AST, op: str) -> tuple[ast.expr, ast.expr] | None:
    return (n.args[0], n.args[1]) if _op(n) == op and len(n.args) == 2 else None


def _factors(n: ast.expr) -> list[ast.expr]:
    pair = _args2(n, "mul")
    return _factors(pair[0]) + _factors(pair[1]) if pair else [n]


def _product(fs: list[ast.expr]) -> ast.expr:
    out = fs[0]
    for f in fs[1:]:
        out = _mk("mul", [out, f])
    return out


class _Fuser(FastTransformer):
    def __init__(self, defs: dict[str, ast.expr]) -> None:
        self.defs = defs
        self.changed = False
        # id -> (node, dump): a node is compared only after its children were rewritten, so its dump stays valid
        # for this pass; the node is kept so that its id is not reused.
        self._dumps: dict[int, tuple[ast.AST, str]] = {}

    def _dump(self, n: ast.AST) -> str:
        hit = self._dumps.get(id(n))
        if hit is None or hit[0] is not n:
            hit = self._dumps[id(n)] = (n, ast.dump(n))
        return hit[1]

    def _same(self, a: ast.AST, b: ast.AST) -> bool:
        return a is b or self._dump(a) == self._dump(b)

    def r(self, n: ast.expr) -> ast.expr:
        """`n`, or the value of the once-assigned temporary it names."""
        for _ in range(4):
            if isinstance(n, ast.Name) and n.id in self.defs:
                n = self.defs[n.id]
            else:
                break
        return n

    # pieces ----------------------------------------------------------------------------------------------------
    def _add_const(self, n: ast.expr, attrs: bool = False) -> ast.expr | None:
        """c + t or t + c -> t; with `attrs`, c may also be a module attribute (`+ self.eps`)."""
        pair = _args2(self.r(n), "add")
        if pair is None:
            return None
        if _scalar(pair[0], attrs) and not _scalar(pair[1], attrs):
            return pair[1]
        if _scalar(pair[1], attrs) and not _scalar(pair[0], attrs):
            return pair[0]
        return None

    def _sigmoid_denominator(self, n: ast.expr) -> ast.expr | None:
        """1 + exp(-x) -> x."""
        t = self._add_const(n)
        if t is None or _op(self.r(t)) != "exp" or not self.r(t).args:
            return None
        e = self.r(t).args[0]
        return e.args[0] if _op(e) == "neg" and e.args else None

    def _hard_ramp(self, n: ast.expr) -> ast.expr | None:
        """relu6(x + 3) / clamp(x + 3, 0, 6) / hardtanh(x + 3, 0, 6) -> x."""
        n = self.r(n)
        op = _op(n)
        if (
            op == "relu6"
            and len(n.args) == 1
            or op in ("clamp", "hardtanh")
            and len(n.args) == 3
            and all(_const(a) for a in n.args[1:])
        ):
            return self._add_const(n.args[0])
        return None

    def _positive(self, n: ast.expr) -> ast.expr | None:
        """x > c, x >= c, gt(x, c), ge(x, c) -> x."""
        n = self.r(n)
        if (
            isinstance(n, ast.Compare)
            and len(n.ops) == 1
            and isinstance(n.ops[0], (ast.Gt, ast.GtE))
            and _const(n.comparators[0])
        ):
            return n.left
        pair = _args2(n, "gt") or _args2(n, "ge")
        return pair[0] if pair and _const(pair[1]) else None

    def _scaled(self, n: ast.expr, x: ast.expr) -> bool:
        """c * x, x * c, x / c, with c a number or a module attribute (`self.negative_slope * x`)."""
        n = self.r(n)
        pair = _args2(n, "mul")
        if pair:
            return (
                _scalar(pair[0], True) and self._same(pair[1], x) or _scalar(pair[1], True) and self._same(pair[0], x)
            )
        pair = _args2(n, "div")
        return bool(pair) and self._same(pair[0], x) and _scalar(pair[1], True)

    # products --------------------------------------------------------------------------------------------------
    def _pair_op(self, x: ast.expr, g: ast.expr) -> str | None:
        """The named op of x * g(x)."""
        g = self.r(g)
        op = _op(g)
        if op == "sigmoid" and g.args:
            if self._same(g.args[0], x):
                return "swish"
            if self._scaled(g.args[0], x):
                return "gelu"  # x * sigmoid(1.702 x): the sigmoid approximation of GELU
        if op == "hardsigmoid" and g.args and self._same(g.args[0], x):
            return "hardswish"
        if op == "tanh" and g.args:
            sp = self.r(g.args[0])
            if _op(sp) == "softplus" and sp.args and self._same(sp.args[0], x):
                return "mish"
        ramp = self._hard_ramp(g)
        if ramp is not None and self._same(ramp, x):
            return "hardswish*6"  # x * relu6(x + 3): hardswish once divided by 6
        t = self._add_const(g)
        if t is not None:
            t = self.r(t)
            if _op(t) == "erf" and t.args and self._scaled(t.args[0], x):
                return "gelu"
            if (
                _op(t) == "tanh"
                and t.args
                and any(_op(m) == "pow" and m.args and self._same(m.args[0], x) for m in ast.walk(t.args[0]))
            ):
                return "gelu"  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        return None

    def _fuse_product(self, fs: list[ast.expr], divided_by_const: bool) -> ast.expr | None:
        for i, f in enumerate(fs):
            if _op(f) == "div" and len(f.args) == 2 and _const(f.args[0]) and len(fs) > 1:
                rest = fs[:i] + fs[i + 1 :]  # a * (1 / z) -> a / z (rsqrt(v) reads 1 / sqrt(v) by now)
                return _mk("div", [_product(rest), f.args[1]])
            if _op(f) == "layernorm" and all(isinstance(g, ast.Attribute) for k, g in enumerate(fs) if k != i):
                return f  # the affine weight of a written-out LayerNorm
        dumps = [self._dump(f) for f in fs]
        for i, x in enumerate(fs):
            if _const(x):
                continue
            for j in range(i + 1, len(fs)):
                if dumps[j] == dumps[i]:  # x * x -> x ** 2
                    rest = [g for k, g in enumerate(fs) if k not in (i, j)]
                    return _product([_mk("pow", [x, ast.Name(id="NUM", ctx=_LOAD)])] + rest)
        for i, x in enumerate(fs):
            if _const(x):
                continue
            for j, g in enumerate(fs):
                if i == j:
                    continue
                op = self._pair_op(x, g)
                if op is None or op == "hardswish*6" and not divided_by_const:
                    continue
                op = op.split("*")[0]
                rest = [f for k, f in enumerate(fs) if k not in (i, j)]
                if op == "gelu":  # its 0.5 is part of the formula
                    half = next((k for k, f in enumerate(rest) if _const(f)), None)
                    if half is not None:
                        rest.pop(half)
                return _product([_mk(op, [x])] + rest)
        return None

    # the node --------------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        for _ in range(4):  # a rewrite can complete a larger pattern at the same node (a * rsqrt(v) -> rmsnorm)
            new = self._rewrite(node) if isinstance(node, ast.Call) else None
            if new is None:
                break
            self.changed = True
            node = new
        return node

    def _rewrite(self, n: ast.Call) -> ast.expr | None:
        op = _op(n)
        if op == "mul" and len(n.args) == 2:
            fs = _factors(n)
            return self._fuse_product(fs, False) if len(fs) <= _MAX_FACTORS else None
        norm = self._norms(n, op)
        if norm is not None:
            return norm
        if op == "div" and len(n.args) == 2:
            num, den = n.args
            if _const(num) and (x := self._sigmoid_denominator(den)) is not None:
                return _mk("sigmoid", [x])
            if (x := self._sigmoid_denominator(den)) is not None and self._same(num, x):
                return _mk("swish", [x])
            if _const(den):
                if (x := self._hard_ramp(num)) is not None:
                    return _mk("hardsigmoid", [x])
                fs = _factors(num)
                if 1 < len(fs) <= _MAX_FACTORS:
                    return self._fuse_product(fs, True)
            s = self.r(den)
            if (
                _op(s) == "sum"
                and s.args
                and self._same(s.args[0], num)
                or _op(s) == "sum"
                and s.args
                and self._same(self.r(s.args[0]), self.r(num))
            ):
                return self._softmax(num, s.args[1:2])
            return None
        if op == "reciprocal" and len(n.args) == 1 and (x := self._sigmoid_denominator(n.args[0])) is not None:
            return _mk("sigmoid", [x])
        if op in ("log", "log1p") and len(n.args) == 1:
            inner = self.r(n.args[0])
            if op == "log1p" and _op(inner) == "exp" and inner.args:
                return _mk("softplus", [inner.args[0]])
            t = self._add_const(inner)
            if op == "log" and t is not None and _op(self.r(t)) == "exp" and self.r(t).args:
                return _mk("softplus", [self.r(t).args[0]])
            if op == "log" and _op(inner) == "softmax" and inner.args:
                return _mk("logsoftmax", list(inner.args))
            return None
        if op == "sub" and len(n.args) == 2:
            x, l = n.args[0], self.r(n.args[1])
            if _op(l) == "logsumexp" and l.args and self._same(l.args[0], x):
                return _mk("logsoftmax", [x, *l.args[1:2]])
            return None
        if op == "where" and len(n.args) == 3:
            x = self._positive(n.args[0])
            if x is None or not self._same(n.args[1], x):
                return None
            neg = self.r(n.args[2])
            if _const(neg):
                return _mk("relu", [x])
            if self._scaled(neg, x):
                return _mk("leakyrelu", [x, ast.Name(id="NUM", ctx=_LOAD)])
            return None
        if op == "maximum" and len(n.args) == 2:
            a, b = n.args
            for x, y in ((a, b), (b, a)):
                if _const(y) or _op(self.r(y)) == "zeroslike":
                    return _mk("relu", [x])
                if self._scaled(y, x):
                    return _mk("leakyrelu", [x, ast.Name(id="NUM", ctx=_LOAD)])
        return None

    def _shape_like(self, n: ast.expr) -> bool:
        """A number or a size read off a tensor: `x.shape[1]`, `x.size(1)`, `x.numel()`."""
        n = self.r(n)
        if _const(n) or _op(n) in ("size", "numel"):
            return True
        return isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape"

    def _centered(self, n: ast.expr) -> tuple[ast.expr, list[ast.expr]] | None:
        """x - mean(x, dims) -> (x, dims)."""
        pair = _args2(self.r(n), "sub")
        if pair is None:
            return None
        m = self.r(pair[1])
        if _op(m) == "mean" and m.args and self._same(self.r(m.args[0]), self.r(pair[0])):
            return pair[0], list(m.args[1:])
        return None

    def _norms(self, n: ast.Call, op: str | None) -> ast.expr | None:
        """Reductions and normalizations written out."""
        args = n.args
        if op == "pow2" and len(args) == 1:
            return _mk("pow", [args[0], ast.Name(id="NUM", ctx=_LOAD)])
        if op == "rsqrt" and len(args) == 1:
            return _mk("div", [ast.Name(id="NUM", ctx=_LOAD), _mk("sqrt", [args[0]])])
        if op == "normalize" and args:  # F.normalize(x, p, dim) = x / norm(x, p, dim)
            return _mk("div", [args[0], _mk("norm", list(args))])
        if op == "sqrt" and len(args) == 1:
            s = self.r(args[0])
            if _op(s) == "sum" and s.args and _op(self.r(s.args[0])) == "pow" and self.r(s.args[0]).args:
                return _mk("norm", [self.r(s.args[0]).args[0], *s.args[1:]])  # sqrt(sum(x ** 2)) = ||x||
        if op == "mean" and args:  # mean((x - mean(x)) ** 2) = var(x)
            p = self.r(args[0])
            if _op(p) == "pow" and p.args and (c := self._centered(p.args[0])) is not None:
                return _mk("var", [c[0], *c[1]])
        if op == "div" and len(args) == 2:
            num, den = args
            s = self.r(num)
            if _op(s) == "sum" and s.args and self._shape_like(den):
                return _mk("mean", list(s.args))  # sum(x, d) / x.shape[d]
            d = self.r(den)
            if _op(d) == "sqrt" and d.args:
                t = self._add_const(d.args[0], attrs=True)  # + eps: a number or a module attribute (`self.eps`)
                inner = self.r(t if t is not None else d.args[0])
                sq = self.r(inner.args[0]) if _op(inner) == "mean" and inner.args else None
                if _op(sq) == "pow" and sq.args and self._same(self.r(sq.args[0]), self.r(num)):
                    return _mk("rmsnorm", [num])  # x / sqrt(mean(x ** 2) + eps)
                c = self._centered(num)
                if (
                    _op(inner) == "var"
                    and inner.args
                    and c is not None
                    and self._same(self.r(inner.args[0]), self.r(c[0]))
                ):
                    return _mk("layernorm", [c[0]])  # (x - mean) / sqrt(var + eps)
        if op == "add" and len(args) == 2:  # the affine bias of a written-out LayerNorm
            for a, b in (args, args[::-1]):
                if _op(a) == "layernorm" and isinstance(b, ast.Attribute):
                    return a
        return None

    def _softmax(self, num: ast.expr, dim: list[ast.expr]) -> ast.expr | None:
        """exp(z) / sum(exp(z), dim): softmax of x when z is x or x - max(x)."""
        e = self.r(num)
        if _op(e) != "exp" or not e.args:
            return None
        z = self.r(e.args[0])
        pair = _args2(z, "sub")
        x = z
        if pair is not None:
            m = self.r(pair[1])
            if isinstance(m, ast.Subscript):
                m = m.value
            if isinstance(m, ast.Attribute) and m.attr == "values":
                m = m.value
            if _op(m) in ("max", "amax") and m.args and self._same(self.r(m.args[0]), self.r(pair[0])):
                x = pair[0]
        return _mk("softmax", [x, *dim])


def _once_assigned(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Names assigned exactly once in the function, by a plain top-level `name = expr` (not its parameters)."""
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stores[node.arg] = stores.get(node.arg, 0) + 2  # parameters are never looked through
    out = {}
    for s in fn.body:
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and stores.get(s.targets[0].id) == 1
        ):
            out[s.targets[0].id] = s.value
    return out


def fuse_formulas(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Rewrite spelled-out activations in `fn` in place; True when something changed."""
    if fn.name in _NOT_COMPUTE or TRIGGERS.isdisjoint(n.id for n in names(fn)):
        return False
    f = _Fuser(_once_assigned(fn))
    fn.body = [f.visit(s) for s in fn.body]
    return f.changed
