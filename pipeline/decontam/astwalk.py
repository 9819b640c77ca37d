"""Faster drop-ins for the `ast` module's walkers (the canonicalizer walks every tree about ten times).

`ast.walk`, `ast.iter_child_nodes` and `ast.NodeTransformer` look up every field of every node through
`iter_fields` and dispatch through a string concatenation and `getattr` per node; a recursive generator
(`yield from`) costs O(depth) per node. Here the fields that can hold nodes are computed once per node class, the
visitor method once per (visitor class, node class), and walks build lists iteratively. Orders are exactly those
of the `ast` module (`preorder`: depth-first as `ast.NodeVisitor` visits; `bfs`: breadth-first as `ast.walk`).
"""

from __future__ import annotations

import ast
from typing import Callable

AST = ast.AST
# Fields that hold identifiers, flags or constants, never nodes (skipped without a getattr).
_SCALAR = frozenset(
    {
        "id",
        "attr",
        "name",
        "arg",
        "module",
        "kind",
        "type_comment",
        "level",
        "conversion",
        "is_async",
        "simple",
        "tag",
        "lineno",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that can hold nodes or lists of nodes, in `_fields` order."""
    f = _FIELDS.get(cls)
    if f is None:
        scalar = _SCALAR | ({"value"} if cls in (ast.Constant, ast.MatchSingleton) else set())
        f = _FIELDS[cls] = tuple(x for x in cls._fields if x not in scalar)
    return f


def children(node: AST) -> list[AST]:
    """ast.iter_child_nodes as a list."""
    out = []
    fields = _FIELDS.get(node.__class__) or node_fields(node.__class__)
    for f in fields:
        v = getattr(node, f, None)
        if isinstance(v, list):
            for x in v:
                if isinstance(x, AST):
                    out.append(x)
        elif isinstance(v, AST):
            out.append(v)
    return out


def preorder(root: AST) -> list[AST]:
    """Every node of the subtree, depth-first in field order (the order of a recursive iter_child_nodes walk)."""
    out: list[AST] = []
    stack = [root]
    pop, push, add, get = stack.pop, stack.extend, out.append, _FIELDS.get
    while stack:
        node = pop()
        add(node)
        cls = node.__class__
        fields = get(cls)
        if fields is None:
            fields = node_fields(cls)
        if not fields:
            continue
        kids = []
        for f in fields:
            v = getattr(node, f, None)
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, AST):
                        kids.append(x)
            elif isinstance(v, AST):
                kids.append(v)
        if kids:
            kids.reverse()
            push(kids)
    return out


def bfs(root: AST) -> list[AST]:
    """Every node of the subtree in ast.walk's (breadth-first) order."""
    out: list[AST] = [root]
    i = 0
    get = _FIELDS.get
    while i < len(out):
        node = out[i]
        i += 1
        cls = node.__class__
        fields = get(cls)
        if fields is None:
            fields = node_fields(cls)
        for f in fields:
            v = getattr(node, f, None)
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, AST):
                        out.append(x)
            elif isinstance(v, AST):
                out.append(v)
    return out


def names(root: AST) -> list[ast.Name]:
    """Every ast.Name of the subtree (breadth-first)."""
    Name = ast.Name
    return [n for n in bfs(root) if n.__class__ is Name]


# Statement-level walk: imports, definitions and assignments are statements, so walks that look only for them
# need not enter expressions (most of a tree). The order is the one ast.walk gives those nodes.
_STMT_LISTS = {
    ast.Module: ("body",),
    ast.FunctionDef: ("body",),
    ast.AsyncFunctionDef: ("body",),
    ast.ClassDef: ("body",),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.If: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "handlers", "orelse", "finalbody"),
    ast.ExceptHandler: ("body",),
    ast.Match: ("cases",),
    ast.match_case: ("body",),
}
if hasattr(ast, "TryStar"):
    _STMT_LISTS[ast.TryStar] = ("body", "handlers", "orelse", "finalbody")


def statements_bfs(root: AST) -> list[AST]:
    """Statements (and except handlers / match cases) of the subtree, in ast.walk's order."""
    out: list[AST] = [root]
    i = 0
    get = _STMT_LISTS.get
    while i < len(out):
        node = out[i]
        i += 1
        fields = get(node.__class__)
        if fields:
            for f in fields:
                out.extend(getattr(node, f, None) or ())
    return out


class FastTransformer(ast.NodeTransformer):
    """ast.NodeTransformer with the visitor method cached per node class and fieldless leaves (contexts,
    operators) not visited when the transformer has no method for them (they would be returned unchanged)."""

    _dispatch: dict[type, Callable | None]

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls._dispatch = {}

    def _method(self, cls: type) -> Callable | None:
        me = type(self)
        fn = getattr(me, "visit_" + cls.__name__, None)
        if fn is None:
            # a node without fields that only generic_visit would see comes back unchanged: None = skip
            fn = None if not cls._fields else me.generic_visit
        me._dispatch[cls] = fn
        return fn

    def visit(self, node: AST):
        cls = node.__class__
        try:
            fn = self._dispatch[cls]
        except KeyError:
            fn = self._method(cls)
        return node if fn is None else fn(self, node)

    def generic_visit(self, node: AST) -> AST:
        dispatch = self._dispatch
        for f in _FIELDS.get(node.__class__) or node_fields(node.__class__):
            old = getattr(node, f, None)
            if isinstance(old, list):
                new = []
                for v in old:
                    if isinstance(v, AST):
                        cls = v.__class__  # self.visit(v), inlined: this loop runs once per node of the tree
                        try:
                            fn = dispatch[cls]
                        except KeyError:
                            fn = self._method(cls)
                        if fn is not None:
                            v = fn(self, v)
                            if v is None:
                                continue
                            if not isinstance(v, AST):
                                new.extend(v)
                                continue
                    new.append(v)
                old[:] = new
            elif isinstance(old, AST):
                cls = old.__class__
                try:
                    fn = dispatch[cls]
                except KeyError:
                    fn = self._method(cls)
                if fn is None:
                    continue
                nn = fn(self, old)
                if nn is None:
                    delattr(node, f)
                elif nn is not old:
                    setattr(node, f, nn)
        return node


class FastVisitor(ast.NodeVisitor):
    """ast.NodeVisitor with the visitor method cached per node class."""

    _dispatch: dict[type, Callable | None]

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls._dispatch = {}

    def visit(self, node: AST):
        cls = node.__class__
        try:
            fn = self._dispatch[cls]
        except KeyError:
            me = type(self)
            fn = getattr(me, "visit_" + cls.__name__, None)
            if fn is None:
                fn = None if not cls._fields else me.generic_visit
            me._dispatch[cls] = fn
        return None if fn is None else fn(self, node)

    def generic_visit(self, node: AST) -> None:
        for f in _FIELDS.get(node.__class__) or node_fields(node.__class__):
            v = getattr(node, f, None)
            if isinstance(v, list):
                for x in v:
                    if isinstance(x, AST):
                        self.visit(x)
            elif isinstance(v, AST):
                self.visit(v)


class _Close:
    """The closing half of ast._Unparser.delimit without a generator-based context manager."""

    __slots__ = ("u", "end")

    def __init__(self, u: ast._Unparser, end: str) -> None:  # type: ignore[name-defined]
        self.u, self.end = u, end

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        self.u._source.append(self.end)
        return False


class _Nothing:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        return False


_NOTHING = _Nothing()


class _FastUnparser(ast._Unparser):  # type: ignore[name-defined,misc]
    """ast.unparse with the visitor method cached per node class and the parenthesis context managers as plain
    objects (the same output: only the dispatch and the bookkeeping are cheaper, ~30%)."""

    _dispatch: dict[type, Callable] = {}

    def traverse(self, node) -> None:
        if isinstance(node, list):
            for item in node:
                self.traverse(item)
            return
        cls = node.__class__
        fn = self._dispatch.get(cls)
        if fn is None:
            fn = getattr(type(self), "visit_" + cls.__name__, None)
            if fn is None:  # what ast.NodeVisitor.visit would do
                fn = ast.NodeVisitor.visit
            self._dispatch[cls] = fn
        fn(self, node)

    def delimit(self, start: str, end: str) -> _Close:
        self._source.append(start)
        return _Close(self, end)

    def delimit_if(self, start: str, end: str, condition: bool):
        if condition:
            self._source.append(start)
            return _Close(self, end)
        return _NOTHING

    def require_parens(self, precedence, node):
        if self._precedences.get(node, ast._Precedence.TEST) > precedence:  # type: ignore[attr-defined]
            self._source.append("(")
            return _Close(self, ")")
        return _NOTHING


def unparse(tree: AST) -> str:
    """ast.unparse(tree), faster."""
    return _FastUnparser().visit(tree)


def dotted(node: AST) -> list[str] | None:
    """The parts of a dotted name (`torch.nn.functional.relu` -> ["torch", "nn", "functional", "relu"]), or None
    when the expression is not a plain chain of attributes on a name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None
