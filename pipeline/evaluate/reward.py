"""The reward of one evaluated kernel (CUDA Agent's scheme)."""

from __future__ import annotations

import math


def reward(
    correct: bool, speedup_vs_eager: float | None, speedup_vs_compile: float | None, margin: float = 0.05
) -> int:
    """-1 incorrect; 1 correct; 2 faster than eager by > margin; 3 faster than eager and torch.compile by > margin.

    A missing or non-finite speedup counts as "not faster" (a correct kernel without timings gets 1).
    """
    if not correct:
        return -1

    def faster(s: float | None) -> bool:
        return s is not None and math.isfinite(s) and s > 1.0 + margin

    if not faster(speedup_vs_eager):
        return 1
    return 3 if faster(speedup_vs_compile) else 2
