"""The baseline worker: times the TASK's reference (eager and torch.compile) in its own jailed process on a GPU
host (torch + numpy + stdlib only). Candidates never run here: they run in `pipeline.evaluate.candidate`, judged by
`pipeline.evaluate.judge`.

Started by `pipeline.evaluate.runner` through `pipeline.sandbox.run_sandboxed`; receives the job (task code,
settings, a seed) as PAYLOAD and reports with `emit_result` after every phase (a crash still leaves how far it
got). Its figures divide every candidate's time of the task, so it is timed like candidates (`timing.Timer`).
The report is written by task code's process; the trusted side (`harness.get_baselines`) alone writes the cache.
"""

from __future__ import annotations

import os
import random
import time
import traceback
import types
from typing import Any, Callable

import torch

from pipeline.evaluate import tensorio
from pipeline.evaluate.timing import TIMING_METHOD, Timer, stats
from pipeline.gpulock import GpuLock

_TB_CHARS = 3000


def _tb() -> str:
    return traceback.format_exc()[-_TB_CHARS:]


def load_module(name: str, path: str | None = None, code: str | None = None, filename: str = "<task>"):
    mod = types.ModuleType(name)
    mod.__file__ = path or filename
    src = code if code is not None else open(path).read()
    exec(compile(src, path or filename, "exec"), mod.__dict__)
    return mod


class _Job:
    def __init__(self, payload: dict, emit: Callable[[dict], None]) -> None:
        self.kind = payload.get("kind", "baseline")
        self.task_code: str = payload["task_code"]
        self.mode: str = payload.get("mode", "full")
        self.s: dict = dict(payload["settings"])
        self.lock = GpuLock(self.s.get("gpu_lock"))
        self._rng = random.Random(int(payload["seed"]))
        payload.clear()
        self.emit_fn = emit
        self.res: dict[str, Any] = {
            "kind": self.kind,
            "stage": "start",
            "violations": [],
            "warnings": [],
            "details": {},
            "timing": {},
            "phase_s": {},
        }
        self._last = time.perf_counter()

    def seed(self) -> int:
        return self._rng.randrange(1, 2**62)

    def emit(self, stage: str) -> None:
        now = time.perf_counter()
        self.res["phase_s"][stage] = round(now - self._last, 4)
        self._last = now
        self.res["stage"] = stage
        self.emit_fn(self.res)

    def prepare(self) -> bool:
        self.timer = Timer()
        try:
            self.task = load_module("opforge_reference", code=self.task_code, filename="<task>")
        except BaseException:  # noqa: BLE001
            self.res["reason"] = "bad_task: the task module failed to load"
            self.res["error"] = _tb()
            self.emit("done")
            return False
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.task, attr):
                self.res["reason"] = f"bad_task: no {attr}"
                self.emit("done")
                return False
        self.emit("prepared")
        return True

    def gpu(self, exclusive: bool) -> None:
        """The GPU's lock (pipeline.gpulock): shared while setting up, exclusive while timing, so timings on one GPU
        run one at a time and nothing else runs on it during one. Seconds waited are reported."""
        waited = self.lock.exclusive() if exclusive else self.lock.shared()
        self.res["phase_s"]["gpu_wait"] = round(self.res["phase_s"].get("gpu_wait", 0.0) + waited, 4)
        self._last += waited

    def setup(self) -> bool:
        if not torch.cuda.is_available():
            self.res["reason"] = "no_gpu"
            return False
        self.dev = torch.device("cuda", 0)
        torch.cuda.set_device(self.dev)
        self.res["device"] = torch.cuda.get_device_properties(self.dev).name
        self.res["torch"] = torch.__version__
        frac = self.s.get("gpu_memory_fraction")
        if frac:
            torch.cuda.set_per_process_memory_fraction(float(frac), self.dev)
        self.timer.prepare(self.dev, bool(self.s.get("l2_flush", True)))
        torch.cuda.synchronize()
        return True

    def make_inputs(self, seed: int) -> list[Any]:
        return tensorio.make_inputs(self.task, seed, self.dev)  # drawn as the candidates' are

    def build_ref(self, seed: int) -> torch.nn.Module:
        init = tensorio.init_inputs(self.task, seed)
        return self.task.Model(*init).to(self.dev).eval()

    def run_baseline(self) -> None:
        if not self.prepare():
            return
        self.gpu(exclusive=False)
        if not self.setup():
            self.emit("done")
            return
        s = self.s
        model = self.build_ref(self.seed())
        seeds = _Seeds(self.seed)

        def make_args(i: int) -> list[Any]:
            return self.make_inputs(seeds[i])

        self.gpu(exclusive=True)
        with torch.no_grad():
            eager = self.timer.run(model, make_args, **timing_args(s))
        # torch.compile is seconds to minutes of CPU with a few GPU calls: it holds no lock, so it does not hold
        # back the timings that wait for the GPU.
        self.lock.release()
        self.res["timing"] = {"method": TIMING_METHOD, "eager": eager}
        self.res["eager_ms"] = eager["stats"]["median"]
        self.emit("eager")
        if self.mode != "eager_only":
            try:
                t0 = time.perf_counter()
                compiled = torch.compile(model, mode=s.get("compile_mode") or "default")
                with torch.no_grad():
                    compiled(*make_args(0))
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t0
                    self.gpu(exclusive=True)
                    comp = self.timer.run(compiled, make_args, **timing_args(s))
                    self.lock.release()
                self.res["timing"]["compile"] = comp
                self.res["timing"]["compile_seconds"] = compile_s
                self.res["compile_ms"] = comp["stats"]["median"]
            except Exception:  # noqa: BLE001 - a task torch.compile cannot handle: no compile baseline
                self.res["compile_error"] = _tb()
        self.emit("done")


class _Seeds:
    """Per-call seeds drawn on first use: the number of timed calls is known only after the warm-up."""

    def __init__(self, draw: Callable[[], int]) -> None:
        self._draw, self._seeds = draw, {}

    def __getitem__(self, i: int) -> int:
        if i not in self._seeds:
            self._seeds[i] = self._draw()
        return self._seeds[i]


def timing_args(s: dict) -> dict:
    """Timer.run's arguments from the evaluation options."""
    return {
        "warmup": int(s["timing_warmup"]),
        "trials": int(s["timing_trials"]),
        "warmup_ms": float(s["timing_warmup_ms"]),
        "min_timed_ms": float(s["timing_min_ms"]),
        "max_trials": int(s["timing_max_trials"]),
    }


def main(payload: dict, emit: Callable[[dict], None]) -> None:
    job = _Job(payload, emit)
    try:
        job.run_baseline()
    except BaseException as e:  # noqa: BLE001 - report, never hang: the harness reads the reason
        job.res["reason"] = job.res.get("reason") or f"worker_error: {type(e).__name__}"
        job.res["error"] = _tb()
        job.emit("done")
    os._exit(0)  # skip interpreter teardown: task atexit/__del__ hooks must not run after the report


def stats_of(times: list[float]) -> dict:  # re-exported for the benchmarks
    return stats(times)
