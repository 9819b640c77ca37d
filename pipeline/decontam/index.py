"""The reference index: every view of every reference problem, MinHash signatures and LSH per view, and the exact
scoring of candidates against the references (all of them, or the LSH hits only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from datasketch import MinHashLSH  # at import time: importing datasketch (and the scipy it loads) takes ~0.5 s

from pipeline.decontam.settings import DecontamSettings
from pipeline.decontam.signatures import as_minhashes, query_many, signatures
from pipeline.decontam.views import VIEWS, TaskViews, jaccard, sequence_matcher, task_views
from pipeline.kernelbench import RefProblem, fingerprint


def views_of(codes: list[str], settings: DecontamSettings) -> list[TaskViews]:
    from pipeline.decontam.pool import no_gc

    with no_gc():
        return [task_views(c, settings.canon_shingle, settings.ops_ngram, settings.raw_shingle) for c in codes]


def views_parallel(codes: list[str], settings: DecontamSettings) -> list[TaskViews]:
    """views_of on a forked pool of `settings.workers` (the reference's problems are few but large: small chunks)."""
    from pipeline.decontam.pool import chunk_bounds, fork_map

    bounds = chunk_bounds(len(codes), settings.workers, 16)
    return [v for part in fork_map(views_of, codes, (settings,), settings.workers, bounds) for v in part]


@dataclass
class ViewMatrix:
    """A set collection as a sparse 0/1 matrix over the references' vocabulary (for exact scoring in one product)."""

    vocab: np.ndarray
    mat: object  # scipy.sparse.csr_matrix, rows = sets
    sizes: np.ndarray
    mat_t: object = None  # the transpose as CSR (references only: the right operand of every product)


def _to_matrix(sets: list[np.ndarray], vocab: np.ndarray | None = None) -> ViewMatrix:
    from scipy.sparse import csr_matrix

    if vocab is None:
        vocab = np.unique(np.concatenate(sets)) if sets else np.zeros(0, np.uint32)
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    rows = np.repeat(np.arange(len(sets)), sizes)
    flat = np.concatenate(sets) if sets else np.zeros(0, np.uint32)
    pos = np.searchsorted(vocab, flat)
    pos = np.minimum(pos, max(len(vocab) - 1, 0))
    hit = (vocab[pos] == flat) if len(vocab) else np.zeros(len(flat), bool)
    mat = csr_matrix((np.ones(int(hit.sum()), np.float32), (rows[hit], pos[hit])), shape=(len(sets), len(vocab)))
    return ViewMatrix(vocab, mat, sizes)


class ReferenceIndex:
    """Views, signatures and LSH indexes of a reference set (KernelBench, or any larger set of benchmarks)."""

    def __init__(self, reference: list[RefProblem], settings: DecontamSettings) -> None:
        self.refs = list(reference)
        self.settings = settings
        self.views = views_parallel([r.code for r in self.refs], settings)
        self.md5: dict[str, int] = {}
        for i, v in enumerate(self.views):
            self.md5.setdefault(v.md5, i)
        self.lsh: dict[str, MinHashLSH] = {}
        for view in VIEWS:
            thr = settings.lsh_threshold_ops if view == "ops" else settings.lsh_threshold
            lsh = MinHashLSH(threshold=thr, num_perm=settings.num_perm)
            sets = [v.sets[view] for v in self.views]
            with lsh.insertion_session() as session:
                for i, m in enumerate(as_minhashes(signatures(sets, settings), settings)):
                    if len(sets[i]):
                        session.insert(i, m)
            self.lsh[view] = lsh
        self._matrices: dict[str, ViewMatrix] | None = None
        if self.exhaustive:
            self.matrices()
        self._fingerprint: str | None = None
        self._matchers: dict[int, object] = {}
        self._semantic = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_matchers"] = {}  # per-process caches, rebuilt on demand
        state["_semantic"] = None  # used by the stage's parent process only
        return state

    def semantic(self):
        """The references' semantic views (pipeline.decontam.semantic.SemanticReference), built on first use."""
        if self._semantic is None:
            from pipeline.decontam.semantic import SemanticReference

            self._semantic = SemanticReference([r.code for r in self.refs], self.settings)
        return self._semantic

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.refs)
        return self._fingerprint

    def ast_similarity(self, types: np.ndarray, j: int, exact: bool = True, cap: int = 2000) -> float:
        """views.ast_similarity(types, <reference j's node types>, cap, exact), with reference j's difflib index
        (SequenceMatcher.set_seq2: its element positions and junk) built once, not once per candidate."""
        m = self._matchers.get(j)
        if m is None:
            b = self.views[j].ast_types.tolist()[:cap]
            m = self._matchers[j] = sequence_matcher()(None, [], b)
        a = types.tolist()[:cap] if isinstance(types, np.ndarray) else list(types)[:cap]
        if not a and not m.b:
            return 1.0
        m.set_seq1(a)
        return m.ratio() if exact else m.quick_ratio()

    @property
    def exhaustive(self) -> bool:
        """Small references (KernelBench) are also scored exactly against every problem."""
        return len(self.refs) <= self.settings.exact_max_refs

    def matrices(self) -> dict[str, ViewMatrix]:
        if self._matrices is None:
            self._matrices = {view: _to_matrix([v.sets[view] for v in self.views]) for view in VIEWS}
            for m in self._matrices.values():
                m.mat_t = m.mat.T.tocsr()
        return self._matrices

    def lsh_hits(self, views: list[TaskViews]) -> list[set[int]]:
        """Reference indexes any view's LSH returns for each candidate."""
        hits: list[set[int]] = [set() for _ in views]
        for view in VIEWS:
            sets = [v.sets[view] for v in views]
            mask = np.fromiter((len(s) > 0 for s in sets), dtype=bool, count=len(sets))
            for i, h in enumerate(query_many(self.lsh[view], signatures(sets, self.settings), mask, self.settings)):
                if h:
                    hits[i].update(h)
        return hits

    def exact_all(self, views: list[TaskViews]) -> dict[str, np.ndarray]:
        """Exact Jaccard of every candidate against every reference, per view (n_candidates x n_refs)."""
        out = {}
        for view, ref in self.matrices().items():
            cand = _to_matrix([v.sets[view] for v in views], ref.vocab)
            inter = (cand.mat @ ref.mat_t).toarray()
            union = cand.sizes[:, None] + ref.sizes[None, :] - inter
            with np.errstate(invalid="ignore", divide="ignore"):
                jac = np.where(union > 0, inter / np.maximum(union, 1), 1.0)  # two empty sets: identical
            out[view] = jac
        return out

    def exact_pairs(self, v: TaskViews, refs: list[int]) -> dict[str, np.ndarray]:
        """Exact Jaccard of one candidate against the given references (verification of LSH hits)."""
        return {view: np.array([jaccard(v.sets[view], self.views[j].sets[view]) for j in refs]) for view in VIEWS}
