"""The semantic view's fingerprint: a traced core-ATen graph (pipeline.decontam.jailed) normalized and hashed.

Normalization (each rule erases one way of writing the same computation):
- shape-only and copy ops (view, reshape, permute, transpose, expand, clone, dtype casts ...) pass their input on,
  so layouts and einsum's reshapes do not count; dims and sizes are left out of the labels (shape-free);
- one spelling per operation: mm/bmm/matmul/addmm/einsum's products are `mm` (addmm adds its bias after), a
  convolution's bias is an add, division is multiplication by a reciprocal (by 1/c for a constant), subtraction
  adds a negation, rsqrt is reciprocal(sqrt), pow 2/0.5/-1 are mul/sqrt/reciprocal, mean is a sum times a constant,
  max(dim).values is amax, sigmoid is 1/(1+exp(-x)), relu/clamp_min 0/maximum with 0 are relu;
- multiplications by 1 and additions of 0 vanish; chains of add/mul/maximum/minimum are one n-ary node whose
  operands are ordered (commutative), other ops keep their operand order;
- constants are bucketed to two significant digits; parameters, buffers and inputs are typed leaves (kind, rank).
Fingerprint: Weisfeiler-Lehman subtree hashes of depth 0..3 of every node reachable from the output, each with
its occurrence count (two relus differ from one), as a sorted uint32 set (MinHash/Jaccard like the other views).
Everything here reads data a task's trace reported: sizes are capped, malformed entries are skipped.
`fingerprint(nodes, top)`: what a decision reads of a trace (the features, the counts `difference` compares, the
input shapes), made once where the trace is made (validation's carry, decontamination's trace cache) and read back
by `from_fingerprint` without normalizing again; the graph itself is rebuilt only for the auditor's report.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

_PASS = {
    "broadcast_in_dim",
    "convert_element_type",
    "view",
    "_unsafe_view",
    "reshape",
    "expand",
    "permute",
    "transpose",
    "t",
    "squeeze",
    "unsqueeze",
    "clone",
    "contiguous",
    "alias",
    "detach",
    "lift_fresh_copy",
    "_to_copy",
    "to",
    "view_copy",
    "expand_copy",
    "permute_copy",
    "unsqueeze_copy",
    "squeeze_copy",
    "t_copy",
    "transpose_copy",
    "alias_copy",
    "_reshape_alias",
    "flatten",
    "unflatten",
    "clone_copy",
    "copy",
    "type_as",
    "broadcast_to",
}
_MM = {"mm", "bmm", "matmul", "dot", "mv"}
_LIST_OPS = {
    "cat",
    "concat",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "einsum",
    "block_diag",
    "broadcast_tensors",
    "meshgrid",
}  # ops whose list argument holds the data they join
_ACI = {"add", "mul", "maximum", "minimum"}  # associative, commutative: flattened, operands ordered
_COMMUTATIVE = _ACI | {"eq", "ne", "logical_and", "logical_or", "bitwise_and", "bitwise_or"}
WL_DEPTH = 3
MAX_NODES = 4000
FP_VERSION = "2"  # bump when normalize, wl_features or fingerprint change: stored fingerprints are made again


def _base(target: str) -> str:
    parts = str(target).split(".")
    if "getitem" in str(target):
        return "getitem"
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "prims") else str(target)


def _const_label(c) -> str:
    if isinstance(c, bool):
        return f"K{int(c)}"
    if isinstance(c, (int, float)):
        return f"K{float(c):.2g}"
    return "K?"


@dataclass
class SemGraph:
    """The normalized graph: node labels, operand lists (node ids), output ids; detail labels for differences."""

    labels: list[str] = field(default_factory=list)
    kids: list[list[int]] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    detail: Counter = field(default_factory=Counter)
    top: Counter = field(default_factory=Counter)  # the ops forward called, before decomposition (with arguments)
    inputs: list[list[int]] = field(default_factory=list)  # input shapes, in order
    params: list[list[int]] = field(default_factory=list)  # parameter shapes, in order


class _Builder:
    def __init__(self) -> None:
        self.g = SemGraph()
        self.memo: dict[tuple, int] = {}

    def node(self, label: str, kids: list[int]) -> int:
        if label in _COMMUTATIVE:
            kids = sorted(kids)
        key = (label, tuple(kids))
        got = self.memo.get(key)  # common subexpressions are one node (x*sigmoid(x) computes x once)
        if got is not None:
            return got
        self.g.labels.append(label)
        self.g.kids.append(kids)
        self.memo[key] = len(self.g.labels) - 1
        return self.memo[key]

    def const(self, c) -> int:
        return self.node(_const_label(c), [])


def _is_num(a) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool)


def _plain(a) -> str:
    """A non-tensor argument as a label: floats bucketed like constants, lists item by item."""
    if isinstance(a, list):
        return "[" + ",".join(_plain(x) for x in a[:16]) + "]"
    if isinstance(a, float):
        return f"{a:.2g}"
    return str(a)[:40]


def _label(op: str, args: list) -> str:
    """An op with its non-tensor arguments, for counting changes. `max`/`min` over a dim (their values are amax /
    amin) read as amax / amin over a list of dims, keepdim spelled out: a softmax written with either differs from
    another only where its axes do."""
    if op in ("max", "min") and args and type(args[0]) is int:
        op, args = "a" + op, [[args[0]], *args[1:2]]
    if op in ("amax", "amin") and len(args) == 1:
        args = [*args, False]
    return f"{op}{_plain(args)}"[:120]


def _top_labels(top) -> Counter:
    out: Counter = Counter()
    for t in (top if isinstance(top, list) else [])[:MAX_NODES]:
        if isinstance(t, list) and len(t) == 2 and _base(t[0]) not in _PASS and _base(t[0]) != "getitem":
            out[_label(_base(t[0]), t[1] if isinstance(t[1], list) else [t[1]])] += 1
    return out


def normalize(nodes: list, top: list | None = None) -> SemGraph:
    """The traced node list (jailed.trace's format) as a normalized SemGraph; `top`: the ops forward called
    before decomposition (jailed.trace's "top"), for counting changes of meaning."""
    b = _Builder()
    b.g.top = _top_labels(top)
    ids: dict[int, int | None] = {}  # traced index -> normalized node (None: not a tensor we track)

    def ref(a):
        if isinstance(a, list) and len(a) == 2 and a[0] == "n" and isinstance(a[1], int):
            return ids.get(a[1])
        return None

    def operand(a):
        r = ref(a)
        if r is not None:
            return r
        if _is_num(a) or isinstance(a, bool):
            return b.const(a)
        return None

    for i, n in enumerate(nodes[:MAX_NODES]):
        if not isinstance(n, list) or not n:
            ids[i] = None
            continue
        kind = n[0]
        if kind == "P" and len(n) >= 3:
            ids[i] = b.node(f"{n[1]}{n[2]}", [])
            shape = n[3] if len(n) > 3 and isinstance(n[3], list) else []
            (b.g.inputs if n[1] == "input" else b.g.params).append([int(s) for s in shape if _is_num(s)][:8])
            b.memo.pop((f"{n[1]}{n[2]}", ()), None)  # every leaf is its own node, even with equal labels
            continue
        if kind == "C":
            ids[i] = b.node(f"const{n[1] if len(n) > 1 else ''}", [])
            continue
        if kind == "O":
            outs = n[1] if len(n) > 1 else []
            flat = []
            stack = [outs]
            while stack:
                x = stack.pop()
                r = ref(x)
                if r is not None:
                    flat.append(r)
                elif isinstance(x, list):
                    stack.extend(reversed(x))
            b.g.outputs = flat
            continue
        args = n[1] if len(n) > 1 and isinstance(n[1], list) else []
        ids[i] = _lower(b, _base(kind), kind, args, ref, operand)
        if _base(kind) not in _PASS and _base(kind) != "getitem":  # layouts and sizes are no change of meaning
            b.g.detail[_label(_base(kind), [a for a in args if ref(a) is None])] += 1
    return b.g


def _lower(b: _Builder, op: str, target: str, args: list, ref, operand) -> int | None:
    """One traced op as normalized nodes; returns the node that holds its value."""
    nodes = [ref(a) for a in args]
    first = next((x for x in nodes if x is not None), None)
    n_nodes = sum(x is not None for x in nodes)
    if op in _PASS or op == "getitem":  # getitem: the values of max.dim / var_mean's first output
        return first
    x = nodes[0] if nodes else None
    if op in _MM and len(nodes) >= 2 and None not in nodes[:2]:
        return b.node("mm", nodes[:2])
    if op in ("addmm", "baddbmm", "addbmm") and len(nodes) >= 3 and None not in nodes[:3]:
        return b.node("add", [b.node("mm", nodes[1:3]), nodes[0]])
    if op == "convolution" and len(nodes) >= 2 and x is not None and nodes[1] is not None:
        conv = b.node("conv" + ("T" if len(args) > 6 and args[6] is True else ""), [x, nodes[1]])
        return b.node("add", [conv, nodes[2]]) if len(nodes) > 2 and nodes[2] is not None else conv
    if op in ("add", "sub", "rsub") and len(args) >= 2:
        lhs, rhs = operand(args[0]), operand(args[1])
        if lhs is None or rhs is None:
            return first
        if op == "rsub":
            lhs, rhs = rhs, lhs
        alpha = args[2] if len(args) > 2 and _is_num(args[2]) else 1
        if alpha != 1:
            rhs = _mul(b, [rhs, b.const(alpha)])
        if op != "add":
            rhs = _neg(b, rhs)
        return _add(b, [lhs, rhs])
    if op == "mul" and len(args) >= 2:
        lhs, rhs = operand(args[0]), operand(args[1])
        return _mul(b, [lhs, rhs]) if lhs is not None and rhs is not None else first
    if op == "div" and len(args) >= 2:
        lhs = operand(args[0])
        if lhs is None:
            return first
        if _is_num(args[1]):
            return _mul(b, [lhs, b.const(1.0 / args[1] if args[1] else float("inf"))])
        rhs = ref(args[1])
        return _mul(b, [lhs, b.node("reciprocal", [rhs])]) if rhs is not None else first
    if op == "neg" and x is not None:
        return _neg(b, x)
    if op == "rsqrt" and x is not None:
        return b.node("reciprocal", [b.node("sqrt", [x])])
    if op == "pow" and len(args) >= 2 and x is not None and _is_num(args[1]):
        e = float(args[1])
        if e == 2:
            return _mul(b, [x, x])
        if e == 0.5:
            return b.node("sqrt", [x])
        if e == -1:
            return b.node("reciprocal", [x])
        if e == 1:
            return x
    if op == "mean" and x is not None:
        return _mul(b, [b.node("sum", [x]), b.node("Kmean", [])])
    if op in ("amax", "max") and x is not None and n_nodes == 1:
        return b.node("amax", [x])
    if op in ("amin", "min") and x is not None and n_nodes == 1:
        return b.node("amin", [x])
    if op == "var" and x is not None and n_nodes == 1:  # the mean of squared deviations from the mean
        xc = _add(b, [x, _neg(b, _mul(b, [b.node("sum", [x]), b.node("Kmean", [])]))])
        return _mul(b, [b.node("sum", [_mul(b, [xc, xc])]), b.node("Kmean", [])])
    if op == "sigmoid" and x is not None:
        return b.node("reciprocal", [_add(b, [b.node("exp", [_neg(b, x)]), b.const(1)])])
    if op in ("relu", "clamp_min", "maximum", "clamp") and x is not None:
        lo = args[1] if len(args) > 1 and _is_num(args[1]) else None
        hi = args[2] if len(args) > 2 and _is_num(args[2]) else None
        if op == "relu" or (lo == 0 and hi is None and op != "maximum"):
            return b.node("relu", [x])
        if op == "maximum" and len(nodes) >= 2 and nodes[1] is not None:
            return b.node("maximum", nodes[:2])
    label = op
    kids = [k for k in nodes if k is not None]
    # the tensors a joining op is given as a list: operands too, in order (else all they hold was cut off from the
    # outputs, and every model ending in a cat had the same few-node graph); an index's list holds positions (an
    # unfold's arange arithmetic), not data: left out as before
    if op in _LIST_OPS:
        kids += [r for a in args if isinstance(a, list) and ref(a) is None for r in map(ref, a) if r is not None]
    consts = [a for a in args if _is_num(a) and op not in ("sum", "amax", "amin", "var", "var_mean", "std")]
    if op in ("where", "clamp", "full", "scalar_tensor", "fill", "leaky_relu", "elu", "hardtanh", "gelu"):
        kids += [b.const(c) for c in consts]
    return b.node(label, kids)


def _add(b: _Builder, xs: list[int]) -> int:
    flat = []
    for x in xs:
        if b.g.labels[x] == "add":
            flat.extend(b.g.kids[x])
        elif b.g.labels[x] != "K0":
            flat.append(x)
    if len(flat) == 1:
        return flat[0]
    return b.node("add", flat)


def _mul(b: _Builder, xs: list[int]) -> int:
    flat = []
    for x in xs:
        if b.g.labels[x] == "mul":
            flat.extend(b.g.kids[x])
        elif b.g.labels[x] != "K1":
            flat.append(x)
    if any(b.g.labels[x] == "sum" for x in flat):  # sum * (1/n), sum / n, mean: one spelling, whatever n
        flat = [b.node("Kmean", []) if b.g.labels[x].startswith("K") and not b.g.kids[x] else x for x in flat]
    if len(flat) == 1:
        return flat[0]
    return b.node("mul", flat)


def _neg(b: _Builder, x: int) -> int:
    if b.g.labels[x] == "neg":
        return b.g.kids[x][0]
    return b.node("neg", [x])


def _h(s: str) -> int:
    return zlib.crc32(s.encode("utf-8", "surrogatepass"))


def wl_features(g: SemGraph, depth: int = WL_DEPTH) -> np.ndarray:
    """Weisfeiler-Lehman subtree hashes (depth 0..depth) of the nodes the outputs depend on, with occurrence
    counts, as a sorted unique uint32 array."""
    live, stack = set(), list(g.outputs)
    while stack:
        x = stack.pop()
        if x in live:
            continue
        live.add(x)
        stack.extend(g.kids[x])
    order = sorted(live)  # node ids are topological (operands are built first)
    cur = {x: _h(g.labels[x]) for x in order}
    feats: list[str] = []
    for d in range(depth + 1):
        seen: Counter = Counter()
        for x in order:
            seen[cur[x]] += 1
            feats.append(f"{d}:{cur[x]}#{seen[cur[x]]}")
        if d == depth:
            break
        nxt = {}
        for x in order:
            ks = [cur[k] for k in g.kids[x]]
            if g.labels[x] in _COMMUTATIVE:
                ks.sort()
            nxt[x] = _h(f"{g.labels[x]}({','.join(map(str, ks))})")
        cur = nxt
    feats.append(f"out:{len(g.outputs)}")
    return np.unique(np.array([_h(f) for f in feats], dtype=np.uint32))


def graph_lines(g: SemGraph, limit: int = 60) -> list[str]:
    """The live normalized graph as text, one node per line (for the auditor's report)."""
    live, stack = set(), list(g.outputs)
    while stack:
        x = stack.pop()
        if x not in live:
            live.add(x)
            stack.extend(g.kids[x])
    names = {x: f"v{j}" for j, x in enumerate(sorted(live))}
    out = []
    for x in sorted(live):
        if g.kids[x]:
            out.append(f"{names[x]} = {g.labels[x]}({', '.join(names[k] for k in g.kids[x])})")
        else:
            out.append(f"{names[x]} = {g.labels[x]}")
    out.append("return " + ", ".join(names[x] for x in g.outputs))
    return out[-limit:] if len(out) > limit else out


def difference(cand: SemGraph, ref: SemGraph, limit: int = 6) -> dict:
    """The ops (with their non-tensor arguments: dims, constants) one task has more of than the other, counted
    at the level that shows fewer changes: the ops forward called (softmax over another dim is one change) or
    the primitive ops after decomposition (a formula written out by hand against the library call).
    `substitution`: as many ops added as removed at that level (an op or its arguments changed, none added or
    dropped: what a near-variant is; a task with one more or one less op is another composition)."""
    best = None
    for level, a, b in (("called", cand.top, ref.top), ("primitive", cand.detail, ref.detail)):
        if level == "called" and not (a and b):
            continue
        plus, minus = a - b, b - a
        n_plus, n_minus = sum(plus.values()), sum(minus.values())
        bases = [Counter({op_of(k): v for k, v in c.items()}) for c in (plus, minus)]
        same_ops = bases[0] == bases[1]
        got = {
            "added": [f"{k} x{v}" for k, v in plus.most_common(limit)],
            "removed": [f"{k} x{v}" for k, v in minus.most_common(limit)],
            "n_changes": _argument_changes(plus, minus) if same_ops and n_plus else max(n_plus, n_minus),
            "substitution": n_plus == n_minus,
            "same_ops": same_ops,
            "kept": sum((a & b).values()),
            "level": level,
        }
        if best is None or (got["substitution"], -got["n_changes"]) > (best["substitution"], -best["n_changes"]):
            best = got
    return best


def _argument_changes(plus: Counter, minus: Counter) -> int:
    """Where the same ops changed only their arguments: the distinct changes, each op's removed labels paired with
    its added ones in order. One change made in several ops counts once: a softmax written out over another axis
    changes the axis of its max and of its sum, one change of meaning."""
    pairs: dict[str, tuple[list, list]] = {}
    for side, counts in enumerate((minus, plus)):
        for k, v in sorted(counts.items()):
            pairs.setdefault(op_of(k), ([], []))[side].extend([k[len(op_of(k)) :]] * v)
    return len({change for old, new in pairs.values() for change in zip(old, new)})


def op_of(label: str) -> str:
    """The op of a graph label, without its dims and constants (`sum[1]` -> `sum`)."""
    return label.split("[", 1)[0]


def is_near_variant(diff: dict, max_changes: int, min_kept: int) -> bool:
    """One to max_changes ops changed in place: their dims or constants (softmax over another axis), or the op
    itself (an activation swapped) where at least min_kept ops of the problem stay as they are (one of two or
    three ops swapped makes another composition). The same ops wired in another order are another composition."""
    if not (diff["substitution"] and 1 <= diff["n_changes"] <= max_changes):
        return False
    return bool(diff.get("same_ops")) or diff.get("kept", 0) >= min_kept


def fingerprint(nodes: list, top: list | None = None) -> dict:
    """What the decision reads of a traced graph (JSON-ready): the Weisfeiler-Lehman features (little-endian uint32,
    hex), the input and parameter shapes, the op counts `difference` compares, the number of outputs."""
    g = normalize(nodes, top)
    return {
        "features": wl_features(g).astype("<u4").tobytes().hex(),
        "inputs": g.inputs,
        "params": g.params,
        "top": dict(g.top),
        "detail": dict(g.detail),
        "n_outputs": len(g.outputs),
    }


def from_fingerprint(fp: dict) -> tuple[np.ndarray, SemGraph]:
    """A fingerprint's features and its graph without nodes (labels, operands and outputs empty: what `difference`
    and the shortlist read). Raises ValueError on a malformed one (the caller normalizes the trace instead)."""
    feats = np.frombuffer(bytes.fromhex(fp["features"]), dtype="<u4").astype(np.uint32)
    if feats.size > 1 and not bool(np.all(feats[1:] > feats[:-1])):
        raise ValueError("features not sorted and unique")
    g = SemGraph(
        top=Counter({str(k): int(v) for k, v in fp["top"].items()}),
        detail=Counter({str(k): int(v) for k, v in fp["detail"].items()}),
        inputs=[[int(d) for d in s] for s in fp["inputs"]],
        params=[[int(d) for d in s] for s in fp["params"]],
    )
    return feats, g
