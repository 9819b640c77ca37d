"""The evaluation harness on a real GPU (marker `gpu`; run on the H200 through the device tool).

Honest kernels written for these tests are accepted with measured speedups; every exploit is rejected, once by the
static checker (the violation it names) and once with static checks off, by the runtime guards alone.
Each evaluation appends one JSON line to $OPFORGE_EVAL_REPORT (the results table in README.md (Kernel evaluation harness)).
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
sys.path.insert(0, str(FIX))
import assemble as A  # noqa: E402

pytestmark = pytest.mark.gpu

SINGLE_FILES = {"add_inline": A.HONEST / "add_inline.py", **{n: A.EXPLOITS / f"{n}.py" for n in A.EXPLOITS_KB}}


def _report(name: str, kind: str, res) -> None:
    path = os.environ.get("OPFORGE_EVAL_REPORT")
    if not path:
        return
    d = res.to_dict()
    row = {"name": name, "kind": kind, **{k: d[k] for k in (
        "compiled", "correct", "reward", "eager_ms", "compile_ms", "solution_ms", "speedup_vs_eager",
        "speedup_vs_compile", "max_abs_err", "violations", "warnings", "reason", "device", "seconds")},
        "compile_s": d["compile"].get("seconds"), "compile_cached": d["compile"].get("cached"),
        "phase_s": d["details"].get("phase_s"), "kernels": d["details"].get("kernels_launched")}
    with open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


@pytest.fixture(scope="module")
def built():
    """Every fixture solution, built once up front in parallel (exploit workspaces share the add_vec4 build)."""
    from pipeline.evaluate.build import compile_solution

    cache = Path(os.environ.get("OPFORGE_EVAL_CACHE") or tempfile.mkdtemp(prefix="opforge-eval-cache-"))
    root = Path(tempfile.mkdtemp(prefix="opforge-gpu-ws-"))
    sols: dict[str, tuple[str, Path]] = {}
    for name, task in A.HONEST_WORKSPACES.items():
        sols[name] = (A.task_code(task), A.honest_workspace(root / name, name))
    for name, (task, _, _) in A.EXPLOITS_WS.items():
        sols[name] = (A.task_code(task), A.exploit_workspace(root / name, name))
    sols["ws_precision"] = (A.task_code("vec_add"), A.exploit_workspace_any(root / "ws_precision", "ws_precision"))
    for name, path in SINGLE_FILES.items():
        sols[name] = (A.task_code("vec_add"), path)
    first = compile_solution(sols["add_vec4"][1], cache)  # the shared binding.cpp object, once
    assert first.ok, first.log
    builds = {"add_vec4": first}
    with cf.ThreadPoolExecutor(8) as ex:
        futs = {ex.submit(compile_solution, p, cache): n for n, (_, p) in sols.items() if n != "add_vec4"}
        for f in cf.as_completed(futs):
            builds[futs[f]] = f.result()
    yield {"cache": str(cache), "sols": sols, "builds": builds}
    shutil.rmtree(root, ignore_errors=True)


def _eval(built, name: str, mode: str = "full", **settings):
    from pipeline.evaluate.harness import evaluate

    task, path = built["sols"][name]
    cr = built["builds"][name]
    assert cr.ok, f"{name} did not build: {cr.log[-2000:]}"
    res = evaluate(task, str(path), mode=mode, settings={"cache_dir": built["cache"], **settings}, compile_result=cr)
    return res


@pytest.mark.parametrize("name", ["add_vec4", "fused_chain", "row_softmax", "add_inline"])
def test_honest_kernel_accepted(built, name):
    res = _eval(built, name)
    _report(name, "honest", res)
    assert res.correct, (res.reason, res.violations, res.details.get("violation_details"), res.error[-1500:])
    assert res.violations == []
    assert res.reward >= 1
    assert res.solution_ms and res.eager_ms and res.compile_ms
    assert res.speedup_vs_eager == pytest.approx(res.eager_ms / res.solution_ms)
    sol = res.timing["solution"]  # raw times kept, first call discarded; more calls for short kernels
    assert len(sol["times_ms"]) == sol["trials"] == len(sol["call_at_s"]) >= 30
    if res.solution_ms < 1.0:  # a sub-millisecond kernel: calls until ~timing_min_ms of GPU time, capped
        assert sol["trials"] >= min(3000, int(300 / sol["warmup_estimate_ms"]))
    assert res.details["kernels_launched"] >= 1
    assert res.max_abs_err is not None and res.max_abs_err <= 1e-2
    base = res.timing["baseline"]  # eager + torch.compile, measured the same way, cached per task/GPU/torch/mode
    assert base["key"] and len(base["eager"]["times_ms"]) >= 30 and len(base["compile"]["times_ms"]) >= 30
    if name == "fused_chain":
        # Six eager kernels against one fused pass over the same memory: "faster than eager" must show.
        assert res.speedup_vs_eager > 2.0 and res.reward >= 2


# Exploits whose runtime detection needs the profiling phase (the others are caught while verifying).
TIMED = {"ws_stream", "kb_non_default_stream", "ws_ptr_cache"}
RUNTIME_CASES = {n: v[2] for n, v in {**A.EXPLOITS_WS, **A.EXPLOITS_KB}.items()}


@pytest.mark.parametrize("name", sorted(RUNTIME_CASES))
def test_exploit_rejected_at_runtime(built, name):
    """Static checks off: the runtime guards alone must reject the exploit (and name it)."""
    res = _eval(built, name, static_checks=False, mode="full" if name in TIMED else "verify")
    _report(name, "exploit_runtime", res)
    want = RUNTIME_CASES[name]
    assert res.reward == -1 and not res.correct, (res.reason, res.violations)
    if want != "incorrect":
        assert want in res.violations, (res.reason, res.violations, res.details.get("violation_details"))
    if name in ("ws_stream", "kb_non_default_stream"):
        assert res.timing["baseline"]["cached"] is True  # the vec_add baseline measured by the honest tests


STATIC_CASES = {n: v[1] for n, v in {**A.EXPLOITS_WS, **A.EXPLOITS_KB}.items() if v[1]}


@pytest.mark.parametrize("name", sorted(STATIC_CASES))
def test_exploit_rejected_statically(built, name):
    res = _eval(built, name)
    assert STATIC_CASES[name] in res.violations and res.reward == -1
    assert res.reason == "static_violation" and res.solution_ms is None  # no GPU time spent


def test_precision_downgrade_warned_not_rejected(built):
    res = _eval(built, "ws_precision", mode="verify")
    _report("ws_precision", "precision", res)
    assert "precision_cast" in res.warnings
    assert res.correct and res.reward >= 1 and res.max_abs_err > 0


def test_protected_file_change_rejected(built, tmp_path):
    from pipeline.evaluate.harness import evaluate

    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    (ws / "binding.cpp").write_text((ws / "binding.cpp").read_text() + "\n// edited\n")
    res = evaluate(A.task_code("vec_add"), str(ws), settings={"cache_dir": built["cache"]})
    assert "protected_file_modified:binding.cpp" in res.violations and res.reward == -1


def test_crashing_candidate_does_not_crash_the_evaluator(built, tmp_path):
    from pipeline.evaluate.build import compile_solution
    from pipeline.evaluate.harness import evaluate

    ws = A.honest_workspace(tmp_path / "ws", "add_vec4")
    (ws / "model_new.py").write_text(
        "import ctypes\nimport torch.nn as nn\nimport cuda_extension\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, a, b):\n        ctypes.string_at(0)\n        return cuda_extension.add_forward(a, b)\n")
    cr = compile_solution(ws, built["cache"])
    res = evaluate(A.task_code("vec_add"), str(ws), mode="verify",
                   settings={"cache_dir": built["cache"], "static_checks": False}, compile_result=cr)
    _report("segfault_in_forward", "crash", res)
    assert res.reward == -1 and res.reason.startswith("crash:segfault"), (res.reason, res.error[-500:])
