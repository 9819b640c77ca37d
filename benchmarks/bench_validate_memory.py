"""Peak memory of one validation (the harness's checks, torch.compile off) against the harness of another revision,
on a task with large inputs and outputs: a task's peak bounds how many tasks share a GPU.

    python benchmarks/bench_validate_memory.py --against a805e61~1 [--rounds 2] [--rows 32768]

Each run is its own process (peak RSS on the CPU, `torch.cuda.max_memory_allocated` on a GPU, as the harness reports
it), the two revisions alternating.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TASK = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4096))
    def forward(self, x):
        return torch.tanh(x * self.w)
def get_inputs():
    return [torch.randn(ROWS, 4096)]
def get_init_inputs():
    return []
"""

ONE = """
import importlib.util, json, sys
sys.path.insert(0, sys.argv[3])
spec = importlib.util.spec_from_file_location("harness", sys.argv[1])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
p = json.loads(sys.argv[2])
r = h.check(p)
print(json.dumps({"reason": r.get("reason"), "peak_memory_mb": r.get("peak_memory_mb")}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", required=True, help="the git revision whose harness is compared")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rows", type=int, default=32768, help="input rows of 4,096 float32 (32768: 512 MB)")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="opforge-bench-mem-"))
    old = tmp / "harness_old.py"
    old.write_text(
        subprocess.run(
            ["git", "show", f"{a.against}:pipeline/validate/harness.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    payload = {
        "code": TASK.replace("ROWS", str(a.rows)),
        "device": a.device,
        "seed": 0,
        "atol": 1e-3,
        "rtol": 1e-3,
        "det_atol": 1e-6,
        "check_compile": False,
        "timing_trials": 3,
        "sealed_path": str(tmp / "sealed.pt"),
    }
    peaks: dict[str, list[float]] = {a.against: [], "working tree": []}
    for _ in range(a.rounds):
        for name, path in ((a.against, old), ("working tree", ROOT / "pipeline" / "validate" / "harness.py")):
            out = (
                subprocess.run(
                    [sys.executable, "-c", ONE, str(path), json.dumps(payload), str(ROOT)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            r = json.loads(out)
            assert r["reason"] == "", r
            peaks[name].append(r["peak_memory_mb"])
    for name, v in peaks.items():
        print(f"{name}: peak {min(v):.0f} MiB (runs: {', '.join(f'{x:.0f}' for x in v)})")
    print(f"ratio: {min(peaks['working tree']) / min(peaks[a.against]):.3f}")


if __name__ == "__main__":
    main()
