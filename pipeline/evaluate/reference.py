"""The reference process (jailed; torch + numpy + stdlib only): runs the TASK's code, never the candidate's.

Started by `pipeline.evaluate.judge` through `pipeline.sandbox.run_sandboxed` with PAYLOAD:
  task_code, device ("cuda" | "cpu"), gpu_lock (the GPU's lock file, bound read-only, or None), init_seed,
  ref_dir (written here; never mounted into the candidate's jail),
  jobs: [{"name", "seed", "variant", "required": bool, "sample": {"seed", "leaves"} (checked timed calls)}],
  io_budget_bytes, timeout_s
For each job it draws the task's inputs from the seed (`tensorio.make_inputs`; the candidate draws the same ones at
its call), runs the reference Model on them and writes the output to `ref_dir/<name>.pt` (for a job with `sample`,
only the leaves a sampled check compares, `tensorio.reference_sample`, to `ref_dir/<name>.sampled.pt`).
A job that is not `required` is skipped (reported in `skipped`) when its output, estimated from the largest so far,
would take the bytes written past `io_budget_bytes`: a task with outputs of GiBs gets fewer sets, not a full disk.
Seeds are secret from the candidate, not from the task: the reference is the definition of correct.
The report (emit_result) is diagnostic only; the trusted side reads the files.
"""

from __future__ import annotations

import os
import signal
import time
import traceback
import types
from typing import Any, Callable

import torch

from pipeline.evaluate import tensorio
from pipeline.evaluate.tolerance import scale_of
from pipeline.evaluate.worker import load_module
from pipeline.gpulock import GpuLock


def load_task(code: str) -> types.ModuleType:
    mod = load_module("opforge_reference", code=code, filename="<task>")
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, attr):
            raise AttributeError(f"the task defines no {attr}")
    return mod


def device_of(name: str) -> torch.device:
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError("no_gpu")
    torch.cuda.set_device(0)
    return torch.device("cuda", 0)


def build_model(task: types.ModuleType, init_seed: int, dev: torch.device) -> torch.nn.Module:
    init = tensorio.init_inputs(task, init_seed)
    return task.Model(*init).to(dev).eval()


def _output(
    task: types.ModuleType, model: torch.nn.Module, seed: int, dev: torch.device, variant: str, rep: dict
) -> Any:
    """The reference's output on the inputs of `seed`; the inputs it changes in place (its own `ReLU(inplace=True)`)
    added to rep["mutates_inputs"], so that a candidate doing as the task does is not called a cheat."""
    xs = tensorio.make_inputs(task, seed, dev, variant)
    before = [_strided(x) for x in xs]
    with torch.no_grad():
        out = tensorio.unwrapped(model(*xs))
    changed = [i for i, (x, b) in enumerate(zip(xs, before)) if b is not None and not torch.equal(_strided(x), b)]
    if changed:
        rep["mutates_inputs"] = sorted({*rep.get("mutates_inputs", []), *changed})
    return out


def _strided(x: Any) -> torch.Tensor | None:
    """A copy of at most ~1M evenly spaced elements of an input tensor: an in-place op changes many."""
    if not isinstance(x, torch.Tensor) or x.numel() == 0 or not x.is_contiguous():
        return None  # (a view of a non-contiguous one would be a copy of all of it)
    flat = x.detach().reshape(-1)
    return flat[:: max(1, flat.numel() >> 20)].clone()


def _blame(e: BaseException) -> str:
    """bad_task: the task's code failed. reference_error: the host did (a full disk, memory, the GPU's memory), which
    another process on the machine can cause: never counted against the task (docs/judge.md, "Degenerate tasks")."""
    if isinstance(e, (OSError, MemoryError)) or "out of memory" in str(e).lower():
        return "reference_error"
    return "bad_task"


def main(payload: dict, emit: Callable[[Any], None]) -> None:
    rep: dict[str, Any] = {"stage": "start", "outputs": {}}
    try:
        task = load_task(payload["task_code"])
        dev = device_of(payload.get("device", "cuda"))
        # The GPU's lock, shared (pipeline.gpulock), while the GPU works for this process: from the first
        # allocation to each output's copy to the host. The file is written with the lock let go, so a timing
        # waiting for the GPU gets it then (writing 10 outputs of 256 MiB held the lock 10-48 s under load). The
        # task's code has no GPU work in flight by then: every output was synchronised and copied.
        lock = GpuLock(payload.get("gpu_lock"))
        began = time.monotonic()
        waited = lock.shared()
        limit = float(payload.get("timeout_s") or 0)

        def alarm() -> None:  # the process's own limit, waits for the lock excluded
            if limit:
                signal.alarm(max(1, int(limit - (time.monotonic() - began - waited)) + 1))

        alarm()
        model = build_model(task, int(payload["init_seed"]), dev)
        rep["stage"] = "built"
        budget = int(payload.get("io_budget_bytes") or 0)
        written, out_bytes, skipped, held = 0, None, [], True
        for job in payload["jobs"]:
            if (
                budget
                and not job.get("required")
                and not job.get("sample")  # a sampled record takes KiBs
                and out_bytes is not None
                and written + out_bytes > budget
            ):
                skipped.append(job["name"])
                continue
            if not held:
                waited += lock.shared()
                held = True
                alarm()
            variant = job.get("variant", "base")
            try:
                out = _output(task, model, int(job["seed"]), dev, variant, rep)
            except Exception as e:  # noqa: BLE001
                if variant == "base" or _blame(e) != "bad_task":
                    raise
                # the task refuses the perturbed inputs (a precondition they broke): this trial on its own
                # distribution, the candidate told so (Judge._run); raises again where the task fails on those too
                out = _output(task, model, int(job["seed"]), dev, "base", rep)
                rep.setdefault("own_inputs", []).append(job["name"])
            name, sample = job["name"], job.get("sample")
            if isinstance(sample, dict):
                # A checked timed call judged on leaves: only those (and each tensor's scale) are made, where the
                # output lies; a GiB output is neither copied to the host nor written.
                rec = tensorio.reference_sample(out, int(sample["seed"]), int(sample["leaves"]), scale_of)
                if rec is not None:
                    out, name = rec, name + tensorio.SAMPLED
            out = tensorio.to_host(out)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            lock.release()
            held = False
            path = os.path.join(payload["ref_dir"], name + ".pt")
            tensorio.save(out, path)
            del out
            rep["outputs"][job["name"]] = os.path.getsize(path)
            out_bytes = max(out_bytes or 0, rep["outputs"][job["name"]])
            written += rep["outputs"][job["name"]]
        rep["gpu_wait_s"] = round(waited, 4)
        rep["skipped"] = skipped
        rep["bytes_written"] = written
        rep["stage"] = "done"
    except BaseException as e:  # noqa: BLE001 - the task's failure is reported, never raised
        rep["reason"] = "no_gpu" if str(e) == "no_gpu" else f"{_blame(e)}: {type(e).__name__}"
        rep["error"] = traceback.format_exc()[-3000:]
    emit(rep)
    os._exit(0)
