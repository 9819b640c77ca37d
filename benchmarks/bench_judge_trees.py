"""The judge's time per evaluation on this machine's CPU, this tree against another (the code before), side by side.

The honest row softmax of `bench_checked_outputs.py` (a task whose output takes `--mib` MiB) evaluated through the
real protocol on device "cpu" (jailed reference, candidate and calibrator processes), each evaluation in a fresh
interpreter that imports `pipeline` from its tree, the trees alternating `--repeats` times. Prints per tree the
median evaluation time and its phases (the judge's `phase_s`), and the verdicts.

    python benchmarks/bench_judge_trees.py --baseline-tree <checkout of the code before> --repeats 4
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, textwrap
sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2])
from bench_checked_outputs import HONEST, SETTINGS, TASK
from pipeline.evaluate.build import CompileResult
from pipeline.evaluate.harness import evaluate
import pipeline
assert pipeline.__file__.startswith(sys.argv[1]), pipeline.__file__
work = sys.argv[3]
sol = work + "/sol.py"
open(sol, "w").write(HONEST)
res = evaluate(textwrap.dedent(TASK).replace("ROWS", sys.argv[4]), sol,
               settings={**SETTINGS, "cache_dir": work + "/cache"},
               compile_result=CompileResult(True, 0.0, "", True, "", "single_file"))
print(json.dumps({"seconds": res.seconds, "phase_s": res.details.get("phase_s"), "reward": res.reward,
                  "reason": res.reason}))
"""


def one(tree: str, rows: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="opforge-bench-trees-") as work:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, tree, str(HERE), work, str(rows)],
            capture_output=True,
            text=True,
            check=False,
        )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else {"seconds": None, "error": out.stderr[-800:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-tree", required=True, help="a checkout of the code to compare against")
    ap.add_argument("--mib", type=int, default=64, help="the output's size (rows of 32,768 floats)")
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    rows = max(1, args.mib * 2**20 // (32768 * 4))
    trees = {"this": str(HERE.parent), "before": str(Path(args.baseline_tree).resolve())}
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(args.repeats):
        for k in ("this", "before") if r % 2 == 0 else ("before", "this"):
            runs[k].append(one(trees[k], rows))
            print(f"{k}: {json.dumps(runs[k][-1])[:600]}", flush=True)
    for k, rs in runs.items():
        ok = [x for x in rs if x.get("seconds") is not None]
        phases = sorted({p for x in ok for p in (x.get("phase_s") or {})})
        med = {p: round(statistics.median(float((x.get("phase_s") or {}).get(p, 0.0)) for x in ok), 3) for p in phases}
        secs = statistics.median(x["seconds"] for x in ok) if ok else float("nan")
        print(
            f"{k}: median {secs:.2f} s per evaluation over {len(ok)}; phases {med}; "
            f"rewards {[x.get('reward') for x in rs]}"
        )
    a, b = (statistics.median(x["seconds"] for x in runs[k] if x.get("seconds") is not None) for k in trees)
    print(f"this / before: {a / b:.3f}")


if __name__ == "__main__":
    main()
