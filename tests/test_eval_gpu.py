"""The evaluation harness on a real GPU (marker `gpu`; run on the H200 through the device tool).

Honest kernels written for these tests are accepted with measured speedups; every exploit is rejected, once by the
static checker (the violation it names) and once with static checks off, by the runtime guards alone.
Each evaluation appends one JSON line to $OPFORGE_EVAL_REPORT (the evaluation table of benchmarks/README.md).
"""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent / "fixtures" / "kernels"
sys.path.insert(0, str(FIX))
import assemble as A  # noqa: E402

pytestmark = pytest.mark.gpu

SINGLE_FILES = {"add_inline": A.HONEST / "add_inline.py", **{n: A.EXPLOITS / f"{n}.py" for n in A.EXPLOITS_KB}}
SMALL = sorted(A.SMALL_MAGNITUDE)  # honest single files for small-magnitude / scalar outputs, and constant variants


def _report(name: str, kind: str, res) -> None:
    path = os.environ.get("OPFORGE_EVAL_REPORT")
    if not path:
        return
    d = res.to_dict()
    row = {
        "name": name,
        "kind": kind,
        **{
            k: d[k]
            for k in (
                "compiled",
                "correct",
                "reward",
                "eager_ms",
                "compile_ms",
                "solution_ms",
                "speedup_vs_eager",
                "speedup_vs_compile",
                "max_abs_err",
                "violations",
                "warnings",
                "reason",
                "device",
                "seconds",
            )
        },
        "compile_s": d["compile"].get("seconds"),
        "compile_cached": d["compile"].get("cached"),
        "phase_s": d["details"].get("phase_s"),
        "kernels": d["details"].get("kernels_launched"),
        "clock": (d.get("timing") or {}).get("clock_check"),
        "violation_details": d["details"].get("violation_details"),
    }
    with open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")


class _Builds:
    """Each fixture solution's build, started when a test first asks for it (a run of a few tests builds only
    theirs), on all cores. Exploit workspaces share the add_vec4 build (its binding.cpp object), so they start after
    it. Under pytest-xdist a file lock per solution lets one worker build while the others wait, then hit the
    cache."""

    def __init__(self, sols: dict, cache: Path) -> None:
        self.sols, self.cache = sols, cache
        self.ex = cf.ThreadPoolExecutor(max(2, os.cpu_count() or 2))
        self.futs: dict[str, cf.Future] = {}
        self.lock = threading.RLock()

    def build(self, name: str):
        from pipeline.evaluate.build import compile_solution

        fd = os.open(self.cache / f".fixture-build-{name}.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            res = compile_solution(self.sols[name][1], self.cache)
        finally:
            os.close(fd)
        print(f"[build] {name}: ok={res.ok} cached={res.cached} {res.seconds:.1f} s", file=sys.stderr, flush=True)
        return res

    def __getitem__(self, name: str) -> cf.Future:
        with self.lock:
            if name not in self.futs:
                if name != "add_vec4" and self.sols[name][1].is_dir():
                    first = self["add_vec4"]
                    self.futs[name] = self.ex.submit(lambda: (first.result(), self.build(name))[1])
                else:
                    self.futs[name] = self.ex.submit(self.build, name)
            return self.futs[name]


@pytest.fixture(scope="module")
def built():
    """Every fixture solution, by name: its task, its path, and its build (started on first use)."""
    cache = Path(os.environ.get("OPFORGE_EVAL_CACHE") or tempfile.mkdtemp(prefix="opforge-eval-cache-"))
    cache.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="opforge-gpu-ws-"))
    sols: dict[str, tuple[str, Path]] = {}
    for name, task in A.HONEST_WORKSPACES.items():
        sols[name] = (A.task_code(task), A.honest_workspace(root / name, name))
    for name, (task, _, _) in A.EXPLOITS_WS.items():
        sols[name] = (A.task_code(task), A.exploit_workspace(root / name, name))
    sols["ws_precision"] = (A.task_code("vec_add"), A.exploit_workspace_any(root / "ws_precision", "ws_precision"))
    for name, path in SINGLE_FILES.items():
        sols[name] = (A.task_code("vec_add"), path)
    for name in SMALL:
        sols[name] = (A.task_code(name), A.HONEST / f"{name}.py")
        sols[f"{name}_const"] = (A.task_code(name), A.constant_variant(root / f"{name}_const.py", name))
    native = root / "kb_native_forge.py"
    native.write_text((A.EXPLOITS / "kb_native_forge.py").read_text().replace("@CACHE@", str(cache)))
    sols["kb_native_forge"] = (A.task_code("softmax_wide"), native)
    builds = _Builds(sols, cache)
    yield {"cache": str(cache), "sols": sols, "builds": builds}
    builds.ex.shutdown(cancel_futures=True)
    shutil.rmtree(root, ignore_errors=True)


def _eval(built, name: str, mode: str = "full", **settings):
    from pipeline.evaluate.harness import evaluate

    task, path = built["sols"][name]
    cr = built["builds"][name].result()
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
    assert len(sol["times_ms"]) == sol["trials"] == len(sol["wall_ms"]) >= 30
    assert res.timing["clock_check"]["n"] == sol["trials"] and res.details["timed_outputs_checked"] >= 1
    if res.solution_ms < 1.0:  # a sub-millisecond kernel: calls until ~timing_min_ms of GPU time, capped by the
        # count and by timing_max_s of wall time at the warm-up's wall per call, or fewer once its median is known
        # within timing_precision
        from pipeline.evaluate.judge import LIVE_MIN
        from pipeline.evaluate.options import resolve

        o = resolve({})
        budget = int(float(o["timing_max_s"]) * 1e3 / max(sol["warmup_wall_ms"], 1e-3))
        cap = budget - min(int(o["live_calibration_calls"]), max(LIVE_MIN, budget // 5))  # the null calls' share
        planned = sol["planned"]
        assert planned >= min(3000, int(300 / sol["warmup_estimate_ms"]), cap) and sol["trials"] <= planned
        stop_width = sol["stop_median_halfwidth"]  # None: the planned run
        if stop_width is None:
            assert sol["trials"] == planned
        else:
            assert stop_width <= o["timing_precision"]
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
    if want == "work_off_stream" and res.reason.startswith("output_mismatch"):
        return  # its side stream does not wait for the inputs made on the default stream: a race lost at a trial
    if want != "incorrect":
        assert want in res.violations, (res.reason, res.violations, res.details.get("violation_details"))


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
        "    def forward(self, a, b):\n        ctypes.string_at(0)\n        return cuda_extension.add_forward(a, b)\n"
    )
    cr = compile_solution(ws, built["cache"])
    res = evaluate(
        A.task_code("vec_add"),
        str(ws),
        mode="verify",
        settings={"cache_dir": built["cache"], "static_checks": False},
        compile_result=cr,
    )
    _report("segfault_in_forward", "crash", res)
    assert res.reward == -1 and res.reason.startswith("crash:segfault"), (res.reason, res.error[-500:])


# ---------------------------------------------------------------- small magnitudes, scalars (scale-aware verdicts)


@pytest.mark.parametrize("name", SMALL)
def test_small_magnitude_honest_kernel_accepted(built, name):
    """Softmax / log-softmax over >= 32k columns, a mean reduction, a long-K matvec, a scalar loss: honest kernels
    are accepted (no degenerate-task verdict), and KernelBench's fixed-tolerance verdict is recorded beside ours."""
    res = _eval(built, name)
    _report(name, "honest_small", res)
    assert res.correct and res.reward >= 1, (res.reason, res.violations, res.details.get("violation_details"))
    assert res.task_defect == "" and res.violations == [] and res.details["kernelbench_ok"] is True


@pytest.mark.parametrize("name", SMALL)
def test_constant_output_kernel_rejected_as_incorrect(built, name):
    res = _eval(built, f"{name}_const", mode="verify")
    _report(f"{name}_const", "constant", res)
    assert not res.correct and res.reward == -1 and res.reason.startswith("output_mismatch"), res.reason


def test_two_solutions_with_the_same_extension_name_at_once(built):
    """softmax_wide and its constant variant both build `opforge_fixture_softmax_wide`: evaluated at the same
    time, each gets its own verdict (content-addressed builds, private extension copies, no shared baton)."""
    with cf.ThreadPoolExecutor(2) as ex:
        honest = ex.submit(_eval, built, "softmax_wide", "verify")
        const = ex.submit(_eval, built, "softmax_wide_const", "verify")
        honest, const = honest.result(timeout=600), const.result(timeout=600)
    assert honest.correct and honest.reward >= 1, honest.reason
    assert not const.correct and const.reason.startswith("output_mismatch"), const.reason


def test_single_files_build_with_slim_headers_and_fall_back(built, tmp_path):
    """The honest single files built with the slim headers; a .cu that uses torch's C++ frontend (not in
    <torch/types.h>) fails that build, is built again with torch's own headers, and is judged as usual."""
    from pipeline.evaluate.build import compile_solution

    for name in ["add_inline", *SMALL]:
        cr = built["builds"][name].result()
        assert cr.ok and (cr.cached or cr.headers == "slim"), (name, cr.headers, cr.step_seconds)
    src = (A.HONEST / "add_inline.py").read_text()
    src = src.replace("opforge_fixture_add", "opforge_fixture_add_full").replace(
        "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {",
        "long frontend_options() { torch::nn::LinearOptions o(4, 4); return o.in_features(); }\n"
        "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {",
        1,
    )
    path = tmp_path / "add_inline_full.py"
    path.write_text(src)
    cr = compile_solution(path, built["cache"])
    assert cr.ok and cr.headers == "full", cr.log[-2000:]
    assert {"slim_headers", "full_headers"} <= set(cr.step_seconds), cr.step_seconds
    from pipeline.evaluate.harness import evaluate

    res = evaluate(
        A.task_code("vec_add"), str(path), mode="verify", settings={"cache_dir": built["cache"]}, compile_result=cr
    )
    _report("add_inline_full_headers", "honest", res)
    assert res.correct and res.reward >= 1, res.reason


# ---------------------------------------------------------------- native code against the judge


def test_native_static_initializer_forges_nothing(built, monkeypatch):
    """The issue's forged reward 3, tried again: a static initializer reads /proc/self/environ and every file it
    can reach, poisons the baseline cache, writes forged verdicts to every fd and dup2's /dev/null over them; its
    kernel returns memory scanned from the device (the reference is in another process). All of it: reward -1,
    the cache unchanged, no secret found."""
    from pipeline.evaluate import judge

    cache = Path(built["cache"])
    canary = cache / "baselines" / "canary.json"
    canary.parent.mkdir(parents=True, exist_ok=True)
    canary.write_text('{"eager_ms": 1.0}')
    before = {p: p.read_bytes() for p in canary.parent.glob("*.json")}
    seeds, dirs = [], []
    real_ref, real_make = judge.run_reference, judge.EvalDirs.make

    def spy_ref(task_code, jobs, d, *a, **k):
        seeds.extend(j["seed"] for j in jobs)
        return real_ref(task_code, jobs, d, *a, **k)

    monkeypatch.setattr(judge, "run_reference", spy_ref)
    monkeypatch.setattr(judge.EvalDirs, "make", classmethod(lambda cls: dirs.append(real_make()) or dirs[-1]))
    try:
        res = _eval(
            built, "kb_native_forge", static_checks=False, keep_eval_dir=True, load_timeout_s=60.0, call_timeout_s=60.0
        )
        _report("kb_native_forge", "exploit_native", res)
        assert res.reward == -1 and not res.correct, res.reason
        after = {p: p.read_bytes() for p in canary.parent.glob("*.json")}
        assert all(after.get(p) == b for p, b in before.items())  # nothing that was there is touched
        assert not [p for p, b in after.items() if b"1000.0" in b]  # nor written since (tests beside this one)
        snoop = dirs[0].cand / "native_snoop.txt"
        assert snoop.is_file(), "the attack did not run"
        text = snoop.read_text(errors="replace")
        assert seeds and not [s for s in seeds if str(s) in text]
    finally:
        for d in dirs:
            d.remove()


def test_digest_of_a_device_tensor_is_that_of_its_bytes():
    """The commitment a candidate makes on the GPU (staged through pinned buffers, in pieces) is the one the trusted
    side recomputes from the saved file on the host: multi-piece, odd-sized, non-contiguous and empty tensors."""
    import torch

    from pipeline.evaluate import tensorio

    n = 2 * tensorio.PIN_BYTES // 4 + 12_345  # three pieces, the last one short
    outs = [
        torch.randn(n, device="cuda"),
        torch.randn(64, 48, device="cuda").t(),
        torch.empty(0, device="cuda"),
        [torch.arange(7, device="cuda", dtype=torch.int64), 1.5],
    ]
    for out in outs:
        host = tensorio.tmap(out, lambda t: t.cpu())
        assert tensorio.digest(out) == tensorio.digest(host)
    a = outs[0].clone()
    a[-1] += 1  # a change in the last, short piece
    assert tensorio.digest(a) != tensorio.digest(outs[0])


def test_device_to_host_copies_in_forward_are_refused():
    """A copy is allowed inside forward, but not of a device tensor's data to the host (numpy on the host, then the
    result copied back: host compute that a helper function or C++ hides from the source checks)."""
    import torch

    from pipeline.evaluate.guard import ForbiddenTorchOp, OpGuard

    x = torch.randn(1024, device="cuda")
    guard = OpGuard()
    with guard:
        y = torch.empty_like(x).copy_(x)  # device to device
        z = torch.ones(4).to("cuda")  # host to device (a constant made on the host)
    assert y.is_cuda and z.is_cuda and guard.blocked == []
    for move in (lambda t: t.cpu(), lambda t: t.to("cpu"), lambda t: torch.empty(1024).copy_(t)):
        with pytest.raises(ForbiddenTorchOp), guard:
            move(x)
    assert guard.blocked and all("device to host" in b for b in guard.blocked)
