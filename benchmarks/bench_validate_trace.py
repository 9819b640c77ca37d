"""What the semantic trace adds to validation, and whether it is the trace decontamination would make.

    .venv/bin/python benchmarks/bench_validate_trace.py [--n 16] [--no-compile]

Validates N new compositions (pipeline.decontam.calibration.negatives) through the real harness and jail
(`opforge validate`'s path: one sandboxed process per task, one after another), then traces the same codes with
decontamination's own jailed worker. Printed: the trace's CPU and wall time per valid task as the harness measured
it around the trace (the cost validation pays), the validation's own time per task for scale, and how many carried
traces give the same semantic view (the same Weisfeiler-Lehman feature set) as decontamination's trace.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from pipeline.decontam import semantic as sem  # noqa: E402
from pipeline.decontam.calibration.negatives import random_composition  # noqa: E402
from pipeline.decontam.jailed import carried  # noqa: E402
from pipeline.decontam.settings import DecontamSettings  # noqa: E402
from pipeline.validate.settings import ValidateSettings  # noqa: E402
from pipeline.validate.stage import validate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-compile", action="store_true", help="validation without torch.compile (cheaper checks)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    codes = [random_composition(rng) for _ in range(args.n)]
    print("load average %.1f %.1f %.1f on %d cores" % (*os.getloadavg(), os.cpu_count()))
    settings = ValidateSettings(check_compile=not args.no_compile, timing_trials=3)
    t = time.perf_counter()
    rows = validate(pa.table({"code": codes}), settings, "cpu").to_pylist()
    t_val = time.perf_counter() - t
    valid = [(c, r) for c, r in zip(codes, rows) if r["valid"]]
    recs = [carried(r["semantic_trace"], c) for c, r in valid]
    print(
        f"validated {len(codes)} tasks in {t_val:.1f} s ({t_val / len(codes):.1f} s per task, torch.compile "
        f"{'off' if args.no_compile else 'on'}); {len(valid)} valid, {sum(x is not None for x in recs)} carry a "
        f"usable trace"
    )
    cpu = np.array([x["cpu_s"] for x in recs if x is not None] or [0.0]) * 1000
    wall = np.array([x["wall_s"] for x in recs if x is not None] or [0.0]) * 1000
    print(
        f"trace in the harness per valid task: CPU median {np.median(cpu):.1f} ms, p90 {np.percentile(cpu, 90):.1f} "
        f"ms, mean {cpu.mean():.1f} ms; wall median {np.median(wall):.1f} ms (the tracer's set-up included: "
        f"its decomposition table is built per process)"
    )
    # decontamination's own trace of the same codes (its jailed worker, a fresh cache)
    own = sem.semantic_views(
        [c for c, _ in valid],
        DecontamSettings(semantic=True, workers=2, semantic_cache_dir=tempfile.mkdtemp(prefix="bench-vt-")),
    )
    same = 0
    for rec, v in zip(recs, own):
        if rec is None:
            continue
        via = sem._view_of(rec, True)
        same += via.ok == v.ok and set(via.features.tolist()) == set(v.features.tolist())
    print(f"same semantic view as decontamination's own trace: {same} of {sum(x is not None for x in recs)}")
    print("load average %.1f %.1f %.1f on %d cores" % (*os.getloadavg(), os.cpu_count()))


if __name__ == "__main__":
    main()
