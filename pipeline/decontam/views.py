"""The views of a task as sets of 32-bit shingle hashes, and exact Jaccard between them.

Views:
- `canon`: token k-shingles of the canonical code (renames, constants, API spellings and formatting erased);
- `ops`: n-grams (1..n, with start/end markers and occurrence counts) of the ordered operator signature;
- `raw`: character k-shingles of the code with whitespace collapsed (verbatim copying).
Reported beside them, not as sets: `md5` (KernelBench's normalized MD5) and the AST node-type sequence.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from pipeline.decontam.canon import Canonical, canonicalize
from pipeline.identity import normalized_md5

VIEWS = ("canon", "ops", "raw")
_MULT = np.uint64(0x9E3779B97F4A7C15)
_EMPTY = np.zeros(0, dtype=np.uint32)
_TOKEN_CACHE: dict[str, int] = {}


def _token_ids(tokens: list[str]) -> np.ndarray:
    cache = _TOKEN_CACHE
    if len(cache) > 200_000:  # bounded: identifiers of hostile inputs must not grow it forever
        cache.clear()
    out = np.empty(len(tokens), dtype=np.uint64)
    for i, t in enumerate(tokens):
        h = cache.get(t)
        if h is None:
            h = cache[t] = zlib.crc32(t.encode("utf-8", "surrogatepass")) + 1
        out[i] = h
    return out


def _shingle_hashes(ids: np.ndarray, k: int) -> np.ndarray:
    """Hashes of every window of k consecutive ids (all of them when fewer than k), as a sorted unique uint32 set."""
    n = len(ids)
    if n == 0:
        return _EMPTY
    k = min(k, n)
    h = np.zeros(n - k + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):  # polynomial rolling hash, wrapping mod 2**64
            h = h * _MULT + ids[j : n - k + 1 + j]
        h ^= h >> np.uint64(29)
        h *= _MULT
        h ^= h >> np.uint64(32)
    return np.unique(h.astype(np.uint32))


def canon_set(tokens: list[str], k: int) -> np.ndarray:
    return _shingle_hashes(_token_ids(tokens), k)


def ops_set(ops: list[str], n: int) -> np.ndarray:
    if not ops:
        return _EMPTY
    seq = ["^", *ops, "$"]
    grams: list[str] = []
    seen: dict[str, int] = {}
    for op in ops:  # unigrams with occurrence index: [relu, relu] differs from [relu]
        seen[op] = seen.get(op, 0) + 1
        grams.append(f"1:{op}#{seen[op]}")
    for m in range(2, n + 1):
        grams.extend(f"{m}:" + "|".join(seq[i : i + m]) for i in range(len(seq) - m + 1))
    return np.unique(_token_ids(grams).astype(np.uint32))


def raw_set(code: str, k: int) -> np.ndarray:
    text = " ".join(code.split()).encode("utf-8", "surrogatepass")
    b = np.frombuffer(text, dtype=np.uint8).astype(np.uint64) + np.uint64(1)
    return _shingle_hashes(b, k)


@dataclass
class TaskViews:
    """Everything the checks need about one task's code."""

    parse_ok: bool
    parse_reason: str
    md5: str
    sets: dict[str, np.ndarray] = field(default_factory=dict)
    ops: list[str] = field(default_factory=list)
    ast_types: np.ndarray = field(default_factory=lambda: _EMPTY)


def task_views(code: str, canon_k: int = 5, ops_n: int = 3, raw_k: int = 5) -> TaskViews:
    """Compute every view of `code`; never raises (unparseable code gets raw/md5 views and a reason)."""
    if not isinstance(code, str):
        code = ""
    c: Canonical = canonicalize(code)
    sets = {
        "canon": canon_set(c.tokens, canon_k) if c.ok else _EMPTY,
        "ops": ops_set(c.ops, ops_n) if c.ok else _EMPTY,
        "raw": raw_set(code, raw_k),
    }
    # node types as 32-bit ids: compact to ship between processes, fast for difflib to hash
    types = _token_ids(c.ast_types).astype(np.uint32) if c.ast_types else _EMPTY
    return TaskViews(c.ok, c.reason, fast_normalized_md5(code, parsed=c.ok), sets, c.ops, types)


_WS = re.compile(r"\s+")


# A string literal (any prefix, single or triple quotes, escapes), a comment, or a backslash line continuation.
_STR_COMMENT = re.compile(
    r"""
    [rRbBuUfF]{0,2}(?:'\'\'(?:\\.|[^\\])*?'\'\'|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*")
  | (?P<comment>\#[^\n]*)
  | (?P<cont>\\\r?\n)
""",
    re.S | re.X,
)


def _keep_strings(m: re.Match) -> str:
    return "" if m.lastgroup in ("comment", "cont") else m.group(0)


def fast_normalized_md5(code: str, parsed: bool = False) -> str:
    """pipeline.identity.normalized_md5 (KernelBench's Problem.hash: MD5 of the code without comments, line
    continuations and whitespace), without Python's tokenizer (~1 ms per file) when it can be done exactly:
    code with no comment character and no backslash is hashed as is; code that parses (so every string literal
    is terminated) has its comments and continuations cut by one regex that skips string literals. Other code
    goes through the tokenizer. tests/test_decontam_canon.py checks the equality on KernelBench and disguises."""
    if "#" not in code and "\\" not in code:
        return hashlib.md5(_WS.sub("", code).encode()).hexdigest()
    if parsed:
        return hashlib.md5(_WS.sub("", _STR_COMMENT.sub(_keep_strings, code)).encode()).hexdigest()
    return normalized_md5(code)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted unique arrays; two empty sets are identical (1.0)."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def sequence_matcher():
    """difflib.SequenceMatcher; cydifflib's when installed (a Cython port of the same algorithm: the same ratios,
    ~9x faster, tested in tests/test_decontam_stage.py)."""
    try:
        from cydifflib import SequenceMatcher
    except ImportError:  # pragma: no cover - cydifflib is a declared dependency; difflib gives the same numbers
        from difflib import SequenceMatcher
    return SequenceMatcher


def ast_similarity(a, b, cap: int = 2000, exact: bool = True) -> float:
    """difflib ratio of the canonical AST node-type sequences (CUDA Agent's AST-similarity criterion).
    `exact=False`: difflib's quick_ratio, an upper bound of the ratio computed from the multisets (cheap; used
    for pairs that are far apart on the other views anyway)."""
    a = a.tolist() if isinstance(a, np.ndarray) else list(a)
    b = b.tolist() if isinstance(b, np.ndarray) else list(b)
    if not a and not b:
        return 1.0
    # autojunk on: difflib's own heuristic for long sequences keeps this near-linear on level-3 sized files
    m = sequence_matcher()(None, a[:cap], b[:cap])
    return m.ratio() if exact else m.quick_ratio()
