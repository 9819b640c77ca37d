"""The labelled calibration set and the threshold choice.

Positives: disguised copies of reference problems, built at run time from the reference itself (never stored):
every transform of pipeline.decontam.calibration.disguise alone, and combined. Negatives: new operator compositions
(pipeline.decontam.calibration.negatives.compose) and hard negatives derived from a reference problem that keep only
one or two of its operators.

Against overfitting, thresholds are chosen on a *train* split and reported on a *test* split that differs in
three ways: other random seeds, other reference problems (problems are split by hash), and three transforms
(api_swap, noop_lines, class_rename) that appear only in the test split, alone and inside combinations.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.decontam.calibration.disguise import TRANSFORMS, disguise
from pipeline.decontam.calibration.negatives import mutate_reference, random_composition
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import RefProblem

HELD_OUT_TRANSFORMS = ("api_swap", "noop_lines", "class_rename", "inline_constants", "extract_helper", "spell_out")


@dataclass
class Example:
    example_id: str
    code: str
    label: bool  # True: a disguised copy of `source`
    source: str  # reference problem it came from ("" for fresh compositions)
    kind: str  # transform names joined by '+', or composition / mutant_keep1 / mutant_keep2
    split: str  # train | test


def _split_of(ref_id: str) -> str:
    return "test" if int(hashlib.sha256(ref_id.encode()).hexdigest(), 16) % 2 else "train"


def build_set(
    reference: list[RefProblem],
    seed: int = 0,
    max_refs: int | None = None,
    n_compositions: int = 600,
    combos_per_ref: int = 3,
) -> list[Example]:
    """The labelled set. `max_refs` samples that many reference problems (deterministically) for a quick run."""
    from pipeline.decontam.canon import canonicalize

    rng = random.Random(seed)
    refs = sorted(reference, key=lambda r: r.ref_id)
    if max_refs is not None and max_refs < len(refs):
        refs = random.Random(seed).sample(refs, max_refs)
    ref_sigs = {tuple(canonicalize(r.code).ops) for r in reference}
    train_tf = [t for t in TRANSFORMS if t not in HELD_OUT_TRANSFORMS]
    out: list[Example] = []
    for r in refs:
        split = _split_of(r.ref_id)
        base = 1000 * (seed + (1 if split == "test" else 0))
        singles = list(TRANSFORMS) if split == "test" else train_tf
        for k, name in enumerate(singles):
            code = disguise(r.code, [name], random.Random(base + hash_int(r.ref_id, k)))
            if code == r.code:
                continue  # the transform does not apply to this problem: it would be an exact copy
            out.append(Example(f"pos:{r.ref_id}:{name}", code, True, r.ref_id, name, split))
        pool = list(TRANSFORMS) if split == "test" else train_tf
        for k in range(combos_per_ref):
            crng = random.Random(base + hash_int(r.ref_id, 100 + k))
            names = list(pool) if k == 0 else crng.sample(pool, crng.randint(2, len(pool)))
            # formatting first (it re-emits code), renames before constants: the order a copier would use
            names.sort(key=lambda n: list(TRANSFORMS).index(n))
            code = disguise(r.code, names, crng)
            out.append(Example(f"pos:{r.ref_id}:combo{k}", code, True, r.ref_id, "+".join(names), split))
        for keep in (1, 2):
            mrng = random.Random(base + hash_int(r.ref_id, 200 + keep))
            try:
                code = mutate_reference(r.code, mrng, keep)
            except (SyntaxError, ValueError, RecursionError):
                code = None
            if code is None:
                continue
            mut_ops = canonicalize(code).ops
            # a site can be a whole nn.Sequential: count what is really shared, operator by operator
            shared = sum((Counter(mut_ops) & Counter(canonicalize(r.code).ops)).values())
            if shared <= keep and tuple(mut_ops) not in ref_sigs:
                out.append(Example(f"neg:{r.ref_id}:keep{keep}", code, False, r.ref_id, f"mutant_keep{keep}", split))
    for i in range(n_compositions):
        code = random_composition(rng)
        if tuple(canonicalize(code).ops) in ref_sigs:
            continue  # the same ordered ops as a reference problem: that problem written anew, not a negative
        out.append(Example(f"neg:composition:{i}", code, False, "", "composition", "train" if i % 2 else "test"))
    return out


def hash_int(s: str, k: int) -> int:
    return int(hashlib.sha256(f"{s}:{k}".encode()).hexdigest()[:8], 16)


def examples_table(examples: list[Example]) -> pa.Table:
    return pa.Table.from_pylist([e.__dict__ for e in examples])


def decisions(
    result: pa.Table, threshold: float, raw_threshold: float, settings: DecontamSettings | None = None
) -> np.ndarray:
    """Re-apply the decision rule at other thresholds from the scores `decontaminate` recorded."""
    settings = settings or DecontamSettings()
    canon = np.array(result.column("nearest_canon").to_pylist())
    ops = np.array(result.column("nearest_ops").to_pylist())
    raw = np.array(result.column("nearest_raw").to_pylist())
    md5 = np.array(result.column("md5_match").to_pylist(), dtype=bool)
    parsed = np.array(result.column("parse_ok").to_pylist(), dtype=bool)
    has_ops = np.array([bool(o) for o in result.column("ops").to_pylist()])
    same_ops = (ops >= settings.ops_threshold) & (canon >= settings.canon_floor) & has_ops
    return md5 | (np.minimum(canon, ops) >= threshold) | same_ops | (~parsed & (raw >= raw_threshold))


def equivalent_refs(reference: list[RefProblem], settings: DecontamSettings) -> dict[str, set[str]]:
    """Reference problems no method can tell apart once constants are masked (KernelBench level 4 repeats one
    model at several batch sizes): identical canonical and operator views."""
    from pipeline.decontam.index import views_of

    views = views_of([r.code for r in reference], settings)
    key: dict[str, list[str]] = {}
    for r, v in zip(reference, views):
        k = hashlib.sha256(v.sets["canon"].tobytes() + b"|" + v.sets["ops"].tobytes()).hexdigest()
        key.setdefault(k, []).append(r.ref_id)
    return {rid: set(group) for group in key.values() for rid in group}


def metrics(
    examples: list[Example], result: pa.Table, flagged: np.ndarray, equiv: dict[str, set[str]] | None = None
) -> dict[str, float]:
    labels = np.array([e.label for e in examples])
    nearest = result.column("nearest_ref").to_pylist()
    pos, neg = labels.sum(), (~labels).sum()
    tp = int((flagged & labels).sum())
    fp = int((flagged & ~labels).sum())
    strict = [n == e.source for n, e in zip(nearest, examples) if e.label]
    equiv_ok = [
        n == e.source or (equiv is not None and n in equiv.get(e.source, set()))
        for n, e in zip(nearest, examples)
        if e.label
    ]
    return {
        "positives": int(pos),
        "negatives": int(neg),
        "true_positives": tp,
        "false_positives": fp,
        "recall": tp / pos if pos else float("nan"),
        "fpr": fp / neg if neg else float("nan"),
        "nearest_accuracy": float(np.mean(strict)) if strict else float("nan"),
        "nearest_accuracy_equiv": float(np.mean(equiv_ok)) if equiv_ok else float("nan"),
    }


def choose_thresholds(examples: list[Example], result: pa.Table) -> tuple[float, float]:
    """The threshold pair with the best recall - FPR on these examples; the middle of the best interval."""
    grid = np.round(np.arange(0.40, 1.0001, 0.01), 2)
    labels = np.array([e.label for e in examples])
    best, best_t = -1.0, []
    for tr in (0.85, 0.9, 0.95):
        for t in grid:
            f = decisions(result, float(t), tr)
            rec = (f & labels).sum() / max(labels.sum(), 1)
            fpr = (f & ~labels).sum() / max((~labels).sum(), 1)
            j = round(float(rec - 2 * fpr), 6)  # FPR weighted double: a false drop loses a good task
            if j > best:
                best, best_t = j, [(float(t), tr)]
            elif j == best:
                best_t.append((float(t), tr))
    tr = max(p[1] for p in best_t)
    ts = [p[0] for p in best_t if p[1] == tr]
    return round((min(ts) + max(ts)) / 2, 3), tr


def run_calibration(
    reference: list[RefProblem],
    settings: DecontamSettings | None = None,
    seed: int = 0,
    max_refs: int | None = None,
    n_compositions: int = 600,
) -> dict:
    """Build the set, score it, choose thresholds on train, report train and test metrics."""
    from pipeline.decontam.index import ReferenceIndex
    from pipeline.decontam.stage import decontaminate

    settings = settings or DecontamSettings()
    examples = build_set(reference, seed, max_refs, n_compositions)
    index = ReferenceIndex(reference, settings)
    result = decontaminate([(e.example_id, e.code) for e in examples], index, settings)
    equiv = equivalent_refs(reference, settings)
    split = np.array([e.split for e in examples])
    train = [i for i, s in enumerate(split) if s == "train"]
    test = [i for i, s in enumerate(split) if s == "test"]
    t, tr = choose_thresholds([examples[i] for i in train], result.take(train))
    out = {
        "chosen_threshold": t,
        "chosen_raw_threshold": tr,
        "configured_threshold": settings.threshold,
        "configured_raw_threshold": settings.raw_threshold,
    }
    for name, idx in (("train", train), ("test", test)):
        ex = [examples[i] for i in idx]
        res = result.take(idx)
        out[name] = metrics(ex, res, decisions(res, settings.threshold, settings.raw_threshold, settings), equiv)
        out[name + "_at_chosen"] = metrics(ex, res, decisions(res, t, tr, settings), equiv)
    flagged = decisions(result, settings.threshold, settings.raw_threshold, settings)
    kinds: dict[str, list[bool]] = {}
    for e, f in zip(examples, flagged):
        for k in e.kind.split("+") if e.label and "+" not in e.kind else [e.kind if not e.label else "combined"]:
            kinds.setdefault(("pos:" if e.label else "neg:") + k, []).append(bool(f) == e.label)
    out["accuracy_by_kind"] = {k: (float(np.mean(v)), len(v)) for k, v in sorted(kinds.items())}
    out["errors"] = [
        {"example": e.example_id, "kind": e.kind, "label": e.label, "nearest": n, "canon": c, "ops": o}
        for e, f, n, c, o in zip(
            examples,
            flagged,
            result.column("nearest_ref").to_pylist(),
            result.column("nearest_canon").to_pylist(),
            result.column("nearest_ops").to_pylist(),
        )
        if bool(f) != e.label
    ]
    out["_examples"], out["_result"] = examples, result
    return out
