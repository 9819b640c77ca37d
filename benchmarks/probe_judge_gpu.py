"""The judge on a GPU, cold caches: an honest workspace kernel (add_vec4), an honest small-magnitude kernel
(softmax over 32,768 columns), its constant-output variant, and the native static-initializer attack
(kb_native_forge: reads its environment and files, writes every fd, poisons the cache, scans device memory), each
built and evaluated from nothing; prints every verdict and the time to it.

    python benchmarks/probe_judge_gpu.py
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "kernels"))

import assemble as A  # noqa: E402

from pipeline.evaluate.build import compile_solution  # noqa: E402
from pipeline.evaluate.harness import evaluate  # noqa: E402


def main() -> None:
    cache = Path(tempfile.mkdtemp(prefix="opforge-judge-cache-"))
    root = Path(tempfile.mkdtemp(prefix="opforge-judge-ws-"))
    native = root / "kb_native_forge.py"
    native.write_text((A.EXPLOITS / "kb_native_forge.py").read_text().replace("@CACHE@", str(cache)))
    sols = {
        "add_vec4": (A.task_code("vec_add"), A.honest_workspace(root / "add_vec4", "add_vec4")),
        "softmax_wide": (A.task_code("softmax_wide"), A.HONEST / "softmax_wide.py"),
        "softmax_wide_const": (
            A.task_code("softmax_wide"),
            A.constant_variant(root / "softmax_wide_const.py", "softmax_wide"),
        ),
        "kb_native_forge": (A.task_code("softmax_wide"), native),
    }
    t0 = time.perf_counter()
    out = {}
    with cf.ThreadPoolExecutor(4) as ex:  # builds in parallel, as several evaluations in flight would
        futs = {ex.submit(compile_solution, p, cache): n for n, (_, p) in sols.items()}
        builds = {futs[f]: f.result() for f in cf.as_completed(futs)}
    out["builds_s"] = {n: round(b.seconds, 1) for n, b in builds.items()}
    out["build_ok"] = {n: b.ok for n, b in builds.items()}
    for name, (task, path) in sols.items():
        t = time.perf_counter()
        cr = builds[name]
        if not cr.ok:
            out[name] = {"build_error": cr.log[-800:]}
            continue
        res = evaluate(task, str(path), settings={"cache_dir": str(cache)}, compile_result=cr)
        out[name] = {
            "correct": res.correct,
            "reward": res.reward,
            "reason": res.reason,
            "violations": res.violations,
            "eager_ms": res.eager_ms,
            "compile_ms": res.compile_ms,
            "solution_ms": res.solution_ms,
            "speedup_vs_compile": res.speedup_vs_compile,
            "clock_check": (res.timing or {}).get("clock_check"),
            "eval_s": round(time.perf_counter() - t, 1),
            "since_start_s": round(time.perf_counter() - t0, 1),
            "error": (res.error or "")[-600:],
        }
        print(name, json.dumps(out[name], default=str)[:1500], flush=True)
    print(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
