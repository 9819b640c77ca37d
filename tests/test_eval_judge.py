"""The judge's protocol end to end on the CPU (device "cpu"): real jailed reference and candidate processes, the
real FIFOs, the trusted side's verdicts. Candidates here are Python (the runtime op guard is told to allow the
torch ops they use, and static checks are off): what is tested is that the protocol holds when the candidate's
process is hostile, not the static checks.

The GPU twin of these tests (native code, CUDA timing) is tests/test_eval_gpu.py."""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

from pipeline import gpumemory
from pipeline.evaluate import artifacts, judge
from pipeline.evaluate.build import CompileResult
from pipeline.evaluate.harness import _no_room, evaluate

TASK = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return torch.softmax(x, dim=-1)

    def get_inputs():
        return [torch.randn(4, 32768)]

    def get_init_inputs():
        return []
""")

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""

# A host as loaded as CI's (2 cores, several processes) jitters by milliseconds per call: the clock's slack is set
# for it here; attacks below hide far more than that.
CPU = {
    "device": "cpu",
    "static_checks": False,
    "allow_torch_ops": ["_softmax", "softmax", "zeros_like", "add"],
    "trials": 3,
    "post_timing_trials": 1,
    "timing_trials": 10,
    "timing_min_ms": 5.0,
    "timing_warmup": 3,
    "timing_warmup_ms": 5.0,
    "timing_max_trials": 40,
    "calibration_calls": 10,
    "clock_slack_ms": 15.0,
    "check_max_calls": 4,
    "kernel_launch_check": False,
}
# Honest on the correctness calls, it returns its first timed output on every later timed call with a steady tiny
# time (a native hook could tell timed calls apart).
STALE_TIMED = """
        import sys
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real = drv.op_timed
        memo = {}
        def stale(self, msg):
            if "out" in memo and not msg.get("warm"):
                self.held = memo["out"]
                from pipeline.evaluate import tensorio
                return {"t": 0.001, "ts": 0.001, "digest": tensorio.digest(self.held)}
            rep = real(self, msg)
            if self.held is not None:
                memo["out"] = self.held
            return rep
        drv.op_timed = stale
"""
BUILT = CompileResult(True, 0.0, "", True, "", "single_file")  # nothing to build: a pure-Python candidate


def _eval(tmp_path: Path, code: str, mode: str = "full", task: str = TASK, prefix: str = "", **settings):
    """Evaluate `textwrap.dedent(prefix) + code` as a single-file solution on the CPU."""
    code = textwrap.dedent(prefix) + code
    sol = tmp_path / f"sol_{abs(hash(code)) % 10**8}.py"
    sol.write_text(code)
    return evaluate(
        task,
        str(sol),
        mode=mode,
        settings={**CPU, "cache_dir": str(tmp_path / "cache"), **settings},
        compile_result=BUILT,
    )


def test_honest_candidate_accepted_and_constant_output_rejected(tmp_path):
    res = _eval(tmp_path, HONEST)
    assert res.correct and res.reward == 1 and res.violations == [], (res.reason, res.details)
    sol = res.timing["solution"]
    assert sol["trials"] >= 10 and len(sol["wall_ms"]) == len(sol["times_ms"]) == sol["trials"]
    assert res.timing["clock_check"]["n"] == sol["trials"] and res.details["timed_outputs_checked"] >= 1
    # The overhead came from the calibrator (a second process that never loads candidate code) during timing.
    clock = res.timing["clock_check"]
    assert clock["calibration"] == "live" and clock["live_calls"] == len(res.timing["live_calibration_ms"]) >= 10
    assert res.details["kernelbench_ok"] is True
    zero = _eval(tmp_path, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)"))
    assert not zero.correct and zero.reward == -1 and zero.reason.startswith("output_mismatch")


CROSS_ENTROPY = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, predictions, targets):
            return F.cross_entropy(predictions, targets)

    def get_inputs():
        return [torch.randn(4096, 10), torch.randint(0, 10, (4096,))]

    def get_init_inputs():
        return []
""")


def test_a_constant_loss_fails_a_loss_task_and_an_honest_one_passes(tmp_path):
    """KernelBench's 95_CrossEntropyLoss moves by ~0.6% of its value from one input to the next: a constant near its
    mean sat inside the plain rule's 2% band for every draw (reward 2 on the real jail). Judged within the loss's
    spread across the inputs drawn (`tolerance.spread_caps`), the constant fails and the honest loss passes."""
    ops = {"allow_torch_ops": ["cross_entropy", "log_softmax", "_log_softmax", "nll_loss", "nll_loss_forward", "full"]}
    honest = _eval(
        tmp_path,
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, predictions, targets):\n        return F.cross_entropy(predictions, targets)\n",
        task=CROSS_ENTROPY,
        **ops,
    )
    assert honest.correct and honest.reward >= 1, (honest.reason, honest.details.get("spread_caps"))
    assert honest.details["spread_caps"][0] < 1e-2 and not honest.details.get("task_defect")
    const = _eval(
        tmp_path,
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, predictions, targets):\n        return torch.full((), 2.7247)\n",
        task=CROSS_ENTROPY,
        **ops,
    )
    assert not const.correct and const.reward == -1 and const.reason.startswith("output_mismatch"), const.reason


def test_an_input_changed_in_place_is_a_violation_only_where_the_task_does_not_change_it(tmp_path):
    """A task whose reference changes its input in place (its own `ReLU(inplace=True)`): a candidate doing the same
    is judged on its outputs, not called a cheat; where the task leaves its inputs alone, changing them stays
    `input_mutation`."""
    inplace_task = TASK.replace("torch.softmax(x, dim=-1)", "torch.relu_(x)")
    same = HONEST.replace("torch.softmax(x, dim=-1)", "torch.relu_(x)")
    ops = {"allow_torch_ops": ["relu_", "relu", "clamp_min_", "threshold_", "_softmax", "softmax", "mul_"]}
    res = _eval(tmp_path, same, task=inplace_task, **ops)
    assert res.correct and res.reward >= 1 and "input_mutation" not in res.violations, (res.reason, res.violations)
    assert res.details["reference_mutates_inputs"] == [0]
    sneaky = HONEST.replace(
        "return torch.softmax(x, dim=-1)", "y = torch.softmax(x, dim=-1)\n        x.mul_(0)\n        return y"
    )
    res = _eval(tmp_path, sneaky, **ops)
    assert "input_mutation" in res.violations and res.reward == -1, (res.reason, res.violations)
    assert "reference_mutates_inputs" not in res.details


def test_torchs_own_ops_outside_aten_are_refused_and_the_candidates_own_namespace_is_not(tmp_path):
    """The op guard refuses every operator namespace torch registered before the candidate's code loaded
    (`guard.torch_namespaces`): `mkldnn::_linear_pointwise` computed a Linear and a ReLU past a guard that knew
    only aten's and a few others. An operator the candidate registers itself, in a namespace of its own, runs."""
    from pipeline.evaluate.guard import ForbiddenTorchOp, OpGuard, torch_namespaces

    names = torch_namespaces()
    assert {"aten", "prims", "mkldnn"} <= names and "profiler" not in names
    x, w, b = torch.randn(4, 8), torch.randn(16, 8), torch.randn(16)
    with pytest.raises(ForbiddenTorchOp, match="mkldnn::_linear_pointwise"):
        with OpGuard(namespaces=names):
            torch.ops.mkldnn._linear_pointwise(x, w, b, "relu", [], "")
    lib = torch.library.Library("opforge_test_ns", "DEF")  # the candidate's own extension, registered after
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda t: t * 2, "CompositeExplicitAutograd")
    with OpGuard(namespaces=names):
        y = torch.ops.opforge_test_ns.twice(x)
    assert torch.equal(y, x * 2)
    # through the real jail: the candidate's forward calling the mkldnn op is refused at the correctness calls
    task = TASK.replace("torch.softmax(x, dim=-1)", "torch.relu(self.lin(x))").replace(
        "super().__init__()", "super().__init__()\n        self.lin = nn.Linear(32768, 16)"
    )
    cand = HONEST.replace(
        "def forward",
        "def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(32768, 16)\n\n    def forward",
    ).replace(
        "torch.softmax(x, dim=-1)",
        'torch.ops.mkldnn._linear_pointwise(x, self.lin.weight, self.lin.bias, "relu", [], "")',
    )
    res = _eval(tmp_path, cand, task=task, allow_torch_ops=["relu", "linear", "addmm", "mm", "t"])
    assert res.reward == -1 and "torch_op_in_forward" in res.violations, (res.reason, res.violations)
    assert any("mkldnn" in d for d in res.details.get("violation_details", [])), res.details.get("violation_details")


def test_the_candidate_is_stopped_while_the_calibrator_measures(tmp_path, monkeypatch):
    """Every live null call of the calibrator runs with each process of the candidate's jail stopped: a candidate
    that loaded the host in the gaps between its own calls slowed the calibrator alone (a larger overhead and slack,
    in which under-reported times hid)."""
    seen, real = [], judge.Judge.null_call

    def null_call(self, c, meta, t_call):
        cand = getattr(self, "_cand", None)
        if cand is not None and c is not cand:  # the calibrator's, during timing (not the pre-load calibration)
            pids = [cand.pgid, *judge._descendants(cand.pgid)]
            seen.append(all(judge._stopped(p) for p in pids))
        return real(self, c, meta, t_call)

    monkeypatch.setattr(judge.Judge, "null_call", null_call)
    res = _eval(tmp_path, HONEST)
    assert res.correct and res.timing["clock_check"]["calibration"] == "live", res.details
    assert len(seen) >= 10 and all(seen), seen


def test_timing_of_a_short_kernel_is_bounded_by_wall_time(tmp_path):
    """Each timed call is a round trip; a short kernel that would need thousands of them to add up to timing_min_ms
    gets what timing_max_s of wall allows, never fewer than timing_trials."""
    res = _eval(tmp_path, HONEST, timing_min_ms=1e6, timing_max_trials=3000, timing_max_s=1e-6)
    assert res.correct and res.reward == 1, (res.reason, res.details)
    n = CPU["timing_trials"]  # plus the secret random part, at most n // 8 + 1
    assert n <= res.timing["solution"]["trials"] <= n + n // 8 + 1


def test_timing_stops_once_the_median_is_known_and_checks_its_last_call(tmp_path):
    """Planned for 100 calls, a run whose median is known within timing_precision after 32 makes 1 to 32 more (a
    secret number: the candidate knows the rule and its times, but not which call is the last, checked) and stops;
    with timing_precision 0 it makes every planned call. Stopping early loses a cheat nothing: steady forged times
    end its run sooner, and its calls are still checked."""
    many = {"timing_min_ms": 1e6, "timing_max_trials": 100}
    early = _eval(tmp_path, HONEST, timing_precision=1.0, **many)
    sol = early.timing["solution"]
    assert early.correct and early.reward == 1, (early.reason, early.details)
    assert sol["planned"] >= 100 and judge.STOP_EVERY < sol["trials"] <= 2 * judge.STOP_EVERY
    assert sol["trials"] == len(sol["times_ms"]) and sol["stop_median_halfwidth"] <= 1.0
    assert sol["trials"] in early.timing["checked_calls"]
    full = _eval(tmp_path, HONEST, timing_precision=0.0, **many)
    assert full.timing["solution"]["trials"] == full.timing["solution"]["planned"] >= 40
    assert full.timing["solution"]["stop_median_halfwidth"] is None
    res = _eval(tmp_path, HONEST, prefix=STALE_TIMED, clock_slack_ms=1e6, timing_precision=0.005, **many)
    assert res.timing["solution"]["trials"] <= 2 * judge.STOP_EVERY  # its steady times stopped the run
    assert "result_caching" in res.violations and res.reward == -1 and "timed_output_mismatch" in res.reason


@contextlib.contextmanager
def _another_evaluation(release: threading.Event):
    """Another evaluation's GPU memory slot, held from entry until `release` is set (at the block's end at the
    latest); yields its thread, which ends once the slot is given back."""
    held = threading.Event()

    def other():
        with gpumemory.claimed(1, judge.Judge.memory_dir_of("cpu")):
            held.set()
            release.wait()

    t = threading.Thread(target=other, daemon=True)
    t.start()
    held.wait()
    try:
        yield t
    finally:
        release.set()
        t.join()


def _beside_another(monkeypatch, run):
    """run() while another evaluation holds a memory slot; the slot goes when a judgement alone asks for every slot
    (so that a second judgement, were one made, would not wait for this test forever) or run() ends. Returns run()'s
    result and whether a judgement alone was asked for."""
    asked_alone, release = [], threading.Event()
    claim = judge.Judge.memory_claim

    def memory_claim(self):
        if self.alone:
            asked_alone.append(True)
            release.set()
        return claim(self)

    monkeypatch.setattr(judge.Judge, "memory_claim", memory_claim)
    with _another_evaluation(release):
        return run(), bool(asked_alone)


# A stale-output cheat that knows when it is caught: it is sent `keep` for a checked call. It then feigns running out
# of GPU memory (`at` "timed": on the next timed call; "keep": at the keep itself), which beside other evaluations
# would buy it a second judgement with fresh checks.
CAUGHT_THEN_OOM = """
        import sys
        import torch
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_timed, real_keep = drv.op_timed, drv.op_keep
        memo = {}
        def oom():
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                "capacity of 79.19 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has "
                "3.00 GiB memory in use. Of the allocated memory 2.50 GiB is allocated by PyTorch")
        def timed(self, msg):
            if memo.get("caught"):
                oom()
            if "out" in memo and not msg.get("warm"):
                self.held = memo["out"]
                from pipeline.evaluate import tensorio
                memo["stale"] = True
                return {"t": 0.001, "ts": 0.001, "digest": tensorio.digest(self.held)}
            rep = real_timed(self, msg)
            if self.held is not None:
                memo["out"] = self.held
            return rep
        def keep(self, msg):
            if memo.get("stale"):
                memo["caught"] = True
                if AT == "keep":
                    oom()
            return real_keep(self, msg)
        drv.op_timed, drv.op_keep = timed, keep
"""


@pytest.mark.parametrize("at", ["timed", "keep"])
def test_a_caught_cheat_buys_no_second_judgement_by_feigning_out_of_memory(tmp_path, monkeypatch, at):
    """Beside other evaluations (a memory slot held here), a candidate out of GPU memory is judged again; one that
    learned at a `keep` that a stale output of its own is checked cannot buy that by failing next: its kept outputs
    are saved and checked at once (caught: -1, result_caching), or, where the keep itself failed, nothing is judged
    again. An honest candidate truly out of memory after its keeps still gets its second judgement (its kept
    outputs check out)."""
    from pipeline.evaluate.harness import _short_of_memory

    many = {"timing_min_ms": 1e6, "timing_max_trials": 100, "timing_precision": 0.0, "clock_slack_ms": 1e6}
    prefix = CAUGHT_THEN_OOM.replace("AT", repr(at))
    res, asked_alone = _beside_another(monkeypatch, lambda: _eval(tmp_path, HONEST, prefix=prefix, **many))
    assert not asked_alone, ("judged again alone", res.details.get("judged_again_after"))
    assert res.details["slots_beside"] == 1  # the first judgement's failure was beside another evaluation
    assert res.reward == -1 and "judged_again_after" not in res.details, (res.reason, res.details)
    if at == "timed":
        assert "result_caching" in res.violations and res.reason.startswith("timed_output_mismatch"), res.reason
    else:
        assert res.details["checks_unverified"] >= 1 and res.reason.startswith("runtime_error (timing)")
    # the decision on an honest run out of memory after its keeps: the kept outputs matched, so judged again
    honest = {"reason": "runtime_error (timing)", "error": "torch.OutOfMemoryError: CUDA out of memory"}
    said = {"slots_beside": 1, "failed_out_of_memory": True}
    assert _short_of_memory({**honest, "details": {**said, "timed_outputs_checked": 3}})
    assert not _short_of_memory({**honest, "details": {**said, "checks_unverified": 2}})
    # a second judgement's figure is never below the first's where the first's timed run was over (a re-roll)
    from pipeline.evaluate.harness import _first_figure, _timing_floor

    second = {"solution_ms": 0.8, "details": {}}
    _timing_floor(second, _first_figure({"solution_ms": 1.0}))
    assert second["solution_ms"] == 1.0 and second["details"]["timing_floor_from"] == "first judgement"
    slower = {"solution_ms": 1.2, "details": {}}
    _timing_floor(slower, _first_figure({"solution_ms": 1.0}))
    _timing_floor(second := {"solution_ms": 0.8, "details": {}}, _first_figure({"details": {}}))  # no timed call
    assert slower["solution_ms"] == 1.2 and second["solution_ms"] == 0.8 and not second["details"]
    assert slower["details"] == {"timing_floor_ms": 1.0}
    # nor a full disk it claims once it knows (it can fill the disk itself)
    full = {"reason": "host_error: no space left for the output (timing)", "error": "", "details": {}}
    assert _no_room(full) and not _no_room({**full, "details": {"checks_unverified": 1}})


# Slow on the first judgement's calls (the test's trusted side says so in each: a contended host, say), it feigns
# running out of GPU memory, for a fresh run: part way through its timed run after its keeps ("timed13"), at its
# first timed call ("timed0": no timed call kept yet), or in its warm-up ("warm").
SLOW_THEN_OOM = """
        import sys, time
        import torch
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_timed = drv.op_timed
        seen = {"warm": 0, "timed": 0}
        def timed(self, msg):
            if msg.get("slow"):
                kind = "warm" if msg.get("warm") else "timed"
                seen[kind] += 1
                at = msg["slow"]
                if (at == "warm" and kind == "warm" and seen["warm"] > 2) or (at == "timed0" and kind == "timed") or (
                    at == "timed13" and kind == "timed" and seen["timed"] > 12
                ):
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
                time.sleep(0.02)
            return real_timed(self, msg)
        drv.op_timed = timed
"""
# Honest, out of GPU memory for real beside another evaluation in its warm-up (the test's trusted side says when);
# its first two warm-up calls are slow in every judgement (the GPU's clocks ramping up).
COLD_THEN_OOM_IN_WARMUP = """
        import sys, time
        import torch
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_timed = drv.op_timed
        warm = []
        def timed(self, msg):
            if msg.get("warm"):
                warm.append(1)
                if msg.get("slow") and len(warm) == 5:
                    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
                if len(warm) <= 2:
                    time.sleep(0.02)
            return real_timed(self, msg)
        drv.op_timed = timed
"""


def _in_first_judgement(monkeypatch, mark) -> list[dict]:
    """Each command the first judgement sends the candidate passed through mark(msg) (the test's stand-in for what
    the host does to it then); the judgements' reports, in order (a placeholder while one runs)."""
    reports, real_judge, real_request = [], judge.judge_candidate, judge.CandidateProcess.request

    def judge_candidate(*a, **k):
        reports.append({})
        rep = real_judge(*a, **k)
        reports[-1] = dict(rep)
        return rep

    def request(self, msg, timeout):
        return real_request(self, mark(msg) if len(reports) == 1 else msg, timeout)

    monkeypatch.setattr(judge, "judge_candidate", judge_candidate)
    monkeypatch.setattr(judge.CandidateProcess, "request", request)
    return reports


def _slow_first_judgement(monkeypatch, how: str) -> None:
    _in_first_judgement(monkeypatch, lambda msg: {**msg, "slow": how} if msg.get("op") == "timed" else msg)


@pytest.mark.parametrize("how", ["timed13", "timed0", "warm"])
def test_a_timed_run_abandoned_floors_the_second_judgements_figure(tmp_path, monkeypatch, how):
    _slow_first_judgement(monkeypatch, how)
    many = {"timing_min_ms": 1e6, "timing_max_trials": 60, "timing_precision": 0.0, "clock_slack_ms": 1e6}
    res, asked_alone = _beside_another(monkeypatch, lambda: _eval(tmp_path, HONEST, prefix=SLOW_THEN_OOM, **many))
    assert asked_alone and res.details["judged_again_after"] == "runtime_error (timing)", res.details
    # judged again (its keeps, if any, checked out), at no less than what its abandoned run measured: 20 ms a call,
    # not the fraction of a millisecond the fresh run took
    assert res.correct and res.reward == 1, (res.reason, res.details)
    assert res.details["timing_floor_from"] == "first judgement's partial timed run"
    # (20 ms on the trusted clock less the calibrated overhead of a call, which a loaded host moves by a little)
    assert res.solution_ms >= 15.0 > max(res.timing["solution"]["times_ms"])


def test_an_honest_kernel_out_of_memory_in_its_warm_up_keeps_its_own_figure(tmp_path, monkeypatch):
    _slow_first_judgement(monkeypatch, "oom")
    many = {"timing_warmup": 6, "clock_slack_ms": 1e6}
    res, asked_alone = _beside_another(
        monkeypatch, lambda: _eval(tmp_path, HONEST, prefix=COLD_THEN_OOM_IN_WARMUP, **many)
    )
    assert asked_alone and res.details["judged_again_after"] == "runtime_error (timing)", res.details
    # floored by its fastest warm-up call after the first, not by the slow ones while the clocks ramped up
    assert res.correct and res.details["timing_floor_ms"] < 15.0 and res.solution_ms < 15.0, res.details


# An honest candidate whose output cannot be written: the file system is full (the test's trusted side marks the
# call and reports no free space to the judge, as a neighbour filling the shared disk would make it).
NO_ROOM_WHEN_MARKED = """
        import sys
        from pipeline.evaluate import tensorio
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_call, real_save_kept = drv.op_call, drv.op_save_kept
        def call(self, msg):
            if msg.get("full"):
                raise tensorio.NoRoom("no space left on the device for " + msg["out"])
            return real_call(self, msg)
        def save_kept(self, msg):
            if msg.get("full"):
                raise tensorio.NoRoom("no space left on the device for the kept outputs")
            return real_save_kept(self, msg)
        drv.op_call, drv.op_save_kept = call, save_kept
"""


def _disk_full_in_first_judgement(monkeypatch, at: str, seen: bool = True, stays: bool = False) -> list[dict]:
    """The file system is full for the first judgement's first command that writes `at` (an output's name, or
    "save_kept"; several joined by "+"), or for every one where it `stays` full; `seen`: the judge sees it full for
    that judgement's life (else a neighbour's files went in between). The judgements' reports, in order."""
    import types

    from pipeline.evaluate import tensorio

    marked = []

    def mark(msg):
        where = msg.get("out") if msg.get("op") == "call" else msg.get("op")
        if where in at.split("+") and (stays or where not in marked):
            marked.append(where)
            return {**msg, "full": True}
        return msg

    reports = _in_first_judgement(monkeypatch, mark)
    full = types.SimpleNamespace(f_bavail=0, f_frsize=4096)
    fake_os = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os) if not k.startswith("__")})
    fake_os.statvfs = lambda path: full if seen and len(reports) == 1 else os.statvfs(path)
    monkeypatch.setattr(judge, "os", fake_os)
    monkeypatch.setattr(tensorio, "NO_ROOM_WAIT_S", 0.0)  # no room comes back here: the wait for it, cut short
    return reports


@pytest.mark.parametrize(
    "at,seen,stays",
    [
        ("post_0_a", True, True),
        ("save_kept", True, False),
        ("cor_1_a", False, False),
        ("cor_1_a+save_kept", True, False),
    ],
)
def test_an_honest_candidate_loses_nothing_to_a_full_disk(tmp_path, monkeypatch, at, seen, stays):
    """Full at a post-timing trial for the rest of the judgement, or full when its checked outputs are saved after
    timing (it knows which are checked then, so it would not be judged again: the save is asked again once there is
    room), or full for an instant only (a neighbour's files filled the disk and went before the judge looked), or
    full twice, room coming back in between (a wait that saw room come back does not end the judgement's waits)."""
    reports = _disk_full_in_first_judgement(monkeypatch, at, seen, stays)
    if "+" in at:
        from pipeline.evaluate import tensorio

        monkeypatch.setattr(tensorio, "wait_for_room", lambda path, limit_s: True)  # the neighbour's files went
    res = _eval(tmp_path, HONEST, prefix=NO_ROOM_WHEN_MARKED)
    assert res.correct and res.reward == 1 and "checks_unverified" not in res.details, (res.reason, reports)
    if stays:  # judged again; its first timed run was over: the second figure is no lower
        assert len(reports) == 2 and reports[0]["reason"].startswith("post_timing_host_error: no space left")
        assert res.details["judged_again_after"] == reports[0]["reason"]
        assert res.solution_ms >= reports[0]["solution_ms"]
    else:  # the command asked once more within the judgement
        assert len(reports) == 1


def test_a_full_disk_where_the_judge_writes_is_the_hosts_and_judged_again(tmp_path, monkeypatch):
    """No room for the judge's own copy of the solution (a neighbour filled the shared disk): not a judge_error (-1),
    the host's full disk: judged again once there is room."""
    import errno
    import shutil

    from pipeline.evaluate import tensorio

    failed, real_copy = [], shutil.copy2

    def copy2(src, dst, *a, **k):
        if not failed:
            failed.append(dst)
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real_copy(src, dst, *a, **k)

    monkeypatch.setattr(judge.shutil, "copy2", copy2)
    monkeypatch.setattr(tensorio, "NO_ROOM_WAIT_S", 0.0)
    res = _eval(tmp_path, HONEST)
    assert failed and res.correct and res.reward == 1, (res.reason, res.error)
    assert res.details["judged_again_after"] == "host_error: no space left for the judge's files"


def test_a_full_disk_under_the_judge_after_the_keeps_buys_no_second_judgement(tmp_path, monkeypatch):
    """Once the candidate knows which of its outputs are checked (it was sent `keep`s) it could fill the shared disk
    itself: a full disk under the judge's own writes then is not judged again (`checks_unverified`)."""
    import errno

    def finish(self, cand):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(judge.Judge, "finish", finish)
    res = _eval(tmp_path, HONEST)
    assert res.reward == -1 and res.reason == "host_error: no space left for the judge's files", res.reason
    assert res.details["checks_unverified"] >= 1 and "judged_again_after" not in res.details


# Wrong in a trial (a gamble lost); it learns so when `finish` comes instead of the determinism repeat (`..._b`) or
# the next trial, then dies with torch's out-of-memory words on stderr.
WRONG_THEN_CRASH_AT_FINISH = """
        import os, sys
        import torch
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_call = drv.op_call
        seen = []
        def call(self, msg):
            seen.append(msg["out"])
            if msg["out"] == WRONG + "_a":
                from pipeline.evaluate import tensorio
                args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev, str(msg.get("variant", "base")))
                tensorio.save(torch.zeros_like(args[0]), os.path.join(self.out_dir, WRONG + "_a.pt"))
                return {"ok": True}
            return real_call(self, msg)
        def finish(self, msg):
            if seen and seen[-1].endswith("_a"):  # no repeat came: judged wrong
                os.write(2, b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
                os._exit(1)
            return {"violations": [], "warnings": []}
        drv.op_call, drv.op_finish = call, finish
"""


@pytest.mark.parametrize("wrong", ["cor_0", "post_0"])
def test_a_wrong_output_then_a_crash_keeps_its_verdict(tmp_path, monkeypatch, wrong):
    """Judged wrong in a trial (or a post-timing trial), the candidate crashes at `finish` with out-of-memory words
    beside another evaluation: the first failure stays the verdict's reason, and it is not judged again."""
    many = {"timing_min_ms": 1e6, "timing_max_trials": 60, "timing_precision": 0.0, "clock_slack_ms": 1e6}
    prefix = WRONG_THEN_CRASH_AT_FINISH.replace("WRONG", repr(wrong))
    mode = "verify" if wrong == "cor_0" else "full"
    res, asked_alone = _beside_another(monkeypatch, lambda: _eval(tmp_path, HONEST, mode=mode, prefix=prefix, **many))
    assert not asked_alone and "judged_again_after" not in res.details, (res.reason, res.details)
    assert res.reward == -1 and "output_mismatch" in res.reason, res.reason
    assert res.details["crash_after"].startswith("crash:") and res.details["slots_beside"] == 1


# Honest outputs throughout; out of GPU memory (truly, say) on the first timed call after its first `keep`.
HONEST_OOM_AFTER_KEEP = """
        import sys
        import torch
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_timed, real_keep = drv.op_timed, drv.op_keep
        memo = {}
        def timed(self, msg):
            if memo.get("kept") and not msg.get("warm"):
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")
            return real_timed(self, msg)
        def keep(self, msg):
            memo["kept"] = True
            return real_keep(self, msg)
        drv.op_timed, drv.op_keep = timed, keep
"""


def test_an_honest_candidate_out_of_memory_after_its_keeps_is_judged_again(tmp_path, monkeypatch):
    """Beside another evaluation, an honest candidate out of memory on a timed call after a `keep`: its kept outputs
    are saved and check out, so it is judged again (here alone, on the CPU; out of memory there too: its own, -1)."""
    many = {"timing_min_ms": 1e6, "timing_max_trials": 100, "timing_precision": 0.0, "clock_slack_ms": 1e6}
    run = lambda: _eval(tmp_path, HONEST, prefix=HONEST_OOM_AFTER_KEEP, **many)  # noqa: E731
    res, asked_alone = _beside_another(monkeypatch, run)
    assert asked_alone and res.details["judged_again_after"].startswith("runtime_error (timing)"), res.details
    assert res.violations == [] and "checks_unverified" not in res.details and res.details["judged_alone"] is True


@pytest.mark.parametrize("how", ["raises", "dies"])
def test_others_beside_are_counted_when_the_candidate_fails(tmp_path, monkeypatch, how):
    """An honest candidate out of memory beside another evaluation that ends right after the failure, before the
    judgement is over (the candidate's exit takes seconds on a GPU): still judged again, since the memory slots
    others held are read when the failure happens too; also where the process dies with the words on stderr (its
    no-reply is the failure, told as the crash it was)."""
    words = "CUDA out of memory. Tried to allocate 2.00 GiB."
    failure = {
        "raises": f"raise torch.OutOfMemoryError({words!r})",
        "dies": f"__import__('os').write(2, b'torch.OutOfMemoryError: {words}'); __import__('os')._exit(1)",
    }[how]
    code = HONEST.replace("return torch.softmax(x, dim=-1)", failure)
    release, other = threading.Event(), []
    fail = judge.Judge.fail

    def failed(self, reason, error=""):
        out = fail(self, reason, error)
        release.set()  # the other evaluation ends right after this one's failure
        other[0].join()
        return out

    monkeypatch.setattr(judge.Judge, "fail", failed)
    with _another_evaluation(release) as t:
        other.append(t)
        res = _eval(tmp_path, code, mode="verify")
    first = res.details["judged_again_after"]
    assert first.startswith("runtime_error" if how == "raises" else "crash:"), res.details
    assert res.reward == -1 and res.details["judged_alone"] is True  # out of memory alone: its own


def test_checked_positions_are_spread_in_log_position():
    """Drawn with the judge's secret generator: distinct, within 1..n, as many early as the run's length allows."""
    import random

    from pipeline.evaluate.timing import log_positions

    rng = random.Random(7)
    draws = [log_positions(rng, 2000, 15) for _ in range(200)]
    assert all(len(d) == 15 and min(d) >= 1 and max(d) <= 2000 for d in draws)
    early = sum(sum(p <= 100 for p in d) for d in draws) / len(draws)
    assert early >= 8  # uniform positions would put 0.75 of 15 in 1..100
    assert log_positions(rng, 10, 15) == set(range(1, 11)) and log_positions(rng, 5, 0) == set()


def test_stop_rule_looks_every_stop_every_calls_after_the_least_count():
    """`timing.known_within`, the judge's stop condition (also replayed by benchmarks/bench_eval.py): steady times
    stop at the first look at or after the least count, scattered ones never; off at precision 0."""
    import random

    from pipeline.evaluate.timing import STOP_EVERY, known_within

    steady = [1.0 + 1e-4 * (i % 3) for i in range(4 * STOP_EVERY)]
    looks = [n for n in range(1, len(steady) + 1) if known_within(steady[:n], 0.005, 40) is not None]
    assert looks == [2 * STOP_EVERY, 3 * STOP_EVERY, 4 * STOP_EVERY]
    assert known_within(steady, 0.0, 1) is None
    rng = random.Random(3)
    scattered = [rng.uniform(0.5, 1.5) for _ in range(4 * STOP_EVERY)]
    assert all(known_within(scattered[:n], 0.005, 1) is None for n in range(1, len(scattered) + 1))


# A run of timing_max_trials = 300 planned calls, all made (no early stop needed), the clock's slack out of the way:
# only the checked calls may catch what the cheats below do.
LATE_RUN = {
    "timing_min_ms": 1e6,
    "timing_max_trials": 300,
    "timing_max_s": 0,
    "timing_warmup_ms": 0,
    "timing_precision": 0.0,
    "clock_slack_ms": 1e6,
}
# Honest until it has seen every random check's `keep` (check_max_calls - 1: it knows the options), early enough
# that stale outputs from there to the planned count (300) outnumber every other counted call, however many the
# secret random part adds (at most 300 // 8 + 1); then stale until the planned count, honest from there on (the
# last call, always checked, lies at or past it). It never cheats where a check could still come.
ADAPTIVE = """
    import sys
    drv = sys.modules["pipeline.evaluate.candidate"].Driver
    real_timed, real_keep = drv.op_timed, drv.op_keep
    st = {"n": -1, "keeps": 0, "stale": False}
    B, RANDOM_CHECKS = 300, 15  # check_max_calls = 16
    def keep(self, msg):
        st["keeps"] += 1
        if st["keeps"] == RANDOM_CHECKS and st["n"] < B - 2 - (B + B // 8 + 1) // 2:
            st["stale"] = True
        return real_keep(self, msg)
    def timed(self, msg):
        if msg.get("warm"):
            return real_timed(self, msg)
        st["n"] += 1
        if st["stale"] and st["n"] < B:
            self.held = st["out"]
            from pipeline.evaluate import tensorio
            return {"t": 0.001, "ts": 0.001, "digest": tensorio.digest(self.held)}
        rep = real_timed(self, msg)
        st["out"] = self.held
        return rep
    drv.op_timed, drv.op_keep = timed, keep
"""


def test_warm_up_times_at_or_below_zero_do_not_plan_a_short_run(tmp_path):
    """The planned count follows the lower of the reported warm-up times and the trusted wall around them; a
    negative report made it timing_trials (no estimate above 0), whatever timing_min_ms asked: now the wall's."""
    cheat = """
        import sys
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real = drv.op_timed
        def negative(self, msg):
            rep = real(self, msg)
            return {**rep, "t": -1.0} if msg.get("warm") else rep
        drv.op_timed = negative
    """
    many = {"timing_min_ms": 1e6, "timing_max_trials": 100, "timing_max_s": 0, "timing_precision": 0.0}
    res = _eval(tmp_path, HONEST, prefix=cheat, **many)
    assert res.correct and res.timing["solution"]["planned"] >= 100, (res.reason, res.timing.get("solution"))


def test_checked_positions_leave_no_long_unchecked_tail():
    """The checked calls' positions (`timing.check_positions`, half uniform, half uniform in log position): a cheat
    stale on the run's last 60% meets one, and all of them lying in the first 43% (where a candidate that counts the
    `keep`s it is sent knows, with most calls still to come, that no random check is left) is as rare; a run stopped
    early still has some. With log positions alone both were about one run in six (n = 3000, 15 checks)."""
    import random

    from pipeline.evaluate.timing import check_positions, log_positions

    def rates(draw, n, k, s=256):
        rng = random.Random(11)
        ds = [draw(rng, n, k) for _ in range(2000)]
        late = sum(not any(0.4 * n <= p < n for p in d) for d in ds) / len(ds)
        early = sum(max(d) < 0.43 * n for d in ds) / len(ds)
        stopped = sum(not any(0.4 * s <= p <= s for p in d) for d in ds) / len(ds)
        assert all(len(d) == k and min(d) >= 1 and max(d) <= n for d in ds)
        return late, early, stopped

    late, early, stopped = rates(check_positions, 3000, 15)
    assert late <= 0.01 and early <= 0.01 and stopped <= 0.4, (late, early, stopped)
    assert min(rates(log_positions, 3000, 15)[:2]) >= 0.05  # what log positions alone allowed
    rng = random.Random(3)
    assert check_positions(rng, 10, 15) == set(range(1, 11)) and check_positions(rng, 5, 0) == set()


def test_a_candidate_counting_its_checks_gets_no_safe_stale_tail(tmp_path, monkeypatch):
    """ADAPTIVE goes stale only once it has seen every random check's `keep` early, so it is never caught: with log
    positions alone (one run in six at the defaults) it then reported the stale calls' time as its own, correct.
    Drawn with a fixed seed (the positions alone; the rest of the judgement keeps its secret generator) under which
    all 15 log positions lie in the first 120 calls, and the positions drawn now reach past the 140th."""
    import random

    from pipeline.evaluate import timing

    for draw, safe in ((timing.log_positions, True), (timing.check_positions, False)):
        monkeypatch.setattr(judge, "check_positions", lambda rng, n, k, draw=draw: draw(random.Random(126), n, k))
        res = _eval(tmp_path, HONEST, prefix=ADAPTIVE, check_max_calls=16, **LATE_RUN)
        stale_and_passed = res.correct and res.timing["solution"]["stats"]["median"] == 0.001
        assert stale_and_passed == safe, (draw.__name__, res.reason, res.timing.get("checked_calls"))


def test_candidate_process_holds_no_secret(tmp_path, monkeypatch):
    """A candidate that collects everything it can reach (its environment, the driver's payload, every file in
    its directories) finds none of the correctness seeds, and no reference output."""
    seeds: list[int] = []
    dirs: list[judge.EvalDirs] = []
    real_ref, real_make = judge.run_reference, judge.EvalDirs.make

    def spy_ref(task_code, jobs, d, *a, **k):
        seeds.extend(j["seed"] for j in jobs)
        return real_ref(task_code, jobs, d, *a, **k)

    monkeypatch.setattr(judge, "run_reference", spy_ref)
    monkeypatch.setattr(judge.EvalDirs, "make", classmethod(lambda cls: dirs.append(real_make()) or dirs[-1]))
    snoop = """
        import gc, os
        found = [open("/proc/self/environ", "rb").read().decode(errors="replace")]
        found += [repr(o) for o in gc.get_objects() if isinstance(o, dict) and "fifo_cmd" in o]
        for root in (os.getcwd(), os.path.dirname(os.getcwd())):
            for d, _, files in os.walk(root):
                found.append(d + ": " + " ".join(files))
                for f in files:
                    if not os.path.isfile(os.path.join(d, f)):  # its FIFOs
                        continue
                    try:
                        found.append(open(os.path.join(d, f), "rb").read(1 << 20).decode(errors="replace"))
                    except OSError as e:
                        found.append(repr(e))
        open("snoop.txt", "w").write("\\n".join(found))
    """
    res = _eval(tmp_path, HONEST, prefix=snoop, mode="verify", keep_eval_dir=True)
    try:
        assert res.outputs_match, res.reason
        assert "caller_introspection" in res.violations  # the in-process guard still names the snooping
        text = (dirs[0].cand / "snoop.txt").read_text()
        assert "fifo_cmd" in text and len(seeds) == 3  # it did look, and the trials had seeds
        assert not [s for s in seeds if str(s) in text]
        jail = res.details["sandbox"].get("jail")
        if jail == "bwrap":  # the jail mounts only the candidate's own dir and its build: no reference outputs
            assert "ref" not in [Path(line.split(":")[0]).name for line in text.splitlines() if ":" in line]
    finally:
        for d in dirs:
            d.remove()


def test_forged_replies_and_reports_change_nothing(tmp_path):
    """The candidate writes "all correct" on every channel it can reach: its reply FIFO, the sandbox's result
    channel. Its output is zeros: the verdict comes from the files and the trusted side's comparison."""
    forger = """
        import json
        with open("reply", "w") as f:
            for op in ("load", "call", "finish"):
                f.write(json.dumps({"op": op, "ok": True, "violations": []}) + "\\n")
        emit_result({"correct": True, "reward": 3, "violations": []}) if "emit_result" in globals() else None
    """
    res = _eval(
        tmp_path, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)"), prefix=forger, mode="verify"
    )
    assert not res.correct and res.reward == -1


def test_work_hidden_outside_the_timed_region_is_caught(tmp_path):
    """Native code in the candidate's process can rewrite its timer: here the driver reports 1 us per call while
    each call does 100 ms more work. The trusted side's clock sees it."""
    cheat = """
        import sys, time
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real = drv._time
        def fake(self, fn, args):
            out, t, ts = real(self, fn, args)
            time.sleep(0.1)
            return out, 0.001, 0.001
        drv._time = fake
    """
    res = _eval(tmp_path, HONEST, prefix=cheat)
    assert "time_inconsistent" in res.violations and res.reward == -1, res.details.get("violation_details")


def test_reused_output_in_timed_calls_is_caught(tmp_path):
    """Honest on the correctness calls, it returns its first timed output on every later timed call (a native
    hook could tell timed calls apart): the outputs the judge keeps after the fact do not match."""
    res = _eval(tmp_path, HONEST, prefix=STALE_TIMED, clock_slack_ms=1e6)  # only the output check may catch it here
    assert "result_caching" in res.violations and res.reward == -1 and "timed_output_mismatch" in res.reason


def test_forged_commitment_of_a_stale_output_is_caught(tmp_path):
    """Stale outputs on every timed call; when asked to keep one, the candidate computes the right output then and
    nudges its low-order bits within tolerance until the sum of its int32 words equals the stale output's (what an
    additive digest committed: that forgery got reward 3 before the digest became SHA-256)."""
    cheat = """
        import sys, torch
        from pipeline.evaluate import tensorio
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_timed, real_keep = drv.op_timed, drv.op_keep
        memo = {}

        def words(y):
            return y.detach().reshape(-1).float().view(torch.int32).to(torch.int64)

        def forge(y, target):
            flat = y.detach().reshape(-1).float().clone()
            bits = words(flat)
            delta = target - int(bits.sum())
            tau = 0.5 * (0.01 * float(flat.pow(2).mean().sqrt()) + 0.01 * flat.abs())
            lo, hi = (flat - tau).view(torch.int32).to(torch.int64), (flat + tau).view(torch.int32).to(torch.int64)
            ok = (torch.sign(flat - tau) == torch.sign(flat + tau)) & (flat != 0)
            cap = torch.where(ok, (torch.maximum(lo, hi) - bits) if delta > 0 else (bits - torch.minimum(lo, hi)), 0)
            cap = cap.clamp_min(0)
            step = (cap * abs(delta)) // int(cap.sum())
            rest = abs(delta) - int(step.sum())
            step[((cap - step) > 0).nonzero().reshape(-1)[:rest]] += 1
            out = (bits + (step if delta > 0 else -step)).to(torch.int32).view(torch.float32).reshape(y.shape)
            assert int(words(out).sum()) == target
            return out

        def timed(self, msg):
            if msg.get("warm"):
                return real_timed(self, msg)
            self._prev_args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev)
            memo.setdefault("stale", torch.softmax(self._prev_args[0], dim=-1))
            self.held = memo["stale"]
            return {"t": 0.001, "ts": 0.001, "digest": tensorio.digest(self.held)}

        def keep(self, msg):
            target = int(words(self.held).sum())
            self.held = forge(torch.softmax(self._prev_args[0], dim=-1), target)
            memo["forged"] = memo.get("forged", 0) + 1
            return real_keep(self, msg)

        drv.op_timed, drv.op_keep = timed, keep
    """
    res = _eval(tmp_path, HONEST, prefix=cheat, clock_slack_ms=1e6)  # only the commitment may catch it here
    assert "output_commitment_mismatch" in res.violations and res.reward == -1, res.details.get("violation_details")


def test_a_candidate_lingering_after_its_last_reply_is_killed(tmp_path, monkeypatch):
    """It answers `finish` and keeps running (on a GPU: kernels with no lock held, beside others' timed calls):
    the judge kills its jail a short grace after the last reply instead of waiting for the jail's timeout_s, and
    nothing of it is left."""
    linger = """
        import sys, json
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real_finish = drv.op_finish
        def finish(self, msg):
            rep = {**real_finish(self, msg), "op": "finish"}
            with open(self.p["fifo_reply"], "wb", buffering=0) as f:
                f.write((json.dumps(rep) + "\\n").encode())
            while True:
                pass
        drv.op_finish = finish
    """
    honest = _eval(tmp_path, HONEST, mode="verify")  # with the production grace: it exits by itself
    assert honest.correct and "killed_after_last_reply" not in honest.details["sandbox"]
    monkeypatch.setattr(judge, "FINISH_GRACE_S", 3.0)  # the judge runs in this process; shorter for the linger
    before = set(judge._descendants(os.getpid()))
    res = _eval(tmp_path, HONEST, prefix=linger, mode="verify", timeout_s=3000.0)
    assert res.correct and res.details["sandbox"].get("killed_after_last_reply") is True, res.details["sandbox"]
    assert set(judge._descendants(os.getpid())) <= before


def test_under_reported_times_within_the_slack_buy_nothing(tmp_path):
    """Native code reports a hundredth of each call's time, with a slack so wide that the clock check lets it pass:
    the figure is the trusted clock's (median wall less the calibrated overhead), not the report."""
    cheat = """
        import sys, time
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        real = drv._time
        def slow(fn):  # each call takes >= 5 ms, far above the overhead calibration's noise on a loaded machine
            return lambda *a: (time.sleep(0.005), fn(*a))[1]
        def fake(self, fn, args):
            out, t, ts = real(self, slow(fn), args)
            return out, t / 100, ts / 100
        drv._time = fake
    """
    res = _eval(tmp_path, HONEST, prefix=cheat, clock_slack_ms=1e6)
    timing = res.details.get("timing") or res.timing
    reported = statistics.median(timing["solution"]["times_ms"])
    assert res.correct and timing["solution_ms_from"] == "wall_clock", timing.get("clock_check")
    assert res.solution_ms > 2 * reported


def test_crash_hang_and_error_while_loading_are_contained(tmp_path):
    seg = _eval(tmp_path, "import ctypes\nctypes.string_at(0)\n" + HONEST, mode="verify")
    assert seg.reason == "crash:segfault (during load)" and not seg.correct and not seg.compiled
    before = set(judge._descendants(os.getpid()))
    t0 = time.perf_counter()
    hang = _eval(
        tmp_path,
        "while True:\n    pass\n" + HONEST,
        mode="verify",
        load_timeout_s=3.0,
        call_timeout_s=3.0,
        timeout_s=300.0,
    )
    # killed as soon as the judge gave up on it (not at the jail's 300 s), and nothing of it is left
    assert hang.reason == "crash:timeout (during load)" and hang.details["sandbox"]["reason"] == "killed"
    assert not hang.compiled
    assert time.perf_counter() - t0 < 60
    assert set(judge._descendants(os.getpid())) <= before
    err = _eval(tmp_path, "raise RuntimeError('boom')\n" + HONEST, mode="verify")
    assert err.reason == "load_error" and "boom" in err.error and not err.compiled


DEGENERATE_TASK = TASK.replace("return torch.softmax(x, dim=-1)", "return torch.zeros_like(x[0]) + 2.0")


def test_degenerate_task_is_a_task_defect_not_the_kernels_fault(tmp_path):
    match = HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x[0]) + 2.0")
    res = _eval(tmp_path, match, mode="verify", task=DEGENERATE_TASK)
    assert res.correct and res.reward == 0 and res.reason == "task_defect:degenerate" and res.task_defect
    wrong = _eval(tmp_path, HONEST, mode="verify", task=DEGENERATE_TASK)
    assert not wrong.correct and wrong.reward == -1  # a kernel that does not match is still wrong


def test_a_failing_reference_is_the_tasks_fault(tmp_path):
    """The task's own code raises (or writes garbage) before any candidate code runs: reward 0, task_defect
    reference_failed, for an honest kernel and for a wrong one alike."""
    raising = TASK.replace("return torch.softmax(x, dim=-1)", "raise RuntimeError('the task is broken')")
    before = set(judge._descendants(os.getpid()))
    for code in (HONEST, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)")):
        for mode in ("verify", "full"):  # full: the calibrator's process too, started beside the reference
            res = _eval(tmp_path, code, mode=mode, task=raising)
            assert res.reward == 0 and res.task_defect == "reference_failed", (res.reward, res.reason)
            assert res.reason.startswith("bad_task") and not res.correct
    # the candidate's processes, started while the reference ran, are gone with the judgement
    assert set(judge._descendants(os.getpid())) <= before


def test_a_reference_short_of_memory_is_judged_again_alone(tmp_path):
    """A reference that fails on the host's account (out of GPU memory beside other evaluations, which on an 80 GB
    GPU gave honest KernelBench kernels -1) is judged again with the GPU's memory to itself; failing there too, with
    the candidate's build done and none of its code run, it is the task's: reward 0, for an honest kernel and a
    wrong one alike, never -1."""
    oom = TASK.replace(
        "return torch.softmax(x, dim=-1)", "raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate')"
    )
    for code in (HONEST, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)")):
        res = _eval(tmp_path, code, mode="verify", task=oom)
        assert res.reward == 0 and res.task_defect == "reference_failed", (res.reward, res.reason)
        assert res.reason == "reference_error: OutOfMemoryError" and res.details["judged_alone"] is True
        assert res.details["judged_again_after"] == "reference_error: OutOfMemoryError"
    # Another failure on the host's account (a full disk, host memory, time) is shared with the host's other GPUs
    # and processes, whatever the memory slots: not the task's, and no way out of -1 (a candidate's build can fill
    # a disk). Not judged alone either.
    disk = TASK.replace("return torch.softmax(x, dim=-1)", "raise OSError(28, 'No space left on device')")
    res = _eval(tmp_path, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)"), mode="verify", task=disk)
    assert res.reward == -1 and not res.task_defect and res.reason.startswith("reference_error"), res.reason
    assert "judged_alone" not in res.details


def test_a_candidate_out_of_memory_is_judged_again_only_beside_others(tmp_path):
    """A candidate whose call runs out of memory while other evaluations held GPU memory slots (read by the trusted
    side) gets a second judgement with the GPU's memory to itself; out of memory alone, or feigning it, it keeps -1.
    Here it is alone on the GPU from the start: its failure is its own, judged once."""
    from pipeline.evaluate.harness import _short_of_memory

    code = HONEST.replace(
        "return torch.softmax(x, dim=-1)", "raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate')"
    )
    res = _eval(tmp_path, code, mode="verify")
    assert res.reward == -1 and not res.task_defect and res.reason.startswith("runtime_error"), res.reason
    assert "judged_alone" not in res.details and "judged_again_after" not in res.details
    # the decision, on the reports such judgements make
    # (`failed_out_of_memory`: the judge's record of whether the judgement's first failure said so, Judge.fail)
    oom = {"reason": "runtime_error (trial 0)", "error": "torch.OutOfMemoryError: CUDA out of memory", "details": {}}
    said = {"failed_out_of_memory": True}
    assert not _short_of_memory({**oom, "details": {**said, "slots_beside": 0}})
    assert _short_of_memory({**oom, "details": {**said, "slots_beside": 3}})
    assert not _short_of_memory({**oom, "details": {**said, "slots_beside": 3, "judged_alone": True}})
    assert not _short_of_memory({**oom, "violations": ["io_access"], "details": {**said, "slots_beside": 3}})
    # the words came after another failure (the first was not out of memory): not judged again
    assert not _short_of_memory({**oom, "details": {"slots_beside": 3, "failed_out_of_memory": False}})
    cublas = "RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"
    assert judge.said_out_of_memory("runtime_error (trial 0)", cublas)
    assert _short_of_memory({"reason": "reference_error: OutOfMemoryError", "error": "", "details": {}})
    assert not _short_of_memory({"reason": "reference_error: OSError", "error": "No space left", "details": {}})
    assert not _short_of_memory({"reason": "reference_error: process timeout", "error": "", "details": {}})
    # an honest kernel is judged once
    ok = _eval(tmp_path, HONEST, mode="verify")
    assert ok.reward == 1 and "judged_alone" not in ok.details and "judged_again_after" not in ok.details


# torch's words for a process that ran out of GPU memory (torch 2.x, CUDACachingAllocator)
TORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.19 GiB "
    "of which 3.12 GiB is free. Including non-PyTorch memory, this process has 12.50 GiB memory in use. Of the "
    "allocated memory 12.00 GiB is allocated by PyTorch, and 10.00 MiB is reserved by PyTorch but unallocated."
)


def test_out_of_memory_figures_are_read_from_torchs_message():
    from pipeline.gpumemory import oom_figures

    f = oom_figures(TORCH_OOM)
    assert f == {"asked": 8.0, "in_use": 12.5, "allocated": 12.0, "total": 79.19}
    assert oom_figures("CUDA out of memory.") == dict.fromkeys(f)


def test_a_second_judgement_beside_others_waits_for_room_for_what_failed(tmp_path, monkeypatch):
    """After an out-of-memory failure beside other evaluations, the judgement is tried again beside them once the
    GPU's free memory is 1.25x what the failed process held plus asked for (the figures of torch's message); where
    that cannot be told, or no other evaluation holds memory, or after the wait's limit: alone (None)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a memory-slot directory of this test's own
    monkeypatch.setattr(tempfile, "tempdir", None)
    d = judge.Judge.memory_dir_of("cuda")

    def room(message, limit_s, free):
        return gpumemory.room_beside_others(message, limit_s, d, free)

    need = 1.25 * (12.5 + 8.0)
    readings = iter([3.0, 10.0, need + 1])
    with gpumemory.claimed(1, d):  # another evaluation's slot
        seen = room(TORCH_OOM, 600.0, lambda: next(readings))
    assert seen["needed_gib"] == round(need, 2) and seen["free_gib"] == round(need + 1, 2)
    assert next(readings, None) is None  # it read until the room was there
    assert room(TORCH_OOM, 600.0, lambda: 1.0) is None  # nobody beside: alone is as soon, and sure
    with gpumemory.claimed(1, d):
        assert room(TORCH_OOM, 0.0, lambda: 1.0) is None  # no wait at all
        assert room(TORCH_OOM, 0.2, lambda: 1.0) is None  # the wait's limit, reached with no room
        assert room("CUDA out of memory.", 600.0, lambda: 1e9) is None
        assert room(TORCH_OOM, 600.0, lambda: None) is None  # no reading (no GPU here)
        huge = TORCH_OOM.replace("Tried to allocate 8.00 GiB", "Tried to allocate 80.00 GiB")
        assert room(huge, 600.0, lambda: 1e9) is None  # more than the GPU's 79.19 GiB: only alone can tell


def test_tampered_artifact_is_refused_before_load(tmp_path):
    cache = tmp_path / "cache"
    ext = cache / "extensions" / "k"  # a single-file solution's TORCH_EXTENSIONS_DIR
    (ext / "my_ext").mkdir(parents=True)
    so = ext / "my_ext" / "my_ext.so"
    so.write_bytes(b"\x7fELF as built")
    artifacts.seal(cache, ext)  # at build time
    so.write_bytes(b"\x7fELF swapped")  # later, by anything that could write the cache
    sol = tmp_path / "sol.py"
    sol.write_text(HONEST)
    cr = CompileResult(True, 0.0, "", True, str(ext), "single_file")
    res = evaluate(TASK, str(sol), mode="verify", settings={**CPU, "cache_dir": str(cache)}, compile_result=cr)
    assert res.reason == "artifact_tampered" and "artifact_tampered" in res.violations and res.reward == -1


@pytest.mark.parametrize("variant", ["base", "perturbed"])
def test_reference_and_candidate_draw_the_same_inputs(tmp_path, variant):
    """Seed -> inputs is the same function in both processes (timed calls are re-run on the reference)."""
    import torch

    from pipeline.evaluate import tensorio
    from pipeline.evaluate.reference import load_task

    task = load_task(TASK)
    a = tensorio.make_inputs(task, 1234, torch.device("cpu"), variant)
    b = tensorio.make_inputs(task, 1234, torch.device("cpu"), variant)
    c = tensorio.make_inputs(task, 1235, torch.device("cpu"), variant)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])
    if variant == "perturbed":
        base = tensorio.make_inputs(task, 1234, torch.device("cpu"), "base")
        ratio = a[0] / base[0]
        assert not torch.equal(a[0], base[0]) and float(ratio.min()) >= 0.5 and float(ratio.max()) <= 1.5


def test_perturbed_inputs_keep_the_structure_a_correct_kernel_may_rely_on():
    """Symmetric matrices stay symmetric (a kernel computing A^T B for a symmetric A is correct), labels, masks,
    integer values and sorted boundaries stay as drawn; other floating inputs are perturbed."""
    import torch

    from pipeline.evaluate import tensorio
    from pipeline.evaluate.reference import load_task

    task = load_task(
        TASK.replace(
            "def get_inputs():",
            "def get_inputs():\n"
            "    a = torch.randn(3, 64, 64)\n"
            "    return [a + a.transpose(-1, -2), torch.randint(0, 2, (256,)).float() * 2 - 1,\n"
            "            (torch.rand(512) > 0.5).float(), torch.randint(0, 9, (300,)).float(),\n"
            "            torch.sort(torch.randn(4, 100), dim=-1).values, torch.randn(64, 64)]\n"
            "def _unused():",
        )
    )
    base = tensorio.make_inputs(task, 7, torch.device("cpu"), "base")
    pert = tensorio.make_inputs(task, 7, torch.device("cpu"), "perturbed")
    sym = pert[0]
    assert not torch.equal(sym, base[0]) and torch.equal(sym, sym.transpose(-1, -2))
    for k in (1, 2, 3, 4):
        assert torch.equal(pert[k], base[k]), k
    assert not torch.equal(pert[5], base[5])
    assert not torch.equal(pert[5], pert[5].transpose(-1, -2))


def test_single_file_extension_is_loaded_from_its_verified_build_without_rebuilding(tmp_path):
    """A load_inline solution imports the extension its build made (a sealed artifact, copied into the
    candidate's own dir) instead of re-running ninja there: nothing is compiled while it is judged."""
    import subprocess
    import sysconfig

    cache = tmp_path / "cache"
    ext = cache / "extensions" / "key"  # what the build step leaves: <TORCH_EXTENSIONS_DIR>/<name>/<name>.so
    (ext / "opforge_prebuilt").mkdir(parents=True)
    c = tmp_path / "m.c"
    c.write_text(
        "#include <Python.h>\nstatic PyObject* two(PyObject* s, PyObject* a) { return PyLong_FromLong(2); }\n"
        'static PyMethodDef f[] = {{"two", two, METH_NOARGS, ""}, {0}};\n'
        'static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "opforge_prebuilt", 0, -1, f};\n'
        "PyMODINIT_FUNC PyInit_opforge_prebuilt(void) { return PyModule_Create(&m); }\n"
    )
    subprocess.run(
        [
            "gcc",
            "-shared",
            "-fPIC",
            "-I",
            sysconfig.get_paths()["include"],
            str(c),
            "-o",
            str(ext / "opforge_prebuilt" / "opforge_prebuilt.so"),
        ],
        check=True,
    )
    sol = tmp_path / "sol.py"
    sol.write_text(
        "from torch.utils.cpp_extension import load_inline\n"
        "ext = load_inline(name='opforge_prebuilt', cpp_sources='not C++ at all: a rebuild would fail',"
        " functions=[])\nassert ext.two() == 2\n" + HONEST
    )
    cr = CompileResult(True, 0.0, "", True, str(ext), "single_file")
    res = evaluate(TASK, str(sol), mode="verify", settings={**CPU, "cache_dir": str(cache)}, compile_result=cr)
    assert res.correct and res.compiled, (res.reason, res.error[-1500:])


def test_lazy_output_computed_when_looked_at_is_named(tmp_path):
    """A tensor subclass that computes its value only when read (e.g. when the output is saved) would be correct on
    file: the candidate process's guard names it, and it is rejected."""
    lazy = """
import torch
import torch.nn as nn

class Lazy(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = [torch.softmax(a._x, dim=-1) if isinstance(a, Lazy) else a for a in args]
        return func(*args, **(kwargs or {}))

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x).as_subclass(Lazy)
        out._x = x
        return out
"""
    res = _eval(tmp_path, lazy, mode="verify", allow_torch_ops=CPU["allow_torch_ops"] + ["empty_like", "alias"])
    assert "lazy_tensor" in res.violations and res.reward == -1, (res.reason, res.violations)


def test_io_budget_bounds_what_the_reference_writes(tmp_path):
    """A task whose inputs and outputs would pass io_budget_mb gets the first correctness trial only, and every
    checked timed call where those are judged on leaves (a few KiB each), else the last one's and one more (the
    record says so); the verdicts stay right both ways."""
    res = _eval(tmp_path, HONEST, io_budget_mb=1)  # each set here: a 512 KiB output (inputs are drawn, not written)
    assert res.correct and res.reward == 1, (res.reason, res.details)
    budget = res.details["io_budget"]
    assert budget["planned"] == {"trials": 3, "post_timing_trials": 1, "checked_calls": 4}, budget
    assert budget["made"] == {"trials": 1, "post_timing_trials": 0, "checked_calls": 4}, budget
    assert res.details["timed_outputs_checked"] == 4 and res.details["trials_run"] == 1
    whole = _eval(tmp_path, HONEST, io_budget_mb=1, check_leaves=0)
    assert whole.correct and whole.reward == 1, (whole.reason, whole.details)
    assert whole.details["io_budget"]["made"] == {"trials": 1, "post_timing_trials": 0, "checked_calls": 2}
    assert whole.details["timed_outputs_checked"] == 2 and "timed_leaves_checked" not in whole.details
    zero = _eval(tmp_path, HONEST.replace("torch.softmax(x, dim=-1)", "torch.zeros_like(x)"), io_budget_mb=1)
    assert not zero.correct and zero.reward == -1 and zero.reason.startswith("output_mismatch")
    # A candidate right on the first trial's inputs only is still caught: at the checked timed calls.
    late = _eval(
        tmp_path,
        HONEST.replace(
            "return torch.softmax(x, dim=-1)",
            "self.n = getattr(self, 'n', 0) + 1\n        "
            "return torch.softmax(x, dim=-1) if self.n <= 2 else torch.softmax(x, dim=-1) * 2",
        ),
        io_budget_mb=1,
    )
    assert not late.correct and late.reward == -1, (late.reason, late.details.get("io_budget"))
    full = _eval(tmp_path, HONEST)
    assert "io_budget" not in full.details and full.details["timed_outputs_checked"] == 4


def test_the_sets_always_made_cover_both_input_distributions():
    """Past io_budget_mb only the required sets are made: the first trial (perturbed) and two checked timed calls
    (base, as every timed call), so neither distribution goes untested."""
    from pipeline.evaluate import options

    j = judge.Judge(TASK, {}, "full", options.resolve({**CPU, "trials": 3}), "9.0", "")
    jobs, cor, post = j.plan_inputs()
    required = [job for job in jobs if job.get("required")]
    assert [job["name"] for job in required] == ["cor_0", "check_0", "check_1"]
    assert {job["variant"] for job in required} == {"base", "perturbed"}
    assert required[0]["variant"] == "perturbed" and len(cor) == 3 and len(post) == 1


def test_waiting_for_the_gpu_lock_is_not_the_candidates_time(tmp_path):
    """The candidate's life limit (timeout_s) is kept by the trusted side and moved by every wait for the GPU's
    lock, so a queue behind other evaluations' timed calls cannot end an honest candidate; the reference counts
    its own limit from the moment it holds the lock (reference.py), under a backstop jail limit."""
    import types

    j = judge.Judge(TASK, {}, "full", {**CPU, "cache_dir": str(tmp_path)}, "9.0", "")
    j.rep = {"phase_s": {}}
    cand, calib = types.SimpleNamespace(deadline=100.0), types.SimpleNamespace(deadline=50.0)
    j._cand, j.calibrator = cand, calib
    j.gpu_wait(30.0)
    j.gpu_wait(12.5)
    assert cand.deadline == 142.5 and calib.deadline == 92.5 and j.rep["phase_s"]["gpu_wait"] == 42.5


def test_the_candidates_jail_outlives_the_reference_it_starts_beside(tmp_path, monkeypatch):
    """The candidate's and the calibrator's jails start while the reference runs, whose jail may live up to its
    own backstop (4 x reference_timeout_s + 60 s: its waits for the GPU's lock are not its time); the candidate's
    backstop covers that and its own (4 x timeout_s + 60 s), so a slow reference never ends an honest candidate.
    Before, with timeout_s below reference_timeout_s, the reference alone could outlast it."""
    seen: dict[str, list[float]] = {"ref": [], "cand": []}
    real = judge.run_sandboxed

    def record(code, **kw):
        seen["ref" if code == judge._REF_BOOT else "cand"].append(kw["timeout_s"])
        return real(code, **kw)

    monkeypatch.setattr(judge, "run_sandboxed", record)
    res = _eval(tmp_path, HONEST, timeout_s=60.0, reference_timeout_s=300.0, live_calibration_calls=20)
    assert res.correct, (res.reason, res.details)
    (ref,) = seen["ref"]
    assert len(seen["cand"]) == 2 and all(t >= ref + 4 * 60.0 + 60 for t in seen["cand"]), seen


def test_outputs_of_many_digest_leaves_commit_and_are_recomputed_alike(tmp_path):
    """An 8 MiB output (2,048 leaves of 4 KiB) committed by the candidate process is recomputed on the trusted side
    alike: no thread of the harness is counted as the candidate's."""
    res = _eval(tmp_path, HONEST, task=TASK.replace("4, 32768", "64, 32768"))
    assert res.correct and res.reward == 1 and res.violations == [], (res.reason, res.violations)
    assert res.details["timed_outputs_checked"] >= 1


def test_sampled_checks_of_timed_outputs_pass_honest_work_and_catch_skipped_work(tmp_path):
    """Checked timed outputs of 2,048 leaves judged on 8 leaves each (the first, the last and 6 drawn after the
    commitment): an honest candidate passes with only those leaves written; one that computes the first half of
    its rows on timed calls (correct on every correctness call) is caught, at the last leaf if nowhere else."""
    wide = TASK.replace("4, 32768", "64, 32768")
    res = _eval(tmp_path, HONEST, task=wide, check_leaves=8)
    assert res.correct and res.reward == 1 and res.violations == [], (res.reason, res.violations)
    n = res.details["timed_outputs_checked"]
    assert n >= 2 and res.details["timed_leaves_checked"] == 8 * n
    half = """
        import sys, torch
        from pipeline.evaluate import tensorio
        drv = sys.modules["pipeline.evaluate.candidate"].Driver
        def timed(self, msg):
            self._prev_args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev)
            x = self._prev_args[0]
            y = torch.zeros_like(x)
            y[: x.shape[0] // 2] = torch.softmax(x[: x.shape[0] // 2], dim=-1)
            dg, leaves = tensorio.commitment(y)  # an honest commitment to what it returns
            self.held, self.held_leaves = y, leaves
            return {"t": 0.001, "ts": 0.001, "digest": dg}
        drv.op_timed = timed
    """
    res = _eval(tmp_path, HONEST, task=wide, prefix=half, check_leaves=8, clock_slack_ms=1e6)
    assert res.reward == -1 and "result_caching" in res.violations and "timed_output_mismatch" in res.reason
    assert "output_commitment_mismatch" not in res.violations, res.details.get("violation_details")
    # right at the first and last leaf (always compared) and nowhere else: the leaves drawn at random catch it
    edges = half.replace(
        "y[: x.shape[0] // 2] = torch.softmax(x[: x.shape[0] // 2], dim=-1)",
        "y[[0, -1]] = torch.softmax(x[[0, -1]], dim=-1)",
    )
    res = _eval(tmp_path, HONEST, task=wide, prefix=edges, check_leaves=8, clock_slack_ms=1e6)
    assert res.reward == -1 and "timed_output_mismatch" in res.reason, (res.reason, res.violations)


def test_sampled_checks_judge_honest_outputs_as_whole_checks_do(tmp_path):
    """What a whole comparison accepts, a sampled check accepts too: a 0-dim tensor where the reference returns a
    number, and a complex output returned as a lazily conjugated view (whose bytes cannot be seen until resolved);
    a dict with its keys in another order is compared whole."""
    ops = CPU["allow_torch_ops"] + ["lift_fresh", "detach", "alias", "complex", "conj", "_conj", "resolve_conj"]
    ops += ["neg", "clone", "_to_copy", "to", "copy", "view"]
    wide = TASK.replace("4, 32768", "64, 32768")
    number = wide.replace("return torch.softmax(x, dim=-1)", "return torch.softmax(x, dim=-1), 1.5")
    zero_dim = HONEST.replace("return torch.softmax(x, dim=-1)", "return torch.softmax(x, dim=-1), torch.tensor(1.5)")
    lazy_conj = (
        wide.replace("return torch.softmax(x, dim=-1)", "return torch.complex(x, -x)"),
        HONEST.replace("return torch.softmax(x, dim=-1)", "return torch.complex(x, x).conj()"),
    )
    for task, code in ((number, zero_dim), lazy_conj):
        res = _eval(tmp_path, code, task=task, check_leaves=8, allow_torch_ops=ops)
        assert res.correct and res.reward == 1 and res.violations == [], (res.reason, res.error[-500:])
        assert res.details["timed_leaves_checked"] >= 8
    # a dict (whose key order a correct candidate need not share): its checked outputs are compared whole
    as_dict = wide.replace("return torch.softmax(x, dim=-1)", "return {'p': torch.softmax(x, dim=-1), 'n': 2}")
    keys_swapped = HONEST.replace("return torch.softmax(x, dim=-1)", "return {'n': 2, 'p': torch.softmax(x, dim=-1)}")
    res = _eval(tmp_path, keys_swapped, task=as_dict, check_leaves=8, allow_torch_ops=ops)
    assert res.correct and res.reward == 1 and res.violations == [], (res.reason, res.error[-500:])
    assert res.details["timed_outputs_checked"] >= 1 and "timed_leaves_checked" not in res.details


def test_a_task_returning_a_named_tuple_is_judged_not_called_defective(tmp_path):
    """torch.topk's result (a named tuple, which a weights_only load refuses) crosses the processes as a plain tuple:
    the task is judged (it was called defective, reward 0 for every candidate), the honest candidate gets 1 with
    checked outputs whole or on leaves, and a wrong one -1."""
    topk = TASK.replace("return torch.softmax(x, dim=-1)", "return torch.topk(x, 8, dim=-1)")
    honest = HONEST.replace("return torch.softmax(x, dim=-1)", "return torch.topk(x, 8, dim=-1)")
    ops = CPU["allow_torch_ops"] + ["topk", "neg"]
    for leaves in (256, 0):
        res = _eval(tmp_path, honest, task=topk, allow_torch_ops=ops, check_leaves=leaves)
        assert res.correct and res.reward == 1 and not res.task_defect, (res.reason, res.error[-500:])
    wrong = honest.replace("torch.topk(x, 8, dim=-1)", "torch.topk(-x, 8, dim=-1)")
    res = _eval(tmp_path, wrong, task=topk, mode="verify", allow_torch_ops=ops)
    assert res.reward == -1 and not res.task_defect and res.reason.startswith("output_mismatch"), res.reason


def test_an_extension_the_build_step_did_not_make_is_not_built_while_judged(tmp_path):
    """Anything compiled inside the judged process would skip the checks on what the build links to."""
    code = (
        "import tempfile\nfrom torch.utils.cpp_extension import load_inline\n"
        "ext = load_inline(name='opforge_made_late', cpp_sources='int f() { return 1; }', functions=['f'],"
        " build_directory=tempfile.mkdtemp())\n" + HONEST  # a directory it can write (its own is read-only)
    )
    res = _eval(tmp_path, code, mode="verify")
    assert not res.correct and res.reward == -1
    assert "not made by the build step" in (res.error + res.reason), (res.reason, res.error[-500:])


def test_the_reference_lets_the_gpu_lock_go_while_it_writes_its_outputs(tmp_path):
    """The reference process holds the GPU's lock while the GPU computes an output and copies it to the host, not
    while the file is written (outputs of GiBs took seconds each, holding back every timing). The task's own
    pickling hook runs inside that write and tries the lock exclusively, without waiting: it gets it."""
    from pipeline import gpulock
    from pipeline.sandbox import run_sandboxed

    lock = gpulock.ensure(str(tmp_path / "locks" / "gpu-test.lock"))
    dirs = judge.EvalDirs.make()
    try:
        task = textwrap.dedent(f"""
            import fcntl, os
            import torch
            import torch.nn as nn

            class Probe(torch.Tensor):
                def __reduce_ex__(self, proto):
                    fd = os.open({lock!r}, os.O_RDONLY)
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        free = "free"
                    except OSError:
                        free = "held"
                    finally:
                        os.close(fd)
                    with open(os.path.join({str(dirs.ref)!r}, "probe.txt"), "a") as f:
                        f.write(free + "\\n")
                    return self.as_subclass(torch.Tensor).__reduce_ex__(proto)

            class Model(nn.Module):
                def forward(self, x):
                    return (x * 2).as_subclass(Probe)

            def get_inputs():
                return [torch.randn(8, 8)]

            def get_init_inputs():
                return []
        """)
        jobs = [{"name": f"cor_{k}", "seed": k, "variant": "base", "required": True} for k in range(3)]
        payload = {"task_code": task, "device": "cpu", "gpu_lock": lock, "init_seed": 1, "jobs": jobs}
        payload |= {"ref_dir": str(dirs.ref), "io_budget_bytes": 0, "timeout_s": 120.0}
        sb = run_sandboxed(
            judge._REF_BOOT,
            payload=payload,
            timeout_s=300,
            memory_mb=None,
            nproc=None,
            workdir=str(dirs.root),
            env=judge.base_env("9.0", dirs.root),
            **judge.jail_kwargs(gpu=False, read_dirs=[str(Path(lock).parent)], write_dirs=[dirs.ref]),
        )
        assert sb.result and sb.result.get("stage") == "done", (sb.reason, sb.result, sb.stderr[-2000:])
        assert (dirs.ref / "probe.txt").read_text().split() == ["free"] * 3
        assert sorted(p.name for p in dirs.ref.glob("cor_*.pt")) == ["cor_0.pt", "cor_1.pt", "cor_2.pt"]
    finally:
        dirs.remove()


FORKER = """
import ctypes, os, threading
import torch
import torch.nn as nn

libc = ctypes.CDLL(None)
if libc.fork() == 0:  # a native child, past the interpreter's audit hook: it spins until killed
    while True:
        pass
threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()  # and a spinning thread

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""


def test_a_waiting_timing_gets_the_gpu_lock_while_the_judge_works_and_the_candidate_is_frozen(tmp_path):
    """Between the candidate's replies the trusted side works on them. With no timing waiting it works holding the
    GPU's lock (the candidate is not frozen, no wait to take the lock back). With a timing waiting, the candidate's
    jail is frozen (every process and thread stopped, a native child and a spinning thread included) and the lock let
    go: the timing takes it meanwhile; afterwards the lock is held again and the candidate answers. A timing that
    begins to wait during the work gets the lock before the work's block ends."""
    from pipeline import gpulock
    from pipeline.evaluate import options

    lock = gpulock.ensure(str(tmp_path / "locks" / "gpu-test.lock"))
    s = options.resolve({**CPU, "cache_dir": str(tmp_path)})
    j = judge.Judge(TASK, {}, "full", s, "9.0", "")
    j.rep = {"phase_s": {}}
    dirs = judge.EvalDirs.make()
    sol = dirs.cand / "solution.py"
    sol.write_text(FORKER)
    payload = {"task_code": TASK, "device": "cpu", "l2_flush": False, "gpu_memory_fraction": None}
    payload |= {"solution": {"kind": "single_file", "path": str(sol), "artifact_dir": ""}}
    payload |= {"solution_files": [str(sol)], "allow_torch_ops": ["_softmax", "softmax"]}
    cand = judge.CandidateProcess(payload, dirs, s, "9.0", read_dirs=[])

    def timing(got: threading.Event, go: threading.Event) -> threading.Thread:
        """Another evaluation's timing: takes the lock exclusive, says so, lets it go when told."""

        def run() -> None:
            other = gpulock.GpuLock(lock)
            other.exclusive()
            got.set()
            go.wait(120)
            other.release()

        th = threading.Thread(target=run, daemon=True)
        th.start()
        end = time.monotonic() + 120
        while not j.gpu.timing_waits():  # queued behind the judge's shared hold (read from /proc/locks)
            assert time.monotonic() < end and th.is_alive()
            time.sleep(0.01)
        return th

    try:
        assert cand.recv(120) is not None
        for op in ({"op": "setup"}, {"op": "load", "init_seed": 1}):
            r, _ = cand.request(op, 120)
            assert r and r.get("ok"), r
        j.gpu = gpulock.GpuLock(lock)
        j.gpu.shared()
        # no timing waiting: the work holds the lock, nothing frozen
        with j.unlocked(cand):
            assert not getattr(cand, "_frozen", []) and j.gpu.holds
        assert "frozen" not in j.rep["phase_s"]
        # a timing waiting: it runs while the candidate is frozen
        got, go = threading.Event(), threading.Event()
        th = timing(got, go)
        deadline = cand.deadline
        with j.unlocked(cand):
            frozen = cand._frozen
            threads = [t for p in frozen for t in os.listdir(f"/proc/{p}/task")] if frozen else []
            states = {judge._state(int(t)) for t in threads}
            ran = got.wait(120)
            go.set()
        th.join(120)
        assert len(frozen) >= 3 and states <= {"T", "t"}, (frozen, states)
        assert ran and j.gpu.holds
        assert {judge._state(p) for p in frozen} - {""} <= {"R", "S", "D"}  # thawed
        r, _ = cand.request({"op": "null", "seed": 3, "outputs": []}, 120)
        assert r is not None and "t" in r, r
        assert j.rep["phase_s"]["frozen"] > 0 and cand.deadline > deadline
        # a timing that begins to wait during the work: it goes before the block ends
        got, go = threading.Event(), threading.Event()
        with j.unlocked(cand):
            th = timing(got, go)
            assert not got.is_set()  # the judge still holds the lock
            go.set()
        assert got.is_set() and j.gpu.holds
        th.join(120)
        r, _ = cand.request({"op": "null", "seed": 4, "outputs": []}, 120)
        assert r is not None and "t" in r, r
    finally:
        cand.close(5.0, kill=True)
        dirs.remove()


def _pair(init: str, body: str, inputs: str, inits: str = "[]") -> tuple[str, str]:
    """A task and its honest candidate (the same code as ModelNew)."""
    task = textwrap.dedent(f"""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Model(nn.Module):
            def __init__(self, *init):
                super().__init__()
                {init}

            def forward(self, *xs):
                {body}

        def get_inputs():
            {inputs}

        def get_init_inputs():
            return {inits}
    """)
    return task, task.split("def get_inputs")[0].replace("class Model(", "class ModelNew(")


# (task's __init__ line, forward, get_inputs, get_init_inputs, a wrong forward or None)
HONEST_CASES = {
    # a weight drawn in get_init_inputs: each process drew it where its generators stood (honest -1 before)
    "init_draws_a_tensor": ("self.w = init[0]", "return xs[0] @ self.w", "return [torch.randn(8, 32)]",
                            "[torch.randn(32, 32)]", "return xs[0] @ self.w.t()"),
    # probabilities: perturbed past 1 they were refused, and the task called defective (reward 0 for everyone)
    "probabilities": ("pass", "return F.binary_cross_entropy(xs[0], xs[1])",
                      "return [torch.rand(64, 256), torch.randint(0, 2, (64, 256)).float()]", "[]", None),
    # a positive-definite input: a symmetric elementwise factor broke it (defective before)
    "positive_definite": ("pass", "return torch.linalg.cholesky(xs[0])",
                          "b = torch.randn(64, 64)\n            return [b @ b.T]", "[]", None),
    # a number that is NaN where the reference's is (honest -1 before: nan != nan)
    "nan_number": ("pass", "return xs[0] * 2, float('nan')", "return [torch.randn(16, 64)]", "[]",
                   "return xs[0] * 2, 0.0"),
    # a count: exact, as integer tensors are (off by one passed at 1% before)
    "count": ("pass", "return xs[0] * 2, 8200", "return [torch.randn(16, 64)]", "[]", "return xs[0] * 2, 8201"),
    # bfloat16 values equal to the sentinel as rounded there (-1232): honest -1 uninitialized_output before
    "sentinel_valued": ("pass", "return torch.clamp(xs[0] * 2000, -1232, 1232).bfloat16()",
                        "return [torch.randn(64, 256)]", "[]", None),
    # the model's own Parameter returned: honest -1 lazy_tensor before
    "returns_its_weight": ("self.w = nn.Parameter(torch.randn(32, 16))", "return xs[0] @ self.w, self.w",
                           "return [torch.randn(8, 32)]", "[]", None),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HONEST_CASES))
def test_honest_work_is_not_punished_for_what_the_task_does(tmp_path, case):
    """Correct candidates for tasks that draw their weights in get_init_inputs, refuse inputs outside their domain,
    return NaN numbers, counts, values equal to the judge's sentinel or their own Parameter: reward 1, no task
    defect; a wrong candidate for the same task: -1."""
    init, body, inputs, inits, wrong = HONEST_CASES[case]
    task, honest = _pair(init, body, inputs, inits)
    ops = CPU["allow_torch_ops"] + [
        "mm",
        "mul",
        "clamp",
        "_to_copy",
        "binary_cross_entropy",
        "linalg_cholesky_ex",
        "_linalg_check_errors",
    ]
    res = _eval(tmp_path, honest, mode="verify", task=task, allow_torch_ops=ops)
    assert res.correct and res.reward == 1 and not res.task_defect and not res.violations, (res.reason, res.error)
    if case == "probabilities":  # the perturbed trial ran on perturbed inputs still within [0, 1]
        assert "own_inputs" not in res.details, res.details
    if wrong is not None:
        bad = _eval(tmp_path, honest.replace(body, wrong), mode="verify", task=task, allow_torch_ops=ops)
        assert bad.reward == -1 and bad.reason.startswith("output_mismatch"), (bad.reason, bad.error)


def test_a_trial_the_task_refuses_perturbed_inputs_for_runs_on_its_own(tmp_path):
    """A task that checks a precondition its perturbed inputs break (rows that sum to 1): that trial runs on the
    task's own distribution, for the reference and the candidate alike (details.own_inputs), not a task defect; the
    honest candidate gets 1, a wrong one -1."""
    task, _ = _pair(
        "pass",
        "if not torch.allclose(xs[0].sum(-1), torch.ones(xs[0].shape[0])):\n"
        "                    raise ValueError('rows must sum to 1')\n"
        "                return torch.log(xs[0])",
        "return [torch.softmax(torch.randn(32, 64), dim=-1)]",
    )
    honest = HONEST.replace("torch.softmax(x, dim=-1)", "torch.log(x)")
    ops = CPU["allow_torch_ops"] + ["log", "neg"]
    res = _eval(tmp_path, honest, mode="verify", task=task, allow_torch_ops=ops)
    assert res.correct and res.reward == 1 and not res.task_defect, (res.reason, res.error)
    assert "cor_0" in (res.details.get("own_inputs") or []), res.details  # the perturbed trials (cor_0 one of them)
    bad = _eval(
        tmp_path, honest.replace("torch.log(x)", "torch.neg(x)"), mode="verify", task=task, allow_torch_ops=ops
    )
    assert bad.reward == -1 and bad.reason.startswith("output_mismatch"), (bad.reason, bad.error)


def test_a_judgement_alone_holds_every_memory_slot(tmp_path):
    """A judgement claims one of the GPU's memory slots (the pool validation jobs claim from) for its life; one
    judged alone claims all of them, so no evaluation or validation job runs beside it."""
    import fcntl

    from pipeline.gpumemory import SLOTS, memory_dir

    def taken() -> int:
        d, n = memory_dir(f"cpu-{os.getpid()}"), 0
        for i in range(SLOTS):
            fd = os.open(os.path.join(d, f"slot-{i}"), os.O_RDONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                n += 1
            finally:
                os.close(fd)
        return n

    settings = {"device": "cpu"}
    for alone, want in ((False, 1), (True, SLOTS)):
        j = judge.Judge(TASK, {}, "verify", settings, "", "", alone=alone)
        j.memory_claim()
        try:
            assert taken() == want
        finally:
            j._memory.close()
        assert taken() == 0


def test_a_wrong_trial_repeating_an_earlier_output_is_named_result_caching(tmp_path):
    """A candidate that returns its first output again is wrong on the next trial's inputs, and its output repeats
    the first trial's (their fingerprints): named `result_caching`."""
    code = HONEST.replace(
        "    def forward(self, x):\n        return torch.softmax(x, dim=-1)",
        "    def forward(self, x):\n"
        "        if not hasattr(self, 'kept'):\n"
        "            self.kept = torch.softmax(x, dim=-1).clone()\n"
        "        return self.kept.clone()",
    )
    assert code != HONEST
    res = _eval(tmp_path, code, mode="verify")
    assert res.reward == -1 and "result_caching" in res.violations, (res.reason, res.violations)
    assert res.reason.startswith("output_mismatch") and res.details["trials_run"] == 2
