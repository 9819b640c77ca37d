"""The trusted side's cross-check of GPU times reported by the candidate process (stdlib only).

For every timed call the trusted side measures its own wall clock `w` around the request (send the command ->
read the reply); the candidate process reports the call's GPU time `t`. What the wall clock holds beyond `t` is
the per-call overhead: the pipe, drawing the inputs, the L2 flush, synchronisation, the output digest. That
overhead is calibrated BEFORE any candidate code is loaded, in the same process and with the same loop around a
no-op (`null` calls), giving per-call overheads `c`. Then a candidate that does work outside its timed region (or
reports times lower than it took) shows as unexplained wall time:

    u_i = w_i - t_i - median(c)

and the times are rejected (`time_inconsistent`) when median(u) exceeds
`slack = max(clock_slack_ms, clock_slack_frac * median(t), spread)`, or when any t_i exceeds w_i (a GPU time
longer than the wall clock around it is impossible). The statistic is the median because the reported figure is
the median of t: moving it takes under-reporting more than half of the calls, and that moves median(u) by as
much. A host hiccup in a few calls moves neither. (The mean of u without its largest 10% is recorded, not judged.)

`spread` depends on when `c` was measured. Null calls made by the calibrator during the timed calls (`live`) saw
the same host load as the timed calls, so the two medians differ only by sampling error: spread = 4 standard
errors of their difference. A calibration made before the timed calls (the fallback) cannot see load that came
later, so spread = 3 x IQR(c) (a noisy host widens the bound instead of failing honest kernels).
"""

from __future__ import annotations

import math
import statistics


def _iqr(xs: list[float]) -> float:
    """The interquartile range; 0 for fewer than 4 values. IQR / 1.349 is a robust standard deviation."""
    if len(xs) < 4:
        return 0.0
    q = statistics.quantiles(xs, n=4)
    return q[2] - q[0]


def check_clock(
    walls_ms: list[float],
    times_ms: list[float],
    calib_ms: list[float],
    *,
    slack_ms: float,
    slack_frac: float,
    live: bool = False,
) -> tuple[bool, str, dict]:
    """(ok, detail, figures). `calib_ms`: wall - reported time of the null calls. `live`: they were made during
    the timed calls (the calibrator, docs/judge.md), so both samples saw the same load and only the sampling
    error of the two medians is allowed for (4 standard errors) instead of 3 x the calibration's IQR."""
    fig: dict = {"n": len(times_ms)}
    if not times_ms or len(walls_ms) != len(times_ms):
        return False, "no timed calls to check", fig
    if any(not (isinstance(t, (int, float)) and math.isfinite(t) and t >= 0) for t in times_ms):
        return False, "a reported time is not a finite non-negative number", fig
    over = [(i, t, w) for i, (t, w) in enumerate(zip(times_ms, walls_ms)) if t > w]
    if over:
        i, t, w = over[0]
        return False, f"call {i} reported {t:.4f} ms of GPU time inside {w:.4f} ms of wall clock", fig
    base = statistics.median(calib_ms) if calib_ms else 0.0
    iqr = _iqr(calib_ms)
    unexplained = sorted(w - t - base for t, w in zip(times_ms, walls_ms))
    keep = unexplained[: max(1, math.ceil(0.9 * len(unexplained)))]
    med_t = statistics.median(times_ms)
    # Standard error of a median ~ 1.2533 sigma / sqrt(n); of the difference of two independent medians, combined.
    se = 1.2533 * math.sqrt(
        (_iqr(unexplained) / 1.349) ** 2 / len(unexplained) + (iqr / 1.349) ** 2 / max(1, len(calib_ms))
    )
    spread = 4.0 * se if live else 3.0 * iqr
    slack = max(float(slack_ms), float(slack_frac) * med_t, spread)
    fig.update(
        median_difference_se_ms=round(se, 5),
        overhead_ms=round(base, 5),
        median_unexplained_ms=round(statistics.median(unexplained), 5),
        trimmed_mean_unexplained_ms=round(statistics.fmean(keep), 5),
        slack_ms=round(slack, 5),
        calibration_iqr_ms=round(iqr, 5),
        median_time_ms=med_t,
        median_wall_ms=statistics.median(walls_ms),
    )
    if fig["median_unexplained_ms"] > slack:
        return (
            False,
            (
                f"wall clock per call exceeds reported GPU time + calibrated overhead ({base:.4f} ms) by "
                f"{fig['median_unexplained_ms']:.4f} ms (median), more than the slack {slack:.4f} ms"
            ),
            fig,
        )
    return True, "", fig


def off_stream(dev_ms: float, stream_ms: float, sync_ms: float, ratio: float, min_ms: float) -> str:
    """Why the medians say that work ran outside the call's CUDA stream ("" when they do not): the stream-ordered
    time (events around the call on its stream) is below `ratio` of the device-synchronised time (to an event after
    a device-wide synchronize), by more than `min_ms`. The device-synchronised time also holds the host's return
    from the synchronize, which is no work of the call: on a loaded host tenths of a ms, more than a short kernel
    itself. `sync_ms`, the same gap in null calls (no work at all), is taken off first."""
    sync = max(0.0, sync_ms)
    work = dev_ms - sync
    if stream_ms < ratio * work and work - stream_ms > min_ms:
        return (
            f"stream-ordered {stream_ms:.4f} ms vs device-synchronised {dev_ms:.4f} ms (of which {sync:.4f} ms the "
            "host's return from a synchronize with no work): work ran outside the current stream"
        )
    return ""
