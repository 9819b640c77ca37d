"""The data card's speedup-distribution plot (matplotlib, headless)."""

from __future__ import annotations

import math
from pathlib import Path


def speedup_plot(all_speedups: list[float], kept: list[float], threshold: float, path: Path) -> Path | None:
    """Histogram (log-x) of final-kernel speedups over torch.compile, all vs kept; None when there is no data."""
    vals = [v for v in all_speedups if v and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    keep = [v for v in kept if v and v > 0 and math.isfinite(v)]
    lo, hi = min(vals + [threshold]) * 0.9, max(vals + [threshold]) * 1.1
    bins = np.geomspace(lo, hi, 30)
    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    ax.hist(vals, bins=bins, color="#9aa7b8", label=f"all trajectories with a timed correct kernel ({len(vals)})")
    if keep:
        ax.hist(keep, bins=bins, color="#2b6cb0", label=f"kept for SFT ({len(keep)})")
    ax.axvline(threshold, color="#c53030", linestyle="--", label=f"threshold {threshold}x")
    ax.set_xscale("log")
    # Readable ticks ("1.5x") instead of powers of ten, which a 0.5x-5x range barely spans.
    nice = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)
    ticks = [t for t in nice if lo <= t <= hi]
    ax.set_xticks(ticks or [threshold])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("final kernel speedup over torch.compile (log scale)")
    ax.set_ylabel("trajectories")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
