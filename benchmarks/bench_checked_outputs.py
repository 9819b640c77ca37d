"""What checking timed outputs on leaves saves the judge, side by side with whole checks, on this machine's CPU.

One honest candidate (a row softmax in Python) on a task whose output takes `--mib` MiB, evaluated with
`check_leaves` 256 (leaves of 4 KiB per tensor, the default) and 0 (every checked output whole), in alternation,
`--repeats` times each, through the real protocol on device "cpu" (jailed reference and candidate processes).
Prints per setting the median evaluation time, its phases after the correctness trials, the bytes the reference and
the candidate wrote for the checked calls, and the verdicts.

    python benchmarks/bench_checked_outputs.py --mib 64 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import textwrap
from pathlib import Path

from pipeline.evaluate.build import CompileResult
from pipeline.evaluate.harness import evaluate

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)

def get_inputs():
    return [torch.randn(ROWS, 32768)]

def get_init_inputs():
    return []
"""

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""

SETTINGS = {
    "device": "cpu",
    "static_checks": False,
    "allow_torch_ops": ["_softmax", "softmax"],
    "trials": 2,
    "post_timing_trials": 1,
    "timing_trials": 10,
    "timing_min_ms": 5.0,
    "timing_warmup": 3,
    "timing_warmup_ms": 5.0,
    "timing_max_s": 3.0,
    "calibration_calls": 10,
    "clock_slack_ms": 1e6,  # this machine's jitter is not what is measured here
    "check_max_calls": 16,
    "kernel_launch_check": False,
    "baselines": False,
}


def one(task: str, sol: Path, cache: Path, check_leaves: int) -> dict:
    res = evaluate(
        task,
        str(sol),
        settings={**SETTINGS, "cache_dir": str(cache), "check_leaves": check_leaves},
        compile_result=CompileResult(True, 0.0, "", True, "", "single_file"),
    )
    ph = res.details.get("phase_s") or {}
    ref = res.details.get("reference") or {}
    return {
        "seconds": res.seconds,
        "after_timing_s": round(float(ph.get("profiled", 0.0)) + float(ph.get("done", 0.0)), 3),
        "reference_bytes": ref.get("bytes_written"),
        "checked": res.details.get("timed_outputs_checked"),
        "leaves": res.details.get("timed_leaves_checked"),
        "reward": res.reward,
        "reason": res.reason,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64, help="the output's size (rows of 32,768 floats)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    rows = max(1, args.mib * 2**20 // (32768 * 4))
    task = textwrap.dedent(TASK).replace("ROWS", str(rows))
    work = Path(tempfile.mkdtemp(prefix="opforge-bench-checked-"))
    sol = work / "sol.py"
    sol.write_text(HONEST)
    runs: dict[int, list[dict]] = {256: [], 0: []}
    for r in range(args.repeats):
        for k in (256, 0) if r % 2 == 0 else (0, 256):
            runs[k].append(one(task, sol, work / "cache", k))
            print(f"check_leaves {k}: {json.dumps(runs[k][-1])}", flush=True)
    out = {"output_mib": rows * 32768 * 4 / 2**20, "repeats": args.repeats}
    for k, rs in runs.items():
        out[f"check_leaves_{k}"] = {
            "median_s": statistics.median(r["seconds"] for r in rs),
            "median_after_timing_s": statistics.median(r["after_timing_s"] for r in rs),
            "reference_bytes": [r["reference_bytes"] for r in rs],
            "rewards": [r["reward"] for r in rs],
        }
    out["ratio_median_s"] = round(out["check_leaves_256"]["median_s"] / out["check_leaves_0"]["median_s"], 3)
    print(json.dumps(out), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs, **out}, indent=1))


if __name__ == "__main__":
    main()
