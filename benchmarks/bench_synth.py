"""Throughput (tasks validated per minute) and yield per filter of `opforge synth`.

    .venv/bin/python benchmarks/bench_synth.py --n 500 [--no-compile] [--profile small] [--workers 2]

Composes N tasks with the programmatic composer, validates them on local Ray (one sandboxed process per
candidate), prints the per-filter yield table and the figures as JSON (also written next to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", default="small")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile filter (CPU time)")
    ap.add_argument("--out", default="benchmarks/results/synth")
    a = ap.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from pipeline.executor import ensure_ray
    from pipeline.storage import write_table
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import drop_reasons, filter_yield, validate

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tasks = synthesize(SynthSettings(n=a.n, seed=a.seed, size_profile=a.profile), "bench")
    compose_s = time.time() - t0
    write_table("tasks", tasks, out / "tasks.parquet")
    ensure_ray(num_cpus=a.workers, object_store_mb=512)
    t1 = time.time()
    done = [0]

    def progress(_i, row):  # partial figures, in case the run is cut short
        done[0] += 1
        if done[0] % 25 == 0:
            el = time.time() - t1
            print(f"progress {done[0]}/{a.n} in {el:.0f}s = {done[0] / (el / 60):.1f}/min", flush=True)

    v = validate(tasks, ValidateSettings(check_compile=not a.no_compile), "cpu", on_result=progress)
    val_s = time.time() - t1
    write_table("validation", v, out / "validation.parquet")
    kept = sum(v.column("valid").to_pylist())
    fy = filter_yield(v)
    print(f"{'filter':20s} {'ran':>5s} {'passed':>7s} {'failed':>7s} {'dropped_first':>14s}")
    for r in fy:
        print(f"{r['filter']:20s} {r['ran']:5d} {r['passed']:7d} {r['failed']:7d} {r['dropped_first']:14d}")
    walls = sorted(w for w in v.column("sandbox_wall_s").to_pylist() if w)
    figures = {
        "n": a.n,
        "profile": a.profile,
        "workers": a.workers,
        "check_compile": not a.no_compile,
        "compose_s": round(compose_s, 2),
        "compose_per_s": round(a.n / compose_s, 2),
        "validate_s": round(val_s, 1),
        "validated_per_min": round(a.n / (val_s / 60), 2),
        "valid": kept,
        "yield": round(kept / a.n, 3),
        "drop_reasons": drop_reasons(v),
        "median_candidate_wall_s": walls[len(walls) // 2] if walls else None,
        "load_avg_1m_at_end": os.getloadavg()[0],
    }
    print(json.dumps(figures, indent=1))
    (out / "figures.json").write_text(json.dumps({"figures": figures, "filters": fy}, indent=1))


if __name__ == "__main__":
    main()
