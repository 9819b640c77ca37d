"""Robustness run: curation over randomly corrupted trajectories must neither raise nor lose a row.

    .venv/bin/python benchmarks/bench_curate_fuzz.py [--seeds 150] [--rows 200]

Each seed corrupts `rows` copies of a good trajectory (1-3 random fields or nested items replaced by junk of
another shape: None, strings, huge ints, NaN, lists of junk messages...) and curates them in both critic modes.
It prints how many rows were kept, dropped per reason, and checks every input row is accounted for.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter

from pipeline.curate.synthetic import JUNK


def mutate(obj, rng: random.Random, depth: int = 0) -> None:
    junk = json.loads(json.dumps(rng.choice(JUNK)))  # a fresh copy: no shared (or cyclic) structures
    if isinstance(obj, dict) and obj:
        k = rng.choice(sorted(obj))
        if rng.random() < 0.5 or depth > 4:
            obj[k] = junk
        else:
            mutate(obj[k], rng, depth + 1)
    elif isinstance(obj, list) and obj:
        i = rng.randrange(len(obj))
        if rng.random() < 0.5 or depth > 4:
            obj[i] = junk
        else:
            mutate(obj[i], rng, depth + 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=150)
    ap.add_argument("--rows", type=int, default=200)
    args = ap.parse_args()

    from pipeline.curate.settings import CurateSettings
    from pipeline.curate.stage import curate
    from pipeline.curate.synthetic import scenario, trajectory

    scen = scenario()
    good = json.loads(json.dumps(trajectory(scen["ids"]["good"], 7, task_code="x")))
    reasons: Counter = Counter()
    kept = total = 0
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        rng = random.Random(seed)
        rows = []
        for n in range(args.rows):
            b = json.loads(json.dumps(good))
            b["traj_id"] = f"f{n}"
            b["values"] = [rng.choice([0.5, None, "x", float("nan")]) for _ in range(2)]
            for _ in range(rng.randint(1, 3)):
                mutate(b, rng)
            rows.append(b)
        for mode in ("sft", "integrity"):
            r = curate(
                scen["tasks"],
                scen["validation"],
                scen["contamination"],
                rows,
                CurateSettings(critic_source=mode),
                f"fuzz-{seed}",
            )
            drops = [d for d in r.drops.to_pylist() if d["dataset"] == "sft"]
            assert r.sft.num_rows + len(drops) == len(rows), (seed, mode)
            if mode == "sft":
                reasons.update(d["reason"] for d in drops)
                kept += r.sft.num_rows
                total += len(rows)
    print(
        f"{total:,} corrupted trajectories ({args.seeds} seeds x {args.rows}), curated in both critic modes in "
        f"{time.perf_counter() - t0:.1f} s: no exception, every row kept ({kept}) or dropped with a reason"
    )
    for reason, n in reasons.most_common():
        print(f"  {reason}: {n}")


if __name__ == "__main__":
    main()
