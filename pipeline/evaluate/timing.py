"""GPU timing (torch + stdlib only): CUDA events, device-wide synchronize, L2 flush, fresh inputs per call.

`Timer` captures the C-level event and synchronize functions when it is built, before any candidate code is
loaded, so a candidate that later patches `torch.cuda.Event`, `torch.cuda.synchronize` or `time.perf_counter`
does not change how it is timed (the patch itself is reported by the worker's integrity check).

Each timed call: new input tensors (made outside the timed region; new data, and new addresses while the previous
call's tensors are still alive), L2 flushed, `start` recorded, the call, `end_stream` recorded on the current
stream, a device-wide synchronize, `end` recorded. `end` therefore waits for work on every stream; the gap between
`end_stream` and `end` exposes work pushed off the current stream. Baselines and candidates use the same code.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import torch


def stats(times: list[float]) -> dict[str, float]:
    if not times:
        return {"n": 0}
    mean = statistics.fmean(times)
    std = statistics.pstdev(times) if len(times) > 1 else 0.0
    return {
        "n": len(times),
        "median": statistics.median(times),
        "mean": mean,
        "std": std,
        "min": min(times),
        "max": max(times),
        "cv": (std / mean) if mean > 0 else math.nan,
    }


def median_halfwidth(times: list[float], z: float = 1.96) -> float:
    """Half the width of the median's ~95% confidence interval, relative to the median: from order statistics,
    so it needs no model of the times' distribution and outliers (a call that met another process's work) do
    not widen it. inf where it cannot be told."""
    n = len(times)
    med = statistics.median(times) if n else 0.0
    if n < 3 or med <= 0:
        return math.inf
    s = sorted(times)
    d = z * math.sqrt(n) / 2
    lo, hi = max(0, math.floor(n / 2 - d)), min(n - 1, math.ceil(n / 2 + d))
    return (s[hi] - s[lo]) / 2 / med


STOP_EVERY = 32  # timed calls between looks at the median's precision (timing_precision)


def known_within(times: list[float], precision: float, min_calls: int) -> float | None:
    """The median's relative half-width where the timed calls may stop early (the judge's rule, `timing_precision`:
    looked at every STOP_EVERY calls, after at least `min_calls`, and within `precision`); None where they go on.
    The judge also waits for enough of the calibrator's null calls, and then ends the run at a secret random one of
    the next STOP_EVERY calls."""
    if precision <= 0 or len(times) < max(1, min_calls) or len(times) % STOP_EVERY:
        return None
    width = median_halfwidth(times)
    return width if width <= precision else None


def log_positions(rng, n: int, k: int) -> set[int]:
    """min(k, n) distinct positions in 1..n, uniform in log position: as many in 1-10 as in 10-100, so that a run
    stopped early (timing_precision) has had most of them; drawn with the caller's secret `rng`."""
    k = min(k, n)
    if k <= 0:
        return set()
    if 2 * k >= n:  # too few to spread: a plain sample
        return set(rng.sample(range(1, n + 1), k))
    out: set[int] = set()
    top = math.log(n + 1)
    while len(out) < k:
        out.add(min(n, int(math.exp(rng.uniform(0.0, top)))))  # exp(u) >= 1: never 0
    return out


def check_positions(rng, n: int, k: int) -> set[int]:
    """min(k, n) distinct positions in 1..n for the checked timed calls: k // 2 uniform, the rest uniform in log
    position (`log_positions`). The log ones guard a run stopped early; the uniform ones a run made in full: with log
    positions alone the late part of a long run got few checks (at n = 3000, 0.11 of each in the last 60%), so a
    candidate that counted the `keep`s it was sent knew, in about one run in six, that every random check was past
    while most calls were still to come, and returned stale outputs from there without risk."""
    k = min(k, n)
    if 2 * k >= n:
        return set(rng.sample(range(1, n + 1), k)) if k > 0 else set()
    out = set(rng.sample(range(1, n + 1), k // 2))
    while len(out) < k:
        out |= log_positions(rng, n, k - len(out))
    return out


class Timer:
    def __init__(self) -> None:
        # Captured now, before candidate code is imported; the C-level methods of an immutable builtin type cannot
        # be patched later. (CPU builds of torch have no _CudaEventBase: nothing is timed there.)
        base = getattr(torch._C, "_CudaEventBase", None)
        self._base = base
        self._record = getattr(base, "record", None)
        self._elapsed = getattr(base, "elapsed_time", None)
        self._ev_sync = getattr(base, "synchronize", None)
        self._sync = getattr(torch._C, "_cuda_synchronize", None)
        self._current_stream = torch.cuda.current_stream
        self._clock = time.perf_counter  # captured before candidate code could patch it
        self.flush_buf = None
        self.device = None

    def _event_new(self):
        return self._base.__new__(self._base, enable_timing=True)

    def prepare(self, device: torch.device, l2_flush: bool = True) -> None:
        self.device = device
        if l2_flush:
            props = torch.cuda.get_device_properties(device)
            l2 = int(getattr(props, "L2_cache_size", 0) or 0) or 64 * 2**20
            # Twice the L2 size, written before every call: the previous call's data is evicted.
            self.flush_buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device=device)

    def flush(self) -> None:
        if self.flush_buf is not None:
            self.flush_buf.zero_()

    def time_call(self, fn: Callable[..., Any], args: list[Any]) -> tuple[Any, float, float]:
        """(output, device-synchronised ms, stream-ordered ms) of one call."""
        start, end_stream, end = self._event_new(), self._event_new(), self._event_new()
        self.flush()
        self._sync()
        stream = self._current_stream()
        self._record(start, stream)
        out = fn(*args)
        self._record(end_stream, stream)
        self._sync()
        self._record(end, stream)
        self._ev_sync(end)
        return out, float(self._elapsed(start, end)), float(self._elapsed(start, end_stream))

    def run(
        self,
        fn: Callable[..., Any],
        make_args: Callable[[int], list[Any]],
        *,
        warmup: int,
        trials: int,
        after_call: Callable[[int, list[Any], Any], None] | None = None,
        warmup_ms: float = 0.0,
        max_warmup_calls: int = 5000,
        min_timed_ms: float = 0.0,
        max_trials: int | None = None,
        on_plan: Callable[[int], None] | None = None,
    ) -> dict[str, Any]:
        """Warm up, then `n + 1` timed calls (the first discarded). `make_args(i)` builds call i's inputs;
        `after_call(i, args, out)` runs outside the timed region (output checks).

        Warm-up is at least `warmup` calls and at least `warmup_ms` of wall time (each call flushed, synchronised
        and timed like a timed one): a GPU that idled while the process started runs at lower clocks, and a handful
        of 0.1 ms calls does not bring it back up (speedups of short kernels then varied 10-20% between processes).
        Calls past the first `warmup` reuse those calls' inputs (make_args(-1 .. -warmup)).

        n is `trials`, raised until the timed calls add up to about `min_timed_ms` (judged by the median of the
        warm-up's last calls), at most `max_trials`: a median of 30 calls of a 0.1 ms kernel, whose single calls
        vary by 5-13% with host latency inside the timed region, moved by several percent between processes.
        `on_plan(n)` is told n before the first timed call (the caller picks which calls to check)."""
        keep_alive: list[Any] = []
        warm = max(1, warmup)
        warm_args = [make_args(-1 - i) for i in range(warm)]
        t0, n, warm_times, started = self._clock(), 0, [], time.time()
        while n < warm or ((self._clock() - t0) * 1e3 < warmup_ms and n < max_warmup_calls):
            _, t, _ = self.time_call(fn, warm_args[n % warm])
            warm_times.append(t)
            n += 1
        del warm_args
        warmup_s = self._clock() - t0
        estimate = statistics.median(warm_times[-min(len(warm_times), 50) :])
        planned = trials
        if min_timed_ms > 0 and estimate > 0:
            planned = max(trials, int(math.ceil(min_timed_ms / estimate)))
        if max_trials is not None:
            planned = max(trials, min(planned, int(max_trials)))
        if on_plan is not None:
            on_plan(planned)
        times, stream_times, at = [], [], []
        for i in range(planned + 1):
            args = make_args(i)
            t_call = self._clock()
            out, t, ts = self.time_call(fn, args)
            if after_call is not None:
                after_call(i, args, out)
            # Keep the previous call's inputs alive while the next are made: consecutive calls never share
            # addresses, so a cache keyed on pointers sees a "new" tensor with new data each time.
            keep_alive = [args]
            del out
            if i == 0:
                continue
            times.append(t)
            stream_times.append(ts)
            at.append(round(t_call - t0, 4))
        del keep_alive
        return {
            "times_ms": times,
            "stream_times_ms": stream_times,
            "stats": stats(times),
            "stream_stats": stats(stream_times),
            "warmup": n,
            "warmup_s": round(warmup_s, 4),
            "warmup_estimate_ms": estimate,
            "warmup_first_ms": statistics.median(warm_times[:20]),
            "started_at": started,
            "call_at_s": at,
            "trials": planned,
            "min_trials": trials,
            "discarded": 1,
        }


TIMING_METHOD = (
    "cuda_event: per call, fresh inputs (GPU RNG, new addresses), L2 flushed (2x L2 zeroed), start event, "
    "call, end event after a device-wide synchronize; warm-up (>= N calls and >= warmup_ms of wall time), "
    "then max(timing_trials, timing_min_ms / warm-up estimate) timed calls up to timing_max_trials, the "
    "first discarded; median ms"
)
