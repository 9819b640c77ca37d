"""Cost of the output commitment (tensorio.digest: SHA-256 of the output's bytes, copied to the host in pieces)
per call, for outputs of 0.5 MiB, 64 MiB and 1 GiB, on the GPU when there is one (else the host).

    python benchmarks/bench_digest.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.evaluate import tensorio  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for n in (2**17, 2**24, 2**28):
        x = torch.randn(n, device=dev)
        tensorio.digest(x)  # warm: allocator, first copy
        if dev == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(args.repeats):
            tensorio.digest(x)
        dt = (time.perf_counter() - t) / args.repeats
        print(f"digest {n * 4 / 2**20:.1f} MiB on {dev}: {dt * 1e3:.2f} ms ({n * 4 / dt / 1e9:.2f} GB/s)")


if __name__ == "__main__":
    main()
