"""What the trusted bytecode tree (pipeline.bytecode) saves a jailed job: the tree's one-off fill, then a jailed
`import torch` and torch.compile's modules with the tree and without it, alternated in one run.

    python benchmarks/bench_jail_pycache.py --runs 3

On an environment that has its bytecode the tree is not used (`needed: false`); `--force` measures it anyway.
`fill_s` is the one-off compile of the environment (nothing to do where the tree is up to date).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

JOB = """
import time
t = time.perf_counter()
import torch
t1 = time.perf_counter()
import torch._dynamo, torch._inductor.compile_fx
t2 = time.perf_counter()
emit_result({"import_torch_s": t1 - t, "compile_modules_s": t2 - t1})
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--force", action="store_true", help="use the tree even where the environment has bytecode")
    a = ap.parse_args()
    from pipeline import bytecode
    from pipeline.sandbox import _package_dir, run_sandboxed

    needed = bytecode.needed()
    if not needed and not a.force:
        print(json.dumps({"needed": False, "note": "this environment has its bytecode: the tree is not used"}))
        return
    os.environ["OPFORGE_JAIL_PYCACHE"] = "on"
    t0 = time.perf_counter()
    tree = bytecode.prefix(_package_dir())
    fill_s = time.perf_counter() - t0
    out: dict[str, list[float]] = {}
    for _ in range(a.runs):
        for mode in ("off", "on"):
            os.environ["OPFORGE_JAIL_PYCACHE"] = "off" if mode == "off" else "on"
            bytecode.prefix.cache_clear()
            t = time.perf_counter()
            r = run_sandboxed(JOB, timeout_s=300, memory_mb=None)
            wall = time.perf_counter() - t
            if not r.ok:
                print(json.dumps({"mode": mode, "reason": r.reason, "error": r.error_message}), file=sys.stderr)
                continue
            for k, v in {**r.result, "job_wall_s": wall}.items():
                out.setdefault(f"{k}_{'tree' if mode == 'on' else 'no_tree'}", []).append(v)
    med = {k: round(statistics.median(v), 3) for k, v in sorted(out.items())}
    ratio = {
        k: round(med[f"{k}_no_tree"] / med[f"{k}_tree"], 2)
        for k in ("import_torch_s", "compile_modules_s", "job_wall_s")
        if med.get(f"{k}_tree")
    }
    print(
        json.dumps(
            {"needed": needed, "tree": tree, "fill_s": round(fill_s, 2), "runs": a.runs, "median": med, "x": ratio},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
