"""The judge's output comparison (pipeline.evaluate.tolerance.compare), per output, on the CPU of the trusted side:
this tree's against the version at a git revision, side by side, alternating, on the same tensors; and their
verdicts on random cases (NaN, inf, zeros, tiny and huge scales, all float dtypes) must agree.

    python benchmarks/bench_compare.py --against 0055c6d --numel 16777216 --repeats 3
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_at(rev: str):
    src = subprocess.run(
        ["git", "show", f"{rev}:pipeline/evaluate/tolerance.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "tolerance_at_rev.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("tolerance_at_rev", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def agree(a, b, cases: int) -> int:
    kw = dict(rtol=1e-2, scale_atol=1e-2, atol_floor=1e-8, kb_atol=1e-2, kb_rtol=1e-2)
    g, rnd, bad = torch.Generator().manual_seed(0), random.Random(0), 0
    for _ in range(cases):
        n = rnd.choice([1, 7, 100, 1000])
        dt = rnd.choice([torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64])
        scale = 10 ** rnd.uniform(-6, 4)
        r = (torch.randn(n, generator=g, dtype=torch.float64) * scale).to(dt)
        o = r.clone()
        k = rnd.random()
        if k < 0.3:
            noise = torch.randn(n, generator=g, dtype=torch.float64) * scale * 10 ** rnd.uniform(-5, 0)
            o = (r.to(torch.complex128 if dt.is_complex else torch.float64) + noise).to(dt)
        elif k < 0.4:
            o = torch.zeros_like(r)
        if not dt.is_complex and rnd.random() < 0.3:
            for t in (r, o):
                t[torch.randint(0, n, (max(1, n // 10),), generator=g)] = rnd.choice(
                    [float("nan"), float("inf"), -float("inf"), 0.0, 1e-40]
                )
        x, y = a.compare_tensor(r, o, **kw), b.compare_tensor(r, o, **kw)
        same = all(x[k] == y[k] for k in ("ok", "kernelbench_ok", "reason")) and all(
            math.isclose(x[k], y[k], rel_tol=1e-5, abs_tol=1e-30)
            for k in ("max_abs_err", "max_rel_err", "max_tol_err", "scale", "atol_eff")
        )
        bad += not same
    return bad


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", required=True, help="git revision of the comparison to measure against")
    ap.add_argument("--numel", type=int, default=16 * 2**20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", type=int, default=3000)
    args = ap.parse_args()
    from pipeline.evaluate import options, tolerance

    before = load_at(args.against)
    s = options.resolve({"device": "cpu"})
    ref = torch.randn(args.numel)
    out = ref + torch.randn_like(ref) * 1e-4
    secs: dict[str, list[float]] = {"before": [], "now": []}
    for i in range(args.repeats):
        for name, mod in (
            (("before", before), ("now", tolerance)) if i % 2 == 0 else (("now", tolerance), ("before", before))
        ):
            t = time.perf_counter()
            mod.compare(ref, out, s)
            secs[name].append(time.perf_counter() - t)
    med = {k: sorted(v)[len(v) // 2] for k, v in secs.items()}
    print(
        f"compare of {args.numel:,} float32 elements, median of {args.repeats} (s): before {med['before']:.3f}, "
        f"now {med['now']:.3f}, ratio {med['before'] / med['now']:.2f}x; torch threads {torch.get_num_threads()}"
    )
    print(f"verdicts and figures that differ on {args.cases} random cases: {agree(before, tolerance, args.cases)}")


if __name__ == "__main__":
    main()
