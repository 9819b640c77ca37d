"""Train/validation assignment by a salted hash of the task id: deterministic, and no task is in both splits."""

from __future__ import annotations

import hashlib


def split_of(task_id: str, validation_fraction: float, salt: str = "opforge-split-v1") -> str:
    """'validation' for a stable `validation_fraction` share of task ids, else 'train'."""
    h = int.from_bytes(hashlib.sha256(f"{salt}\0{task_id}".encode()).digest()[:8], "big")
    return "validation" if h / 2**64 < validation_fraction else "train"
