"""Content identity of task code: reruns produce the same ids, so every stage is idempotent."""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]


def canonical_code(code: str) -> str:
    """Code with comments, docstrings and formatting removed (via the AST); the raw text if it does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return normalized_text(code)
    _strip_docstrings(tree)
    return ast.unparse(tree)


def task_id(code: str) -> str:
    """`task_id`: sha256 of the canonical code, 16 hex digits."""
    return hashlib.sha256(canonical_code(code).encode()).hexdigest()[:16]


def normalized_text(code: str) -> str:
    """KernelBench's problem identity: code without comments and without any whitespace."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                continue
            out.append(tok.string)
        text = "".join(out)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        text = re.sub(r"#[^\n]*", "", code)
    return re.sub(r"\s+", "", text)


def normalized_md5(code: str) -> str:
    """MD5 of the code stripped of comments and whitespace (as KernelBench's Problem.hash)."""
    return hashlib.md5(normalized_text(code).encode()).hexdigest()


def content_hash(*parts: str | bytes, n: int = 16) -> str:
    """Stable id for anything keyed by content (shards, kernels, rows)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:n]
