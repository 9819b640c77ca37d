"""Validation throughput on a GPU node, in the jail, with every filter (torch.compile agreement and the 1-100 ms
eager runtime window included), on composed gpu-profile tasks: validated tasks per hour and the projection for
6,000 candidates.

Here (CPU):      python benchmarks/bench_validate_gpu.py --compose 500 --to .gpu/validate
On the GPU node: python benchmarks/bench_validate_gpu.py --tasks .gpu/validate/tasks.jsonl --workers 8 --budget 420
(the GPU node needs the project's `pipeline` package, torch, pyarrow and pydantic; the jail needs bubblewrap)
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def compose(n: int, to: str) -> None:
    from pipeline.identity import task_id
    from pipeline.synth.catalog import load_catalog
    from pipeline.synth.composer import compose_task, profile
    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import task_seed

    ops, prof, mix = load_catalog(), profile("gpu", (2.0, 40.0)), SynthSettings().op_mix
    Path(to).mkdir(parents=True, exist_ok=True)
    i = written = 0
    with open(Path(to) / "tasks.jsonl", "w") as f:
        while written < n:
            i += 1
            try:
                c = compose_task(ops, task_seed(17, i), mix, prof)
            except Exception:  # noqa: BLE001 - the composer's own rejects
                continue
            f.write(json.dumps({"task_id": task_id(c.code), "code": c.code}) + "\n")
            written += 1
    print(f"wrote {written} tasks to {to}")


def measure(path: str, workers: int, budget: float, limit: int | None, progress: str | None) -> None:
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import check_candidate, settings_dict

    tasks = [json.loads(line) for line in open(path)][: limit or None]
    # As `opforge validate` runs them: `workers` candidates per GPU, each with its share of the GPU's memory and run
    # again with a larger share when out of memory beside the others (check_candidate).
    s = settings_dict(ValidateSettings(memory_mb=0, timeout_s=300, jobs_per_gpu=workers))
    items = [
        {"task_id": t["task_id"], "code": t["code"], "settings": s, "device": "cuda", "compose_reason": ""}
        for t in tasks
    ]
    t0 = time.perf_counter()
    done: list[dict] = []
    log = open(progress, "w") if progress else None
    pool = cf.ThreadPoolExecutor(workers)  # each task runs in its own jailed process: threads only wait
    futs = {pool.submit(check_candidate, it): it for it in items}
    try:
        for f in cf.as_completed(futs, timeout=budget):
            r = f.result()
            done.append(r)
            if log:  # a run cut off by its caller still leaves its figures
                keep = ("task_id", "reason", "gpu_memory_share", "sandbox_wall_s", "compile_s", "eager_ms")
                keep += ("compile_ms", "peak_memory_mb")
                keep += ("phase_s",)
                log.write(json.dumps({"t": round(time.perf_counter() - t0, 1), **{k: r.get(k) for k in keep}}) + "\n")
                log.flush()
    except cf.TimeoutError:
        pass
    elapsed = time.perf_counter() - t0
    # Finished tasks only count; those still running are cut off at the budget (main() exits without waiting:
    # their jails die with this process).
    pool.shutdown(wait=False, cancel_futures=True)
    reasons = collections.Counter(r["reason"] or "valid" for r in done)
    jails = collections.Counter(r.get("jail") or "-" for r in done)
    shares = collections.Counter(str(r.get("gpu_memory_share")) for r in done)
    per_hour = 3600 * len(done) / elapsed if elapsed else 0.0
    eager = sorted(r["eager_ms"] for r in done if r.get("eager_ms"))
    walls = sorted(r["sandbox_wall_s"] for r in done if r.get("sandbox_wall_s"))
    comp = sorted(r["compile_s"] for r in done if r.get("compile_s"))
    # Where the time went: per phase, the sum over finished tasks (worker-seconds) and the median where it ran.
    per_phase: dict[str, list[float]] = collections.defaultdict(list)
    for r in done:
        for k, v in json.loads(r.get("phase_s") or "{}").items():
            if v is not None:
                per_phase[k].append(v)
    out = {
        "workers": workers,
        "tasks_done": len(done),
        "seconds": round(elapsed, 1),
        "validated_per_hour": round(per_hour),
        "hours_for_6000": round(6000 / per_hour, 2) if per_hour else None,
        "reasons": dict(reasons.most_common()),
        "memory_shares": dict(shares.most_common()),
        "jail": dict(jails),
        "cpus": os.cpu_count(),
        "eager_ms_median": eager[len(eager) // 2] if eager else None,
        "last_run_wall_s_median": walls[len(walls) // 2] if walls else None,
        "compile_s_median": comp[len(comp) // 2] if comp else None,
        "runtime_window_checked": sum(bool(r.get("runtime_window_checked")) for r in done),
        "phase_worker_s": {k: round(sum(v), 1) for k, v in per_phase.items()},
        "phase_median_s": {k: sorted(v)[len(v) // 2] for k, v in per_phase.items()},
        "worker_s": round(workers * elapsed, 1),
    }
    print(json.dumps(out, indent=1), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compose", type=int)
    ap.add_argument("--to", default=".gpu/validate")
    ap.add_argument("--tasks")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--budget", type=float, default=420.0)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--progress", help="a JSON line per finished task, written as they finish")
    a = ap.parse_args()
    if a.compose:
        compose(a.compose, a.to)
    if a.tasks:
        measure(a.tasks, a.workers, a.budget, a.limit, a.progress)
        sys.stdout.flush()
        os._exit(0)  # do not wait for the cut-off tasks


if __name__ == "__main__":
    main()
