"""The decontamination stage: is each candidate task a (disguised) copy of a reference problem?

Decision rule (documented in docs/contamination.md; thresholds calibrated by
pipeline.decontam.calibration.calibrate):
  contaminated  <=>  normalized MD5 equals a reference's                         (reason exact_md5)
                 or  min(canon, ops) >= threshold for one reference problem       (reason canonical_and_ops)
                 or  ops >= ops_threshold and canon >= canon_floor                 (reason same_ops_signature)
                 or  raw >= raw_threshold, for code that does not parse           (reason raw_near_copy)
Canonical shingles alone over-flag (every task shares the Model/get_inputs scaffold, and reordering operators
still scores ~0.7), the operator signature alone over-flags short signatures; requiring both at once keeps
disguised copies (both ~1) and rejects new compositions that share one or two operators (ops low). The same
ordered operators as a problem, in a task of similar shape, is that problem restructured (helper methods,
nn.Sequential, functional instead of module layers), whatever the canonical tokens say.
Rows none of these flag then go through the semantic view (pipeline.decontam.semantic):
                 or  outputs equal a semantically near reference problem's          (reason functional_match)
                 or  the same whole graph over the same axes, no run possible       (reason semantic_structure)
                 or  semantically near, outputs differ, 1..near_variant_changes ops changed in place
                                                                         (reason near_variant; removed unless
                                                                          near_variant_policy=keep)
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.decontam.index import ReferenceIndex, views_of
from pipeline.decontam.pool import chunk_bounds, fork_map
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import RefProblem
from pipeline.storage import conform
from schemas import get_schema


def decide(
    md5_match: bool,
    canon: float,
    ops: float,
    raw: float,
    settings: DecontamSettings,
    parse_ok: bool = True,
    has_ops: bool = True,
) -> tuple[bool, str, float]:
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


def _carried_traces(candidates: list[tuple[str, str]] | pa.Table, codes: list[str]) -> dict[str, str] | None:
    """code -> the semantic trace validation made of it (a `semantic_trace` column beside the code), if any."""
    if not isinstance(candidates, pa.Table) or "semantic_trace" not in candidates.column_names:
        return None
    return {c: t for c, t in zip(codes, candidates.column("semantic_trace").to_pylist()) if t}


# Every column of the contamination table but task_id depends on the code alone: scored per distinct code.
_CODE_COLUMNS = (
    "contaminated",
    "nearest_ref",
    "score",
    "reason",
    "canon_jaccard",
    "ops_jaccard",
    "raw_jaccard",
    "nearest_canon",
    "nearest_ops",
    "nearest_raw",
    "ast_similarity",
    "md5_match",
    "md5_ref",
    "parse_ok",
    "ops",
    "lsh_hits",
    "lsh_recalled",
    "method",
)
MIN_CHUNK = 200  # codes per worker task: below two chunks a pool costs more than it saves
_VIEWS3 = ("canon", "ops", "raw")


def score_codes(codes: list[str], index: ReferenceIndex, settings: DecontamSettings) -> dict[str, list]:
    """The contamination columns (but task_id) of each code: views, LSH hits, exact scores, the decision.
    Runs in a worker on a chunk of the candidates, so that everything per candidate is parallel."""
    views = views_of(codes, settings)
    refs = index.refs
    hits = index.lsh_hits(views)
    exact = index.exact_all(views) if index.exhaustive and refs else None
    if exact is not None:  # the nearest problem and best scores of every row at once
        arg = np.argmax(_rank_key(exact["canon"], exact["ops"], exact["raw"]), axis=1)
        best_all = {view: exact[view].max(axis=1) for view in _VIEWS3}
    sim = index.ast_similarity
    cols: dict[str, list] = {c: [] for c in _CODE_COLUMNS}
    for i, v in enumerate(views):
        md5_ref = index.md5.get(v.md5)
        if exact is not None:
            nearest = int(md5_ref) if md5_ref is not None else int(arg[i])
            nc, no, nr = (float(exact[view][i, nearest]) for view in _VIEWS3)
            best = {view: float(best_all[view][i]) for view in _VIEWS3}
            found = True
        else:
            scored = np.array(sorted(hits[i]), dtype=np.int64)
            s = index.exact_pairs(v, scored.tolist()) if len(scored) else {}
            if md5_ref is not None and md5_ref not in set(scored.tolist()):
                scored = np.append(scored, md5_ref)
                s = {view: np.append(s.get(view, np.zeros(0)), 1.0) for view in _VIEWS3}
            found = bool(len(scored))
            if found:
                j = int(np.argmax(_rank_key(s["canon"], s["ops"], s["raw"])))
                nearest = int(md5_ref) if md5_ref is not None else int(scored[j])
                if md5_ref is not None:
                    j = int(np.flatnonzero(scored == md5_ref)[0])
                nc, no, nr = float(s["canon"][j]), float(s["ops"][j]), float(s["raw"][j])
                best = {view: float(np.max(s[view])) for view in _VIEWS3}
        if found:
            if not v.parse_ok:  # only the raw views can judge code that does not parse
                nc = no = 0.0
            contaminated, reason, score = decide(md5_ref is not None, nc, no, nr, settings, v.parse_ok, bool(v.ops))
            ref_id = refs[nearest].ref_id
            ast_sim = sim(v.ast_types, nearest, exact=nc >= 0.5) if v.parse_ok else 0.0
        else:
            contaminated, reason, score, ref_id = False, "", 0.0, ""
            nc = no = nr = ast_sim = 0.0
            best = {"canon": 0.0, "ops": 0.0, "raw": 0.0}
            nearest = -1
        if not contaminated and not v.parse_ok:
            reason = v.parse_reason or "unparseable"
        for key, val in (
            ("contaminated", bool(contaminated)),
            ("nearest_ref", ref_id),
            ("score", float(score)),
            ("reason", reason),
            ("canon_jaccard", best["canon"]),
            ("ops_jaccard", best["ops"]),
            ("raw_jaccard", best["raw"]),
            ("nearest_canon", nc),
            ("nearest_ops", no),
            ("nearest_raw", nr),
            ("ast_similarity", float(ast_sim)),
            ("md5_match", md5_ref is not None),
            ("md5_ref", refs[md5_ref].ref_id if md5_ref is not None else ""),
            ("parse_ok", bool(v.parse_ok)),
            ("ops", " ".join(v.ops)[:2000]),
            ("lsh_hits", len(hits[i])),
            ("lsh_recalled", nearest in hits[i]),
            ("method", "exact" if exact is not None else "lsh"),
        ):
            cols[key].append(val)
    return cols


def score_all(
    codes: list[str], index: ReferenceIndex, settings: DecontamSettings, executor: Any = None
) -> dict[str, list]:
    """score_codes over chunks: on a distributed `executor` (Ray) when given one, else a forked process pool of
    `settings.workers`, else here. Every code is scored on its own, so the result does not depend on the chunks or
    the number of workers."""
    workers = max(1, settings.workers)
    bounds = chunk_bounds(len(codes), workers, MIN_CHUNK, per_worker=8)  # small chunks: a short idle tail
    if len(bounds) > 1 and getattr(executor, "distributed", False):
        from pipeline.stage import Resources

        def job(chunk: list[str]) -> dict[str, list]:
            return score_codes(chunk, index, settings)

        parts = executor.map(job, [codes[a:b] for a, b in bounds], Resources(cpus=1))
    else:
        index.matrices()  # built once here, not once per forked worker
        parts = fork_map(score_codes, codes, (index, settings), workers, bounds or [(0, 0)])
    return {c: [x for p in parts for x in p[c]] for c in _CODE_COLUMNS}


def _semantic_columns(
    codes: list[str],
    cols: dict[str, list],
    index: ReferenceIndex,
    settings: DecontamSettings,
    carried: dict[str, str] | None = None,
) -> dict[str, list]:
    """The semantic view and functional confirmation (pipeline.decontam.semantic) for the rows the other views let
    through; updates their decision in `cols`."""
    from pipeline.decontam.semantic import semantic_pass

    sem_ref = index.semantic() if settings.semantic and index.refs else None
    return semantic_pass(
        codes,
        cols,
        [r.code for r in index.refs],
        [r.ref_id for r in index.refs],
        sem_ref,
        settings if sem_ref is not None else settings.model_copy(update={"semantic": False}),
        carried,
    )


def decontaminate(
    candidates: list[tuple[str, str]] | pa.Table,
    reference: list[RefProblem] | ReferenceIndex,
    settings: DecontamSettings | None = None,
    executor: Any = None,
) -> pa.Table:
    """Rows of the `contamination` table, one per candidate, in input order; chunks of scoring go to `executor`
    when it is distributed (Ray; from the runner), else to a forked pool."""
    settings = settings or DecontamSettings()
    index = reference if isinstance(reference, ReferenceIndex) else ReferenceIndex(reference, settings)
    pairs = _as_pairs(candidates)
    codes = [c if isinstance(c, str) else "" for _, c in pairs]
    uniq = list(dict.fromkeys(codes))  # each distinct code is scored once
    cols = score_all(uniq, index, settings, executor)
    cols.update(_semantic_columns(uniq, cols, index, settings, _carried_traces(candidates, codes)))
    if len(uniq) == len(codes):
        take = None
    else:
        pos = {c: i for i, c in enumerate(uniq)}
        take = [pos[c] for c in codes]
    schema = get_schema("contamination")
    arrays = []
    for f in schema:
        if f.name == "task_id":
            arrays.append(pa.array([str(t) for t, _ in pairs], f.type))
        elif f.name == "reference_fingerprint":
            arrays.append(pa.array([index.fingerprint] * len(pairs), f.type))
        else:
            col = cols[f.name]
            arrays.append(pa.array(col if take is None else [col[i] for i in take], f.type))
    out = pa.Table.from_arrays(arrays, schema=schema)
    # A candidate that cannot be judged (empty or unparsable code) is never clean: it is dropped with its reason.
    undecided = pc.is_in(out.column("reason"), value_set=pa.array(list(UNDECIDED)))
    out = out.set_column(
        out.schema.get_field_index("contaminated"),
        schema.field("contaminated"),
        pc.or_(out.column("contaminated"), undecided),
    )
    return conform("contamination", out)


UNDECIDED = ("empty_code", "unparseable")


def dedup(
    candidates: pa.Table | Iterable[tuple[str, str]], settings: DecontamSettings | None = None, executor: Any = None
) -> pa.Table:
    """Rows of the `dedup` table (see pipeline.decontam.dedup)."""
    from pipeline.decontam.dedup import dedup as _dedup

    return _dedup(candidates, settings or DecontamSettings(), executor)
