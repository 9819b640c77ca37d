"""Benchmarks of the kernel evaluation harness (run on a GPU host; the build part also runs on CPU).

    python benchmarks/bench_eval.py [--n-batch 20] [--repeats 3] [--json out.json] [--skip-gpu]

Prints, each measured here in this run:
- compile: cold workspace build, cache hit, changed-kernel rebuild with the binding object reused (median of 5),
  and a cold single-file load_inline build (run in a thread while the GPU batch below is measured: overlap);
- throughput: a batch of candidates (honest kernels and exploits, prebuilt) through one GPU with 2 evaluations in
  flight (`--inflight`; untimed GPU work shares the GPU's lock file, timings hold it alone): evaluations per
  GPU-hour, the share of the time the lock was held (shared or exclusive) and the share a kernel ran (nvidia-smi);
- repeatability: speedup vs eager of each honest kernel over R repeats, each repeat measuring both the eager
  baseline (as the harness does: `baseline_runs` processes, lowest median) and the kernel afresh in new processes:
  coefficient of variation (target <= 2%); `--scales` sizes each task's inputs (e.g. into the 1-100 ms window);
- agreement: eager time of each task's reference with our method vs KernelBench's cuda-event method (same inputs,
  per-trial events, L2 flush, synchronize after the end event), median of 50, in this process;
- first_verdict (`--only first_verdict [--inflight 6]`): time to a first verdict on new tasks with cold caches:
  `--inflight` evaluations of distinct tasks (the small-magnitude fixtures, single-file load_inline kernels) started
  together on one GPU, each from its own cold build through baselines and the judge; per evaluation: wall seconds,
  build seconds, the judge's phases. `--kernelbench DIR` takes the tasks from KernelBench level 1 instead (Softmax,
  LogSoftmax, MSELoss, Matrix-vector: inputs of 6-8 GiB per call), `--constant` adds a constant-output kernel each.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "kernels"))

import assemble as A  # noqa: E402

from pipeline.evaluate.build import compile_solution  # noqa: E402
from pipeline.gpulock import ensure, lock_records  # noqa: E402


def bench_compile(cache: Path, work: Path) -> dict:
    ws = A.honest_workspace(work / "compile_ws", "add_vec4")
    kernel = ws / "kernels" / "add.cu"
    base_src = kernel.read_text()
    kernel.write_text(base_src + "\n// bench cold\n")
    cold = compile_solution(ws, cache)
    hit = compile_solution(ws, cache)
    rebuilds = []
    for i in range(5):
        kernel.write_text(base_src + f"\n// bench change {i} {time.time_ns()}\n")
        r = compile_solution(ws, cache)
        assert r.ok and "kernels/add_binding.cpp" in r.objects_reused, r
        rebuilds.append(r.seconds)
    return {
        "cold_s": round(cold.seconds, 2),
        "cold_steps": cold.step_seconds,
        "cache_hit_s": round(hit.seconds, 4),
        "cache_hit_cached": hit.cached,
        "changed_kernel_s": [round(x, 2) for x in rebuilds],
        "changed_kernel_median_s": round(statistics.median(rebuilds), 2),
    }


def bench_single_file(cache: Path, out: dict) -> None:
    src = (A.HONEST / "add_inline.py").read_text().replace("opforge_fixture_add", "opforge_bench_add")
    path = Path(tempfile.mkdtemp()) / "bench_add_inline.py"
    path.write_text(src + f"\n# {time.time_ns()}\n")
    r = compile_solution(path, cache)
    out["single_file_cold_s"] = round(r.seconds, 1)
    out["single_file_ok"] = r.ok


class GpuSampler:
    """nvidia-smi's utilization.gpu (share of time a kernel was running) sampled every 100 ms during a block."""

    def __init__(self) -> None:
        import subprocess

        cmd = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"]
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None

    def stop(self) -> float | None:
        if self.proc is None:
            return None
        self.proc.terminate()
        out, _ = self.proc.communicate()
        vals = [float(x) for x in out.split() if x.strip().replace(".", "", 1).isdigit()]
        return round(statistics.fmean(vals) / 100, 3) if vals else None


class LockSampler:
    """Share of a block's time during which some process held the GPU's lock (shared or exclusive): the GPU reserved
    for evaluation work, read passively from /proc/locks every 10 ms (no lock taken to probe). `modes` splits it:
    held exclusive (a timing), held shared while a timing waits for it (the GPU kept from the timing by untimed
    work), and held shared with no timing waiting."""

    def __init__(self, lock: str) -> None:
        self.lock = ensure(lock)
        self.held = self.total = 0
        self.counts = {"exclusive": 0, "shared_timing_waits": 0, "shared": 0}
        self.done = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self) -> None:
        while not self.done.wait(0.01):
            try:
                lines = lock_records(self.lock)
            except OSError:
                return
            self.total += 1
            holders = [ln for ln in lines if not ln.startswith("->")]  # "->": a waiter
            self.held += bool(holders)
            if any(" WRITE " in ln for ln in holders):
                self.counts["exclusive"] += 1
            elif holders:
                waiting = any(ln.startswith("->") and " WRITE " in ln for ln in lines)
                self.counts["shared_timing_waits" if waiting else "shared"] += 1

    def stop(self) -> float | None:
        self.done.set()
        self.th.join()
        return round(self.held / self.total, 3) if self.total else None

    def modes(self) -> dict:
        return {k: round(v / self.total, 3) for k, v in self.counts.items()} if self.total else {}


def bench_throughput(
    cache: Path,
    work: Path,
    n: int,
    scale: int = 1,
    settings: dict | None = None,
    inflight: int = 2,
    budget: float = 0.0,
) -> dict:
    """Evaluations per GPU-hour with builds and baselines cached (both made before the clock starts). `budget`:
    seconds after which evaluations not yet started are dropped; the figure counts those that finished."""
    from pipeline.evaluate.harness import evaluate

    pool = []
    for name, task in A.HONEST_WORKSPACES.items():
        code = scaled(A.task_code(task), scale)
        pool.append((name, code, scaled_workspace(work / f"tp_{name}", name, code), {}))
    for name in ("ws_torch_op", "ws_result_reuse", "ws_ptr_cache", "ws_zero_inputs", "ws_lazy_tensor"):
        pool.append(
            (name, A.task_code("vec_add"), A.exploit_workspace(work / f"tp_{name}", name), {"static_checks": False})
        )
    # Cold builds of the pool side by side (CPU work, before the clock starts): one after another they outlasted a
    # device call.
    with cf.ThreadPoolExecutor(len(pool)) as ex:
        built = ex.map(lambda item: compile_solution(item[2], cache), pool)
        builds = {item[0]: b for item, b in zip(pool, built)}

    # Baselines are per task and cached: measure them before the clock starts, as a steady-state run would have
    # (side by side: their own timings are not the figure).
    def warm(item) -> None:
        name, task, p, _ = item
        evaluate(task, str(p), mode="full", settings={"cache_dir": str(cache)}, compile_result=builds[name])

    with cf.ThreadPoolExecutor(3) as ex:
        list(ex.map(warm, pool[:3]))
    items = [pool[i % len(pool)] for i in range(n)]
    lock = str(work / "gpu.lock")
    single: dict = {}
    th = threading.Thread(target=bench_single_file, args=(cache, single))
    print(
        f"throughput: builds and baselines ready; the clock starts ({n} evaluations, {inflight} in flight)", flush=True
    )
    t0 = time.perf_counter()
    sampler, held = GpuSampler(), LockSampler(lock)
    th.start()  # a cold load_inline build on the CPU while the GPU measures
    with cf.ThreadPoolExecutor(inflight) as ex:
        futs = [
            ex.submit(
                evaluate,
                task,
                str(p),
                settings={"cache_dir": str(cache), "gpu_lock": lock, **(settings or {}), **extra},
                compile_result=builds[name],
            )
            for name, task, p, extra in items
        ]
        for f in cf.as_completed(futs):  # progress as verdicts arrive: a run cut off still tells where time went
            if f.cancelled():
                continue
            r = f.result()
            sol = (r.timing or {}).get("solution") or {}
            print(
                f"  +{time.perf_counter() - t0:.1f}s reward {r.reward} {r.reason[:80]!r} timed calls "
                f"{sol.get('trials')} at {sol.get('warmup_wall_ms')} ms, live "
                f"{((r.timing or {}).get('clock_check') or {}).get('live_calls')} {r.details.get('phase_s')} "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if r.reward is not None and r.reward <= 0 and not r.violations:  # an honest-looking failure: say why
                print(f"    error: {(r.error or '')[-600:]!r}", flush=True)
            if budget and time.perf_counter() - t0 > budget:
                for g in futs:  # those not started yet; the running ones finish and count
                    g.cancel()
        done = [(item, f) for item, f in zip(items, futs) if not f.cancelled()]
        items, results = [item for item, _ in done], [f.result() for _, f in done]
    wall = time.perf_counter() - t0
    n = len(results)
    util, held_share = sampler.stop(), held.stop()
    th.join()
    return {
        "n": n,
        "inflight": inflight,
        "wall_s": round(wall, 1),
        "evals_per_gpu_hour": round(n / wall * 3600),
        "gpu_lock_held_share": held_share,  # the GPU held for evaluation work (timings, references, checks)
        "gpu_lock_modes": held.modes(),
        "gpu_utilization": util,  # nvidia-smi: share of the batch's time a kernel ran on the GPU
        "task_scale": scale,
        "mean_eval_s": round(statistics.fmean(r.seconds for r in results), 2),
        "settings": settings or {},
        "rewards": [r.reward for r in results],
        "verdicts": [
            {"name": item[0], "reward": r.reward, "reason": r.reason[:200], "violations": r.violations}
            for item, r in zip(items, results)
        ],
        "single_file_build_during_batch": single,
    }


def scaled(task: str, k: int) -> str:
    """The task with its inputs k times larger (first dimension): the fixture kernels take 0.1-0.4 ms, below the
    pipeline's 1-100 ms window, where the fixed synchronize latency inside the timed region weighs most."""
    import re

    if k == 1:
        return task
    head, sep, tail = task.partition("def get_inputs")
    tail = re.sub(r"torch\.randn\(([^,)]+)", lambda m: f"torch.randn({k} * ({m.group(1)})", tail)
    return head + sep + tail


def scaled_workspace(dest: Path, name: str, task: str) -> Path:
    """The honest workspace `name` for `task` (a scaled one): its protected model.py and manifest hash follow it."""
    from pipeline.evaluate import workspace as W

    ws = A.honest_workspace(dest, name)
    (ws / "model.py").write_text(task)
    man = json.loads((ws / W.MANIFEST).read_text())
    man["task_sha256"] = W._sha(task)
    (ws / W.MANIFEST).write_text(json.dumps(man, indent=1, sort_keys=True))
    return ws


def bench_repeatability(
    cache: Path,
    work: Path,
    repeats: int,
    show=None,
    scale: int = 1,
    names: list[str] | None = None,
    keep_raw: bool = False,
    configs: list[dict] | None = None,
    scales: dict[str, int] | None = None,
) -> dict:
    """CV of the speedup over `repeats` repeats, each a new eager-baseline process and a new candidate process.
    With several `configs` (evaluation options each), the repeats of the configs are interleaved (A B A B ...), so
    that the configs see the same machine states and can be compared side by side."""
    from pipeline.evaluate import options
    from pipeline.evaluate.build import resolve_arch_list
    from pipeline.evaluate.harness import evaluate, measure_baselines

    configs = configs or [{}]
    out = {}
    for name, task_name in A.HONEST_WORKSPACES.items():
        if names and name not in names:
            continue
        k = (scales or {}).get(name, scale)
        task = scaled(A.task_code(task_name), k)
        ws = scaled_workspace(work / f"rep_{name}_x{k}", name, task)
        cr = compile_solution(ws, cache)
        acc = [{"speedups": [], "eager": [], "eager_runs": [], "sol": [], "within": [], "raw": []} for _ in configs]
        for _ in range(repeats):
            for cfg, a in zip(configs, acc):
                s = options.resolve({"cache_dir": str(cache), **cfg})
                # As the harness measures a baseline (`baseline_runs` processes), without torch.compile.
                base = measure_baselines(task, s, resolve_arch_list(None), mode="eager_only")
                res = evaluate(
                    task, str(ws), settings={"cache_dir": str(cache), "baselines": False, **cfg}, compile_result=cr
                )
                a["speedups"].append(base["eager_ms"] / res.solution_ms)
                a["eager"].append(round(base["eager_ms"], 5))
                a["eager_runs"].append([r["eager_ms"] and round(r["eager_ms"], 5) for r in base["runs"]])
                a["sol"].append(round(res.solution_ms, 5))
                run = (res.timing or {}).get("solution", {})  # within-process spread and the warm-up it took
                e_run = (base.get("timing") or {}).get("eager", {})
                a["within"].append(
                    {
                        "cv": round(run.get("stats", {}).get("cv", float("nan")), 4),
                        "warmup": run.get("warmup"),
                        "warmup_s": run.get("warmup_s"),
                        "trials": run.get("trials"),
                        "eager_trials": e_run.get("trials"),
                    }
                )
                if keep_raw:  # every call's time and when it ran, for studying other statistics offline
                    a["raw"].append(
                        {
                            k: {f: r.get(f) for f in ("times_ms", "stream_times_ms", "call_at_s", "started_at")}
                            for k, r in (("eager", e_run), ("solution", run))
                        }
                    )
        for cfg, a in zip(configs, acc):
            mean = statistics.fmean(a["speedups"])
            r = {
                "scale": k,
                "speedups": [round(x, 4) for x in a["speedups"]],
                "mean": round(mean, 4),
                "cv": round(statistics.pstdev(a["speedups"]) / mean, 4),
                "eager_ms": a["eager"],
                "eager_runs_ms": a["eager_runs"],
                "solution_ms": a["sol"],
                "solution_runs": a["within"],
            }
            if keep_raw:
                r["raw"] = a["raw"]
            key = name if len(configs) == 1 else f"{name} {json.dumps(cfg, sort_keys=True)}"
            out[key] = r
            if show:  # partial results survive a cut-off run
                show(f"repeatability_{key}", r)
    return out


def bench_agreement() -> dict:
    import torch

    from pipeline.evaluate.options import DEFAULTS
    from pipeline.evaluate.timing import Timer
    from pipeline.evaluate.worker import load_module, timing_args

    dev = torch.device("cuda", 0)
    timer = Timer()
    timer.prepare(dev, True)
    out = {}
    for task_name in ("vec_add", "fused_chain", "row_softmax"):
        mod = load_module("ref", code=A.task_code(task_name))
        model = mod.Model(*mod.get_init_inputs()).to(dev)
        with torch.device(dev):
            torch.manual_seed(0)
            fixed = list(mod.get_inputs())

        def make_args(i, mod=mod):
            torch.manual_seed(1000 + i)
            with torch.device(dev):
                return list(mod.get_inputs())

        with torch.no_grad():
            ours = timer.run(model, make_args, **timing_args(DEFAULTS))["stats"]["median"]  # as the harness times
            # KernelBench's time_execution_with_cuda_event: same inputs every trial, L2 flushed, events around the
            # call, synchronize after the end event.
            kb = []
            for _ in range(3):
                model(*fixed)
            torch.cuda.synchronize()
            for _ in range(50):
                timer.flush()
                torch.cuda.synchronize()
                st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                st.record()
                model(*fixed)
                en.record()
                torch.cuda.synchronize()
                kb.append(st.elapsed_time(en))
        kbm = statistics.median(kb)
        out[task_name] = {"ours_ms": round(ours, 4), "kernelbench_ms": round(kbm, 4), "ratio": round(ours / kbm, 4)}
    return out


# Honest fixture kernels that solve KernelBench level-1 problems as stated there (`--kernelbench DIR`).
KB_LEVEL1 = {
    "softmax_wide": "level1/23_Softmax.py",
    "log_softmax_wide": "level1/24_LogSoftmax.py",
    "mse_loss": "level1/94_MSELoss.py",
    "matvec_longk": "level1/4_Matrix_vector_multiplication_.py",
}


def bench_first_verdict(
    work: Path, inflight: int, kernelbench: str = "", constant: bool = False, extra: dict | None = None
) -> dict:
    from pipeline.evaluate.harness import evaluate

    cache = Path(tempfile.mkdtemp(prefix="opforge-bench-ttfv-"))  # cold: no builds, no baselines
    pool = sorted(KB_LEVEL1 if kernelbench else A.SMALL_MAGNITUDE)
    names = [pool[i % len(pool)] for i in range(inflight)]
    lock = str(work / "gpu-ttfv.lock")

    def task_of(i: int, name: str) -> str:
        # a distinct task and source per evaluation: nothing cached from another one
        if kernelbench:
            return f"# [{i}]\n" + (Path(kernelbench) / KB_LEVEL1[name]).read_text()
        return A.task_code(name).replace('"""', f'"""[{i}] ', 1)

    def one(i: int, name: str) -> dict:
        t0 = time.perf_counter()
        task = task_of(i, name)
        src = work / f"ttfv_{i}_{name}.py"
        src.write_text((A.HONEST / f"{name}.py").read_text().replace("opforge_fixture_", f"opforge_ttfv{i}_"))
        # evaluate builds itself, as `opforge eval` does: the baselines and the reference run beside the build
        res = evaluate(task, str(src), settings={"cache_dir": str(cache), "gpu_lock": lock, **(extra or {})})
        sol = (res.timing or {}).get("solution") or {}
        row = {
            "task": KB_LEVEL1[name] if kernelbench else name,
            "wall_s": round(time.perf_counter() - t0, 1),
            "build_s": round(res.compile.get("seconds") or 0.0, 1),
            "headers": res.compile.get("headers"),
            "reward": res.reward,
            "reason": res.reason,
            "solution_ms": res.solution_ms,
            "eager_ms": res.eager_ms,
            "phase_s": res.details.get("phase_s"),
            "timed_calls": sol.get("trials"),
            "median_call_wall_ms": statistics.median(sol["wall_ms"]) if sol.get("wall_ms") else None,
            "io_budget": res.details.get("io_budget"),
            "reference": res.details.get("reference"),
            "judged_again_after": res.details.get("judged_again_after"),
            "judged_alone": res.details.get("judged_alone"),
            "judged_again_beside": res.details.get("judged_again_beside"),
            "baseline_runs": [
                {k: r.get(k) for k in ("eager_ms", "reason", "alone", "again_beside")}
                for r in ((res.timing or {}).get("baseline") or {}).get("runs") or []
            ],
        }
        if constant:  # the same task, a constant-output kernel: must be rejected as incorrect
            const = A.constant_variant(work / f"ttfv_{i}_{name}_const.py", name)
            bad = evaluate(task, str(const), mode="verify", settings={"cache_dir": str(cache), "gpu_lock": lock})
            row["constant"] = {
                "reward": bad.reward,
                "reason": bad.reason[:200],
                "correct": bad.correct,
                "judged_alone": bad.details.get("judged_alone"),
            }
        return row

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(inflight) as ex:
        rows = list(ex.map(one, range(inflight), names))
    walls = [r["wall_s"] for r in rows]
    return {
        "inflight": inflight,
        "tasks": "kernelbench level 1" if kernelbench else "fixtures",
        "first_s": min(walls),
        "median_s": statistics.median(walls),
        "max_s": max(walls),
        "total_wall_s": round(time.perf_counter() - t0, 1),
        "settings": extra or {},
        "rows": rows,
    }


def replay_stop(path: str, precision: float) -> None:
    """Where the judge's stop rule (timing_precision) would have ended each full timed run of a repeatability report
    made with `--raw` and timing_precision 0, and the median there against the whole run's (the rule's other
    condition, 20 of the calibrator's null calls made, is not replayed: it can only stop a run later; nor the random
    tail: the run is cut right after the call where the stop is decided)."""
    from pipeline.evaluate.options import resolve
    from pipeline.evaluate.timing import known_within

    least = int(resolve({})["timing_trials"])
    for key, rep in json.load(open(path)).items():
        for raw in (rep.get("raw") or []) if isinstance(rep, dict) else []:
            t = raw["solution"]["times_ms"]
            n = next((i + 1 for i in range(1, len(t)) if known_within(t[:i], precision, least) is not None), len(t))
            whole, there = statistics.median(t), statistics.median(t[:n])
            print(
                f"{key}: {len(t)} calls, median {whole:.5f} ms; "
                f"stopped at {n}: {there:.5f} ms ({there / whole - 1:+.1%})"
            )


def summarize(path: str) -> None:
    """Table of a GPU test run's evaluations ($OPFORGE_EVAL_REPORT lines) and its sequential throughput."""
    rows = [json.loads(line) for line in open(path) if line.strip()]

    def f(v, nd=4):
        return "-" if v is None else (f"{v:.{nd}g}" if isinstance(v, float) else str(v))

    print(
        "| candidate | kind | correct | reward | eager ms | compile ms | solution ms | x eager | x compile | "
        "violations / warnings | reason | eval s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        vw = ", ".join(r["violations"]) + ((" / " + ", ".join(r["warnings"])) if r["warnings"] else "")
        print(
            f"| {r['name']} | {r['kind']} | {r['correct']} | {r['reward']} | {f(r['eager_ms'])} | "
            f"{f(r['compile_ms'])} | {f(r['solution_ms'])} | {f(r['speedup_vs_eager'], 3)} | "
            f"{f(r['speedup_vs_compile'], 3)} | {vw or '-'} | {(r['reason'] or '-')[:40]} | {f(r['seconds'], 3)} |"
        )
    total = sum(r["seconds"] for r in rows)
    held = sum(
        sum(v for k, v in (r.get("phase_s") or {}).items() if k not in ("prepared", "loaded", "gpu_wait"))
        for r in rows
    )
    print(
        f"\n{len(rows)} evaluations, one at a time: {total:.1f} s, {len(rows) / total * 3600:.0f} evaluations per "
        f"GPU-hour; worker processes held the GPU {held / total:.1%} of that time"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--summarize", type=str, default="", help="print the table of a GPU test run's report and exit")
    ap.add_argument(
        "--replay-stop", default="", help="replay timing_precision's stop on a --raw repeatability report and exit"
    )
    ap.add_argument("--n-batch", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=str, default="")
    ap.add_argument("--skip-gpu", action="store_true")
    ap.add_argument("--kernels", default="", help="comma-separated honest kernels for repeatability (default all)")
    ap.add_argument(
        "--scale", type=int, default=1, help="repeatability and throughput on inputs this many times larger"
    )
    ap.add_argument(
        "--scales",
        default="",
        help="per-kernel input scales for repeatability, e.g. "
        "'add_vec4=10,row_softmax=16' (kernels not named take --scale)",
    )
    ap.add_argument(
        "--inflight", type=int, default=0, help="evaluations in flight (first_verdict: 6, throughput: 2 if not given)"
    )
    ap.add_argument("--kernelbench", default="", help="first_verdict on KernelBench level-1 problems from this dir")
    ap.add_argument("--constant", action="store_true", help="first_verdict: also a constant-output kernel per task")
    ap.add_argument(
        "--only",
        choices=["repeatability", "agreement", "first_verdict", "throughput"],
        default="",
        help="run one GPU phase alone (its own device call: the phases together outlast one call)",
    )
    ap.add_argument("--cache", type=str, default=os.environ.get("OPFORGE_EVAL_CACHE", ""))
    ap.add_argument(
        "--settings",
        default="",
        help="JSON evaluation options (repeatability, first_verdict, throughput), e.g. '{\"timing_min_ms\": 0}'",
    )
    ap.add_argument("--budget", type=float, default=0.0, help="throughput: seconds after which no evaluation starts")
    ap.add_argument("--raw", action="store_true", help="keep every timed call in the repeatability report")
    ap.add_argument(
        "--configs",
        default="",
        help="JSON list of evaluation-option dicts compared side by side in "
        "repeatability, repeats interleaved, e.g. '[{}, {\"timing_warmup_ms\": 1000}]'",
    )
    args = ap.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return
    if args.replay_stop:
        replay_stop(args.replay_stop, float(json.loads(args.settings or "{}").get("timing_precision", 0.005)))
        return
    cache = Path(args.cache or tempfile.mkdtemp(prefix="opforge-bench-cache-"))
    work = Path(tempfile.mkdtemp(prefix="opforge-bench-"))
    report: dict = {}

    def show(key, value):
        report[key] = value
        shown = {k: v for k, v in value.items() if k != "raw"} if isinstance(value, dict) else value
        print(f"{key}: {json.dumps(shown)}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))

    import torch

    if args.skip_gpu or not torch.cuda.is_available():
        show("compile", bench_compile(Path(tempfile.mkdtemp(prefix="opforge-bench-cold-")), work))
        print("no GPU: skipping throughput, repeatability, agreement")
        return
    if args.only == "first_verdict":
        show("device", torch.cuda.get_device_name(0))
        extra = json.loads(args.settings) if args.settings else None
        show("first_verdict", bench_first_verdict(work, args.inflight or 6, args.kernelbench, args.constant, extra))
        return
    if args.only == "throughput":
        show("device", torch.cuda.get_device_name(0))
        settings = json.loads(args.settings or "{}")
        show(
            "throughput",
            bench_throughput(cache, work, args.n_batch, args.scale, settings, args.inflight or 2, args.budget),
        )
        return
    if args.only:
        show("device", torch.cuda.get_device_name(0))
        show(
            args.only,
            bench_repeatability(
                cache,
                work,
                args.repeats,
                show,
                args.scale,
                [k for k in args.kernels.split(",") if k],
                args.raw,
                json.loads(args.configs) if args.configs else [json.loads(args.settings)] if args.settings else None,
                {k: int(v) for k, v in (kv.split("=") for kv in args.scales.split(",") if kv)},
            )
            if args.only == "repeatability"
            else bench_agreement(),
        )
        return
    # Builds are CPU work: the compile benchmark (its own empty cache: a cold build) runs while the GPU measures.
    comp: dict = {}
    th = threading.Thread(
        target=lambda: comp.update(bench_compile(Path(tempfile.mkdtemp(prefix="opforge-bench-cold-")), work))
    )
    th.start()
    show("device", torch.cuda.get_device_name(0))
    show("agreement", bench_agreement())
    show("throughput", bench_throughput(cache, work, args.n_batch))
    th.join()
    show("compile", comp)
    show("repeatability", bench_repeatability(cache, work, args.repeats))


if __name__ == "__main__":
    main()
