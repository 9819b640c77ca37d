"""Cost of the output commitment (tensorio.digest: SHA-256 of the output's 4 KiB leaves) per call, for outputs of
0.5 MiB, 64 MiB and 1 GiB. On a GPU: the leaves hashed on the GPU (leafhash.py) vs staged to the host through pinned
buffers and hashed there vs one SHA-256 over a pageable `.cpu()` copy per piece (no leaves); on the host, the last
two; and the determinism check's comparison of two host outputs (tensorio.identical) and a trial output's
fingerprint (tensorio.fingerprint). Measured in the same run, repeats interleaved.

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
    gpu_hasher = None
    if dev == "cuda":
        import tempfile

        from pipeline.evaluate import leafhash
        from pipeline.evaluate.build import resolve_arch_list

        d, why = leafhash.build(tempfile.mkdtemp(prefix="leafhash-"), resolve_arch_list())
        gpu_hasher = leafhash.load(d)
        print(f"GPU leaf hasher: {'loaded' if gpu_hasher else 'unavailable: ' + why}")
    for n in (2**17, 2**24, 2**28):
        x = torch.randn(n, device=dev)
        b = x.view(torch.uint8)

        def pageable() -> str:
            h = hashlib.sha256()
            for i in range(0, b.numel(), tensorio.CHUNK):
                h.update(b[i : i + tensorio.CHUNK].cpu().numpy().data)
            return h.hexdigest()

        def on_gpu() -> str:
            tensorio._device_hasher = gpu_hasher
            try:
                return tensorio.digest(x)
            finally:
                tensorio._device_hasher = None

        runs = (("digest, leaves hashed on the host", lambda: tensorio.digest(x)),)
        if gpu_hasher is not None:
            runs = (("digest, leaves hashed on the GPU", on_gpu),) + runs
        runs += (("flat SHA-256, pageable .cpu()", pageable),)
        digests = {fn() for _, fn in runs[:-1]}  # warm: allocator, pinned buffers, first copy, kernel load
        assert len(digests) == 1, "the digest differs between where it was computed"
        # The determinism check on the trusted side: a second output held on the host, compared with the first
        # (tensorio.identical) instead of hashed.
        xh = x.cpu()
        again = xh.clone()
        assert tensorio.identical(xh, again)
        runs += (("identical, two host outputs compared (determinism check)", lambda: tensorio.identical(xh, again)),)
        runs += (("fingerprint of a host output (result_caching)", lambda: tensorio.fingerprint(xh, 7)),)
        took = {label: 0.0 for label, _ in runs}
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


if __name__ == "__main__":
    main()
