"""The contamination check on the hand-written red-team sets (`benchmarks/semantic_redteam/`): paraphrases of
KernelBench problems, each verified numerically equal to its source with weights tied (many rewritten at other
sizes and combining several rewrite kinds), hard negatives that compute another function, and new tasks.
`manifest.json` names each file's kind and, for a paraphrase, its source problem.

Prints, per set: paraphrases flagged (and as which reason), whether the nearest problem is the source, and the
decisions on negatives and new tasks (a copy, a near_variant, or clean).

    python benchmarks/bench_semantic_redteam.py [--kernelbench DIR] [--cache DIR] [--workers 2] [--set KEY=VALUE ...]

`--set KEY=VALUE`: a decontamination setting (which pairs are confirmed: docs/contamination.md's speed and recall).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_decontam import with_settings  # noqa: E402

from pipeline.decontam.index import ReferenceIndex  # noqa: E402
from pipeline.decontam.settings import DecontamSettings  # noqa: E402
from pipeline.decontam.stage import decontaminate  # noqa: E402
from pipeline.kernelbench import load_reference  # noqa: E402

HERE = Path(__file__).resolve().parent / "semantic_redteam"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernelbench", default=None, help="KernelBench problems (default: the configured reference)")
    ap.add_argument("--cache", default=None, help="semantic cache dir (default: a fresh temporary one: cold)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a decontamination setting")
    args = ap.parse_args()
    manifest = json.loads((HERE / "manifest.json").read_text())
    settings = with_settings(
        DecontamSettings(workers=args.workers), args.set, semantic=True, semantic_cache_dir=args.cache
    )
    t = time.perf_counter()
    index = ReferenceIndex(load_reference(args.kernelbench), settings)
    index.semantic()
    print(f"reference views: {time.perf_counter() - t:.1f} s")
    names = sorted(manifest)
    t = time.perf_counter()
    rows = decontaminate([(n, (HERE / n).read_text()) for n in names], index, settings).to_pylist()
    print(f"decontaminate {len(names)} tasks: {time.perf_counter() - t:.1f} s")
    by_set: dict[str, list] = {}
    for r in rows:
        by_set.setdefault(r["task_id"].split("/")[0], []).append(r)
    for tag, rs in sorted(by_set.items()):
        para = [r for r in rs if manifest[r["task_id"]]["kind"] == "para"]
        flagged = [r for r in para if r["contaminated"]]
        right = [r for r in flagged if r["nearest_ref"] == manifest[r["task_id"]]["source"]]
        print(
            f"{tag}: paraphrases flagged {len(flagged)}/{len(para)} {dict(Counter(r['reason'] for r in flagged))}; "
            f"nearest problem the source for {len(right)}/{len(flagged)}"
        )
        for r in para:
            if not r["contaminated"]:
                print(
                    f"  missed {r['task_id']} (source {manifest[r['task_id']]['source']}, semantic "
                    f"{r['semantic_score']:.2f} to {r['semantic_ref']})"
                )
        for kind in ("neg", "new"):
            rk = [r for r in rs if manifest[r["task_id"]]["kind"] == kind]
            copies = [r for r in rk if r["contaminated"] and not r["near_variant"]]
            near = [r for r in rk if r["near_variant"]]
            print(
                f"{tag}: {kind} {len(rk)}: copies {len(copies)}, near_variant {len(near)}, clean "
                f"{len(rk) - len(copies) - len(near)}"
            )
            for r in copies + near:
                print(f"  {r['task_id']}: {r['reason']} -> {r['nearest_ref']}")


if __name__ == "__main__":
    main()
