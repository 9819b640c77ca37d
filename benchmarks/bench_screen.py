"""The confirmation screen (jailed.screen) against confirm() itself, on the pairs a 6,000-candidate check asks for.

    .venv/bin/python benchmarks/bench_screen.py --cache REF_CACHE --traces-from CACHE [--n 6000] [--sample 0]

Builds bench_decontam.py's labelled candidates, runs the semantic pass with their traces carried (tracer version 7:
with signatures) and records the pairs it sends to confirmation, each with its mode (full, or match-only) and the
candidate's signature; then, in this process and unjailed (the candidates are the benchmark's own compositions and
disguised copies, not hostile code), screens every pair and runs `jailed.confirm` on each pair the screen decided
(all of them, or a random `--sample`). Printed: how many pairs the screen decides, by reason; CPU per pair of the
screen and of the confirmation; every decided pair whose confirmation gives another decision (ok, reason, shapes;
for an exception, the error's type and message) - none expected; and the screen's time by kind of step (cProfile).
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MAX_NUMEL = 20_000_000


def pairs_asked(n: int, cache: str, traces_from: str) -> list[tuple[str, str, bool, dict | None]]:
    import shutil
    import tempfile

    import pyarrow as pa
    from bench_decontam import carried_traces, make_candidates

    import pipeline.decontam.semantic as sem
    from pipeline.decontam.index import ReferenceIndex
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import load_reference

    refs = load_reference(None)
    rows, _, _ = make_candidates(refs, n)
    work = tempfile.mkdtemp(prefix="bench-screen-")  # rows without a final carried trace are traced there
    shutil.copytree(cache, work, dirs_exist_ok=True)
    settings = DecontamSettings(workers=2, semantic=True, semantic_cache_dir=work)
    got: list[tuple[str, str, bool, dict | None]] = []

    def record(pairs, _settings, full=None, sigs=None):
        full = full if full is not None else [True] * len(pairs)
        got.extend((c, r, f, (sigs or {}).get(c)) for (c, r), f in zip(pairs, full))
        return [{"ok": False, "reason": "not_run", "equivalent": False} for _ in pairs]

    sem.confirm_pairs = record
    cands = pa.table(
        {
            "task_id": [t for t, _ in rows],
            "code": [c for _, c in rows],
            "semantic_trace": pa.array(carried_traces(rows, traces_from), pa.string()),
        }
    )
    decontaminate(cands, ReferenceIndex(refs, settings), settings)
    return got


def decision(rep: dict) -> tuple:
    """What a decision reads from a report that ends without outputs compared (and the error, to show it is the
    same step that ended it)."""
    err = str(rep.get("error") or "")
    return (bool(rep.get("ok")), rep.get("reason"), rep.get("ref_shapes"), rep.get("cand_shapes"), err[:120])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--sample", type=int, default=0, help="confirm this many decided pairs (0: all)")
    ap.add_argument("--cache", required=True, help="semantic cache holding the reference's traces (tracer 7)")
    ap.add_argument("--traces-from", required=True, help="cache holding the candidates' traces (an earlier run's)")
    args = ap.parse_args()
    from bench_confirm import worker

    pairs = pairs_asked(args.n, args.cache, args.traces_from)
    print(f"{len(pairs)} pairs asked for by the {args.n}-candidate pass ({sum(not p[2] for p in pairs)} match-only)")
    g = worker((ROOT / "pipeline/decontam/jailed.py").read_text())
    g["PAYLOAD"]["max_numel"] = MAX_NUMEL
    prof = cProfile.Profile()
    t = time.process_time()
    prof.enable()
    screened = [g["screen"](r, s, MAX_NUMEL, not f) if s is not None else None for c, r, f, s in pairs]
    prof.disable()
    t_screen = time.process_time() - t
    decided = [(p, d) for p, d in zip(pairs, screened) if d is not None]
    reasons = collections.Counter(d["reason"] for _, d in decided)
    print(
        f"screen: {len(decided)} of {len(pairs)} pairs decided {dict(reasons)}; {sum(p[3] is None for p in pairs)} "
        f"without a signature; {1000 * t_screen / max(len(pairs), 1):.2f} ms CPU per pair asked "
        f"({t_screen:.2f} s), {len(g['_ON_VARIANT'])} distinct (problem, input variant) dry runs"
    )
    check = decided if not args.sample else random.Random(0).sample(decided, min(args.sample, len(decided)))
    differ, t_conf = 0, 0.0
    for (cand, ref, full, _), d in check:
        t = time.process_time()
        try:
            rep = g["confirm"](cand, ref, MAX_NUMEL, not full)
        except Exception as e:
            rep = {"ok": False, "reason": "exception", "error": f"{type(e).__name__}: {e}"[:300]}
        t_conf += time.process_time() - t
        if decision(rep) != decision(d):
            differ += 1
            if differ <= 5:
                print(f"  DIFFERS: screen {decision(d)} vs confirm {decision(rep)}")
    print(
        f"confirm on {len(check)} decided pairs: {differ} decide otherwise; "
        f"{1000 * t_conf / max(len(check), 1):.2f} ms CPU per pair in-process (the fork per candidate not counted)"
    )
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(8)


if __name__ == "__main__":
    main()
