"""The semantic calibration: recall on verified paraphrases of KernelBench problems, decisions on near-variants,
false-positive rate on genuinely different tasks; tracing cost per task.

    .venv/bin/python benchmarks/bench_semantic.py [--max-refs 60] [--combos 1] [--different 100] [--workers 2]
        [--cache DIR] [--unjailed] [--examples FILE] [--set KEY=VALUE ...]

Built at run time from ../shared/kernelbench (pipeline.decontam.calibration.semantic_set): each rewrite kind alone
and `--combos` random combinations of 3-5 kinds per problem, each numerically verified equal to its source;
near-variants (one change of meaning) verified different; new compositions. Printed: recall per kind and overall,
the decision on near-variants, FPR on different tasks, the view that fired, tracing cost per task (cold cache).
`--unjailed`: the worker program runs in a plain subprocess instead of the jail (it forks per task either way);
for measuring on a machine whose jail forbids fork, where every task pays its own interpreter start-up. The output
says which was used. `--set KEY=VALUE`: a decontamination setting (which pairs are confirmed: docs/contamination.md's
speed and recall).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def run_unjailed(source: str, payload: dict, timeout_s: float, memory_mb: int, inherit_fds: tuple[int, ...] = ()):
    """The worker program in a plain subprocess (no jail): PAYLOAD from a file, emit_result to a file, the job queue
    (inherit_fds) as it is."""
    import json
    import os
    import subprocess
    import types

    with tempfile.TemporaryDirectory() as d:
        pj, rj = os.path.join(d, "p.json"), os.path.join(d, "r.json")
        Path(pj).write_text(json.dumps(payload))
        prog = (
            f"import json\nPAYLOAD = json.load(open({pj!r}))\nINHERITED_FDS = {list(inherit_fds)!r}\n_R = []\n"
            "def emit_result(v):\n    _R.append(v)\n" + source + f"\njson.dump(_R, open({rj!r}, 'w'))\n"
        )
        Path(d, "w.py").write_text(prog)
        p = subprocess.run(
            [sys.executable, os.path.join(d, "w.py")],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            pass_fds=inherit_fds,
        )
        res = json.loads(Path(rj).read_text()) if os.path.exists(rj) else None
        return types.SimpleNamespace(
            ok=p.returncode == 0 and res is not None,
            result=res[-1] if res else None,
            emitted=res or [],
            reason="" if p.returncode == 0 else "exception",
            error_message=p.stderr[-500:],
            violations=[],
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-refs", type=int, default=60)
    ap.add_argument("--combos", type=int, default=1)
    ap.add_argument("--different", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="semantic cache dir (default: a fresh temporary one: cold)")
    ap.add_argument("--unjailed", action="store_true")
    ap.add_argument("--reference", default=None)
    ap.add_argument(
        "--examples",
        default=None,
        help="JSON file: the built set is saved there, or read from it when it exists (same seed and sizes)",
    )
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a decontamination setting")
    args = ap.parse_args()

    import numpy as np
    from bench_decontam import with_settings

    import pipeline.decontam.semantic as sem
    from pipeline.decontam.calibration.semantic_set import SemExample, build_semantic_set, check_hand_written
    from pipeline.decontam.index import ReferenceIndex
    from pipeline.decontam.settings import DecontamSettings
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import load_reference

    if args.unjailed:
        sem._RUN[0] = run_unjailed
    print(f"worker runs {'UNJAILED (plain subprocess, fork per task)' if args.unjailed else 'in the jail'}")
    refs = load_reference(args.reference)
    t = time.perf_counter()
    hand = check_hand_written(refs)
    print(f"hand-written paraphrases verified equal to their source: {sum(hand.values())}/{len(hand)} {hand}")
    saved = Path(args.examples) if args.examples else None
    if saved is not None and saved.exists():  # the same set as a previous run (building it verifies: minutes)
        import json

        ex = [SemExample(**e) for e in json.loads(saved.read_text())]
    else:
        ex = build_semantic_set(
            refs, seed=args.seed, max_refs=args.max_refs, combos=args.combos, n_different=args.different
        )
        if saved is not None:
            import dataclasses
            import json

            saved.write_text(json.dumps([dataclasses.asdict(e) for e in ex]))
    print(
        f"built {len(ex)} examples {dict(collections.Counter(e.label for e in ex))} from "
        f"{len({e.source for e in ex if e.source})} problems in {time.perf_counter() - t:.0f} s "
        "(verified; not timed)"
    )
    cache = args.cache or tempfile.mkdtemp(prefix="opforge-sem-cache-")
    settings = with_settings(DecontamSettings(workers=args.workers), args.set, semantic=True, semantic_cache_dir=cache)
    t = time.perf_counter()
    index = ReferenceIndex(refs, settings)
    sr = index.semantic()
    t_ref = time.perf_counter() - t
    traced = [v for v in sr.views if not v.cached]
    print(
        f"reference semantic views: {len(sr.views)} problems, {sum(v.ok for v in sr.views)} traced ok "
        f"({dict(collections.Counter(v.reason for v in sr.views if not v.ok))}); {t_ref:.1f} s wall "
        f"({len(traced)} traced now, {t_ref / max(len(traced), 1):.3f} s/task wall incl. start-up); per-task child "
        f"time median {np.median([v.trace_s for v in traced] or [0]):.3f} s, p90 "
        f"{np.percentile([v.trace_s for v in traced] or [0], 90):.3f} s"
    )
    t = time.perf_counter()
    res = decontaminate([(e.example_id, e.code) for e in ex], index, settings)
    t_dec = time.perf_counter() - t
    rows = res.to_pylist()
    how = "cold cache for the examples" if not args.cache else "--cache given: warm for what it already holds"
    print(f"decontaminate {len(ex)} examples: {t_dec:.1f} s wall ({how})")
    t = time.perf_counter()
    res2 = decontaminate([(e.example_id, e.code) for e in ex], index, settings)
    print(
        f"again, warm cache: {time.perf_counter() - t:.1f} s wall; same decisions: "
        f"{res2.column('contaminated').to_pylist() == res.column('contaminated').to_pylist()}"
    )

    by = collections.defaultdict(list)
    for e, r in zip(ex, rows):
        by[e.label].append((e, r))
    para = by["paraphrase"]
    rec = np.mean([r["contaminated"] for _, r in para]) if para else float("nan")
    print(f"paraphrases: recall {rec:.3f} ({sum(r['contaminated'] for _, r in para)}/{len(para)})")
    kinds = collections.defaultdict(list)
    for e, r in para:
        kinds["combo" if "+" in e.kind else e.kind].append(r["contaminated"])
        if "+" in e.kind and e.kind.count("+") >= 3:
            kinds["combo(4+ kinds)"].append(r["contaminated"])
    for k, v in sorted(kinds.items()):
        print(f"  {k:18s} recall {np.mean(v):.3f} ({sum(v)}/{len(v)})")
    right = [r["nearest_ref"] == e.source for e, r in para if r["contaminated"]]
    print(f"  nearest problem right for {np.mean(right) if right else float('nan'):.3f} of flagged")
    print("  view fired:", dict(collections.Counter(r["view"] for _, r in para if r["contaminated"])))
    fsim = [r["semantic_score"] for _, r in para if r["view"] == "functional"]
    if fsim:  # how near the confirmed problem was by the graph alone (below semantic_threshold: found by inputs)
        print(
            f"  functional matches by semantic score of the matched problem: "
            f"{dict(collections.Counter(f'{min(int(s * 10) / 10, 0.9):.1f}+' for s in fsim))}"
        )
    for e, r in para:
        if not r["contaminated"]:
            print(
                f"  MISSED {e.example_id}: status={r['semantic_status']} sem={r['semantic_score']:.3f} "
                f"({r['semantic_ref']}) {r['evidence'][:160]}"
            )
    var = by["near_variant"]
    print(
        f"near-variants: {len(var)}; decided near_variant {sum(r['near_variant'] for _, r in var)}, "
        f"functional_match {sum(r['reason'] == 'functional_match' for _, r in var)}, other flags "
        f"{sum(r['contaminated'] and r['reason'] not in ('near_variant', 'functional_match') for _, r in var)}, "
        f"clean {sum(not r['contaminated'] for _, r in var)}"
    )
    for kind in sorted({e.kind for e, _ in var}):
        got = [r for e, r in var if e.kind == kind]
        print(
            f"  {kind:10s} near_variant {sum(r['near_variant'] for r in got)}/{len(got)}; decisions "
            f"{dict(collections.Counter(r['reason'] or 'clean' for r in got))}"
        )
    diff = by["different"]
    fp = [r for _, r in diff if r["contaminated"]]
    print(
        f"different tasks: FPR {len(fp) / max(len(diff), 1):.3f} ({len(fp)}/{len(diff)}); "
        f"reasons {dict(collections.Counter(r['reason'] for r in fp))}"
    )
    for r in fp:
        print(
            f"  FLAGGED {r['task_id']}: {r['reason']} ref={r['nearest_ref']} sem={r['semantic_score']:.3f} "
            f"{r['evidence'][:300]}"
        )


if __name__ == "__main__":
    main()
