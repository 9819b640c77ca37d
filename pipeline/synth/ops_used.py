"""The seed operators a task's code actually uses, read from its AST (not the ones a prompt asked for)."""

from __future__ import annotations

import ast

from pipeline.decontam.astwalk import dotted

# Python operators on tensors and the torch functions they are.
_BINOPS = {
    ast.Add: "torch.add",
    ast.Sub: "torch.sub",
    ast.Mult: "torch.mul",
    ast.Div: "torch.div",
    ast.MatMult: "torch.matmul",
    ast.Pow: "torch.pow",
}
_SETUP = {"get_inputs", "get_init_inputs"}  # input construction is not the task's computation


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module path, from the file's imports (seed operators come from torch and a few libraries)."""
    out = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def ops_in_code(code: str, known: set[str] | frozenset[str]) -> list[str]:
    """Catalog operator names (`known`) the code calls, constructs or applies, in evaluation order; [] when the
    code does not parse. Tensor methods (`x.relu()`) count as their torch function (`torch.relu`)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    alias = _aliases(tree)
    found: list[str] = []

    def add(name: str) -> None:
        if name in known and name not in found:
            found.append(name)

    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in _SETUP:
            skip.update(id(n) for n in ast.walk(node))
    nodes = [n for n in ast.walk(tree) if id(n) not in skip and isinstance(n, (ast.BinOp, ast.Call))]
    for node in sorted(nodes, key=lambda n: (n.end_lineno, n.end_col_offset)):  # evaluation order
        if isinstance(node, ast.BinOp):
            if type(node.op) in _BINOPS:
                add(_BINOPS[type(node.op)])
            continue
        parts = dotted(node.func)
        if parts and parts[0] in alias:
            add(".".join([alias[parts[0]], *parts[1:]]))
        elif isinstance(node.func, ast.Attribute) and (not parts or parts[0] != "self"):
            # a method on a tensor: x.relu(), f(x).sum(dim=1)
            add(f"torch.{node.func.attr}")
            add(f"torch.nn.functional.{node.func.attr}")
    return found
