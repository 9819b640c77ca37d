"""Runtime filters, run INSIDE the sandbox on one candidate (imports torch and numpy only: GPU workers run it too).

`check(payload) -> dict` executes the candidate and measures everything the filters need; it returns the first
failing runtime filter's reason (or "") and every measured value. Filters after a failure still run when they can
(so the table shows every filter's result), except timing and torch.compile, which are skipped after a failure to
save time unless `run_all` is set (eager timing and the GPU runtime window come before torch.compile).
"""

from __future__ import annotations

import math
import time
from typing import Any

from pipeline.gpulock import held
from pipeline.patchwatch import replaced, watched

# Runtime filters, in the order their reasons take precedence.
RUNTIME_CHECKS = (
    "patching",
    "init",
    "inputs",
    "forward",
    "inputs_unchanged",
    "output_type",
    "finite",
    "output_size",
    "fresh_inputs",
    "runtime_stochastic",
    "deterministic",
    "non_constant",
    "not_identity",
    "input_dependent",
    "weight_dependent",
    "unused_parameters",
    "unused_modules",
    "train_eval",
    "compile_runs",
    "compile_agree",
    "memory",
    "runtime_window",
)
REASON_OF = {
    "patching": "monkey_patching",
    "init": "init_error",
    "inputs": "bad_inputs",
    "forward": "forward_error",
    "output_type": "bad_output",
    "finite": "nan_or_inf",
    "output_size": "output_too_large",
    "fresh_inputs": "fixed_inputs",
    "inputs_unchanged": "mutates_inputs",
    "not_identity": "identity_output",
    "runtime_stochastic": "stochastic_op",
    "deterministic": "nondeterministic",
    "non_constant": "constant_output",
    "input_dependent": "input_independent",
    "weight_dependent": "weight_independent",
    "unused_parameters": "unused_parameters",
    "unused_modules": "unused_modules",
    "train_eval": "train_eval_mismatch",
    "compile_runs": "compile_error",
    "compile_agree": "compile_mismatch",
    "memory": "memory_too_large",
    "runtime_window": "runtime_out_of_window",
}
_OOM = ("can't allocate memory", "cannot allocate memory", "out of memory", "bad_alloc", "failed to allocate")


class _Stop(Exception):
    """A filter failed in a way that makes later runtime filters meaningless."""


def _is_oom(e: BaseException) -> bool:
    return isinstance(e, MemoryError) or any(m in str(e).lower() for m in _OOM)


def _flat(out: Any) -> list:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and out and all(isinstance(t, torch.Tensor) for t in out):
        return list(out)
    raise TypeError(f"forward returned {type(out).__name__}, not a tensor or a tuple of tensors")


def _chunks(x: Any, y: Any, n: int = 1 << 24):
    """Matching float64 slices of two same-shape tensors, on their own device: comparing GPU-sized outputs (GBs)
    on the host took tens of seconds per comparison, and a whole float64 copy would double their memory.
    Complex tensors are compared as (real, imaginary) pairs: `.double()` of a complex tensor drops the imaginary
    part."""
    import torch

    x, y = x.detach(), y.detach()
    if x.is_complex() or y.is_complex():
        ct = torch.promote_types(x.dtype, y.dtype)
        x, y = torch.view_as_real(x.to(ct)), torch.view_as_real(y.to(ct))
    x, y = x.reshape(-1), y.reshape(-1)
    for i in range(0, x.numel(), n):
        yield x[i : i + n].double(), y[i : i + n].to(x.device).double()


def _errors(a: list, b: list) -> tuple[float, float, bool]:
    """(max abs err, max rel err, shapes equal) between two output lists, in float64."""
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return math.inf, math.inf, False
    mabs, mrel = 0.0, 0.0
    for x, y in zip(a, b):
        for xc, yc in _chunks(x, y):
            d = (xc - yc).abs()
            both_nan = xc.isnan() & yc.isnan()
            d = d.masked_fill(both_nan, 0.0).nan_to_num(nan=math.inf)
            mabs = max(mabs, float(d.max()))
            mrel = max(mrel, float((d / (yc.abs() + 1e-8)).max()))
    return mabs, mrel, True


def _close(a: list, b: list, atol: float, rtol: float) -> bool:
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False
        if not all(torch.allclose(xc, yc, atol=atol, rtol=rtol, equal_nan=True) for xc, yc in _chunks(x, y)):
            return False
    return True


def _digest(t: Any) -> tuple:
    """What tells two tensors apart without holding both: dtype, shape, float64 sums of the values, of their squares
    and of the values weighted by a hash of their position (a moved element changes it), in slices (no whole float64
    copy), and evenly spaced elements' bytes. Equal tensors give equal digests; two draws of random inputs, or a
    tensor written into, practically never do."""
    import torch

    flat = t.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    acc = torch.zeros(3, dtype=torch.float64, device=flat.device)
    start = 0
    for c in flat.split(2**22):
        idx = torch.arange(start, start + c.numel(), device=c.device, dtype=torch.int64)
        start += c.numel()
        weight = ((idx * 2654435761) % 4294967291).to(torch.float64) / 4294967291.0
        c = c.to(torch.float64)
        acc[0] += c.sum()
        acc[1] += (c * c).sum()
        acc[2] += (c * weight).sum()
    step = max(1, flat.numel() // 4096)
    sample = flat[::step][:4096].cpu().contiguous()
    return (str(t.dtype), tuple(t.shape), repr(acc.tolist()), sample.view(torch.uint8).numpy().tobytes())


def _identical(a: Any, b: Any) -> bool:
    """Same dtype, shape and values; NaN matches NaN (floating and complex through `_close`, on the device)."""
    import torch

    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return _close([a], [b], 0.0, 0.0) if a.is_floating_point() or a.is_complex() else torch.equal(a, b)


# Relative change (to the outputs' own magnitude) below which two outputs count as the same: float32 rounding
# noise is ~1e-7, so anything an input or a weight really influences moves far more than this.
VARIES_RTOL = 1e-6


def _scale(t: Any) -> float:
    """Root-mean-square magnitude of a tensor, in float64 (complex as real pairs); 0 for an empty one."""
    import torch

    if t.numel() == 0:
        return 0.0
    x = (torch.view_as_real(t.detach()) if t.is_complex() else t.detach()).reshape(-1)
    # In float64 slices, as `_chunks` compares: a whole float64 copy (and its square) of a GPU-sized output was the
    # peak of a validation's memory, six times the output's own size.
    total = 0.0
    for i in range(0, x.numel(), 1 << 24):
        c = x[i : i + (1 << 24)].double()
        total += float(c.masked_fill_(~torch.isfinite(c), 0.0).square_().sum())
    return math.sqrt(total / x.numel())


def _varies(a: list, b: list, rtol: float = VARIES_RTOL) -> bool:
    """Two outputs of the same function differ beyond rounding, judged at their own scale (never against an
    absolute tolerance: a softmax over 32k columns has outputs ~3e-5, a loss can be a scalar)."""
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return True
    for x, y in zip(a, b):
        if x.numel() == 0:
            continue
        scale = max(_scale(x), _scale(y))
        mabs, _, _ = _errors([x], [y])
        if mabs > rtol * scale or (scale == 0.0 and mabs > 0.0):
            return True
    return False


SEAL_ELEMS = 1 << 18  # elements kept per output tensor in the sealed sample
TRACE_MAX_BYTES = 8 << 20  # a semantic trace larger than this is not carried (decontamination's worker cuts there)


def _sample(out: list) -> list:
    """The same evenly spaced elements of each output (at most SEAL_ELEMS), on the CPU: what the caller re-checks."""
    import torch

    res = []
    for t in out:
        flat = t.detach().reshape(-1)
        if flat.numel() > SEAL_ELEMS:
            # Integer arithmetic: a float32 linspace rounds the last index of a 2**28-element output past the end.
            idx = (
                torch.arange(SEAL_ELEMS, device=flat.device, dtype=torch.int64)
                * (flat.numel() - 1)
                // (SEAL_ELEMS - 1)
            )
            flat = flat[idx]
        res.append(flat.to("cpu", copy=True))
    return res


# torch functions the filters compute with: a candidate that replaces them could pass any filter.
_WATCHED = (
    "allclose",
    "equal",
    "isfinite",
    "isnan",
    "get_rng_state",
    "manual_seed",
    "randn",
    "ones_like",
    "compile",
    "no_grad",
    "save",
)


def _integrity(torch: Any) -> dict[str, Any]:
    return watched(torch, _WATCHED, (("torch.Tensor", torch.Tensor), ("torch.nn.Module", torch.nn.Module)))


def _replaced(torch: Any, before: dict[str, Any]) -> list[str]:
    """Watched names now bound to other objects (`pipeline.patchwatch` says which replacements are torch's own)."""
    return replaced(torch, before, _integrity(torch))


# The phases a run reports in `phase_s` (the parent keeps these keys only: the report is the candidate's to write).
PHASES = (
    "start",
    "import",
    "build",
    "forward",
    "window_probe",
    "checks",
    "eager_timing",
    "compile",
    "compiled_timing",
    "trace",
    "gpu_lock_wait",
)
# A validation's peak GPU memory over its task's inputs, weights and outputs: 2.0-5.9 for nearly every task
# measured on the H200 (1.3-1.9 for a few with large inputs and small outputs). Twice that size past its share, a
# task is out of memory there before it allocates anything (`_footprint`).
PEAK_FACTOR = 2.0
OUT_OF_WINDOW_FACTOR = 4.0  # a warm call this many times the window's top: out of the window without more calls
COLD_CALL_ALLOWANCE_S = 20.0  # a first call's one-off costs (CUDA libraries' set-up, NVRTC-compiled kernels)


def _footprint(torch: Any, code: str) -> int | None:
    """Bytes of a task's inputs, weights, buffers and outputs, from a build on the meta device (no memory, no
    compute; the module body too) in a namespace of its own (module state the real build sees stays untouched),
    dropped before returning (what the task made on a device explicitly is freed). None where the task does not
    build there; its outputs count 0 where only its forward does not run there."""
    import gc

    def size(ts: Any) -> int:
        return sum(t.numel() * t.element_size() for t in ts if isinstance(t, torch.Tensor))

    ns: dict[str, Any] = {"__name__": "candidate"}
    try:
        with torch.device("meta"), torch.no_grad():
            exec(compile(code, "<candidate>", "exec"), ns)
            model = ns["Model"](*ns["get_init_inputs"]())
            xs = list(ns["get_inputs"]())
            n = size(xs) + size(model.parameters()) + size(model.buffers())
            try:
                n += size(_flat(model(*xs)))
            except Exception:  # noqa: BLE001 - data-dependent code, ops without a meta kernel: outputs unknown
                pass
            del model, xs
        return n
    except Exception:  # noqa: BLE001 - the real build reports what is wrong with the task
        return None
    finally:
        # The task's functions hold their namespace (__globals__): cleared, and collected now, not at some later
        # collection while the real build holds its own copies.
        ns.clear()
        gc.collect()


def _one_ms(fn, device: str) -> float:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e)
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def _median_ms(fn, device: str, warmup: int, trials: int, give_up_ms: float | None = None, locks=None) -> float:
    """Median of `trials` timed calls after `warmup` calls. The first call is timed: above `give_up_ms`, its time is
    the answer (the forward already ran warm before any timing). `locks` (warm, timed): context managers for the
    warm-up calls and for the timed ones (the first call is timed); nothing is measured during the warm-up, so it
    need not hold the GPU to itself."""
    import contextlib

    warm, timed = locks or (contextlib.nullcontext, contextlib.nullcontext)
    with timed():
        first = _one_ms(fn, device)
    if give_up_ms is not None and first > give_up_ms:
        return first
    with warm():
        for _ in range(warmup - 1):
            fn()
    with timed():
        times = sorted(_one_ms(fn, device) for _ in range(trials))
    return times[len(times) // 2]


class _Deadline:
    """Calls `expire()` from a timer thread unless cancelled within `limit_s` (a call on the GPU cannot be
    interrupted, but the process can end: its GPU work ends with it). `expire` ends the process; a cancel that comes
    too late waits for that, so only one report ever goes out."""

    def __init__(self, limit_s: float, expire) -> None:
        import threading

        self._lock, self._fired = threading.Lock(), False
        self._expire = expire
        self._timer = threading.Timer(limit_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self._fired = True
        self._expire()

    def cancel(self) -> None:
        self._timer.cancel()
        with self._lock:
            fired = self._fired
        while fired:  # the verdict is going out; the process ends
            time.sleep(3600)


def check(p: dict[str, Any], bail=None) -> dict[str, Any]:
    """Run every runtime filter on `p["code"]`. Keys of `p`: device, seed, atol, rtol, det_atol, check_compile,
    runtime_window_ms, max_output_mb, max_memory_mb, timing_trials, run_all, gpu_memory_fraction, gpu_jobs, sent_at.
    `bail(report)`: sends a report from a watchdog thread, which then ends the process (a call far past the runtime
    window is not waited for)."""
    # Seconds per phase (and waiting for the GPU's lock) go into the report: where a validation's time goes.
    phases: dict[str, float] = {}
    if p.get("sent_at"):
        phases["start"] = round(max(0.0, time.time() - float(p["sent_at"])), 3)
    clock = [time.perf_counter()]

    def mark(name: str) -> None:
        now = time.perf_counter()
        phases[name] = round(phases.get(name, 0.0) + now - clock[0], 3)
        clock[0] = now

    import torch

    device = p.get("device", "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        device = "cpu"
    dev = torch.device(device)
    if device.startswith("cuda") and p.get("gpu_memory_fraction"):
        # Its share of a GPU run by several candidates: past it, the task runs again with more (stage._on_gpu).
        torch.cuda.set_per_process_memory_fraction(
            float(p["gpu_memory_fraction"]), dev.index if dev.index is not None else torch.cuda.current_device()
        )
    seed = int(p.get("seed", 0))
    atol, rtol = float(p.get("atol", 1e-3)), float(p.get("rtol", 1e-3))
    det_atol = float(p.get("det_atol", 1e-6))
    run_all = bool(p.get("run_all", False))
    m: dict[str, Any] = {
        "checks": {},
        "details": {},
        "device": device,
        "device_name": torch.cuda.get_device_name(dev) if device.startswith("cuda") else "cpu",
        "eager_ms": None,
        "compile_ms": None,
        "compile_s": None,
        "max_abs_err": None,
        "max_rel_err": None,
        "train_eval_max_abs_err": None,
        "det_max_abs_err": None,
        "output_bytes": None,
        "output_shape": None,
        "peak_memory_mb": None,
        "n_params": None,
        "unused": [],
        "runtime_window_checked": False,
        "phase_s": phases,
    }
    checks, details = m["checks"], m["details"]
    mark("import")

    def fail(name: str, detail: str = "", stop: bool = False) -> None:
        checks[name] = False
        details[name] = detail[:500]
        if stop:
            raise _Stop(name)

    def ok(name: str) -> None:
        checks[name] = True

    torch.manual_seed(seed)
    before = _integrity(torch)
    save = torch.save  # captured before any candidate line runs
    sealed: dict[str, list] = {}  # output samples the caller re-checks (it believes no verdict of ours alone)
    m["sealed"] = sealed
    m["_save"] = save
    ns: dict[str, Any] = {"__name__": "candidate"}
    try:
        exec(compile(p["code"], "<candidate>", "exec"), ns)
        Model, get_inputs, get_init_inputs = ns["Model"], ns["get_inputs"], ns["get_init_inputs"]
    except _Stop:
        raise
    except Exception as e:
        if _is_oom(e):
            raise
        return _finish(m, "init", f"module body: {type(e).__name__}: {e}")
    replaced = _replaced(torch, before)
    if replaced:
        return _finish(m, "patching", "replaced after the module body: " + ", ".join(replaced[:8]))
    checks["patching"] = True
    frac = p.get("gpu_memory_fraction") if device.startswith("cuda") else None
    if frac:
        # Sure to run out of its share: it runs again with a larger one (stage._on_gpu) after seconds here, not
        # after its forward, checks and compilation. The message has torch's form, which the stage reads.
        need = _footprint(torch, p["code"])
        total = torch.cuda.get_device_properties(dev).total_memory
        if need is not None and PEAK_FACTOR * need > float(frac) * total:
            raise torch.cuda.OutOfMemoryError(
                f"CUDA out of memory (estimated before allocating: {PEAK_FACTOR}x the {need / 2**30:.3f} GiB of the "
                f"task's inputs, weights and outputs, against a share of {float(frac) * total / 2**30:.3f} GiB). "
                f"Tried to allocate {PEAK_FACTOR * need / 2**30:.3f} GiB. GPU has a total capacity of "
                f"{total / 2**30:.3f} GiB."
            )

    import contextlib

    # On a GPU, tensors are created on the device directly: GPU-sized inputs (GBs) would take seconds per call on
    # the host. Same distributions as creating on the CPU and moving them, as KernelBench does.
    on_device = (lambda: torch.device(dev)) if device.startswith("cuda") else contextlib.nullcontext

    def build(s: int):
        torch.manual_seed(s)
        with on_device():
            model = Model(*get_init_inputs())
        return model.to(dev)

    def make_inputs(s: int) -> list:
        torch.manual_seed(s)
        with on_device():
            xs = get_inputs()
        if not isinstance(xs, (list, tuple)) or not xs:
            raise TypeError(f"get_inputs() returned {type(xs).__name__}, not a non-empty list")
        return [x.to(dev) if isinstance(x, torch.Tensor) else x for x in xs]

    gpu_lock = p.get("gpu_lock") if device.startswith("cuda") else None

    @contextlib.contextmanager
    def gpu(shared: bool):
        with held(gpu_lock, shared=shared) as waited:
            phases["gpu_lock_wait"] = round(phases.get("gpu_lock_wait", 0.0) + waited[0], 3)
            yield

    def run(model, xs):
        with torch.no_grad(), gpu(shared=True):
            return _flat(model(*xs))

    try:
        try:
            model = build(seed)
            ok("init")
        except Exception as e:
            if _is_oom(e):
                raise
            fail("init", f"{type(e).__name__}: {e}", stop=True)
        m["n_params"] = sum(t.numel() for t in model.parameters())
        try:
            xs = make_inputs(seed + 1)
            if not any(isinstance(x, torch.Tensor) for x in xs):
                raise TypeError("get_inputs() returned no tensor")
            ok("inputs")
        except Exception as e:
            if _is_oom(e):
                raise
            fail("inputs", f"{type(e).__name__}: {e}", stop=True)
        # Forward, with RNG consumption watched (runtime stochastic detection) and leaf modules hooked.
        called: set[str] = set()
        hooks = []
        for name, mod in model.named_modules():
            if name and not list(mod.children()):
                hooks.append(mod.register_forward_hook(lambda _m, _i, _o, name=name: called.add(name)))
        # The inputs' state before the forward: a task whose forward writes into its inputs cannot be a reference
        # (the kernel evaluator rejects candidates that do, so an honest kernel for it could never pass); the same
        # digests later tell whether two seeds drew the same inputs. Digests, not a copy: a task's peak on the GPU
        # bounds how many share it (a copy held a second set of inputs; one in host memory took seconds to make and
        # compare with 16 candidates on a host).
        xs_sig = [_digest(x) if isinstance(x, torch.Tensor) else None for x in xs]
        cpu_state = torch.get_rng_state()
        cuda_state = torch.cuda.get_rng_state(dev) if device.startswith("cuda") else None
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(dev)
        lo, hi = p.get("runtime_window_ms", (1.0, 100.0))
        give_up = OUT_OF_WINDOW_FACTOR * float(hi) if device.startswith("cuda") else None

        @contextlib.contextmanager
        def out_of_window_after(limit_s: float, why: str):
            # From a watchdog thread while the candidate's call still runs: the verdict goes out and the process
            # ends, its GPU work with it (waiting would hold the GPU's lock, and every candidate behind it).
            def expire() -> None:
                import os

                r = {k: v for k, v in m.items() if k not in ("sealed", "_save")}
                r["checks"], r["details"] = dict(checks), dict(details)
                r["eager_ms"], r["runtime_window_checked"] = round(limit_s * 1e3, 4), True
                r["checks"]["runtime_window"] = False
                r["details"]["runtime_window"] = f"eager over {limit_s:.3g} s ({why}), outside [{lo}, {hi}] ms"
                r["reason"] = REASON_OF["runtime_window"]
                try:
                    bail(r)
                finally:
                    os._exit(0)

            watch = _Deadline(limit_s, expire) if bail is not None and give_up is not None and not run_all else None
            try:
                yield
            finally:
                if watch is not None:
                    watch.cancel()

        try:
            mark("build")
            # The first call shares the GPU with at most `gpu_jobs` candidates (time-sliced: each slowed at most that
            # many times) and pays one-off costs: past both, its warm time cannot be inside the window.
            jobs = max(1, int(p.get("gpu_jobs", 1)))
            first_limit = jobs * (give_up or 0.0) / 1e3 + COLD_CALL_ALLOWANCE_S
            with torch.no_grad(), gpu(shared=True):
                with out_of_window_after(first_limit, f"a first call sharing the GPU with up to {jobs}"):
                    raw = model(*xs)
                    if device.startswith("cuda"):
                        torch.cuda.synchronize(dev)
            mark("forward")
            ok("forward")
        except Exception as e:
            if _is_oom(e):
                raise
            fail("forward", f"{type(e).__name__}: {e}", stop=True)
        if give_up is not None:
            # One warm call, timed alone, before the checks: a task far past the window's top is out of it now,
            # instead of after a dozen forward calls of seconds each (every one of them holds back every timing on
            # the GPU, and through the lock's turnstile every other candidate's GPU work). Not waited for past
            # 1.5x the bound: alone on the GPU, nothing but the task makes it slow.
            with torch.no_grad(), gpu(shared=False):
                with out_of_window_after(1.5 * give_up / 1e3, "one warm call alone on the GPU"):
                    probe = _one_ms(lambda: model(*xs), device)
            mark("window_probe")
            if probe > give_up and not run_all:
                m["eager_ms"], m["runtime_window_checked"] = round(probe, 4), True
                fail("runtime_window", f"eager {m['eager_ms']} ms (one warm call) outside [{lo}, {hi}]", stop=True)
        for h in hooks:
            h.remove()
        mutated = [i for i, (x, c) in enumerate(zip(xs, xs_sig)) if c is not None and _digest(x) != c]
        if mutated:
            fail("inputs_unchanged", f"forward changed input(s) {mutated} in place", stop=True)
        ok("inputs_unchanged")
        rng_used = not torch.equal(cpu_state, torch.get_rng_state()) or (
            cuda_state is not None and not torch.equal(cuda_state, torch.cuda.get_rng_state(dev))
        )
        try:
            out = _flat(raw)
            if not all(t.is_floating_point() or t.is_complex() for t in out):
                raise TypeError("output is not floating point: " + ", ".join(str(t.dtype) for t in out))
            ok("output_type")
        except TypeError as e:
            fail("output_type", str(e), stop=True)
        m["output_shape"] = [list(t.shape) for t in out]
        m["output_bytes"] = sum(t.numel() * t.element_size() for t in out)
        sealed["a"] = _sample(out)
        finite = all(bool(torch.isfinite(t).all()) for t in out)
        fail("finite", "output has NaN or Inf") if not finite else ok("finite")
        if m["output_bytes"] > float(p.get("max_output_mb", 4096)) * 2**20:
            fail("output_size", f"{m['output_bytes']} bytes")
        else:
            ok("output_size")
        # Determinism: a second model built and run from the same seeds. The first inputs are let go meanwhile and
        # drawn again afterwards from their seed (a deterministic task draws the same; one that does not fails here):
        # a task's peak memory bounds how many share a GPU, so no two sets of inputs are held at once. (Their state
        # is still `xs_sig`: the forward left them unchanged.)
        del xs
        model2 = build(seed)
        out2 = run(model2, make_inputs(seed + 1))
        sealed["a2"] = _sample(out2)
        dabs, _, same_shape = _errors(out, out2)
        m["det_max_abs_err"] = dabs
        fail("deterministic", f"max abs diff {dabs}") if not (
            same_shape and _close(out, out2, det_atol, 1e-5)
        ) else ok("deterministic")
        del model2, out2
        # Fresh inputs: two seeds must give different tensors.
        xs_b = make_inputs(seed + 2)
        same_inputs = len(xs_sig) == len(xs_b) and all(
            a is None or (isinstance(b, torch.Tensor) and a == _digest(b)) for a, b in zip(xs_sig, xs_b)
        )
        fail("fresh_inputs", "get_inputs() gave identical tensors under two seeds") if same_inputs else ok(
            "fresh_inputs"
        )
        fail("runtime_stochastic", "forward consumed the random number generator") if rng_used else ok(
            "runtime_stochastic"
        )
        # Non-degenerate, judged ACROSS inputs and weights at the outputs' own scale (never element against element
        # within one output: a loss is a scalar, a softmax row is tiny): the output must move when the inputs or
        # the weights move.
        out_b = run(model, xs_b)
        sealed["b"] = _sample(out_b)
        moved_inputs = not same_inputs and _varies(out, out_b)
        del out_b, xs_b  # a task's peak memory bounds how many share a GPU: nothing is held past its use
        xs = make_inputs(seed + 1)
        params = [(n, t) for n, t in model.named_parameters() if t.numel()]
        moved_weights = None
        if params:
            # Perturbing all weights at once must change the output (constant-initialised weights such as
            # LayerNorm's ones are still weights the output depends on). Noise drawn on the model's device: a CPU
            # generator took tens of seconds per GPU-sized weight (a 2217x2217x1024 Bilinear timed out at 60 s).
            gen = torch.Generator(device=dev).manual_seed(seed + 7)
            saved_all = [t.detach().clone() for _, t in params]
            with torch.no_grad():
                for _, t in params:
                    sc = float(t.detach().float().std()) if t.numel() > 1 else 0.0
                    t.add_(torch.randn(t.shape, generator=gen, device=dev).to(t.dtype) * max(sc, 0.1))
                out_w = run(model, xs)
                sealed["w"] = _sample(out_w)
                moved_weights = _varies(out, out_w)
                del out_w
                for (_, t), sv in zip(params, saved_all):
                    t.copy_(sv)
            del saved_all
        if moved_inputs or moved_weights:
            ok("non_constant")
        else:
            fail("non_constant", "the output does not change when the inputs or the weights change")
        # Nothing computed: every output is one of the inputs, or a reshape/view of it (an identity, a relu of
        # inputs that are never negative, a pooling of size 1, ...).
        tensors = [x for x in xs if isinstance(x, torch.Tensor)]
        ident = [any(_identical(t.reshape(-1), x.reshape(-1)) for x in tensors) for t in out]
        if out and all(ident):
            fail("not_identity", "every output holds the values of an input")
        else:
            ok("not_identity")
        if same_inputs:
            checks["input_dependent"] = None  # cannot tell with fixed inputs
        elif not moved_inputs:
            fail("input_dependent", "different inputs give the same output (at the output's own scale)")
        else:
            ok("input_dependent")
        if params:
            fail("weight_dependent", "perturbed weights give the same output") if not moved_weights else ok(
                "weight_dependent"
            )
            # Unused parameters: perturbing each one must change the output.
            unused = []
            for n, t in params:
                saved = t.detach().clone()
                with torch.no_grad():
                    scale = float(saved.float().std()) if saved.numel() > 1 else 0.0
                    noise = torch.randn(saved.shape, generator=gen, device=dev).to(t.dtype) * (max(scale, 0.1))
                    t.add_(noise)
                    changed = not _close(out, run(model, xs), 0.0, 0.0)
                    t.copy_(saved)
                if not changed:
                    unused.append(n)
            m["unused"] = unused
            fail("unused_parameters", ", ".join(unused)) if unused else ok("unused_parameters")
        else:
            checks["weight_dependent"] = None
            ok("unused_parameters")
        leaves = [n for n, mod in model.named_modules() if n and not list(mod.children())]
        not_called = [n for n in leaves if n not in called]
        m["unused"] = m["unused"] + [f"module:{n}" for n in not_called]
        fail("unused_modules", ", ".join(not_called)) if not_called else ok("unused_modules")
        # Train vs eval (default mode is train, as KernelBench runs it).
        # The train-mode output is `out` (same inputs, weights restored, same seeds: the determinism check above).
        model.eval()
        out_eval = run(model, xs)
        model.train()
        te_abs, _, _ = _errors(out, out_eval)
        m["train_eval_max_abs_err"] = te_abs
        fail("train_eval", f"max abs diff {te_abs}") if not _close(out, out_eval, atol, rtol) else ok("train_eval")
        del out_eval
        # Checked again before torch.compile (which wraps nn.Module.__init__ and torch.manual_seed itself): the
        # eager filters above ran forward several times, so a replacement made inside forward is in place now.
        replaced = _replaced(torch, before)
        if replaced:
            fail("patching", "replaced while running: " + ", ".join(replaced[:8]), stop=True)
        failed_so_far = any(v is False for v in checks.values())
        timed = run_all or not failed_so_far
        trials = int(p.get("timing_trials", 10))
        # Eager timing and the runtime window come before torch.compile: a task outside the window is dropped
        # without paying for its compilation (most of a validation's time).
        mark("checks")
        if timed:
            # A warm call far past the window's top ends the timing there: the remaining calls would hold the GPU's
            # exclusive timing lock, and every other candidate's GPU work, for seconds.
            with torch.no_grad():
                m["eager_ms"] = round(
                    _median_ms(
                        lambda: model(*xs), device, 3, trials, give_up, (lambda: gpu(True), lambda: gpu(False))
                    ),
                    4,
                )
            mark("eager_timing")
            if device.startswith("cuda"):
                m["runtime_window_checked"] = True
                if lo <= m["eager_ms"] <= hi:
                    ok("runtime_window")
                else:
                    fail("runtime_window", f"eager {m['eager_ms']} ms outside [{lo}, {hi}]")
            else:
                checks["runtime_window"] = None  # never faked: CPU times say nothing about the GPU window
        failed_so_far = any(v is False for v in checks.values())
        # torch.compile must run and agree with eager.
        if p.get("check_compile", True) and (run_all or not failed_so_far):
            try:
                import os

                import torch._inductor.config as inductor_config

                # The parent probed the vector ISA once (probing spawns the interpreter, which candidates may not).
                if os.environ.get("TORCHINDUCTOR_VEC_ISA_OK") in ("0", "1"):
                    inductor_config.cpp.vec_isa_ok = os.environ["TORCHINDUCTOR_VEC_ISA_OK"] == "1"
                torch._dynamo.reset()
                cmodel = torch.compile(model)
                t0 = time.perf_counter()
                # The first call is seconds of compilation on the CPU and a few GPU calls at its end. It holds no
                # lock (as the evaluator's compile baseline): holding the shared lock through it made every timing
                # wait for every compilation in flight, and every other candidate's GPU work wait behind that timing.
                with torch.no_grad():
                    cout = _flat(cmodel(*xs))
                m["compile_s"] = round(time.perf_counter() - t0, 3)
                mark("compile")
                ok("compile_runs")
            except Exception as e:
                if _is_oom(e):
                    raise
                cmodel = None
                fail("compile_runs", f"{type(e).__name__}: {str(e)[-300:]}")
            if cmodel is not None:
                sealed["c"] = _sample(cout)
                mabs, mrel, _ = _errors(cout, out)
                m["max_abs_err"], m["max_rel_err"] = mabs, mrel
                fail("compile_agree", f"max abs {mabs}, max rel {mrel}") if not _close(cout, out, atol, rtol) else ok(
                    "compile_agree"
                )
        else:
            checks["compile_runs"] = checks["compile_agree"] = None
            cmodel = None
        # The compiled model's time, and memory.
        if timed:
            if cmodel is not None and checks.get("compile_agree"):
                # Warm-up without the lock, as the first call: a compiled forward that compiles again (guards that
                # fail on every call, up to dynamo's limit) is compilation, and would hold the GPU to itself.
                with torch.no_grad():
                    m["compile_ms"] = round(
                        _median_ms(
                            lambda: cmodel(*xs),
                            device,
                            3,
                            trials,
                            give_up,
                            (contextlib.nullcontext, lambda: gpu(False)),
                        ),
                        4,
                    )
                mark("compiled_timing")
            if device.startswith("cuda"):
                m["peak_memory_mb"] = round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)
            else:
                import resource

                m["peak_memory_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
            limit = p.get("max_memory_mb")
            if limit and m["peak_memory_mb"] > limit:
                fail("memory", f"peak {m['peak_memory_mb']} MiB > {limit}")
            else:
                ok("memory")
    except _Stop as s:
        return _finish(m, str(s), details.get(str(s), ""))
    return _finish(m, None, "")


def _finish(m: dict[str, Any], stopped: str | None, detail: str) -> dict[str, Any]:
    if stopped:
        m["checks"][stopped] = False
        m["details"].setdefault(stopped, detail[:500])
    reason = ""
    for name in RUNTIME_CHECKS:
        if m["checks"].get(name) is False:
            reason = REASON_OF[name]
            break
    m["reason"] = reason
    return m


class _TraceTimeout(Exception):
    pass


def semantic_trace(code: str, tracer_source: str, budget_s: float) -> dict[str, Any]:
    """The task's semantic view for decontamination (pipeline.decontam.jailed.TRACER: a fresh copy of the task
    traced on meta tensors), made here because the task already runs here: decontamination then need not trace it
    again. Within `budget_s` (a repeating alarm: a forward that swallows one still gets the next); whatever goes
    wrong is the trace's failure, never the validation's. Written where the task ran: as untrusted as
    decontamination's own trace (a task can misreport only about itself)."""
    import signal

    def expired(*_: Any) -> None:
        raise _TraceTimeout()

    t0, c0 = time.monotonic(), time.process_time()
    rec: dict[str, Any] = {"ok": False, "reason": "timeout"}
    old = signal.signal(signal.SIGALRM, expired)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, max(budget_s, 0.01), 0.05)
            ns: dict[str, Any] = {"__name__": "tracer", "PAYLOAD": {}}
            exec(compile(tracer_source, "<tracer>", "exec"), ns)
            rec = ns["trace"](code)
        except _TraceTimeout:
            raise
        except BaseException as e:  # noqa: BLE001 - the task's code ran: anything can come out of it
            rec = {"ok": False, "reason": "exception", "error": f"{type(e).__name__}: {e}"[:300]}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _TraceTimeout:
        rec = {"ok": False, "reason": "timeout"}
    signal.signal(signal.SIGALRM, old)
    if not isinstance(rec, dict):
        rec = {"ok": False, "reason": "bad_result"}
    rec["wall_s"] = round(time.monotonic() - t0, 4)
    rec["cpu_s"] = round(time.process_time() - c0, 4)
    rec["limit_s"] = budget_s
    return rec


_STARTED = time.monotonic()


def main(payload: dict[str, Any], emit, tracer_source: str | None = None) -> None:
    """Sandbox entry point: `run_sandboxed(HARNESS_SOURCE, payload=...)` ends by calling this. The output samples
    go to `payload["sealed_path"]` (written with the torch.save captured before the candidate ran); the report,
    without them, over the channel. A valid task's semantic trace (`tracer_source`, within `trace_s` and the time
    the sandbox has left) goes into the report as `semantic_trace`."""
    m = check(payload, emit)
    sealed, save = m.pop("sealed", {}), m.pop("_save", None)
    if payload.get("sealed_path") and save is not None and sealed:
        save(sealed, payload["sealed_path"])  # before the trace runs the task's code once more
    budget = min(
        float(payload.get("trace_s", 0.0)),
        float(payload.get("timeout_s", 120.0)) - (time.monotonic() - _STARTED) - 5.0,
    )
    if tracer_source and m["reason"] == "" and float(payload.get("trace_s", 0.0)) > 0:
        late = {"ok": False, "reason": "timeout", "limit_s": 0.0}  # no time left: decontamination traces it
        rec = semantic_trace(payload["code"], tracer_source, budget) if budget > 0.5 else late
        m["phase_s"]["trace"] = rec.get("wall_s", 0.0)
        try:
            import json

            text = json.dumps(rec)
            m["semantic_trace"] = text if len(text) <= TRACE_MAX_BYTES else None
        except Exception:  # noqa: BLE001 - not JSON, too deep: no trace; the verdict still goes out
            m["semantic_trace"] = None
    emit(m)
