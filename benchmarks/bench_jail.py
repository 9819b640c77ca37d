"""What the jail costs: start-up per job, and validation throughput on the same composed tasks, jailed against the
unjailed opt-out (`sandbox.mode=unsafe`, a plain subprocess with the same bootstrap: the old sandbox's cost
without its in-process namespace calls), measured side by side, alternating, in one run.

    python benchmarks/bench_jail.py --jobs 20 --tasks 8 [--compile]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def startup(n: int) -> dict[str, dict[str, float]]:
    from pipeline.sandbox import run_command, run_sandboxed

    out: dict[str, dict[str, list[float]]] = {m: {"python_job_s": [], "command_s": []} for m in ("jail", "unsafe")}
    for _ in range(n):
        for mode in ("jail", "unsafe"):
            t = time.perf_counter()
            r = run_sandboxed("emit_result(1)", timeout_s=60, mode=mode)
            out[mode]["python_job_s"].append(time.perf_counter() - t)
            assert r.ok, r
            t = time.perf_counter()
            c = run_command(["/bin/true"], timeout_s=60, mode=mode)
            out[mode]["command_s"].append(time.perf_counter() - t)
            assert c.ok, c
    return {m: {k: statistics.median(v) for k, v in d.items()} for m, d in out.items()}


def throughput(n_tasks: int, check_compile: bool, rounds: int) -> dict[str, float]:
    import pyarrow as pa

    from pipeline.synth.settings import SynthSettings
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import validate

    tasks = synthesize(SynthSettings(n=n_tasks), "bench-jail")
    tbl = pa.table({"code": tasks.column("code"), "task_id": tasks.column("task_id")})
    s = ValidateSettings(check_compile=check_compile)
    secs: dict[str, list[float]] = {"jail": [], "unsafe": []}
    reasons: dict[str, list[str]] = {}
    # A warm-up round (not counted) fills the shared caches; then the order alternates, so neither mode always
    # runs on the warmer machine.
    for r in range(rounds + 1):
        for mode in ("jail", "unsafe") if r % 2 else ("unsafe", "jail"):
            os.environ["OPFORGE_SANDBOX_MODE"] = mode
            t = time.perf_counter()
            out = validate(tbl, s, "cpu")
            if r:
                secs[mode].append(time.perf_counter() - t)
                print(f"round {r} {mode}: {secs[mode][-1]:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
            reasons[mode] = out.column("reason").to_pylist()
    os.environ.pop("OPFORGE_SANDBOX_MODE", None)
    res = {f"{m}_tasks_per_hour": 3600 * n_tasks / statistics.median(v) for m, v in secs.items()}
    res["same_outcomes"] = float(reasons["jail"] == reasons["unsafe"])
    res["jail_vs_unsafe_throughput"] = res["jail_tasks_per_hour"] / res["unsafe_tasks_per_hour"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--compile", action="store_true", help="validate with torch.compile (slower)")
    ap.add_argument("--startup-only", action="store_true")
    a = ap.parse_args()
    st = startup(a.jobs)
    print(f"start-up, median of {a.jobs} (s):")
    for mode, d in st.items():
        print(f"  {mode:7s} python job {d['python_job_s']:.3f}   command {d['command_s']:.3f}")
    print(
        f"  jail overhead: python job {st['jail']['python_job_s'] - st['unsafe']['python_job_s']:+.3f} s, "
        f"command {st['jail']['command_s'] - st['unsafe']['command_s']:+.3f} s"
    )
    if a.startup_only:
        return
    tp = throughput(a.tasks, a.compile, a.rounds)
    print(f"validation of {a.tasks} composed tasks (compile={a.compile}), median of {a.rounds} rounds, alternating:")
    for k, v in tp.items():
        print(f"  {k}: {v:.3f}")


if __name__ == "__main__":
    main()
