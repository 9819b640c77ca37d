"""Cost of the output commitment (tensorio.digest: SHA-256 of the output's 4 MiB leaves, staged to the host through
pinned buffers, the leaves hashed side by side on the hasher threads) per call, for outputs of 0.5 MiB, 64 MiB and
1 GiB, on the GPU when there is one (else the host); beside it, the same digest on one thread, and one SHA-256 over a
pageable `.cpu()` copy per piece (how it was made before), measured in the same run, repeats interleaved.

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

        hashers = tensorio._hashers
        tensorio.start_hashers()
        threads = tensorio._hashers

        def one_thread() -> str:
            tensorio._hashers = None
            try:
                return tensorio.digest(x)
            finally:
                tensorio._hashers = threads

        runs = (("digest, hasher threads", lambda: tensorio.digest(x)), ("digest, one thread", one_thread))
        runs += (("flat SHA-256, pageable .cpu()", pageable),)
        took = {label: 0.0 for label, _ in runs}
        for _, fn in runs:
            fn()  # warm: allocator, pinned buffers, first copy
        for _ in range(args.repeats):
            for label, fn in runs:
                if dev == "cuda":
                    torch.cuda.synchronize()
                t = time.perf_counter()
                fn()
                took[label] += time.perf_counter() - t
        for label, total in took.items():
            dt = total / args.repeats
            print(f"{label} {n * 4 / 2**20:.1f} MiB on {dev}: {dt * 1e3:.2f} ms ({n * 4 / dt / 1e9:.2f} GB/s)")
        tensorio._hashers = hashers or threads


if __name__ == "__main__":
    main()
