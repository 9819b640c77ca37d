"""Canonical form of a KernelBench-format task, robust to the ways a copy gets disguised.

What is erased: docstrings, comments, formatting, import spellings, identifier and class names (renamed in order
of appearance, with the module-attribute and module-variable definitions put in order of first use so reordering
them changes nothing), numeric constants (masked), equivalent API spellings (`torch.relu`, `F.relu`,
`nn.ReLU()` called through an attribute, `x.relu()` all become `OP_relu(x)`; `x + y`, `torch.add`, `x.add`
become `OP_add`; `@`, `torch.matmul`, `torch.mm`, `torch.bmm` become `OP_matmul`), identity operations
(`x.contiguous()`, `x * 1`, `nn.Identity()`) and dead statements (values computed but never used).

Besides the canonical token stream it extracts the ordered operator signature of `forward`: the canonical ops in
evaluation order, following module attributes, `nn.Sequential`/`nn.ModuleList` contents, helper methods, local
module classes and module-level helper functions.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
from dataclasses import dataclass, field

from pipeline.decontam.astwalk import (
    FastTransformer,
    FastVisitor,
    bfs,
    children,
    dotted,
    names,
    preorder,
    statements_bfs,
    unparse,
)
from pipeline.decontam.formulas import fuse_formulas
from pipeline.decontam.inline import (
    ARITH_OPS,
    NOT_HELPERS,
    Bind,
    inline_helpers,
    inline_module_constants,
    is_masked,
    simple_params,
    sort_module_args,
)

_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+|\S")
_BUILTINS = frozenset(dir(builtins))
_KEEP_NAMES = frozenset({"get_inputs", "get_init_inputs", "NUM"})

# Spellings that differ by more than case and underscores.
_OP_ALIASES = {
    "mm": "matmul",
    "bmm": "matmul",
    "dot": "matmul",
    "mv": "matmul",
    "multiply": "mul",
    "divide": "div",
    "truediv": "div",
    "truedivide": "div",
    "subtract": "sub",
    "clip": "clamp",
    "silu": "swish",
    "absolute": "abs",
    "greater": "gt",
    "less": "lt",
    "concat": "cat",
    "concatenate": "cat",
    "negative": "neg",
    "power": "pow",
    "arccos": "acos",
    "arcsin": "asin",
    "arctan": "atan",
    "conv1d": "conv1d",
    "logsoftmax": "logsoftmax",
    "batchnorm1d": "batchnorm",
    "batchnorm2d": "batchnorm",
    "batchnorm3d": "batchnorm",
    "instancenorm1d": "instancenorm",
    "instancenorm2d": "instancenorm",
    "instancenorm3d": "instancenorm",
    "dropout1d": "dropout",
    "dropout2d": "dropout",
    "dropout3d": "dropout",
    "featurealphadropout": "dropout",
    "alphadropout": "dropout",
    "gelu": "gelu",
    "layernorm": "layernorm",
    "groupnorm": "groupnorm",
    "square": "pow2",
    "rsqrt": "rsqrt",
    "addmm": "linear",
    "amax": "max",
    "amin": "min",
    "sigmoid": "sigmoid",
    "expit": "sigmoid",
    "vectornorm": "norm",
    "matrixnorm": "norm",
    "clampmin": "clamp",
    "clampmax": "clamp",  # one-sided clamps
}
# Merged only in the finished views (formulas.py reads spelled-out activations by these names first: `div` in
# sigmoid and softmax, `maximum` in leaky_relu): dividing is multiplying by the reciprocal (`x / d`,
# `x * self.scale` with scale = 1 / d), and an elementwise max/min against a bound is a clamp.
_VIEW_CLASS = {"div": "mul", "maximum": "clamp", "minimum": "clamp", "fmax": "clamp", "fmin": "clamp"}
_VIEW_TOKENS = {"OP_" + k: "OP_" + v for k, v in _VIEW_CLASS.items()}
_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.MatMult: "matmul",
    ast.Pow: "pow",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
}
# Methods that return their receiver's value unchanged (for the computation).
_IDENTITY_METHODS = frozenset({"contiguous", "clone", "detach", "requires_grad"})
_IDENTITY_MODULES = frozenset({"identity"})
# Do not count as operators of the signature: metadata and device/dtype plumbing.
_META_OPS = frozenset(
    {
        "t",
        "size",
        "dim",
        "numel",
        "item",
        "tolist",
        "to",
        "type",
        "cpu",
        "cuda",
        "float",
        "half",
        "double",
        "bfloat16",
        "len",
        "int",
        "range",
        "print",
        "isinstance",
        "super",
        "init",
        "shape",
        "getattr",
        "setattr",
        "hasattr",
        "list",
        "tuple",
        "dict",
        "zip",
        "enumerate",
        "append",
        "parameters",
        "modules",
        "children",
        "fill",
        "zero",
        "normal",
        "uniform",
        "kaiminguniform",
        "xavieruniform",
        "constant",
        "view",
        "reshape",
        "viewas",
        "reshapeas",
        "expand",
        "expandas",
        "unsqueeze",
        "squeeze",
        "flatten",
        "max_",
        "device",
        "dtype",
        "format",
        "str",
        "min_",
        "round",
        "abs_",
        "sorted",
        "map",
        "getitem",
        # tensors made, not computed: a bound written as torch.full_like(y, v) is the bound
        "fulllike",
        "zeroslike",
        "oneslike",
        "emptylike",
        "full",
        "zeros",
        "ones",
        "empty",
        "tensor",
        "astensor",
        "scalartensor",
    }
)
_RESERVED = ("OP_", "MOD_", "P_", "NUM")
MAX_CODE_CHARS = 400_000  # KernelBench's largest problem is 23 kB
_CONTAINERS = frozenset({"sequential", "modulelist", "moduledict"})
_TORCH_ROOTS = ("torch", "torch.nn", "torch.nn.functional", "torch.linalg", "torch.special")


def norm_op(name: str) -> str:
    """`leaky_relu`, `LeakyReLU`, `leaky_relu_` -> `leakyrelu`; then the alias table."""
    n = name.lower().replace("_", "")
    if n.startswith("i") and n[1:] in ("add", "sub", "mul", "truediv", "matmul", "pow"):
        n = n[1:]  # __iadd__-style spellings
    return _OP_ALIASES.get(n, n)


@dataclass
class Canonical:
    """The canonical views of one task's code."""

    ok: bool
    reason: str = ""
    tokens: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    ast_types: list[str] = field(default_factory=list)
    consts: list[str] = field(default_factory=list)
    text: str = ""


class _Imports:
    """Local names bound by imports -> full dotted paths (`F` -> `torch.nn.functional`)."""

    def __init__(self, tree: ast.AST, functions: list | None = None) -> None:
        self.alias: dict[str, str] = {}
        self.star: list[str] = []  # `from torch.nn.functional import *`: bare calls may be torch ops
        for node in statements_bfs(tree):  # imports and defs are statements: no need to enter expressions
            if functions is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(node)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.alias[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.alias[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    if a.name != "*":
                        self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
                    elif node.module.startswith("torch"):
                        self.star.append(node.module)

    def resolve(self, node: ast.AST) -> str | None:
        parts = dotted(node)
        if not parts or parts[0] not in self.alias:
            return None
        return ".".join([self.alias[parts[0]], *parts[1:]])


_TORCH_OP_CACHE: dict[str, tuple[str, bool] | None] = {}


def _torch_op(path: str | None) -> tuple[str, bool] | None:
    """A torch path -> (canonical op, is_module_class). None for non-torch paths."""
    if not path or not (path == "torch" or path.startswith("torch.")):
        return None
    try:
        return _TORCH_OP_CACHE[path]
    except KeyError:
        pass
    if len(_TORCH_OP_CACHE) > 100_000:  # bounded: paths come from user code
        _TORCH_OP_CACHE.clear()
    out = _TORCH_OP_CACHE[path] = _torch_op_uncached(path)
    return out


def _torch_op_uncached(path: str) -> tuple[str, bool] | None:
    leaf = path.rsplit(".", 1)[-1]
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if parent not in _TORCH_ROOTS and not parent.startswith("torch.nn.modules") and parent != "torch.Tensor":
        return None  # torch.float32, torch.nn.init.x, torch.cuda.*: kept as plain names
    is_class = leaf[:1].isupper()
    return norm_op(leaf), is_class


class _ModuleInfo:
    """What each `self.<attr>` of a class holds: ops of a module, a container of them, a local class, a value."""

    def __init__(self) -> None:
        self.attr_ops: dict[str, list[str]] = {}  # attr -> ops it applies when called
        self.attr_class: dict[str, str] = {}  # attr -> local class whose forward it runs
        self.attr_container: dict[str, list[list[str] | str]] = {}  # ModuleList/Sequential items
        self.attr_keys: dict[str, list[str]] = {}  # ModuleDict attr -> its keys, in the items' order


class Canonicalizer:
    def __init__(self, code: str, light: bool = False) -> None:
        self.code = code
        self.light = light  # tokens only: no operator signature, no AST node types (dedup)
        self._norm_classes: dict[str, ast.ClassDef] = {}  # filled by the _Normalizer
        self._norm_functions: dict[str, ast.FunctionDef] = {}
        self.fn_names: dict[ast.AST, list[ast.Name]] = {}  # function -> its plain Name nodes (normalizer)
        self.mod_calls: list[ast.Call] = []  # module constructors with 2+ arguments (sorted after renaming)

    # ---- pass 1: resolve torch spellings into OP_/MOD_ calls ----
    def run(self) -> Canonical:
        try:
            tree = ast.parse(self.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return Canonical(False, "unparseable")
        try:
            return self._run(tree)
        except RecursionError:
            return Canonical(False, "too_deep")
        except Exception:  # noqa: BLE001 - a rewrite's bug on odd code must not stop a run: the raw views still score it
            return Canonical(False, "canon_error")

    def _run(self, tree: ast.Module) -> Canonical:
        fns: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.imports = _Imports(tree, fns)  # one walk: imports and every function
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.minfo = {name: self._module_info(c) for name, c in self.classes.items()}
        tree = _Normalizer(self).visit(tree)
        inline_module_constants(tree, self.fn_names)
        # Helpers first: simplified, a helper is often one `return expr`, inlined while its callers still pass
        # plain names (a parameter read twice must not duplicate a whole computation); then everything else.
        helpers = [fn for fn in fns if fn.name not in NOT_HELPERS]
        for fn in helpers + [None] + [fn for fn in fns if fn.name in NOT_HELPERS]:
            if fn is None:
                inline_helpers(tree)
                continue
            fn.body = _inline_single_use(*_eliminate_dead(fn.body)) or [ast.Pass()]
        for fn in fns:  # spelled-out activations read as the named op; their temporaries then fall away
            if fuse_formulas(fn):
                fn.body = _inline_single_use(*_eliminate_dead(fn.body)) or [ast.Pass()]
        # Preorder lists of the top-level definitions and methods, walked once and shared by the reordering, the
        # signature, the node types and the renamer (none of them changes the tree's shape after _reorder).
        pre: dict[ast.AST, list[ast.AST]] = {}
        tree = _reorder(tree, pre)
        # after _reorder: the signature reads statement order only inside functions, which it does not change
        ops = [] if self.light else [_VIEW_CLASS.get(o, o) for o in self._signature(tree, pre)]
        types = (
            []
            if self.light
            else [
                type(n).__name__
                if not isinstance(n, ast.Name) or not n.id.startswith(("OP_", "MOD_"))
                else _VIEW_TOKENS.get(n.id, n.id)
                for n in _compose(tree, pre)
            ]
        )  # renaming keeps the shape and OP_/MOD_ names
        _Renamer(pre).visit(tree)
        sort_module_args(self.mod_calls)
        text = unparse(tree)
        tokens = [_VIEW_TOKENS.get(t, t) for t in _TOKEN_RE.findall(text)]
        return Canonical(True, "", tokens, ops, types, [], text)

    def _module_info(self, cls: ast.ClassDef) -> _ModuleInfo:
        info = _ModuleInfo()
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            for node in statements_bfs(fn):
                targets = (
                    node.targets
                    if isinstance(node, ast.Assign)
                    else [node.target]
                    if isinstance(node, ast.AnnAssign) and node.value is not None
                    else []
                )
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                        self._describe(info, t.attr, node.value, fn)
                # self.add_module("fc", m) / self.register_module("fc", m) / setattr(self, "fc", m) is self.fc = m
                call = node.value if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
                if call is None or len(call.args) < 2:
                    continue
                args = call.args
                if (
                    isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == me
                    and call.func.attr in ("add_module", "register_module")
                ):
                    name, value = args[0], args[1]
                elif (
                    isinstance(call.func, ast.Name)
                    and call.func.id == "setattr"
                    and len(args) == 3
                    and isinstance(args[0], ast.Name)
                    and args[0].id == me
                ):
                    name, value = args[1], args[2]
                else:
                    continue
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    self._describe(info, name.value, value, fn)
        return info

    def _is_mapping(self, arg: ast.AST) -> bool:
        """A dict literal or an `OrderedDict(...)` / `dict(...)` call (names to modules)."""
        if isinstance(arg, ast.Dict):
            return True
        if not isinstance(arg, ast.Call):
            return False
        path = self.imports.resolve(arg.func) or (arg.func.id if isinstance(arg.func, ast.Name) else "")
        return path in ("collections.OrderedDict", "typing.OrderedDict", "dict")

    def _container_entries(self, arg: ast.AST, fn: ast.FunctionDef | None) -> list[tuple[str | None, ast.AST]]:
        """(key, module) for each module a container constructor is given: a list/tuple, a comprehension's element,
        a local list built up by name (no keys), a dict literal, `OrderedDict([(name, module), ...])`,
        `OrderedDict({...})` or `dict(a=module)` (string keys where the code has them)."""

        def key(k: ast.AST | None) -> str | None:
            return k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None

        if isinstance(arg, (ast.List, ast.Tuple)):
            return [(None, e) for e in arg.elts]
        if isinstance(arg, ast.ListComp):
            return [(None, arg.elt)]
        if isinstance(arg, ast.Name):
            return [(None, e) for e in self._local_list(fn, arg.id)]
        if isinstance(arg, ast.Call) and self._is_mapping(arg):
            if arg.args and isinstance(arg.args[0], (ast.List, ast.Tuple)):
                return [
                    (key(e.elts[0]), e.elts[1])
                    for e in arg.args[0].elts
                    if isinstance(e, ast.Tuple) and len(e.elts) == 2
                ]
            if not arg.args:
                return [(k.arg, k.value) for k in arg.keywords if k.arg]
            arg = arg.args[0]
        if isinstance(arg, ast.Dict):
            return [(key(k), v) for k, v in zip(arg.keys, arg.values) if v is not None]
        return []

    def _local_list(self, fn: ast.FunctionDef | None, name: str) -> list[ast.AST]:
        """Module expressions a function puts into its local list `name` (`layers.append(nn.Linear(..))`)."""
        if fn is None:
            return []
        out: list[ast.AST] = []
        for node in _preorder(fn):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))
            ):
                out.extend(node.value.elts)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
            ):
                if node.func.attr == "append" and node.args:
                    out.append(node.args[0])
                elif node.func.attr == "insert" and len(node.args) == 2:
                    out.append(node.args[1])
                elif node.func.attr == "extend" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                    out.extend(node.args[0].elts)
            elif (
                isinstance(node, ast.AugAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == name
                and isinstance(node.op, ast.Add)
                and isinstance(node.value, (ast.List, ast.Tuple))
            ):
                out.extend(node.value.elts)  # layers += [nn.Linear(a, b), nn.ReLU()]
            elif (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.BinOp)
                and isinstance(node.value.op, ast.Add)
                and isinstance(node.value.left, ast.Name)
                and node.value.left.id == name
                and isinstance(node.value.right, (ast.List, ast.Tuple))
            ):
                out.extend(node.value.right.elts)  # layers = layers + [...]
        return out

    def _module_ops(self, value: ast.AST, fn: ast.FunctionDef | None = None) -> list[str] | str | None:
        """Ops a module-constructing expression applies when called; a local class name; or None."""
        if isinstance(value, ast.Starred) and isinstance(value.value, ast.Name):
            items: list[str] = []
            for e in self._local_list(fn, value.value.id):
                sub = self._module_ops(e, fn)
                items.extend(sub if isinstance(sub, list) else ["@" + sub] if isinstance(sub, str) else [])
            return items
        if isinstance(value, ast.Call):
            path = self.imports.resolve(value.func)
            op = _torch_op(path)
            if op and op[1]:
                name = op[0]
                if name in _IDENTITY_MODULES:
                    return []
                if name in _CONTAINERS:
                    items: list[str] = []
                    args = [
                        e
                        for a in value.args
                        for e in ([m for _, m in self._container_entries(a, fn)] if self._is_mapping(a) else [a])
                    ]
                    for a in args:
                        sub = self._module_ops(a, fn)
                        if isinstance(sub, list):
                            items.extend(sub)
                        elif isinstance(sub, str):
                            items.append("@" + sub)
                    return items
                return [name]
            if isinstance(value.func, ast.Name) and value.func.id in self.classes:
                return value.func.id
            if path == "functools.partial" and value.args:  # partial(F.leaky_relu, negative_slope=s)
                inner = _torch_op(self.imports.resolve(value.args[0]))
                if inner:
                    return [inner[0]]
            if path is not None:  # a module from another library (transformers): its path is the op
                return ["ext:" + path]
        elif isinstance(value, (ast.Attribute, ast.Name)):  # self.act = F.gelu: calling it applies the function
            op = _torch_op(self.imports.resolve(value))
            if op and not op[1]:
                return [op[0]]
        return None

    def _describe(self, info: _ModuleInfo, attr: str, value: ast.AST, fn: ast.FunctionDef) -> None:
        if isinstance(value, ast.Call):
            path = self.imports.resolve(value.func)
            op = _torch_op(path)
            if op and op[1] and op[0] in ("modulelist", "moduledict") and value.args:
                entries = self._container_entries(value.args[0], fn)
                info.attr_container[attr] = [self._module_ops(e, fn) or [] for _, e in entries]
                keys = [k for k, _ in entries]
                if keys and all(k is not None for k in keys):
                    info.attr_keys[attr] = keys  # type: ignore[assignment]
                return
        ops = self._module_ops(value, fn)
        if isinstance(ops, list):
            info.attr_ops[attr] = ops
        elif isinstance(ops, str):
            info.attr_class[attr] = ops

    # ---- the operator signature ----
    def _signature(self, tree: ast.Module, pre: dict[ast.AST, list[ast.AST]]) -> list[str]:
        # The model class: a class no other class uses (names are not trusted: class renames are a disguise);
        # among several such roots, the one whose forward runs the most operators.
        classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
        used = set()
        for c in classes:
            used |= {n.id for n in pre.get(c) or _preorder(c) if isinstance(n, ast.Name) and n.id != c.name}
        roots = [c for c in classes if c.name not in used] or classes
        best: list[str] = []
        for cls in roots:
            out: list[str] = []
            self._class_ops(cls.name, out, depth=0)
            if len(out) > len(best):
                best = out
        # a matmul followed by an add is a linear layer (`x @ w.T + b`, an einsum plus a bias, `F.linear` and
        # `nn.Linear` all read `linear`)
        out: list[str] = []
        for op in best:
            if op == "add" and out and out[-1] == "matmul":
                out[-1] = "linear"
            else:
                out.append(op)
        return out

    def _class_ops(self, cname: str, out: list[str], depth: int) -> None:
        cls = self._norm_classes.get(cname)
        if cls is None or depth > 6:
            return
        fn = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
        if fn is not None:
            self._fn_ops(cls, fn, out, depth, {})

    def _fn_ops(
        self, cls: ast.ClassDef | None, fn: ast.FunctionDef, out: list[str], depth: int, loopvars: dict[str, str]
    ) -> None:
        if depth > 6 or len(out) > 2000:
            return
        me = fn.args.args[0].arg if cls is not None and fn.args.args else None
        info = self.minfo.get(cls.name) if cls is not None else None
        methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)} if cls is not None else {}

        ctx = (cls, me, info, methods, loopvars, out, depth)
        for stmt in fn.body:
            self._visit_ops(stmt, ctx)

    def _visit_ops(self, node: ast.AST, ctx: tuple) -> None:
        """Post-order walk of a function body emitting its ops (a method, not a closure: a recursive closure is a
        reference cycle that keeps the whole tree alive until the cyclic GC runs)."""
        cls, me, info, methods, loopvars, out, depth = ctx
        # `for layer in self.layers:` and `[b(x) for b in self.branches]` call every module of the container
        loops = (
            [node]
            if isinstance(node, ast.For)
            else node.generators
            if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp))
            else []
        )
        for lp in loops:
            if not isinstance(lp.target, ast.Name):
                continue
            it = lp.iter
            if isinstance(it, ast.Attribute) and isinstance(it.value, ast.Name) and it.value.id == me:
                loopvars[lp.target.id] = it.attr
            if isinstance(it, ast.Call) and it.args and isinstance(it.args[0], ast.Attribute):
                loopvars[lp.target.id] = it.args[0].attr  # enumerate(self.layers) etc.
        for child in children(node):
            self._visit_ops(child, ctx)
        if not isinstance(node, ast.Call):
            return
        f = node.func
        if isinstance(f, ast.Name) and f.id.startswith("OP_"):
            op = f.id[3:]
            if op not in _META_OPS:
                out.append(op)
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == me and info:
            self._attr_call(info, f.attr, methods, cls, out, depth)
        elif isinstance(f, ast.Subscript) and isinstance(f.value, ast.Attribute) and info is not None:
            items = info.attr_container.get(f.value.attr, [])
            k = f.slice.value if isinstance(f.slice, ast.Constant) else None
            keys = info.attr_keys.get(f.value.attr)
            if isinstance(k, str) and keys and k in keys:
                items = [items[keys.index(k)]]  # self.blocks["act"](x): that module only (numbers are masked by now)
            for item in items:
                self._emit_items(item, out, depth)
        elif isinstance(f, ast.Name) and f.id in loopvars and info is not None:
            for item in info.attr_container.get(loopvars[f.id], []) or [info.attr_ops.get(loopvars[f.id], [])]:
                self._emit_items(item, out, depth)
        elif isinstance(f, ast.Name) and f.id in self._norm_functions:
            self._fn_ops(None, self._norm_functions[f.id], out, depth + 1, {})
        elif isinstance(f, ast.Name) and f.id in self._norm_classes:
            pass  # constructing a module inside forward: its ops run when it is called

    def _emit_items(self, item: list[str] | str, out: list[str], depth: int) -> None:
        if isinstance(item, str):  # a container element that is one of the file's module classes
            self._class_ops(item, out, depth + 1)
            return
        for op in item:
            if op.startswith("@"):
                self._class_ops(op[1:], out, depth + 1)
            elif op not in _META_OPS:
                out.append(op)

    def _attr_call(self, info: _ModuleInfo, attr: str, methods: dict, cls, out: list[str], depth: int) -> None:
        if attr in info.attr_ops:
            self._emit_items(info.attr_ops[attr], out, depth)
        elif attr in info.attr_class:
            self._class_ops(info.attr_class[attr], out, depth + 1)
        elif attr in methods:
            self._fn_ops(cls, methods[attr], out, depth + 1, {})


_preorder = preorder


def _is_num(node: ast.AST, value: float | None = None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    ok = isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    return ok and (value is None or node.value == value)


def _is_relu_clamp(op: str, rest: list[ast.expr], kws: list[ast.keyword]) -> bool:
    """clamp(x, 0) / clamp(x, min=0) / clamp_min(x, 0) (no upper bound) is relu(x); `rest` excludes x."""
    if op not in ("clamp", "clampmin"):
        return False
    if len(rest) == 1 and not kws:
        return _is_num(rest[0], 0)
    if not rest and len(kws) == 1 and kws[0].arg == "min":
        return _is_num(kws[0].value, 0)
    return False


def _identity_arg(op: str, args: list[ast.expr]) -> int | None:
    """For add(x, 0), mul(x, 1), div(x, 1), sub(x, 0), pow(x, 1), mul(1, x), add(0, x): the index of x."""
    if len(args) != 2:
        return None
    if op in ("mul", "div", "pow") and _is_num(args[1], 1) or op in ("add", "sub") and _is_num(args[1], 0):
        return 0
    if op == "mul" and _is_num(args[0], 1) or op == "add" and _is_num(args[0], 0):
        return 1
    return None


def _call(op: str, args: list[ast.expr]) -> ast.expr:
    if op in ARITH_OPS and args and all(is_masked(a) for a in args):
        return args[0]  # arithmetic on literals (`16 * 5`, `torch.mul(16, 5)`) is one constant
    return ast.Call(func=ast.Name(id=f"OP_{op}", ctx=ast.Load()), args=args, keywords=[])


_MAX_UNROLL = 8
_UNROLL_NODES = 400  # AST nodes of a loop body that may be copied (<= 8 times)


class _Unrolled(Bind):
    """One loop item bound to the loop variable; immediately called lambdas applied to plain names
    (`(lambda t: t + b)(x)` -> `x + b`)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Lambda) and not node.keywords and all(isinstance(a, ast.Name) for a in node.args):
            params = simple_params(f)  # type: ignore[arg-type]
            if params is not None and len(params) == len(node.args):
                return Bind(dict(zip(params, node.args))).visit(copy.deepcopy(f.body))
        return node


def _unroll(s: ast.stmt, before: list[ast.stmt]) -> list[ast.stmt] | None:
    """`for f in [a, b, c]: body` (a literal list or tuple, or a name bound to one just before in the same block)
    and `for _ in range(k)` with a literal k <= 8, without break/continue/else: the body once per item, so a
    sequence of steps written as a loop reads as the steps."""
    if not isinstance(s, ast.For) or s.orelse or not isinstance(s.target, ast.Name):
        return None
    inner = list(ast.walk(ast.Module(body=s.body, type_ignores=[])))
    # No break/continue; no nested loop (nested unrolling would multiply: 8 ** depth); a bounded copy size.
    if len(inner) > _UNROLL_NODES or any(
        isinstance(n, (ast.Break, ast.Continue, ast.For, ast.AsyncFor, ast.While)) for n in inner
    ):
        return None
    it = s.iter
    if isinstance(it, ast.Name):  # steps = [...] earlier in this block, not touched since (no append, no rebinding)
        for k in range(len(before) - 1, -1, -1):
            prev = before[k]
            if (
                isinstance(prev, ast.Assign)
                and len(prev.targets) == 1
                and isinstance(prev.targets[0], ast.Name)
                and prev.targets[0].id == it.id
            ):
                later = ast.Module(body=before[k + 1 :], type_ignores=[])
                if not any(isinstance(n, ast.Name) and n.id == it.id for n in ast.walk(later)):
                    it = prev.value
                break
    if (
        isinstance(it, (ast.List, ast.Tuple))
        and 0 < len(it.elts) <= _MAX_UNROLL
        and not any(isinstance(e, ast.Starred) for e in it.elts)
    ):
        items: list[ast.expr] = list(it.elts)
    elif (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and len(it.args) == 1
        and isinstance(it.args[0], ast.Constant)
        and isinstance(it.args[0].value, int)
        and 0 < it.args[0].value <= _MAX_UNROLL
    ):
        items = [ast.Constant(i) for i in range(it.args[0].value)]
    else:
        return None
    out: list[ast.stmt] = []
    for item in items:
        sub = _Unrolled({s.target.id: item})
        out.extend(ast.fix_missing_locations(sub.visit(copy.deepcopy(st))) for st in s.body)
    return out


_HAS_BODY = frozenset(
    c
    for c in vars(ast).values()
    if isinstance(c, type) and issubclass(c, ast.AST) and ("body" in c._fields or "orelse" in c._fields)
)


class _Normalizer(FastTransformer):
    """Pass 1: strip docstrings/no-op statements/imports, resolve API spellings, mask numbers."""

    def __init__(self, canon: Canonicalizer) -> None:
        self.c = canon
        self.cls_stack: list[str] = []
        self.self_name: str | None = None
        self.fn_names: list[list[ast.Name]] = []

    # statements ---------------------------------------------------------------
    def _clean_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out = []
        for s in body:
            if isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass, ast.Assert)):
                continue
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue  # docstrings and stray literals
            if (
                isinstance(s, ast.Expr)
                and isinstance(s.value, ast.Call)
                and isinstance(s.value.func, ast.Name)
                and s.value.func.id == "print"
            ):
                continue
            if (
                isinstance(s, ast.If)
                and isinstance(s.test, ast.Compare)
                and isinstance(s.test.left, ast.Name)
                and s.test.left.id == "__name__"
            ):
                continue  # `if __name__ == "__main__":` demo code is not part of the task
            if isinstance(s, ast.If) and isinstance(s.test, ast.Constant):
                out.extend(self._clean_body(s.body if s.test.value else s.orelse))
                continue
            if isinstance(s, (ast.With, ast.AsyncWith)) and not any(i.optional_vars for i in s.items):
                out.extend(self._clean_body(s.body))  # `with torch.no_grad():` and the like: the body is the step
                continue
            unrolled = _unroll(s, out)
            if unrolled is not None:
                out.extend(self._clean_body(unrolled))
                continue
            out.append(s)
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node.__class__ in _HAS_BODY:  # statement lists (expressions: IfExp/Lambda bodies are not lists)
            if isinstance(node.body, list):
                node.body = self._clean_body(node.body)
            if isinstance(getattr(node, "orelse", None), list):
                node.orelse = self._clean_body(node.orelse)
        return super().generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        had_bases = bool(node.bases)
        node.bases, node.decorator_list, node.keywords = [], [], []
        self.cls_stack.append(node.name)
        self.generic_visit(node)
        self.cls_stack.pop()
        node.bases = [ast.Name(id="MOD_module", ctx=ast.Load())] if had_bases else []
        self.c._norm_classes[node.name] = node
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        prev = self.self_name
        if self.cls_stack and node.args.args:
            self.self_name = node.args.args[0].arg
        node.returns = None
        node.decorator_list = []
        for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
            a.annotation = None
        self.fn_names.append([])
        self.generic_visit(node)
        self.c.fn_names[node] = self.fn_names.pop()  # its plain names, for inline_module_constants (no re-walk)
        self.self_name = prev
        if not self.cls_stack:
            self.c._norm_functions[node.name] = node
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.generic_visit(node)
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST | None:
        op = _BINOPS.get(type(node.op), "binop")
        if op in ("mul", "div", "pow") and _is_num(node.value, 1) or op in ("add", "sub") and _is_num(node.value, 0):
            return None
        self.generic_visit(node)
        load = copy.deepcopy(node.target)
        for n in ast.walk(load):
            if hasattr(n, "ctx"):
                n.ctx = ast.Load()
        return ast.copy_location(ast.Assign(targets=[node.target], value=self._binop(op, load, node.value)), node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        self.generic_visit(node)
        # self.act = nn.ReLU(): calls are inlined as OP_relu(x), so an argument-free module leaves no trace
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and (
                isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id.startswith("MOD_")
                and not node.value.args
                or isinstance(node.value, ast.Name)
                and node.value.id == "MOD_identity"
            )
        ):
            return None
        # `x = x` after identity removal is a no-op line
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name)
            and node.targets[0].id == node.value.id
        ):
            return None
        return node

    # expressions --------------------------------------------------------------
    def _binop(self, op: str, left: ast.expr, right: ast.expr) -> ast.expr:
        # identity arithmetic: x * 1, x / 1, x + 0, x - 0, x ** 1
        if op in ("mul", "div", "pow") and _is_num(right, 1) or op in ("add", "sub") and _is_num(right, 0):
            return left
        if op == "mul" and _is_num(left, 1) or op == "add" and _is_num(left, 0):
            return right
        return _call(op, [left, right])  # literal arithmetic folds there

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        op = _BINOPS.get(type(node.op), "binop")
        # identity arithmetic is recognised on the literal, before numbers are masked
        if op in ("mul", "div", "pow") and _is_num(node.right, 1) or op in ("add", "sub") and _is_num(node.right, 0):
            return self.visit(node.left)
        if op == "mul" and _is_num(node.left, 1) or op == "add" and _is_num(node.left, 0):
            return self.visit(node.right)
        self.generic_visit(node)
        return self._binop(op, node.left, node.right)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.USub):
            if is_masked(node.operand):
                return node.operand
            return _call("neg", [node.operand])
        if isinstance(node.op, ast.UAdd):
            return node.operand
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool):
            return ast.Name(id="NUM", ctx=ast.Load())
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        path = self.c.imports.resolve(node)
        if path is not None:
            op = _torch_op(path)
            # A bare reference to a torch function/class (e.g. passed as an activation) keeps its op name.
            name = f"MOD_{op[0]}" if op else "P_" + path.replace(".", "_")
            return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if node.arg.startswith(_RESERVED):
            node.arg = "u" + node.arg
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.startswith(_RESERVED) and node.id not in self.c.imports.alias:
            node.id = "u" + node.id  # a user's own `P_l` must not read as one of our placeholders
            if self.fn_names:
                self.fn_names[-1].append(node)
            return node
        if node.id in self.c.imports.alias:
            path = self.c.imports.alias[node.id]
            op = _torch_op(path)
            name = f"MOD_{op[0]}" if op else "P_" + path.replace(".", "_")
            return ast.copy_location(ast.Name(id=name, ctx=node.ctx), node)
        if self.fn_names:
            self.fn_names[-1].append(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        # super(Model, self).__init__() -> super().__init__()
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
        ):
            func.value.args = []
        path = self.c.imports.resolve(func)
        raw_args = list(node.args)
        node.args = [self.visit(a) for a in node.args]
        kws = [k for k in node.keywords if k.arg != "inplace"]
        # keyword names are dropped (positional and keyword spellings agree); values kept in name order
        kw_values = [self.visit(k.value) for k in sorted(kws, key=lambda k: k.arg or "")]
        args = node.args + kw_values
        op = _torch_op(path)
        if op is not None:
            name, is_class = op
            if is_class:
                if name in _IDENTITY_MODULES:
                    return ast.Name(id="MOD_identity", ctx=ast.Load())
                call = ast.Call(func=ast.Name(id=f"MOD_{name}", ctx=ast.Load()), args=args, keywords=[])
                if len(args) > 1:
                    self.c.mod_calls.append(call)
                return call
            if name in _IDENTITY_METHODS and len(args) == 1:
                return args[0]
            if raw_args and _is_relu_clamp(name, raw_args[1:], kws):
                return _call("relu", node.args[:1])
            if name == "einsum" and len(node.args) == 3 and not kws:
                return _call("matmul", node.args[1:])  # a two-operand contraction is a (batched) matmul
            keep = _identity_arg(name, raw_args)
            if keep is not None and not kws:
                return node.args[keep]
            return _call(name, args)
        if path is not None:  # a non-torch library call (transformers, math, numpy)
            return ast.Call(func=ast.Name(id="P_" + path.replace(".", "_"), ctx=ast.Load()), args=args, keywords=[])
        if isinstance(func, ast.Attribute):
            recv = func.value
            is_self = isinstance(recv, ast.Name) and recv.id == self.self_name
            if is_self and self.cls_stack:
                info = self.c.minfo.get(self.cls_stack[-1])
                ops = info.attr_ops.get(func.attr) if info is not None else None
                if ops is not None and not any(o.startswith("@") for o in ops):
                    # self.act(x) with self.act = nn.ReLU(): the same tokens as torch.relu(x)
                    if not ops:
                        return args[0] if args else node
                    out: ast.expr = _call(ops[0], args)
                    for o in ops[1:]:
                        out = _call(o, [out])
                    out._from_attr = func.attr  # type: ignore[attr-defined]  # orders __init__ by first use
                    return out
            if is_self:  # self.conv(x), self.helper(x): attribute calls keep their (renamed) name
                node.func = func
                node.keywords = []
                node.args = args
                return node
            if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super":
                node.keywords = []
                node.args = args
                return node
            recv = self.visit(recv)
            m = norm_op(func.attr)
            if m in _IDENTITY_METHODS:
                return recv
            if _is_relu_clamp(m, raw_args, kws):
                return _call("relu", [recv])
            if not kws and _identity_arg(m, [func.value, *raw_args]) == 0:
                return recv  # x.add(0), x.mul(1.0)
            return _call(m, [recv, *args])
        if (
            isinstance(func, ast.Name)
            and self.c.imports.star
            and func.id not in self.c.classes
            and func.id not in self.c.functions
            and func.id not in _BUILTINS
            and func.id[:1].islower()
        ):
            return _call(norm_op(func.id), args)  # relu(x) after `from torch.nn.functional import *`
        node.func = self.visit(func)
        # nn.ReLU()(x): calling a freshly built module is calling its op
        if (
            isinstance(node.func, ast.Call)
            and isinstance(node.func.func, ast.Name)
            and node.func.func.id.startswith("MOD_")
        ):
            return _call(node.func.func.id[4:], args)
        if isinstance(node.func, ast.Name) and node.func.id == "MOD_identity":
            return args[0] if args else node.func
        node.args = args
        node.keywords = []
        return node


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in bfs(node) if isinstance(n, ast.Name)}


def _targets(stmt: ast.stmt) -> tuple[set[str], bool]:
    """Local names a statement binds, and whether it also writes somewhere else (attribute/subscript)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
        if len(targets) == 1:  # fast paths of the usual targets: `x = ...`, `self.x = ...`
            t = targets[0]
            if t.__class__ is ast.Name:
                return ({t.id}, False) if isinstance(t.ctx, ast.Store) else (set(), False)
            if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name:
                return set(), isinstance(t.ctx, ast.Store)
        names, other = set(), False
        for t in stmt.targets:
            for n in bfs(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    names.add(n.id)
                elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, ast.Store):
                    other = True
        return names, other
    return set(), True


def _stmt_uses(stmt: ast.stmt) -> tuple[set[str], tuple[dict[str, int], set[str]]]:
    """One walk of a statement: the names it reads for liveness (an assignment's value, any other statement
    whole), and its (load counts, bound names) for inlining."""
    if isinstance(stmt, ast.Assign):
        vn = names(stmt.value)
        alln = [n for t in stmt.targets for n in names(t)] + vn
        read = {n.id for n in vn}
    else:
        alln = names(stmt)
        read = {n.id for n in alln}
    loads: dict[str, int] = {}
    binds: set[str] = set()
    for n in alln:
        if isinstance(n.ctx, ast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1
        else:
            binds.add(n.id)
    return read, (loads, binds)


def _eliminate_dead(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[tuple[dict[str, int], set[str]]]]:
    """Drop assignments to local names that nothing after them reads (inserted no-op lines). Returns the kept
    statements and their name uses (for _inline_single_use, so that no statement is walked twice)."""
    live: set[str] = set()
    kept: list[ast.stmt] = []
    kept_uses = []
    for stmt in reversed(body):
        names_, other = _targets(stmt)
        if isinstance(stmt, ast.Assign) and not other and names_ and not (names_ & live):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
            continue  # a bare name on its own line
        if isinstance(stmt, ast.Assign) and not other:
            live -= names_
        read, uses = _stmt_uses(stmt)
        live |= read
        kept.append(stmt)
        kept_uses.append(uses)
    return kept[::-1], kept_uses[::-1]


_SIMPLE = (ast.Assign, ast.Return, ast.Expr)


def _single_name_assign(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


class _Subst(FastTransformer):
    def __init__(self, name: str, expr: ast.expr) -> None:
        self.name, self.expr = name, expr

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return self.expr
        return node


def _name_uses(stmt: ast.stmt) -> tuple[dict[str, int], set[str]]:
    loads: dict[str, int] = {}
    binds: set[str] = set()
    for n in bfs(stmt):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                loads[n.id] = loads.get(n.id, 0) + 1
            else:
                binds.add(n.id)
    return loads, binds


def _inline_single_use(
    body: list[ast.stmt], uses: list[tuple[dict[str, int], set[str]]] | None = None
) -> list[ast.stmt]:
    """Straight-line dataflow as one expression: `h = conv(x); h = relu(h); return h + b` and
    `return relu(conv(x)) + b` read the same. Only temporaries used exactly once, by a simple statement, before
    the name is bound again, are inlined (no expression is duplicated, so no operator is counted twice)."""
    body = list(body)
    uses = list(uses) if uses is not None else [_name_uses(s) for s in body]
    i = 0
    while i < len(body):
        name = _single_name_assign(body[i])
        if name is None:
            i += 1
            continue
        count, target, ok = 0, None, True
        for j in range(i + 1, len(body)):
            loads, binds = uses[j]
            if name in loads:
                count += loads[name]
                target = j
                ok = ok and isinstance(body[j], _SIMPLE)
            if name in binds:
                ok = ok and isinstance(body[j], _SIMPLE)
                break
            if count > 1:
                break
        if ok and count == 1 and target is not None:
            value = body[i].value
            body[target] = _Subst(name, value).visit(body[target])
            # the target now reads what the inlined expression read
            loads, binds = uses[target]
            loads = dict(loads)
            loads.pop(name, None)
            for k, v in uses[i][0].items():
                loads[k] = loads.get(k, 0) + v
            uses[target] = (loads, binds)
            del body[i]
            del uses[i]
            continue
        i += 1
    return body


def _compose(node: ast.AST, pre: dict[ast.AST, list[ast.AST]]) -> list[ast.AST]:
    """preorder(node), reusing the lists already walked for its children."""
    out = [node]
    for child in children(node):
        sub = pre.get(child)
        out.extend(sub if sub is not None else _preorder(child))
    return out


def _first_use_rank(lists: list[list[ast.AST]], wanted: set[str], attr_of: str | None = None) -> dict[str, int]:
    """Rank of each wanted name (or attribute of `attr_of`) by its first use in the given preorder lists."""
    rank: dict[str, int] = {}
    if not wanted:
        return rank
    Name, Attribute = ast.Name, ast.Attribute
    for nodes in lists:
        for n in nodes:
            cls = n.__class__
            if attr_of is None:
                if cls is Name and n.id in wanted and n.id not in rank:
                    rank[n.id] = len(rank)
            elif cls is Attribute:
                v = n.value
                if isinstance(v, Name) and v.id == attr_of and n.attr in wanted and n.attr not in rank:
                    rank[n.attr] = len(rank)
            elif cls is ast.Call:  # only calls carry _from_attr (self.act(x) inlined as OP_relu(x))
                key = getattr(n, "_from_attr", None)
                if key in wanted and key not in rank:
                    rank[key] = len(rank)
    return rank


def _shape_key(node: ast.AST, params: list[str]) -> str:
    parts = []
    for n in _preorder(node):
        if isinstance(n, ast.Name):
            parts.append(
                f"p{params.index(n.id)}"
                if n.id in params
                else n.id
                if n.id.startswith(("OP_", "MOD_", "P_")) or n.id == "NUM"
                else "_"
            )
        elif isinstance(n, ast.Constant):
            parts.append(repr(n.value))
        elif not isinstance(n, (ast.Load, ast.Store, ast.Attribute)):
            parts.append(type(n).__name__)
    return " ".join(parts)


def _reorder(tree: ast.Module, pre: dict[ast.AST, list[ast.AST]]) -> ast.Module:
    """Emission order independent of definition order: forward first, then helpers, then __init__ with its
    attribute assignments sorted by first use; module variables sorted by first use in the functions.
    Fills `pre` with the preorder lists of every method, class and top-level function (final order)."""
    for cls in [n for n in tree.body if isinstance(n, ast.ClassDef)]:
        methods = [m for m in cls.body if isinstance(m, ast.FunctionDef)]
        others = [s for s in cls.body if not isinstance(s, ast.FunctionDef)]
        fwd = [m for m in methods if m.name == "forward"]
        init = [m for m in methods if m.name == "__init__"]
        rest = [m for m in methods if m.name not in ("forward", "__init__")]
        for m in fwd + rest:
            pre[m] = _preorder(m)
        called = _first_use_rank(
            [pre[m] for m in fwd],
            {m.name for m in rest},
            attr_of=fwd[0].args.args[0].arg if fwd and fwd[0].args.args else "self",
        )
        rest.sort(key=lambda m: called.get(m.name, len(called)))
        for m in init:
            me = m.args.args[0].arg if m.args.args else "self"
            params = [a.arg for a in m.args.args]

            def simple(s: ast.stmt) -> bool:
                return (
                    isinstance(s, ast.Assign)
                    and len(s.targets) == 1
                    and isinstance(s.targets[0], ast.Attribute)
                    and isinstance(s.targets[0].value, ast.Name)
                    and s.targets[0].value.id == me
                )

            attrs = {s.targets[0].attr for s in m.body if simple(s)}
            rank = _first_use_rank(
                [pre[f] for f in fwd + rest],
                attrs,
                attr_of=fwd[0].args.args[0].arg if fwd and fwd[0].args.args else me,
            )

            def key(s: ast.Assign) -> tuple:
                r = rank.get(s.targets[0].attr)
                # attributes no method reads: by their value's shape, with parameters by position (rename-proof)
                return (0, r, "") if r is not None else (1, 0, _shape_key(s.value, params))

            body, run = [], []
            for s in m.body + [None]:  # sort each run of consecutive `self.x = ...` lines
                if s is not None and simple(s):
                    run.append(s)
                    continue
                body.extend(sorted(run, key=key))
                run = []
                if s is not None:
                    body.append(s)
            m.body = body
            pre[m] = _preorder(m)
        cls.body = others + fwd + rest + init
        pre[cls] = _compose(cls, pre)
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assigns = [n for n in tree.body if isinstance(n, ast.Assign)]
    rest = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))]
    funcs.sort(key=lambda f: (f.name not in ("get_inputs", "get_init_inputs"), f.name != "get_inputs"))
    var_names = set().union(*(_targets(a)[0] for a in assigns)) if assigns else set()
    for f in funcs:
        pre[f] = _preorder(f)
    rank = _first_use_rank([pre[n] for n in funcs + classes], var_names)

    def key(a: ast.Assign) -> int:
        names = _targets(a)[0]
        return min((rank.get(n, len(rank)) for n in names), default=len(rank))

    # Variables defined from other variables must stay after them: order by (first-use, original) only among
    # independent assignments, which is every literal-valued one.
    literal = [a for a in assigns if not (_names_in(a.value) & var_names)]
    dependent = [a for a in assigns if a not in literal]
    literal.sort(key=key)
    tree.body = classes + funcs + literal + dependent + rest
    return tree


def _local_names(
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, nodes: list[ast.AST] | None = None
) -> tuple[list[str], set[str]]:
    a = fn.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    stores = set()
    for n in nodes if nodes is not None else _preorder(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores.add(n.id)
    return params, stores


class _Renamer(FastVisitor):
    """Rename every user identifier in emission order, numbered per scope so that one inserted name cannot shift
    the names of the whole file: module-level names g0.., a function's parameters p0.. and locals v0.., a
    class's attributes a0.."""

    def __init__(self, pre: dict[ast.AST, list[ast.AST]] | None = None) -> None:
        self.pre = pre or {}  # preorder lists walked before renaming (a function's names are read before its
        # subtree is renamed, so lists of the unrenamed tree give the same local names)
        self.globals: dict[str, str] = {}
        self.scopes: list[tuple[dict[str, str], set[str]]] = []
        self.attr_maps: list[dict[str, str]] = [{}]

    def _name(self, name: str) -> str:
        if name in _KEEP_NAMES or name.startswith(("OP_", "MOD_", "P_")):
            return name
        for mapping, local in reversed(self.scopes):
            if name in mapping:
                return mapping[name]
            if name in local:
                mapping[name] = f"v{sum(1 for k in mapping.values() if k.startswith('v'))}"
                return mapping[name]
        if name in _BUILTINS:
            return name
        if name not in self.globals:
            self.globals[name] = f"g{len(self.globals)}"
        return self.globals[name]

    def _attr(self, name: str) -> str:
        amap = self.attr_maps[-1]
        if name not in amap:
            amap[name] = f"a{len(amap)}"
        return amap[name]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        node.name = self._name(node.name)
        self.attr_maps.append({})
        for b in node.bases:
            self.visit(b)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not stmt.name.startswith("__"):  # methods are attributes of the class (self.helper(x))
                    stmt.name = self._attr(stmt.name)
                self._function(stmt)
            else:
                self.visit(stmt)
        self.attr_maps.pop()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        params, stores = _local_names(node, self.pre.get(node))
        mapping = {p: f"p{i}" for i, p in enumerate(params)}
        self.scopes.append((mapping, stores - set(params)))
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            a.arg = mapping[a.arg]
        for a in (node.args.vararg, node.args.kwarg):
            if a is not None:
                a.arg = mapping[a.arg]
        for d in node.args.defaults + node.args.kw_defaults:
            if d is not None:
                self.visit(d)
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self.visit(stmt)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if not node.name.startswith("__"):
            node.name = self._name(node.name)
        self._function(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node)

    def visit_Name(self, node: ast.Name) -> None:
        node.id = self._name(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.generic_visit(node)
        if not node.attr.startswith("__"):
            node.attr = self._attr(node.attr)

    def visit_keyword(self, node: ast.keyword) -> None:
        node.arg = None if node.arg is None else "k"
        self.generic_visit(node)


def canonicalize(code: str, light: bool = False) -> Canonical:
    """The canonical views of `code`; `ok=False` with a reason code when it does not parse. `light`: the canonical
    tokens only (what dedup compares)."""
    if not isinstance(code, str) or not code.strip():
        return Canonical(False, "empty_code")
    if len(code) > MAX_CODE_CHARS:  # hostile input: the AST of megabytes of code costs seconds and gigabytes
        return Canonical(False, "too_large")
    return Canonicalizer(code, light).run()
