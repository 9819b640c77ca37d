"""Cost of the output commitment (tensorio.digest: SHA-256 of the output's bytes, staged to the host through pinned
buffers) per call, for outputs of 0.5 MiB, 64 MiB and 1 GiB, on the GPU when there is one (else the host); beside it,
the same hash over a pageable `.cpu()` copy per piece (how it was staged before), measured in the same run.

    python benchmarks/bench_digest.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
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
        b = x.view(torch.uint8)

        def pageable() -> str:
            h = hashlib.sha256()
            for i in range(0, b.numel(), tensorio.CHUNK):
                h.update(b[i : i + tensorio.CHUNK].cpu().numpy().data)
            return h.hexdigest()

        for label, fn in (("staged (digest)", lambda: tensorio.digest(x)), ("pageable .cpu()", pageable)):
            fn()  # warm: allocator, pinned buffers, first copy
            if dev == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(args.repeats):
                fn()
            dt = (time.perf_counter() - t) / args.repeats
            print(f"{label} {n * 4 / 2**20:.1f} MiB on {dev}: {dt * 1e3:.2f} ms ({n * 4 / dt / 1e9:.2f} GB/s)")


if __name__ == "__main__":
    main()
