"""What decontamination and validation do to our own composer's tasks (CPU; no GPU needed).

    .venv/bin/python benchmarks/probe_composer.py --n 2000 --decontam     # flagged against KernelBench, by reason
    .venv/bin/python benchmarks/probe_composer.py --n 150 --validate      # validation outcome counts (CPU, eager only)

Tasks are `compose_task(catalog, seed, op_mix, profile("small"))` for seeds 0..n-1 (the same seed, the same code).
`--decontam` prints every flagged task with its nearest problem and ops; `--validate` prints the forward of every task
dropped as `identity_output` or `mutates_inputs`.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402

from pipeline.synth.catalog import load_catalog  # noqa: E402
from pipeline.synth.composer import CompositionError, compose_task, profile  # noqa: E402
from pipeline.synth.settings import SynthSettings  # noqa: E402


def composed(n: int) -> list[tuple[str, str]]:
    s, cat = SynthSettings(), load_catalog(None)
    out = []
    for seed in range(n):
        try:
            out.append((f"t{seed}", compose_task(cat, seed, s.op_mix, profile("small")).code))
        except CompositionError:
            pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--decontam", action="store_true")
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--kernelbench", default=str(Path(__file__).resolve().parents[2] / "shared" / "kernelbench"))
    a = ap.parse_args()
    tasks = composed(a.n)
    if a.decontam:
        from pipeline.decontam.stage import decontaminate
        from pipeline.kernelbench import load_reference

        t0 = time.perf_counter()
        rows = decontaminate(tasks, load_reference(a.kernelbench)).to_pylist()
        flagged = [r for r in rows if r["contaminated"]]
        reasons = dict(collections.Counter(r["reason"] for r in flagged))
        print(f"{len(tasks)} composed tasks; {len(flagged)} flagged {reasons} ({time.perf_counter() - t0:.1f} s)")
        for r in flagged:
            print(
                r["task_id"],
                r["reason"],
                r["nearest_ref"],
                r["ops"],
                round(r["nearest_canon"], 3),
                round(r["nearest_ops"], 3),
            )
    if a.validate:
        from pipeline.validate.settings import ValidateSettings
        from pipeline.validate.stage import validate

        codes = [c for _, c in tasks]
        rows = validate(
            pa.table({"code": codes}), ValidateSettings(timeout_s=60, check_compile=False), "cpu"
        ).to_pylist()
        print(f"{len(rows)} validated; {dict(collections.Counter(r['reason'] for r in rows))}")
        for r, c in zip(rows, codes):
            if r["reason"] in ("identity_output", "mutates_inputs"):
                i = c.index("def forward")
                print("----", r["reason"], r["detail"], "\n" + c[i : i + 300])


if __name__ == "__main__":
    main()
