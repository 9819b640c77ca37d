"""The candidate process (jailed; torch + numpy + stdlib only): loads ModelNew and runs it when told to.

It holds nothing secret: no correctness seeds, no reference outputs, no nonce; its PAYLOAD (task code, solution
paths, init seed, FIFO paths, guard options) is public to the candidate anyway. It is driven by the trusted side
(`pipeline.evaluate.judge`) one command at a time over two FIFOs in its work dir (JSON lines; `cmd` in, `reply`
out). Everything it replies is treated as written by the candidate: the trusted side decides from files and
its own clock (see docs/judge.md, "Protocol").

Commands (op):
- setup: device, timer and guards captured (before any candidate code).
- null {seed}: one timed call of a no-op on fresh task inputs (the trusted side's overhead calibration).
- load {init_seed}: import the solution and build ModelNew (torch.manual_seed(init_seed) like the reference).
- call {seed, variant, out, sentinel}: run ModelNew on the inputs drawn from seed (tensorio.make_inputs, as the
  reference did), save the output as out_dir/<out>.pt.
- timed {seed, warm}: fresh inputs from `seed` (the task's get_inputs on the device RNG), L2 flush, one timed call;
  replies {t, ts, digest}: GPU ms (device-synchronised, stream-ordered) and a digest of the output, which it keeps.
- keep {out, picks}: the last timed call's output is checked: with `picks` (tensorio.tensor_picks) its sampled
  record (tensorio.sampled), else the whole output, to be saved as out_dir/<out>.pt.
- save_kept: write what `keep` held (after the timing, out of the exclusive lock).
- kernels {seed}: GPU kernels launched by one call (CUPTI via torch.profiler).
- finish: the in-process guards' findings (extra reason codes, never the verdict), then exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from typing import Any, Callable

import torch

from pipeline.evaluate import guard as _guard
from pipeline.evaluate import tensorio
from pipeline.evaluate.reference import device_of, load_task
from pipeline.evaluate.timing import Timer

_SENTINEL = -1234.5678
MAX_LINE = 1 << 16
KEEP_ON_DEVICE_BYTES = 4 << 30  # the most bytes of checked timed outputs held on the GPU until the timing ends


def _tb() -> str:
    return traceback.format_exc()[-3000:]


def _same_data(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


class Driver:
    namespaces: frozenset[str] | None = None  # guard.torch_namespaces(), taken at setup

    def __init__(self, payload: dict) -> None:
        self.p = dict(payload)
        payload.clear()
        self.violations: list[tuple[str, str]] = []
        self.model = None
        self.held: Any = None
        self.held_leaves: list[bytes] = []  # the held output's leaf digests (tensorio.commitment)
        # (path, output copied on the GPU, or its sampled record) of checked timed calls
        self.kept: list[tuple[str, Any]] = []
        self.kept_bytes = 0
        self.out_dir = self.p["out_dir"]

    # ---------------------------------------------------------------- plumbing
    def violation(self, name: str, detail: str) -> None:
        if (name, detail) not in self.violations and len(self.violations) < 100:
            self.violations.append((name, detail[:300]))

    def sync(self) -> None:
        if self.dev.type == "cuda":
            torch.cuda.synchronize()

    # ---------------------------------------------------------------- commands
    def op_setup(self, msg: dict) -> dict:
        self.task = load_task(self.p["task_code"])
        self.dev = device_of(self.p.get("device", "cuda"))
        self.timer = Timer()
        if self.dev.type == "cuda":
            frac = self.p.get("gpu_memory_fraction")
            if frac:
                torch.cuda.set_per_process_memory_fraction(float(frac), self.dev)
            self.timer.prepare(self.dev, bool(self.p.get("l2_flush", True)))
            torch.cuda.synchronize()
        # the GPU's leaf hasher for the output commitment, before any candidate code
        tensorio.use_device_hasher(self.p.get("leaf_hasher") if self.dev.type == "cuda" else None)
        files = {os.path.realpath(f) for f in self.p.get("solution_files", [])}
        self.namespaces = _guard.torch_namespaces()  # before any candidate code: torch's own, not its extension's
        self.watch = _guard.AuditWatch(files)
        self.integrity = _guard.snapshot_integrity()
        self.null_out = None
        return {
            "ok": True,
            "device": torch.cuda.get_device_name(0) if self.dev.type == "cuda" else "cpu",
            "torch": torch.__version__,
        }

    def _time(self, fn: Callable, args: list[Any]) -> tuple[Any, float, float]:
        if self.dev.type == "cuda":
            return self.timer.time_call(fn, args)
        clock = self.timer._clock
        t0 = clock()
        out = fn(*args)
        ms = (clock() - t0) * 1e3
        return out, ms, ms

    def op_null(self, msg: dict) -> dict:
        meta = msg.get("outputs") or []
        args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev)
        outs = [torch.empty(tuple(m["shape"]), dtype=getattr(torch, m["dtype"]), device=self.dev) for m in meta]
        out, t, ts = self._time(lambda *a: outs, args)
        return {"t": t, "ts": ts, "digest": tensorio.digest(out)}

    def op_load(self, msg: dict) -> dict:
        sol = self.p["solution"]
        _use_prebuilt_extensions()
        self.watch.active = True
        try:
            if sol.get("artifact_dir"):
                sys.path.insert(0, sol["artifact_dir"])
            from pipeline.evaluate.worker import load_module

            mod = load_module("opforge_solution", path=sol["path"])
        except BaseException as e:  # noqa: BLE001 - any failure of untrusted code is a failed candidate
            return {"ok": False, "reason": "load_error", "error": f"{type(e).__name__}: {e}\n{_tb()}"}
        finally:
            self.watch.active = False
        cls = getattr(mod, "ModelNew", None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            return {"ok": False, "reason": "no_model_new", "error": "the solution defines no ModelNew(nn.Module)"}
        ref = self.task.Model
        if issubclass(cls, ref) or any(b.__name__ == ref.__name__ for b in cls.__mro__[1:]):
            self.violation("inherits_reference", "ModelNew subclasses the reference Model")
        fwd = getattr(cls, "forward", None)
        if fwd is None or fwd is torch.nn.Module.forward or fwd is getattr(ref, "forward", None):
            self.violation("inherits_reference", "ModelNew.forward is the reference's")
        init = tensorio.init_inputs(self.task, int(msg["init_seed"]))
        self.watch.active = True
        try:
            self.model = cls(*init).to(self.dev).eval()
        except BaseException as e:  # noqa: BLE001
            return {"ok": False, "reason": "init_error", "error": f"{type(e).__name__}: {e}\n{_tb()}"}
        finally:
            self.watch.active = False
        return {"ok": True}

    @contextlib.contextmanager
    def scope(self, guarded: bool):
        og = (
            _guard.OpGuard(self.p.get("allow_libraries"), self.p.get("allow_torch_ops"), self.namespaces)
            if guarded
            else None
        )
        self.watch.active = True
        try:
            if og is not None:
                with og:
                    yield
            else:
                yield
        finally:
            self.watch.active = False
            if og is not None:
                for name in og.blocked:
                    self.violation("torch_op_in_forward", name)

    def op_call(self, msg: dict) -> dict:
        args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev, str(msg.get("variant", "base")))
        keep = [tensorio.tmap(a, lambda t: t.clone()) for a in args]
        if msg.get("sentinel") and msg.get("outputs"):
            # Freed blocks of the output's sizes filled with a sentinel: an output allocated but never written
            # comes back full of it.
            blocks = [
                torch.full(tuple(m["shape"]), _SENTINEL, dtype=getattr(torch, m["dtype"]), device=self.dev)
                for m in msg["outputs"]
                if m["dtype"].startswith(("float", "bfloat"))
            ]
            self.sync()
            del blocks
        try:
            with torch.no_grad(), self.scope(True):
                out = self.model(*args)
            self.sync()
        except BaseException as e:  # noqa: BLE001
            return {"ok": False, "error": f"{type(e).__name__}: {str(e)[:500]}\n{_tb()}"}
        out = tensorio.unwrapped(out)
        self.check_plain(out)
        reply: dict[str, Any] = {"ok": True}
        if msg.get("sentinel"):
            # the judge names it only where the output is also wrong (Judge.check_call): the sentinel is a value an
            # honest output may hold (-1234.5678 is -1232 in bfloat16)
            fracs = [
                float((t == _SENTINEL).float().mean())
                for t in tensorio.tensors(out)
                if t.is_floating_point() and t.numel() > 0
            ]
            frac = max(fracs, default=0.0)
            if frac > 0.01:
                reply["unwritten"] = frac
        mutated = [
            i for i, (a, b) in enumerate(zip(keep, args)) if isinstance(a, torch.Tensor) and not _same_data(a, b)
        ]
        if mutated:
            self.violation("input_mutation", f"inputs {mutated} changed by the candidate")
        tensorio.save(out, os.path.join(self.out_dir, os.path.basename(msg["out"]) + ".pt"))
        return reply

    def check_plain(self, out: Any) -> None:
        """A tensor subclass can defer its work until someone looks at it (outside the timed region)."""
        for t in tensorio.tensors(out):
            if type(t) is not torch.Tensor:
                self.violation("lazy_tensor", f"the output is a {type(t).__name__}, not a plain tensor")
                return

    def op_timed(self, msg: dict) -> dict:
        self.held = None
        # The previous call's inputs stay alive while the next are made: consecutive calls never share addresses,
        # so a cache keyed on pointers sees a "new" tensor with new data each time.
        prev = getattr(self, "_prev_args", None)
        args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev)
        del prev
        self._prev_args = args
        model = self.model

        def fn(*a):
            self.watch.active = True
            try:
                return model(*a)
            finally:
                self.watch.active = False

        with torch.no_grad():
            out, t, ts = self._time(fn, args)
        out = tensorio.unwrapped(out)
        self.check_plain(out)
        # Warm-up calls hash their output too: the timed calls' count is planned from their wall time.
        dg, leaves = tensorio.commitment(out)
        if msg.get("warm"):
            return {"t": t, "ts": ts}
        self.held, self.held_leaves = out, leaves
        return {"t": t, "ts": ts, "digest": dg}

    def op_keep(self, msg: dict) -> dict:
        """The last timed call's output, to be checked: copied on its GPU (a fraction of a millisecond under the
        timing's exclusive lock, where writing a file of it took hundreds) and written by `save_kept` after the
        timing; written at once on the host, or where the copies would pass KEEP_ON_DEVICE_BYTES or the GPU's
        memory. Nothing here is trusted: the file must match the digest committed at the call."""
        if self.held is None:
            return {"ok": False, "error": "no output held"}
        path = os.path.join(self.out_dir, os.path.basename(msg["out"]) + ".pt")
        if isinstance(msg.get("picks"), dict):
            # A sampled check: the picked leaves' bytes and every leaf digest (KiBs to MiBs), proven on the trusted
            # side against the commitment; nothing else of the output is copied or written.
            self.kept.append((path, tensorio.sampled(self.held, self.held_leaves, msg["picks"])))
            self.held = None
            return {"ok": True}
        size = sum(t.numel() * t.element_size() for t in tensorio.tensors(self.held))
        copy = None
        if self.dev.type == "cuda" and self.kept_bytes + size <= KEEP_ON_DEVICE_BYTES:
            try:
                copy = tensorio.tmap(self.held, lambda t: t.clone())
            except torch.OutOfMemoryError:
                copy = None
        if copy is None:
            tensorio.save(self.held, path)
        else:
            self.kept.append((path, copy))
            self.kept_bytes += size
        self.held = None
        return {"ok": True}

    def op_save_kept(self, msg: dict) -> dict:
        for path, out in self.kept:
            tensorio.save(out, path)
        self.kept, self.kept_bytes = [], 0
        return {"ok": True}

    def op_kernels(self, msg: dict) -> dict:
        if self.dev.type != "cuda":
            return {"n": None}
        from torch.profiler import ProfilerActivity, profile

        args = tensorio.make_inputs(self.task, int(msg["seed"]), self.dev)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            with torch.no_grad(), self.scope(True):
                self.model(*args)
            torch.cuda.synchronize()
        n = 0
        for e in prof.events():
            dt = getattr(e, "device_type", None)
            if (
                dt is not None
                and "CUDA" in str(dt)
                and not any(k in e.name.lower() for k in ("memset", "memcpy", "memory"))
            ):
                n += 1
        return {"n": n}

    def op_finish(self, msg: dict) -> dict:
        warnings = []
        for name, detail in _guard.integrity_violations(self.integrity):
            if name == "precision_cast":
                warnings.append((name, detail))
            else:
                self.violation(name, detail)
        for name, detail in self.watch.events:
            self.violation(name, detail)
        return {"violations": self.violations, "warnings": warnings}


def _use_prebuilt_extensions() -> None:
    """load_inline / load in the solution import the extension the build step made (the verified private copy
    in TORCH_EXTENSIONS_DIR) instead of re-running ninja: the copy lives at another path, so torch would rewrite
    build.ninja and rebuild (a cold nvcc run inside the judged process, and a FileBaton in its dir). Anything not
    prebuilt is refused: the judged process builds nothing (a binary made here would skip the checks on what the
    build links to, `symbols`)."""
    import inspect

    import torch.utils.cpp_extension as cpp

    jit = getattr(cpp, "_jit_compile", None)
    load_lib = getattr(cpp, "_import_module_from_library", None)
    if jit is None or load_lib is None or getattr(jit, "_opforge_prebuilt", False):
        return
    sig = inspect.signature(jit)

    def prebuilt(*args, **kwargs):
        a = sig.bind(*args, **kwargs).arguments
        name, build_dir = a.get("name"), a.get("build_directory")
        if (
            isinstance(name, str)
            and isinstance(build_dir, str)
            and not a.get("is_standalone")
            and os.path.isfile(os.path.join(build_dir, f"{name}.so"))
        ):
            return load_lib(name, build_dir, a.get("is_python_module", True))
        raise RuntimeError(f"extension {name!r} was not made by the build step (the judged process builds nothing)")

    prebuilt._opforge_prebuilt = True
    cpp._jit_compile = prebuilt
    write = getattr(cpp, "_maybe_write", None)
    if write is not None:

        def maybe_write(filename, new_content):  # load_inline rewrites its sources first: the copy is read-only
            try:
                return write(filename, new_content)
            except OSError:
                return None

        cpp._maybe_write = maybe_write


def serve(payload: dict, emit: Callable[[Any], None]) -> None:
    drv = Driver(payload)
    cmd = open(drv.p["fifo_cmd"], "rb", buffering=0)  # noqa: SIM115 - open for the process's life
    reply = open(drv.p["fifo_reply"], "wb", buffering=0)  # noqa: SIM115

    def send(obj: dict) -> None:
        reply.write((json.dumps(obj, default=str) + "\n").encode())

    send({"op": "hello"})
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = cmd.read(MAX_LINE)
            if not chunk:  # the trusted side went away: nothing more to do
                os._exit(0)
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        msg = json.loads(line)
        op = msg.get("op")
        try:
            out = getattr(drv, f"op_{op}")(msg)
        except BaseException as e:  # noqa: BLE001 - reported as this command's failure
            out = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:500]}\n{_tb()}"}
            if isinstance(e, tensorio.NoRoom):
                out["no_room"] = True  # a claim the trusted side checks against the file system itself
        out["op"] = op
        send(out)
        if op == "finish":
            emit({"done": True})
            os._exit(0)  # candidate atexit/__del__ hooks never run


def main(payload: dict, emit: Callable[[Any], None]) -> None:
    try:
        serve(payload, emit)
    except BaseException:  # noqa: BLE001
        emit({"error": _tb()})
    os._exit(0)
