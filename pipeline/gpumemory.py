"""Shares of one GPU's memory for the candidates validated side by side on it.

The GPU's memory is cut into `SLOTS` equal slots, one file each; a candidate's process runs while its parent holds
`flock`s on as many slot files as its share needs, and the candidate caps its allocator at that share. So the
candidates on a GPU never ask for more memory than it has together, and a big task waits for room instead of
failing beside others. The kernel drops a dead holder's flocks, so a killed job never keeps its slots.

Claims pass one turnstile file (exclusive, while taking slots): the claimant holding it takes free slots and then
the slots that running jobs free, whichever end first, until it has enough. Only the turnstile's holder waits while
holding slots, and every other holder is a running job that frees its slots when it ends: no deadlock, and a big
claim is not starved by a stream of small ones (they queue behind it at the turnstile).

Only trusted parents take these files: they live outside the directory that jailed processes see (the GPU's lock,
pipeline.gpulock), so a candidate cannot hold slots to stall the others.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
from contextlib import contextmanager
from typing import Callable, Iterator

SLOTS = 64
POLL_MAX_S = 0.05  # the longest pause of a claim waiting for slots (a job runs for seconds)
ROOM_FACTOR = 1.25  # free GPU memory, against what a failed process needed, for a second try beside others
# The longest wait for that room: new jobs keep starting beside a busy GPU's, and a claim of every slot (the
# turnstile) is the one that they queue behind.
ROOM_WAIT_S = 60.0


_GIB = {"B": 2**-30, "KiB": 2**-20, "MiB": 2**-10, "GiB": 1.0, "TiB": 2**10}


def oom_figures(message: str) -> dict[str, float | None]:
    """GiB figures of torch's out-of-memory message: `asked` (the failed request), `in_use` (the process's, with
    non-PyTorch memory), `allocated` (by PyTorch), `total` (the GPU's capacity); None where the message lacks one.
    The message is the failing process's own: a lie changes only how its own retry is placed."""

    def gib(pattern: str) -> float | None:
        m = re.search(pattern + r"\s*([0-9.]+)\s*(B|KiB|MiB|GiB|TiB)", message or "")
        try:
            return float(m.group(1)) * _GIB[m.group(2)] if m else None
        except ValueError:
            return None

    return {
        "asked": gib(r"Tried to allocate"),
        "in_use": gib(r"this process has"),
        "allocated": gib(r"Of the allocated memory"),
        "total": gib(r"total capacity of"),
    }


def free_gib() -> float | None:
    """The GPU's free memory now (this process's first visible GPU), GiB; None where it cannot be read. Asked only
    after a failure: the query makes this process a CUDA context if it has none."""
    try:
        import torch

        return torch.cuda.mem_get_info()[0] / 2**30 if torch.cuda.is_available() else None
    except Exception:  # noqa: BLE001 - a broken driver: unknown
        return None


def memory_dir(gpu_ids: str | None = None) -> str:
    """The slot files' directory of this process's GPU(s) (CUDA_VISIBLE_DEVICES), the same for every parent on a
    host."""
    gpu = (gpu_ids if gpu_ids is not None else os.environ.get("CUDA_VISIBLE_DEVICES", "all")).replace(",", "_")
    return os.path.join(tempfile.gettempdir(), "opforge-gpu-memory", f"gpu-{gpu or 'none'}")


def slots_for(fraction: float) -> int:
    """Slots that hold at least `fraction` of the GPU's memory (at least one, at most all)."""
    return max(1, min(SLOTS, int(-(-fraction * SLOTS // 1))))


def _open(path: str) -> int:
    # Read-only descriptors take flocks too, so files readable by every uid serve every user's runs on the host.
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        os.fchmod(fd, 0o644)
    except OSError:  # another uid's file: its creator made it readable
        pass
    return fd


@contextmanager
def claimed(slots: int, directory: str | None = None) -> Iterator[float]:
    """Hold `slots` of the GPU's memory slots for a block (all of them at most); yields the seconds waited."""
    d = directory or memory_dir()
    os.makedirs(d, mode=0o755, exist_ok=True)
    want = max(1, min(SLOTS, slots))
    t0 = time.perf_counter()
    turn = _open(os.path.join(d, "turnstile"))
    fds: list[int] = []
    held: list[int] = []
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)
        try:
            for i in range(SLOTS):  # appended one by one: a failure midway closes those opened (finally)
                fds.append(_open(os.path.join(d, f"slot-{i}")))
            for fd in fds:
                if len(held) == want:
                    break
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held.append(fd)
                except BlockingIOError:
                    pass
            # The rest from whichever running jobs end first (each frees its slots when it ends): every busy slot is
            # tried in turn, the pause between rounds growing to POLL_MAX_S. Blocking on one given slot instead held
            # the turnstile, and every claim behind it, for as long as that slot's job ran while others stood free.
            busy = [fd for fd in fds if fd not in held]
            pause = 0.002
            while len(held) < want:
                for fd in list(busy):
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue
                    busy.remove(fd)
                    held.append(fd)
                    if len(held) == want:
                        break
                else:
                    time.sleep(pause)
                    pause = min(POLL_MAX_S, pause * 2)
        finally:
            fcntl.flock(turn, fcntl.LOCK_UN)
            os.close(turn)
            for fd in fds:
                if fd not in held:
                    os.close(fd)
        yield round(time.perf_counter() - t0, 4)
    finally:
        for fd in held:
            os.close(fd)  # closing the descriptor drops its flock


def slots_held(directory: str | None = None) -> int:
    """How many of the GPU's memory slots some process holds now, read passively from /proc/locks
    (`gpulock.records_of`, one read for every slot; 0 where it cannot be read). Read on a failed judgement only."""
    from pipeline.gpulock import records_of

    d = directory or memory_dir()
    inodes = []
    for i in range(SLOTS):
        try:
            inodes.append(os.stat(os.path.join(d, f"slot-{i}")).st_ino)
        except OSError:  # no such slot file yet
            pass
    try:
        return sum(any(not ln.startswith("->") for ln in recs) for recs in records_of(inodes))
    except OSError:  # no /proc/locks
        return 0


def room_beside_others(
    message: str, limit_s: float, directory: str | None = None, free: Callable[[], float | None] | None = None
) -> dict | None:
    """After a process ran out of GPU memory beside other jobs: waits until the GPU's free memory is ROOM_FACTOR x
    what it needed (its out-of-memory `message`: what it held plus what it asked for) and returns what was seen then.
    None where that cannot be told (no figures in the message, no free-memory reading) or cannot come (more than the
    GPU's capacity), where every memory slot fell free first (a run with every slot then waits no longer, and is
    sure), or after `limit_s`. Others ending one by one comes sooner than all of them."""
    free = free or free_gib
    f = oom_figures(message)
    held = f["in_use"] if f["in_use"] is not None else f["allocated"]
    if f["asked"] is None or held is None or limit_s <= 0:
        return None
    want = ROOM_FACTOR * (held + f["asked"])
    if f["total"] and want > f["total"]:
        return None  # more than the GPU has: no room comes beside anyone
    t0 = time.monotonic()
    pause = 0.05
    while True:
        now = free()
        if now is None:
            return None
        if now >= want:
            return {
                "needed_gib": round(want, 2),
                "free_gib": round(now, 2),
                "waited_s": round(time.monotonic() - t0, 3),
            }
        if slots_held(directory) == 0 or time.monotonic() - t0 > limit_s:
            return None
        time.sleep(pause)  # jobs end in seconds; a reading costs a driver call
        pause = min(1.0, pause * 2)
