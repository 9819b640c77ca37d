"""Sizes of composed gpu-profile tasks under two caps on their tensors, side by side on the same seeds: how many
have an output past the validator's limit (each would be validated on a GPU only to be dropped as
output_too_large), their inputs' and outputs' sizes, and how many still aim inside the 1-100 ms window.

    .venv/bin/python benchmarks/bench_synth_sizes.py [--n 500] [--caps 4096 2048]

(4096 MiB: the gpu profile's cap before it followed the validator's largest output, 2048 MiB by default.)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def sizes(code: str) -> tuple[int, int, int]:
    """(largest input, output, parameter) bytes of a task, run on meta tensors."""
    import torch

    ns: dict = {}
    exec(code, ns)
    with torch.device("meta"), torch.no_grad():
        model = ns["Model"](*ns["get_init_inputs"]())
        xs = ns["get_inputs"]()
        y = model(*xs)
    ys = y if isinstance(y, (list, tuple)) else [y]
    nbytes = [t.numel() * t.element_size() for t in xs if isinstance(t, torch.Tensor)]
    return (
        max(nbytes),
        sum(t.numel() * t.element_size() for t in ys),
        sum(p.numel() * p.element_size() for p in model.parameters()),
    )


def q(values: list[float]) -> str:
    v = sorted(values)
    return " / ".join(f"{v[int(p * (len(v) - 1))]:.2f}" for p in (0.5, 0.9, 0.99)) if v else "-"


def main() -> None:
    import warnings

    from pipeline.synth.catalog import load_catalog
    from pipeline.synth.composer import CompositionError, compose_task, profile
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import task_seed
    from pipeline.validate.settings import ValidateSettings

    warnings.filterwarnings("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--caps", type=float, nargs="+", default=[4096.0, 2048.0])
    a = ap.parse_args()
    ops, mix = load_catalog(), SynthSettings().op_mix
    limit = ValidateSettings().max_output_mb * 2**20
    print(
        f"{a.n} seeds (task_seed(17, i), as bench_validate_gpu.py composes); "
        f"validator's largest output {limit / 2**20:.0f} MiB"
    )
    for cap in a.caps:
        prof = profile("gpu", (2.0, 40.0), max_tensor_mb=cap)
        t0 = time.perf_counter()
        rows, failed = [], 0
        for i in range(a.n):
            try:
                c = compose_task(ops, task_seed(17, i), mix, prof)
                rows.append((c.est_ms, *sizes(c.code)))
            except CompositionError:
                failed += 1
            except Exception:  # noqa: BLE001 - a composed task the meta run cannot take: counted with failures
                failed += 1
        gib = 2**30
        over = sum(out > limit for _, _, out, _ in rows)
        in_window = sum(1.0 <= e <= 100.0 for e, *_ in rows)
        print(
            f"cap {cap:.0f} MiB: {len(rows)} composed, {failed} not ({time.perf_counter() - t0:.1f} s); "
            f"output past the validator's limit: {over} ({over / max(1, len(rows)):.1%}); "
            f"estimate inside 1-100 ms: {in_window} ({in_window / max(1, len(rows)):.1%}); "
            f"GiB median / p90 / p99: largest input {q([i / gib for _, i, _, _ in rows])}, "
            f"output {q([o / gib for _, _, o, _ in rows])}, "
            f"input + output + parameters {q([(i + o + p) / gib for _, i, o, p in rows])}; "
            f"estimated eager ms {q([e for e, *_ in rows])}"
        )


if __name__ == "__main__":
    main()
