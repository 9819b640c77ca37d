"""The evaluation worker: runs in its own sandboxed process on a GPU host (torch + numpy + stdlib only).

Started by `pipeline.evaluate.runner` through `pipeline.sandbox.run_sandboxed`; receives a job (task code, solution,
settings, secret seeds) as PAYLOAD and reports over the sandbox's private channel with `emit_result` (the last
report counts; a report is sent after every phase so a crash still leaves how far it got).

Jobs:
- "candidate": load the task and the solution, verify (correctness trials, guards), profile, re-verify.
- "baseline": time the reference eagerly and under torch.compile, the same way candidates are timed.

The candidate's view: it cannot see the seeds (the payload dict is emptied once read), the reference output it is
compared with lives in a private memory pool and is poisoned (NaN) on the GPU while the candidate runs (its value
waits on the host), its inputs are its own copies, and compute ops from torch raise inside its forward.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import time
import traceback
import types
from typing import Any, Callable

import torch

from pipeline.evaluate import guard as _guard
from pipeline.evaluate.timing import TIMING_METHOD, Timer, stats

_TB_CHARS = 3000


def _tb() -> str:
    return traceback.format_exc()[-_TB_CHARS:]


# --------------------------------------------------------------------------- loading code

def load_module(name: str, path: str | None = None, code: str | None = None, filename: str = "<task>"):
    mod = types.ModuleType(name)
    mod.__file__ = path or filename
    src = code if code is not None else open(path).read()
    exec(compile(src, path or filename, "exec"), mod.__dict__)
    return mod


# --------------------------------------------------------------------------- tensors

def _map(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def clone_args(args: list[Any]) -> list[Any]:
    return [_map(a, lambda t: t.clone()) for a in args]


def _flatten(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [x for o in obj for x in _flatten(o)]
    return [obj]


def _same_data(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def compare(ref: Any, out: Any, atol: float, rtol: float) -> dict[str, Any]:
    """Structure, type, shape, dtype, then allclose; max errors over all tensors."""
    r_items, o_items = _flatten(ref), _flatten(out)
    res = {"ok": True, "reason": "", "max_abs_err": 0.0, "max_rel_err": 0.0, "max_tol_err": 0.0}
    if len(r_items) != len(o_items):
        return {**res, "ok": False, "reason": f"output_structure: expected {len(r_items)} outputs, got {len(o_items)}"}
    for i, (r, o) in enumerate(zip(r_items, o_items)):
        if isinstance(r, torch.Tensor):
            if not isinstance(o, torch.Tensor):
                return {**res, "ok": False, "reason": f"output_type: output {i} is {type(o).__name__}, not a tensor"}
            if type(o) is not torch.Tensor:
                return {**res, "ok": False, "reason": f"tensor_subclass_output: {type(o).__name__}",
                        "violation": "lazy_tensor"}
            if o.device != r.device:
                return {**res, "ok": False, "reason": f"output_device: {o.device} != {r.device}"}
            if o.shape != r.shape:
                return {**res, "ok": False, "reason": f"output_shape: {tuple(o.shape)} != {tuple(r.shape)}"}
            if o.dtype != r.dtype:
                return {**res, "ok": False, "reason": f"output_dtype: {o.dtype} != {r.dtype}"}
            if r.numel() == 0:
                continue
            rf, of = r.double() if r.dtype == torch.float64 else r.float(), o.double() if o.dtype == torch.float64 \
                else o.float()
            diff = (of - rf).abs()
            finite = torch.isfinite(diff)
            both_nan = torch.isnan(rf) & torch.isnan(of)
            same_inf = torch.isinf(rf) & (rf == of)
            bad_nonfinite = bool((~finite & ~both_nan & ~same_inf).any())
            d = torch.where(finite, diff, torch.zeros_like(diff))
            mabs = float(d.max())
            denom = rf.abs()
            mrel = float(torch.where(denom > 0, d / denom.clamp_min(1e-30), torch.zeros_like(d)).max())
            mtol = float((d / (1.0 + denom)).max())  # allclose(atol=rtol=t) <=> mtol <= t: re-judge labels later
            res["max_abs_err"] = max(res["max_abs_err"], mabs)
            res["max_rel_err"] = max(res["max_rel_err"], mrel)
            res["max_tol_err"] = max(res["max_tol_err"], mtol)
            if bad_nonfinite:
                res.update(ok=False, reason=f"output_nonfinite: output {i} has NaN/inf where the reference has not")
            elif not bool((d <= atol + rtol * denom).all()):
                res.update(ok=False, reason=f"output_mismatch: max_abs_err={mabs:.3g} max_rel_err={mrel:.3g}")
        else:
            if isinstance(o, torch.Tensor) and o.numel() == 1:
                o = o.item()
            if isinstance(r, (int, float)) and isinstance(o, (int, float)):
                if not math.isclose(float(o), float(r), rel_tol=rtol, abs_tol=atol):
                    res.update(ok=False, reason=f"output_mismatch: output {i}: {o!r} != {r!r}")
            elif r != o:
                res.update(ok=False, reason=f"output_mismatch: output {i}: {o!r} != {r!r}")
    return res


_SENTINEL = -1234.5678


def _fingerprint(obj: Any) -> tuple | None:
    ts = [t for t in _flatten(obj) if isinstance(t, torch.Tensor) and t.numel() > 0]
    if not ts:
        return None
    return tuple((tuple(t.shape), float(t.double().sum()), float(t.reshape(-1)[0]), float(t.reshape(-1)[-1]))
                 for t in ts)


def _poison(obj: Any) -> None:
    def p(t: torch.Tensor) -> None:
        if t.is_floating_point():
            t.fill_(float("nan"))
        elif t.dtype != torch.bool:
            t.fill_(-7)
    _map(obj, p)


# --------------------------------------------------------------------------- the job

class _Job:
    def __init__(self, payload: dict, emit: Callable[[dict], None]) -> None:
        # Copy what we need, then empty the payload: the dict stays reachable from the sandbox bootstrap's globals,
        # and the seeds must not be.
        self.kind = payload.get("kind", "candidate")
        self.task_code: str = payload["task_code"]
        self.solution: dict = dict(payload.get("solution") or {})
        self.mode: str = payload.get("mode", "full")
        self.s: dict = dict(payload["settings"])
        rng = random.Random(int(payload["seed"]))
        nonce = str(payload.get("nonce", ""))
        payload.clear()
        self._rng = rng
        self.emit_fn = emit
        self.prints: list[tuple] = []
        self.res: dict[str, Any] = {"kind": self.kind, "stage": "start", "violations": [], "warnings": [],
                                    "details": {}, "timing": {}, "nonce": nonce, "phase_s": {}}
        self._t0 = time.perf_counter()
        self._last = self._t0

    # reporting -------------------------------------------------------
    def seed(self) -> int:
        return self._rng.randrange(1, 2**62)

    def emit(self, stage: str) -> None:
        now = time.perf_counter()
        self.res["phase_s"][stage] = round(now - self._last, 4)
        self._last = now
        self.res["stage"] = stage
        self.emit_fn(self.res)

    def violation(self, name: str, detail: str = "") -> None:
        if name not in self.res["violations"]:
            self.res["violations"].append(name)
        self.res["details"].setdefault("violation_details", []).append(f"{name}: {detail}"[:300])

    def fail(self, reason: str, error: str = "") -> None:
        self.res["correct"] = False
        self.res.setdefault("reason", reason)
        if error:
            self.res["error"] = error[-_TB_CHARS:]

    # setup -----------------------------------------------------------
    def prepare(self) -> bool:
        """CPU-side preparation, before any candidate code: the task module, timers and guards captured."""
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
        files = {os.path.realpath(p) for p in self.solution.get("files", [])}
        self.watch = _guard.AuditWatch(files)
        self.integrity = _guard.snapshot_integrity()
        self.emit("prepared")  # a crash from here on leaves this partial report
        return True

    def acquire_gpu(self) -> None:
        """Jobs on one GPU measure one at a time: prepare in parallel, then wait here for the GPU's lock."""
        path = self.s.get("gpu_lock")
        if path:
            import fcntl

            t = time.perf_counter()
            self._lock_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)  # released when the process exits
            self.res["phase_s"]["gpu_wait"] = round(time.perf_counter() - t, 4)
            self._last = time.perf_counter()

    def setup(self) -> bool:
        if not torch.cuda.is_available():
            self.res["reason"] = "no_gpu"
            return False
        self.dev = torch.device("cuda", 0)
        torch.cuda.set_device(self.dev)
        props = torch.cuda.get_device_properties(self.dev)
        self.res["device"] = props.name
        self.res["torch"] = torch.__version__
        frac = self.s.get("gpu_memory_fraction")
        if frac:
            torch.cuda.set_per_process_memory_fraction(float(frac), self.dev)
        self.timer.prepare(self.dev, bool(self.s.get("l2_flush", True)))
        torch.cuda.synchronize()
        self.pool = torch.cuda.MemPool() if hasattr(torch.cuda, "MemPool") else None
        return True

    def ref_memory(self):
        """Reference allocations come from a private pool: freed reference tensors are never handed to the
        candidate's allocations (defeats returning uninitialised memory that holds the reference's result)."""
        if self.pool is not None and hasattr(torch.cuda, "use_mem_pool"):
            return torch.cuda.use_mem_pool(self.pool)
        return contextlib.nullcontext()

    def make_inputs(self, seed: int) -> list[Any]:
        torch.manual_seed(seed)
        with torch.device(self.dev):  # task RNG draws directly on the GPU: fresh inputs are cheap
            xs = list(self.task.get_inputs())
        return [_map(x, lambda t: t.to(self.dev)) for x in xs]

    def build_ref(self, seed: int) -> torch.nn.Module:
        init = list(self.task.get_init_inputs())
        torch.manual_seed(seed)
        with self.ref_memory():
            return self.task.Model(*init).to(self.dev).eval()

    def run_ref(self, model, args) -> Any:
        with torch.no_grad(), self.ref_memory():
            out = model(*clone_args(args))
            torch.cuda.synchronize()
        return out

    # candidate --------------------------------------------------------
    def load_candidate(self) -> type | None:
        sol = self.solution
        self.watch.active = True
        try:
            if sol.get("kind") == "workspace":
                art_dir = os.path.dirname(sol["artifact"])
                sys.path.insert(0, art_dir)
                mod = load_module("opforge_solution", path=sol["path"])
            else:
                mod = load_module("opforge_solution", path=sol["path"])
        except BaseException as e:  # noqa: BLE001 - any failure of untrusted code is a failed candidate
            self.watch.active = False
            self.fail("load_error", f"{type(e).__name__}: {e}\n{_tb()}")
            return None
        finally:
            self.watch.active = False
        cls = getattr(mod, "ModelNew", None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            self.fail("no_model_new", "the solution defines no ModelNew(nn.Module)")
            return None
        if issubclass(cls, self.task.Model) or any(b.__name__ == self.task.Model.__name__ for b in cls.__mro__[1:]):
            self.violation("inherits_reference", "ModelNew subclasses the reference Model")
        fwd = getattr(cls, "forward", None)
        if fwd is None or fwd is torch.nn.Module.forward or fwd is getattr(self.task.Model, "forward", None):
            self.violation("inherits_reference", "ModelNew.forward is the reference's")
        return cls

    @contextlib.contextmanager
    def candidate_scope(self, guarded: bool):
        """Untrusted code runs inside: the audit watch records introspection, the op guard blocks torch compute."""
        og = _guard.OpGuard(self.s.get("allow_libraries"), self.s.get("allow_torch_ops")) if guarded else None
        self.watch.active = True
        try:
            if og is not None:
                with og:
                    yield
            else:
                yield
        finally:
            self.watch.active = False
            if og is not None and og.blocked:
                for name in og.blocked:
                    self.violation("torch_op_in_forward", name)

    def call_candidate(self, model, args, guarded: bool = True) -> tuple[Any, str]:
        try:
            with torch.no_grad(), self.candidate_scope(guarded):
                out = model(*args)
            torch.cuda.synchronize()
            return out, ""
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                return None, f"{type(e).__name__} raised by the candidate"
            return None, f"{type(e).__name__}: {str(e)[:500]}\n{_tb()}"

    def correctness_trial(self, ref_model, new_model, seed: int, *, determinism: bool, tag: str,
                          sentinel: bool = False) -> dict:
        """One trial: reference on its own copies (private pool, poisoned on the GPU while the candidate runs),
        candidate on its own copies, checks; returns the comparison."""
        atol, rtol = float(self.s["atol"]), float(self.s["rtol"])
        args = self.make_inputs(seed)
        ref_out = self.run_ref(ref_model, args)
        ref_host = _map(ref_out, lambda t: t.detach().to("cpu", copy=True))
        owned = {t.untyped_storage().data_ptr() for t in list(ref_model.parameters()) + list(ref_model.buffers())}
        _map(ref_out, lambda t: None if t.untyped_storage().data_ptr() in owned else _poison(t))
        # ref_out stays allocated (its memory cannot be handed to the candidate) and now holds nothing to read
        torch.cuda.synchronize()
        cand_args = clone_args(args)
        if sentinel:
            # Leave freed blocks of exactly the output's sizes filled with a sentinel: an output the candidate
            # allocated but never wrote comes back full of it.
            blocks = [torch.full_like(t, _SENTINEL) for t in _flatten(ref_host) if isinstance(t, torch.Tensor)
                      and t.is_floating_point() and t.numel() > 0 for t in [t.to(self.dev)]]
            torch.cuda.synchronize()
            del blocks
        out, err = self.call_candidate(new_model, cand_args)
        if err:
            return {"ok": False, "reason": f"runtime_error ({tag})", "error": err}
        if sentinel:
            for t in _flatten(out):
                if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0 and t.is_cuda:
                    frac = float((t == _SENTINEL).float().mean())
                    if frac > 0.01:
                        self.violation("uninitialized_output", f"{frac:.1%} of the output is memory it never wrote")
        fp = _fingerprint(out)
        mutated = [i for i, (a, b) in enumerate(zip(args, cand_args))
                   if isinstance(a, torch.Tensor) and not _same_data(a, b)]
        if mutated:
            self.violation("input_mutation", f"inputs {mutated} changed by the candidate ({tag})")
        ref_dev = _map(ref_host, lambda t: t.to(self.dev))
        cmp = compare(ref_dev, out, atol, rtol)
        if cmp.get("violation"):
            self.violation(cmp["violation"], cmp["reason"])
        cmp["ref_host"] = ref_host
        if not cmp["ok"] and fp is not None and fp in self.prints:
            self.violation("result_caching", f"{tag}: the output is bit-identical to an earlier call's output")
        if fp is not None:
            self.prints.append(fp)
        if cmp["ok"] and determinism and self.s.get("determinism", "exact") != "off":
            out_keep = out  # alive: a second call may not reuse the first call's output memory
            again, err = self.call_candidate(new_model, clone_args(args))
            if err:
                return {**cmp, "ok": False, "reason": f"runtime_error (repeat, {tag})", "error": err}
            exact = self.s.get("determinism", "exact") == "exact"
            same = all((_same_data(a, b) if exact else compare(a, b, atol, rtol)["ok"])
                       if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else a == b
                       for a, b in zip(_flatten(out_keep), _flatten(again)))
            if not same:
                cmp.update(ok=False, reason=f"nondeterministic_output: same inputs gave different outputs ({tag})")
            del out_keep, again
        del out, ref_dev, ref_out
        return cmp

    def degenerate(self, ref_outputs: list[Any]) -> str:
        """Output (nearly) independent of the input: every trial's output close to the first, or to zero."""
        atol, rtol = float(self.s["atol"]), float(self.s["rtol"])
        if len(ref_outputs) < 2:
            return ""
        first = [t.to(self.dev) if isinstance(t, torch.Tensor) else t for t in _flatten(ref_outputs[0])]
        if not all(isinstance(t, torch.Tensor) for t in first):
            return ""
        on_dev = lambda o: [t.to(self.dev) for t in _flatten(o)]  # noqa: E731 - host copies, compared on the GPU
        all_same = all(all(compare(a, b, atol, rtol)["ok"] for a, b in zip(first, on_dev(o)))
                       for o in ref_outputs[1:])
        all_zero = all(all(bool((t.float().abs() <= atol).all()) for t in on_dev(o)) for o in ref_outputs)
        if all_same:
            return "reference output is the same for every random input"
        if all_zero:
            return "reference output is ~0 for every random input (within tolerance)"
        return ""

    def count_kernels(self, new_model, args) -> int | None:
        """GPU kernels launched by one candidate call (CUPTI through torch.profiler); None if unavailable."""
        try:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                out, err = self.call_candidate(new_model, args)
                torch.cuda.synchronize()
            if err:
                return None
            n = 0
            for e in prof.events():
                dt = getattr(e, "device_type", None)
                if dt is not None and "CUDA" in str(dt) and not any(
                        k in e.name.lower() for k in ("memset", "memcpy", "memory")):
                    n += 1
            return n
        except Exception as e:  # noqa: BLE001 - the profiler is a best-effort extra check
            self.res["details"]["kernel_count_error"] = f"{type(e).__name__}: {e}"[:300]
            return None

    def run_candidate(self) -> None:
        if not self.prepare():
            return
        s = self.s
        cls = self.load_candidate()  # on the CPU, before waiting for the GPU
        self.emit("loaded")
        if cls is None:
            self.finish()
            return
        self.acquire_gpu()
        if not self.setup():
            self.finish()
            return
        init_seed = self.seed()
        try:
            ref_model = self.build_ref(init_seed)
        except Exception:  # noqa: BLE001
            self.res["reason"] = "bad_task: the reference Model failed to build"
            self.res["error"] = _tb()
            self.emit("done")
            return
        init = list(self.task.get_init_inputs())
        torch.manual_seed(init_seed)
        self.watch.active = True
        try:
            new_model = cls(*init).to(self.dev).eval()
        except BaseException as e:  # noqa: BLE001
            self.watch.active = False
            self.fail("init_error", f"{type(e).__name__}: {e}\n{_tb()}")
            self.emit("done")
            return
        self.watch.active = False
        self.res["compiled"] = True
        # ---- verify
        trials = int(s["trials"]) if self.mode != "profile" else 1
        ref_outputs, errs = [], {"max_abs_err": 0.0, "max_rel_err": 0.0, "max_tol_err": 0.0}
        correct, reason = True, ""
        for t in range(trials):
            cmp = self.correctness_trial(ref_model, new_model, self.seed(), determinism=True, tag=f"trial {t}",
                                         sentinel=(t == 0))
            for k in errs:
                errs[k] = max(errs[k], cmp.get(k, 0.0))
            if "ref_host" in cmp:
                ref_outputs.append(cmp.pop("ref_host"))
            if not cmp["ok"]:
                correct, reason = False, cmp["reason"]
                if cmp.get("error"):
                    self.res["error"] = cmp["error"]
                break
        self.res.update(errs)
        self.res["trials_run"] = t + 1
        if correct and s.get("degenerate_check", True):
            why = self.degenerate(ref_outputs)
            if why:
                self.violation("degenerate_task", why)
        del ref_outputs
        if correct and s.get("kernel_launch_check", True):
            n = self.count_kernels(new_model, clone_args(self.make_inputs(self.seed())))
            self.res["details"]["kernels_launched"] = n
            if n == 0:
                self.violation("no_kernel_launched", "the candidate returned without launching a GPU kernel")
        self.res["correct"] = correct
        if reason:
            self.res["reason"] = reason
        self.emit("verified")
        if not correct or self.mode == "verify":
            self.finish()
            return
        # ---- profile
        checked: set[int] = set()
        stash: dict[int, list[Any]] = {}
        mismatches: list[str] = []
        seeds = _Seeds(self.seed)

        def plan(n: int) -> None:  # told the number of timed calls once the warm-up has estimated the call time
            checked.update(self.timing_checks(n))

        def make_args(i: int) -> list[Any]:
            args = self.make_inputs(seeds[i])
            if i in checked:
                stash[i] = clone_args(args)
            return args

        def after_call(i: int, args: list[Any], out: Any) -> None:
            if i not in checked:
                return
            ref_out = self.run_ref(ref_model, stash.pop(i))
            cmp = compare(ref_out, out, float(s["atol"]), float(s["rtol"]))
            if not cmp["ok"]:
                mismatches.append(f"timed call {i}: {cmp['reason']}")

        def fn(*args):
            self.watch.active = True
            try:
                return new_model(*args)
            finally:
                self.watch.active = False

        try:
            with torch.no_grad():
                run = self.timer.run(fn, make_args, after_call=after_call, on_plan=plan, **timing_args(s))
        except BaseException as e:  # noqa: BLE001
            self.watch.active = False
            self.res["correct"] = False
            self.res["reason"] = "runtime_error (timing)"
            self.res["error"] = f"{type(e).__name__}: {str(e)[:500]}\n{_tb()}"
            self.finish()
            return
        self.res["timing"] = {"method": TIMING_METHOD, "solution": run, "checked_calls": sorted(checked)}
        self.res["solution_ms"] = run["stats"]["median"]
        if mismatches:
            self.violation("result_caching", "; ".join(mismatches[:3]))
            self.res["correct"] = False
            self.res["reason"] = "timed_output_mismatch: " + mismatches[0]
        dev_ms, stream_ms = run["stats"]["median"], run["stream_stats"]["median"]
        if stream_ms < float(s["offstream_ratio"]) * dev_ms and dev_ms - stream_ms > float(s["offstream_min_ms"]):
            self.violation("work_off_stream", f"stream-ordered {stream_ms:.4f} ms vs device-synchronised "
                                              f"{dev_ms:.4f} ms: work ran outside the current stream")
        self.emit("profiled")
        # ---- re-verify after timing (state that changes after many calls)
        for t in range(int(s["post_timing_trials"])):
            cmp = self.correctness_trial(ref_model, new_model, self.seed(), determinism=False, tag=f"post-timing {t}")
            cmp.pop("ref_host", None)
            if not cmp["ok"]:
                self.res["correct"] = False
                self.res["reason"] = "post_timing_" + cmp["reason"]
                if cmp.get("error"):
                    self.res["error"] = cmp["error"]
                break
        self.finish()

    def timing_checks(self, trials: int) -> set[int]:
        """A secret subset of timed calls whose outputs are checked (always the last one); at most
        `check_max_calls`, so that thousands of timed calls of a short kernel do not each cost a reference run."""
        frac = float(self.s.get("check_fraction", 0.25))
        k = min(max(2, int(round(frac * trials))), max(2, int(self.s.get("check_max_calls", 100))))
        idx = set(self._rng.sample(range(1, trials + 1), min(k, trials)))
        idx.add(trials)
        return idx

    def finish(self) -> None:
        for name, detail in _guard.integrity_violations(self.integrity):
            if name in ("precision_cast",):
                if name not in self.res["warnings"]:
                    self.res["warnings"].append(name)
                self.res["details"].setdefault("warning_details", []).append(detail)
            else:
                self.violation(name, detail)
        for name, detail in self.watch.events:
            self.violation(name, detail)
        self.emit("done")

    # baseline ---------------------------------------------------------
    def run_baseline(self) -> None:
        if not self.prepare():
            return
        self.acquire_gpu()
        if not self.setup():
            self.emit("done")
            return
        s = self.s
        model = self.build_ref(self.seed())
        seeds = _Seeds(self.seed)

        def make_args(i: int) -> list[Any]:
            return self.make_inputs(seeds[i])

        with torch.no_grad():
            eager = self.timer.run(model, make_args, **timing_args(s))
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
                    comp = self.timer.run(compiled, make_args, **timing_args(s))
                self.res["timing"]["compile"] = comp
                self.res["timing"]["compile_seconds"] = compile_s
                self.res["compile_ms"] = comp["stats"]["median"]
            except Exception:  # noqa: BLE001 - a task torch.compile cannot handle: no compile baseline
                self.res["compile_error"] = _tb()
        self.emit("done")


class _Seeds:
    """Secret per-call seeds drawn on first use: the number of timed calls is known only after the warm-up.
    (Not `collections.defaultdict`: candidate code shares this interpreter and can rebind a stdlib attribute.)"""

    def __init__(self, draw: Callable[[], int]) -> None:
        self._draw, self._seeds = draw, {}

    def __getitem__(self, i: int) -> int:
        if i not in self._seeds:
            self._seeds[i] = self._draw()
        return self._seeds[i]


def timing_args(s: dict) -> dict:
    """Timer.run's arguments from the evaluation options (one place for candidates and baselines alike)."""
    return {"warmup": int(s["timing_warmup"]), "trials": int(s["timing_trials"]),
            "warmup_ms": float(s["timing_warmup_ms"]), "min_timed_ms": float(s["timing_min_ms"]),
            "max_trials": int(s["timing_max_trials"])}


def main(payload: dict, emit: Callable[[dict], None]) -> None:
    job = _Job(payload, emit)
    try:
        if job.kind == "baseline":
            job.run_baseline()
        else:
            job.run_candidate()
    except BaseException as e:  # noqa: BLE001 - report, never hang: the harness reads the reason
        job.res["reason"] = job.res.get("reason") or f"worker_error: {type(e).__name__}"
        job.res["error"] = _tb()
        job.res["correct"] = False
        job.emit("done")
    os._exit(0)  # skip interpreter teardown: candidate atexit/__del__ hooks must not run after the report


def stats_of(times: list[float]) -> dict:  # re-exported for the benchmarks
    return stats(times)
