"""Functional confirmation, this tree's against another revision's, on the pairs a 6,000-candidate check asks for.

    .venv/bin/python benchmarks/bench_confirm.py --cache REF_CACHE --traces-from CACHE [--n 6000] [--sample 300]
        [--against HEAD~2]

Builds bench_decontam.py's labelled candidates, runs the semantic pass with their traces carried and records the
(candidate, problem) pairs it sends to confirmation (none is run there), then runs a random sample of them through
both revisions' `jailed.confirm` in this process, unjailed (the candidates are the benchmark's own compositions and
disguised copies, not hostile code), full and match-only (as the pass asks for pairs that cannot be near-variants).
Printed: CPU per pair of each, and every pair whose decision-relevant fields differ (ok, shapes, max difference,
mapping; a match-only `output_shapes_differ` counts as the same decision where the other revision did not run both
models to outputs of equal shapes).
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

FIELDS = ("ok", "max_abs_diff", "ref_shapes", "cand_shapes", "mapping", "finite")


def pairs_asked(n: int, cache: str, traces_from: str) -> list[tuple[str, str]]:
    import pyarrow as pa
    from bench_decontam import carried_traces, make_candidates

    import pipeline.decontam.semantic as sem
    from pipeline.decontam.index import ReferenceIndex
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import load_reference

    refs = load_reference(None)
    rows, _, _ = make_candidates(refs, n)
    work = tempfile.mkdtemp(prefix="bench-confirm-")  # rows without a carried trace are traced there, not in `cache`
    shutil.copytree(cache, work, dirs_exist_ok=True)
    settings = DecontamSettings(workers=2, semantic=True, semantic_cache_dir=work)
    got: list[tuple[str, str]] = []

    def record(pairs, _settings, *_):
        got.extend(pairs)
        return [{"ok": False, "reason": "not_run", "equivalent": False} for _ in pairs]

    sem.confirm_pairs = record
    traces = carried_traces(rows, traces_from)
    cands = pa.table(
        {
            "task_id": [t for t, _ in rows],
            "code": [c for _, c in rows],
            "semantic_trace": pa.array(traces, pa.string()),
        }
    )
    decontaminate(cands, ReferenceIndex(refs, settings), settings)
    return got


def worker(source: str) -> dict:
    """The jailed worker's functions (everything before its warm-up and job loop), loaded in this process."""
    mod = types.ModuleType("jailed_rev")
    exec(compile(source, "<jailed>", "exec"), mod.__dict__)
    g = {"PAYLOAD": {}, "__name__": "worker"}
    exec(compile(mod.WORKER.split("# Warm up here")[0], "<worker>", "exec"), g)
    return g


def run(g: dict, cand: str, ref: str, *more) -> tuple[dict, float]:
    t = time.process_time()
    try:
        rep = g["confirm"](cand, ref, 20_000_000, *more)
    except Exception as e:
        rep = {"ok": False, "reason": "exception", "error": f"{type(e).__name__}: {e}"[:200]}
    return rep, time.process_time() - t


def same(a: dict, b: dict) -> bool:
    if b.get("reason") == "output_shapes_differ":
        return not (a.get("ok") and a.get("ref_shapes") == a.get("cand_shapes"))
    return {k: a.get(k) for k in FIELDS} == {k: b.get(k) for k in FIELDS}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--cache", required=True, help="semantic cache holding the reference's traces")
    ap.add_argument("--traces-from", required=True, help="cache holding the candidates' traces (an earlier run's)")
    ap.add_argument("--against", default="0f637fc", help="git revision to compare with (default: before version 4)")
    args = ap.parse_args()
    pairs = pairs_asked(args.n, args.cache, args.traces_from)
    print(f"{len(pairs)} pairs asked for by the {args.n}-candidate pass; sampling {args.sample}")
    random.Random(0).shuffle(pairs)
    pairs = pairs[: args.sample]
    old_src = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{args.against}:pipeline/decontam/jailed.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    old, new = worker(old_src), worker((ROOT / "pipeline/decontam/jailed.py").read_text())
    for g in (old, new):  # first-call set-up outside the timings
        run(g, pairs[0][0], pairs[0][1])
    new_takes_mode = "match_only" in (ROOT / "pipeline/decontam/jailed.py").read_text()
    for label, more in (("full", ()), ("match-only", (True,))):
        if more and not new_takes_mode:
            continue
        t_old = t_new = 0.0
        differ = 0
        for cand, ref in pairs:
            a, da = run(old, cand, ref)
            b, db = run(new, cand, ref, *more)
            t_old, t_new = t_old + da, t_new + db
            if not same(a, b):
                differ += 1
                print(f"  DIFFER: { ({k: a.get(k) for k in FIELDS}) } vs { ({k: b.get(k) for k in FIELDS}) }"[:400])
        per_old, per_new = 1000 * t_old / len(pairs), 1000 * t_new / len(pairs)
        print(
            f"{label}: {args.against} {per_old:.1f} ms, this tree {per_new:.1f} ms CPU per pair (in-process, "
            f"unjailed); {differ} of {len(pairs)} pairs differ"
        )


if __name__ == "__main__":
    main()
