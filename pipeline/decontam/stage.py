"""The decontamination stage: is each candidate task a (disguised) copy of a reference problem?

Decision rule (documented in README.md (Decontamination), thresholds calibrated by pipeline.decontam.calibrate):
  contaminated  <=>  normalized MD5 equals a reference's                         (reason exact_md5)
                 or  min(canon, ops) >= threshold for one reference problem       (reason canonical_and_ops)
                 or  ops >= ops_threshold and canon >= canon_floor                 (reason same_ops_signature)
                 or  raw >= raw_threshold, for code that does not parse           (reason raw_near_copy)
Canonical shingles alone over-flag (every task shares the Model/get_inputs scaffold, and reordering operators
still scores ~0.7), the operator signature alone over-flags short signatures; requiring both at once keeps
disguised copies (both ~1) and rejects new compositions that share one or two operators (ops low). The same
ordered operators as a problem, in a task of similar shape, is that problem restructured (helper methods,
nn.Sequential, functional instead of module layers), whatever the canonical tokens say.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np
import pyarrow as pa

from pipeline.decontam.index import ReferenceIndex, views_of
from pipeline.decontam.settings import DecontamSettings
from pipeline.decontam.views import TaskViews, ast_similarity
from pipeline.kernelbench import RefProblem, fingerprint
from pipeline.storage import conform


def decide(md5_match: bool, canon: float, ops: float, raw: float, settings: DecontamSettings,
           parse_ok: bool = True, has_ops: bool = True) -> tuple[bool, str, float]:
    """The decision rule: (contaminated, reason, score). The raw view decides only for code that does not parse:
    for code that does, the canonical views see everything the raw one does, and raw similarity alone flags
    hard negatives (a reference file with its operators swapped keeps most of its characters)."""
    combined = min(canon, ops)
    score = max(combined, raw)
    if md5_match:
        return True, "exact_md5", 1.0
    if combined >= settings.threshold:
        return True, "canonical_and_ops", score
    if ops >= settings.ops_threshold and canon >= settings.canon_floor and has_ops:
        return True, "same_ops_signature", score
    if not parse_ok and raw >= settings.raw_threshold:
        return True, "raw_near_copy", score
    return False, "", score


def _rank_key(canon: np.ndarray, ops: np.ndarray, raw: np.ndarray) -> np.ndarray:
    # nearest = highest min(canon, ops); ties (KernelBench level 4 differs only in constants) by canon, then raw,
    # which still sees the digits the canonical view masks.
    return np.minimum(canon, ops) * 1e6 + np.round(canon, 4) * 1e2 + raw


def _as_pairs(candidates: list[tuple[str, str]] | pa.Table) -> list[tuple[str, str | None]]:
    if isinstance(candidates, pa.Table):
        ids = candidates.column("task_id").to_pylist()
        codes = candidates.column("code").to_pylist()
        return list(zip(ids, codes))
    return [(str(t), c) for t, c in candidates]


def compute_views(codes: list[str | None], settings: DecontamSettings) -> list[TaskViews]:
    """Views of every distinct code once; on Ray (pipeline.executor) or a process pool for large inputs."""
    uniq = list(dict.fromkeys(c if isinstance(c, str) else "" for c in codes))
    chunks = [uniq[i:i + 500] for i in range(0, len(uniq), 500)]
    from pipeline.executor import Resources, map_items, ray_available

    def job(chunk: list[str]) -> list[TaskViews]:
        return views_of(chunk, settings)

    if ray_available() and len(chunks) > 1:
        parts = map_items(job, chunks, Resources(cpus=1))
    elif settings.workers > 1 and len(chunks) > 1:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(settings.workers, mp_context=mp.get_context("fork")) as pool:
            parts = list(pool.map(views_of, chunks, [settings] * len(chunks)))
    else:
        parts = [views_of(ch, settings) for ch in chunks]
    by_code = {c: v for ch, part in zip(chunks, parts) for c, v in zip(ch, part)}
    return [by_code[c if isinstance(c, str) else ""] for c in codes]


def decontaminate(candidates: list[tuple[str, str]] | pa.Table, reference: list[RefProblem] | ReferenceIndex,
                  settings: DecontamSettings | None = None) -> pa.Table:
    """Rows of the `contamination` table, one per candidate, in input order."""
    settings = settings or DecontamSettings()
    index = reference if isinstance(reference, ReferenceIndex) else ReferenceIndex(reference, settings)
    pairs = _as_pairs(candidates)
    views = compute_views([c for _, c in pairs], settings)
    refs = index.refs
    fp = fingerprint(refs)
    hits = index.lsh_hits(views)
    exact = index.exact_all(views) if index.exhaustive and refs else None
    rows = []
    for i, ((tid, code), v) in enumerate(zip(pairs, views)):
        md5_ref = index.md5.get(v.md5)
        if exact is not None:
            scored = np.arange(len(refs))
            s = {view: exact[view][i] for view in exact}
        else:
            scored = np.array(sorted(hits[i]), dtype=np.int64)
            s = index.exact_pairs(v, scored.tolist()) if len(scored) else {}
        if md5_ref is not None and md5_ref not in set(scored.tolist()):
            scored = np.append(scored, md5_ref)
            s = {view: np.append(s.get(view, np.zeros(0)), 1.0) for view in ("canon", "ops", "raw")}
        if len(scored):
            j = int(np.argmax(_rank_key(s["canon"], s["ops"], s["raw"])))
            nearest = int(md5_ref) if md5_ref is not None else int(scored[j])
            if md5_ref is not None:
                j = int(np.flatnonzero(scored == md5_ref)[0])
            nc, no, nr = float(s["canon"][j]), float(s["ops"][j]), float(s["raw"][j])
            best = {view: float(np.max(s[view])) for view in ("canon", "ops", "raw")}
            if not v.parse_ok:  # only the raw views can judge code that does not parse
                nc = no = 0.0
            contaminated, reason, score = decide(md5_ref is not None, nc, no, nr, settings, v.parse_ok, bool(v.ops))
            ref_id = refs[nearest].ref_id
            ast_sim = ast_similarity(v.ast_types, index.views[nearest].ast_types, exact=nc >= 0.5) \
                if v.parse_ok else 0.0
        else:
            contaminated, reason, score, ref_id = False, "", 0.0, ""
            nc = no = nr = ast_sim = 0.0
            best = {"canon": 0.0, "ops": 0.0, "raw": 0.0}
            nearest = -1
        if not contaminated and not v.parse_ok:
            reason = v.parse_reason or "unparseable"
        rows.append({
            "task_id": str(tid), "contaminated": bool(contaminated), "nearest_ref": ref_id, "score": float(score),
            "reason": reason, "canon_jaccard": best["canon"], "ops_jaccard": best["ops"],
            "raw_jaccard": best["raw"], "nearest_canon": nc, "nearest_ops": no, "nearest_raw": nr,
            "ast_similarity": float(ast_sim), "md5_match": md5_ref is not None,
            "md5_ref": refs[md5_ref].ref_id if md5_ref is not None else "", "parse_ok": bool(v.parse_ok),
            "ops": " ".join(v.ops)[:2000], "lsh_hits": len(hits[i]), "lsh_recalled": nearest in hits[i],
            "method": "exact" if exact is not None else "lsh", "reference_fingerprint": fp,
        })
    return conform("contamination", rows)


def dedup(candidates: pa.Table | Iterable[tuple[str, str]], settings: DecontamSettings | None = None) -> pa.Table:
    """Rows of the `dedup` table (see pipeline.decontam.dedup)."""
    from pipeline.decontam.dedup import dedup as _dedup

    return _dedup(candidates, settings or DecontamSettings())
