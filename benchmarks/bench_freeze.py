"""Cost of freezing a candidate's jail while the judge works on its reply (`CandidateProcess.freeze`: SIGSTOP to
every process of the jail, each thread confirmed stopped in /proc) and of thawing it, on a real jailed candidate
process (device "cpu"), between null calls.

    python benchmarks/bench_freeze.py [--n 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.evaluate import judge, options  # noqa: E402

TASK = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=-1)

    def get_inputs():
        return [torch.randn(4, 32)]

    def get_init_inputs():
        return []
""")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    args = ap.parse_args()
    s = options.resolve({"device": "cpu"})
    dirs = judge.EvalDirs.make()
    payload = {"task_code": TASK, "device": "cpu", "l2_flush": False, "gpu_memory_fraction": None}
    cand = judge.CandidateProcess({**payload, "solution": None, "solution_files": []}, dirs, s, "9.0", read_dirs=[])
    try:
        if cand.recv(120) is None or not (cand.request({"op": "setup"}, 120)[0] or {}).get("ok"):
            sys.exit("the candidate process did not start")
        freeze, thaw, procs = [], [], 0
        for _ in range(args.n):
            t = time.perf_counter()
            if not cand.freeze():
                sys.exit("could not freeze the jail")
            freeze.append((time.perf_counter() - t) * 1e3)
            procs = len(cand._frozen)
            t = time.perf_counter()
            cand.thaw()
            thaw.append((time.perf_counter() - t) * 1e3)
            if cand.request({"op": "null", "seed": 1, "outputs": []}, 60)[0] is None:
                sys.exit("no reply after thawing")
        print(
            f"freeze: median {statistics.median(freeze):.2f} ms, max {max(freeze):.2f} ms ({procs} processes); "
            f"thaw: median {statistics.median(thaw):.3f} ms; {args.n} rounds, each followed by a null call"
        )
    finally:
        cand.close(5.0, kill=True)
        dirs.remove()


if __name__ == "__main__":
    main()
