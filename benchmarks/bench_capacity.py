"""Capacity model: machines and hours for 6,000 tasks and 100,000 trajectories, from measured per-item costs.

Run: `.venv/bin/python benchmarks/bench_capacity.py [--validate-n 4] [--measured rollout.json] [--out cap.json]`

1. Measures, side by side in this run on this machine, the per-item cost of every CPU stage whose code is present:
   synthesize, validate (sandboxed eager + torch.compile on CPU), decontaminate (against all of KernelBench), dedup.
2. Adds GPU-side figures measured on the lent H200 machine, each cited (../shared/notes/GPU.md).
3. Adds figures measured elsewhere from `--measured FILE` (JSON: {"name": {"value": x, "unit": "...",
   "source": "..."}}), e.g. LLM seconds per trajectory from a GPU rollout benchmark.
4. Computes core-hours and machines for the targets. A quantity nobody measured is printed as "not measured" and
   left out of the totals; nothing is guessed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Measured on one NVIDIA H200 node (16 CPU cores) through the device tool; source: ../shared/notes/GPU.md.
CITED = {
    "node_cpu_cores": {"value": 16, "unit": "cores", "source": "GPU.md: 'One H200, 16 CPU cores'"},
    "build_load_inline_cold_s": {
        "value": 56.0,
        "unit": "s",
        "source": "GPU.md: load_inline one-kernel extension 55-57 s cold (midpoint)",
    },
    "build_separate_cold_s": {
        "value": 13.0,
        "unit": "s",
        "source": "GPU.md: cpp_extension.load of binding + kernel as separate files, 13 s cold",
    },
    "build_kernel_only_s": {
        "value": 1.25,
        "unit": "s",
        "source": "GPU.md: nvcc -O3 -arch=sm_90 -c of a kernel-only .cu, 1.25 s (binding object reused)",
    },
    "parallel_builds_per_node": {
        "value": 8,
        "unit": "builds",
        "source": "GPU.md: 14 load_inline builds in a pool "
        "of 8 processes on 16 cores took 46-58 s each, about one build's time",
    },
    "parallel_build_s": {"value": 52.0, "unit": "s", "source": "GPU.md: 46-58 s each in that pool (midpoint)"},
}

TASKS = 6_000
TRAJECTORIES = 100_000


def _composed(n: int, seed: int = 0) -> list[str]:
    # Fallback candidates when the synth stage is absent: small fused-operator tasks in KernelBench format.
    rng = random.Random(seed)
    ops = [
        "torch.relu(x)",
        "torch.tanh(x)",
        "x * 1.5",
        "torch.sigmoid(x)",
        "x.pow(2)",
        "torch.nn.functional.gelu(x)",
        "torch.softmax(x, dim=-1)",
        "x + 0.5",
    ]
    out = []
    for i in range(n):
        body = "\n".join(f"        x = {o}" for o in rng.sample(ops, rng.randint(2, 4)))
        out.append(
            f"import torch\nclass Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"    def forward(self, x):\n{body}\n        return x\ndef get_inputs():\n"
            f"    return [torch.randn(16, {64 + i})]\ndef get_init_inputs():\n    return []\n"
        )
    return out


def measure_cpu(args) -> tuple[dict, dict]:
    """Per-item seconds of each CPU stage, measured here. Returns (figures, notes)."""
    import pyarrow as pa

    from pipeline.identity import task_id

    figs, notes = {}, {}
    here = f"measured by benchmarks/bench_capacity.py on this machine ({os.cpu_count()} cores)"
    tasks = None
    try:
        from pipeline.synth.settings import SynthSettings
        from pipeline.synth.stage import synthesize

        t0 = time.perf_counter()
        tasks = synthesize(SynthSettings(n=args.synth_n), "bench")
        dt = time.perf_counter() - t0
        figs["synthesize_s_per_task"] = {
            "value": dt / max(tasks.num_rows, 1),
            "unit": "core-s",
            "source": here,
            "n": tasks.num_rows,
        }
    except ImportError as e:
        notes["synthesize"] = f"not measured: {e}"
    if tasks is None:
        codes = _composed(args.synth_n)
        tasks = pa.table({"task_id": [task_id(c) for c in codes], "code": codes})
        notes["candidates"] = "synth absent: composed fallback candidates were used"

    try:
        if args.validate_n <= 0:
            raise ImportError("skipped (--validate-n 0)")
        from pipeline.validate.settings import ValidateSettings
        from pipeline.validate.stage import validate

        sub = tasks.slice(0, args.validate_n)
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench-inductor-"))
        t0 = time.perf_counter()
        val = validate(sub, ValidateSettings(), device="cpu")
        dt = time.perf_counter() - t0
        figs["validate_cpu_s_per_task"] = {
            "value": dt / max(sub.num_rows, 1),
            "unit": "core-s",
            "n": sub.num_rows,
            "source": here + " (eager + torch.compile, one sandbox process per task, run one after another, "
            "fresh inductor cache)",
            "valid": sum(val.column("valid").to_pylist()),
        }
    except ImportError as e:
        notes["validate"] = f"not measured: {e}"

    try:
        from pipeline.decontam.index import ReferenceIndex
        from pipeline.decontam.settings import DecontamSettings
        from pipeline.decontam.stage import decontaminate
        from pipeline.kernelbench import load_reference

        ref = load_reference()
        s = DecontamSettings()
        t0 = time.perf_counter()
        index = ReferenceIndex(ref, s)
        figs["decontam_index_build_s"] = {
            "value": time.perf_counter() - t0,
            "unit": "s",
            "source": here,
            "n_reference": len(ref),
        }
        # Distinct candidates: identical code strings are scored once by the stage, which would flatter the figure.
        base = tasks.column("code").to_pylist()
        codes = [base[i % len(base)] + f"\n# bench candidate {i}\n" for i in range(args.decontam_n)]
        cand = pa.table({"task_id": [task_id(c) for c in codes], "code": codes})
        t0 = time.perf_counter()
        decontaminate(cand, index, s)
        dt = time.perf_counter() - t0
        figs["decontaminate_s_per_task"] = {
            "value": dt / cand.num_rows,
            "unit": "core-s",
            "n": cand.num_rows,
            "source": here + f" (against {len(ref)} KernelBench problems)",
        }
        try:
            from pipeline.decontam.stage import dedup

            t0 = time.perf_counter()
            dedup(cand, s)
            dt = time.perf_counter() - t0
            figs["dedup_s_per_task"] = {
                "value": dt / cand.num_rows,
                "unit": "core-s",
                "n": cand.num_rows,
                "source": here + " (set-wide; near-linear per the LSH design)",
            }
        except ImportError as e:
            notes["dedup"] = f"not measured: {e}"
    except ImportError as e:
        notes["decontaminate"] = f"not measured: {e}"
    return figs, notes


def model(figs: dict, deadline_h: float) -> dict:
    """Core-hours and machines. Tasks: CPU stages on 16-core nodes. Trajectories: LLM time (if measured) plus at
    least one kernel build per trajectory (rollout final_eval) at the measured parallel build rate."""
    out: dict = {"targets": {"tasks": TASKS, "trajectories": TRAJECTORIES}, "deadline_h": deadline_h}
    cores = figs["node_cpu_cores"]["value"]
    stage_core_h = {}
    for name in ("synthesize_s_per_task", "validate_cpu_s_per_task", "decontaminate_s_per_task", "dedup_s_per_task"):
        if name in figs:
            stage_core_h[name.replace("_s_per_task", "")] = TASKS * figs[name]["value"] / 3600
    total = sum(stage_core_h.values()) + figs.get("decontam_index_build_s", {"value": 0})["value"] / 3600
    out["tasks"] = {
        "core_hours_by_stage": {k: round(v, 3) for k, v in stage_core_h.items()},
        "core_hours": round(total, 3),
        "node_hours_16_cores": round(total / cores, 3),
        "nodes_for_deadline": max(1, math.ceil(total / cores / deadline_h)),
        "hours_on_one_node": round(total / cores, 3),
        "missing": [s for s in ("synthesize", "validate_cpu", "decontaminate", "dedup") if s not in stage_core_h],
    }
    builds_per_node_h = figs["parallel_builds_per_node"]["value"] * 3600 / figs["parallel_build_s"]["value"]
    build_node_h = TRAJECTORIES / builds_per_node_h  # lower bound: one cold build per trajectory
    traj = {
        "build_node_hours_lower_bound": round(build_node_h, 1),
        "build_nodes_for_deadline_lower_bound": max(1, math.ceil(build_node_h / deadline_h)),
    }
    if "llm_gpu_s_per_trajectory" in figs:
        llm_gpu_h = TRAJECTORIES * figs["llm_gpu_s_per_trajectory"]["value"] / 3600
        traj["llm_gpu_hours"] = round(llm_gpu_h, 1)
        traj["gpus_for_deadline"] = max(1, math.ceil(llm_gpu_h / deadline_h))
    else:
        traj["llm_gpu_hours"] = (
            "not measured: give llm_gpu_s_per_trajectory via --measured (a GPU rollout "
            "benchmark with the chosen model)"
        )
    if "evals_per_trajectory" in figs:
        n = figs["evals_per_trajectory"]["value"]
        warm = figs["build_kernel_only_s"]["value"]
        # The first build is cold; later builds of one trajectory change only the kernel (binding reused).
        per = figs["parallel_build_s"]["value"] + (n - 1) * warm
        traj["build_node_hours"] = round(TRAJECTORIES * per / figs["parallel_builds_per_node"]["value"] / 3600, 1)
    out["trajectories"] = traj
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--synth-n", type=int, default=36)
    ap.add_argument("--validate-n", type=int, default=4, help="tasks validated for the timing (slow: ~s each)")
    ap.add_argument("--decontam-n", type=int, default=360, help="candidates decontaminated for the timing")
    ap.add_argument("--measured", type=Path, help="JSON of figures measured elsewhere, each with its source")
    ap.add_argument("--deadline-h", type=float, default=8.0, help="wall-clock window, e.g. a nightly run")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    figs = dict(CITED)
    measured, notes = measure_cpu(args)
    figs.update(measured)
    if args.measured:
        extra = json.loads(args.measured.read_text())
        for k, v in extra.items():
            if not isinstance(v, dict) or "source" not in v:
                raise SystemExit(f"{args.measured}: {k!r} needs a 'source' (who measured it, how)")
        figs.update(extra)
    result = {"figures": figs, "notes": notes, "model": model(figs, args.deadline_h)}
    print(json.dumps(result, indent=1, default=str))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
