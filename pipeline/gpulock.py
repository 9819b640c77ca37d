"""One GPU's lock, taken by every process that uses the GPU: a timed region holds it exclusive, other GPU work (the
LLM engine's generate steps, reference outputs, set-up and verification calls) holds it shared.
So timings never overlap other GPU work, and untimed work runs side by side instead of queueing behind it.

An `flock` on one file per GPU: the kernel drops it when its holder dies (a killed job never blocks the GPU), and it
works on a read-only descriptor, so a jailed process given the file read-only can take it (the files are made
readable by every uid). Each `GpuLock` opens its own descriptors: flocks on different open files exclude each other
even within one process. flock prefers no one, so a stream of overlapping shared holders could starve a timing; a
second file is a turnstile every taker passes (exclusive, briefly): a timing waiting for the lock holds it, so no new
shared holder gets in before the timing. A holder releases what it holds before it passes the turnstile again (a
change between shared and exclusive), so no one waits on the turnstile while holding the lock: no deadlock.

Stdlib only: imported inside the jail and on the GPU image, and pasted into the validation harness
(pipeline.inlining).
"""

from __future__ import annotations

# ---- inlined: from here
import fcntl
import os
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator


def lock_path(gpu_ids: str | None = None) -> str:
    """The lock file of this process's GPU(s) (CUDA_VISIBLE_DEVICES), the same path for every consumer on a host."""
    gpu = (gpu_ids if gpu_ids is not None else os.environ.get("CUDA_VISIBLE_DEVICES", "all")).replace(",", "_")
    return os.path.join(tempfile.gettempdir(), "opforge-gpu-locks", f"gpu-{gpu or 'none'}.lock")


def _turnstile(path: str) -> str:
    return path + ".turn"


def ensure(path: str) -> str:
    """Create the lock files readable by every uid (jailed jobs run under uids of their own); returns `path`."""
    d = os.path.dirname(path)
    os.makedirs(d, mode=0o755, exist_ok=True)
    for p, mode in ((d, 0o755), (path, 0o644), (_turnstile(path), 0o644)):
        if p != d:
            os.close(os.open(p, os.O_RDONLY | os.O_CREAT, 0o644))
        try:
            os.chmod(p, mode)
        except OSError:  # another uid's file: its creator made it readable
            pass
    return path


class GpuLock:
    """A holder of the lock at `path` (None: no lock, every call returns at once). Methods return seconds waited."""

    def __init__(self, path: str | None) -> None:
        self.path = path or None
        self._fd: int | None = None
        self._turn: int | None = None

    def _take(self, how: int) -> float:
        if not self.path:
            return 0.0
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
                self._turn = os.open(_turnstile(self.path), os.O_RDONLY)
            except FileNotFoundError:
                ensure(self.path)  # outside the jail; inside, the trusted side made them
                return self._take(how)
        t = time.perf_counter()
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        fcntl.flock(self._turn, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._fd, how)
        finally:
            fcntl.flock(self._turn, fcntl.LOCK_UN)
        return time.perf_counter() - t

    def shared(self) -> float:
        return self._take(fcntl.LOCK_SH)

    def exclusive(self) -> float:
        return self._take(fcntl.LOCK_EX)

    def downgrade(self) -> float:
        """From exclusive to shared without passing the turnstile: nobody else holds the lock, so Linux converts it
        in place. Passing the turnstile instead queued a finished timing behind every timing waiting then, so with
        several evaluations in flight none got its verdict before the last timing ended. Falls back to `shared()`
        where the conversion did not hold (not exclusive, or another kernel's flock semantics)."""
        if not self.path or self._fd is None:
            return self.shared()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return 0.0
        except BlockingIOError:
            return self.shared()

    def timing_waits(self) -> bool:
        """Whether someone waits to take the lock exclusive now (a timing queued behind the shared holders). True
        where that cannot be read (a holder then lets go, to be safe)."""
        if not self.path:
            return False
        try:
            return any(ln.startswith("->") and " WRITE " in ln for ln in lock_records(self.path))
        except OSError:
            return True

    @property
    def holds(self) -> bool:
        """Whether this holder has the lock (shared or exclusive) now: from a take to its release."""
        return self._fd is not None

    def release(self) -> None:
        for fd in (self._fd, self._turn):
            if fd is not None:
                os.close(fd)
        self._fd = self._turn = None


def lock_records(path: str) -> list[str]:
    """The flocks on the lock file at `path` now, read passively from /proc/locks (no lock taken to probe): a holder's
    line reads "FLOCK ADVISORY READ|WRITE ...", a blocked request's "-> FLOCK ADVISORY WRITE ..." (OSError where
    /proc/locks cannot be read)."""
    return records_of([os.stat(path).st_ino])[0]


def records_of(inodes: list[int]) -> list[list[str]]:
    """`lock_records` of several lock files (by inode) from one read of /proc/locks."""
    tags = [f":{ino} " for ino in inodes]
    out: list[list[str]] = [[] for _ in inodes]
    with open("/proc/locks") as f:
        for ln in f.read().splitlines():
            for k, tag in enumerate(tags):
                if tag in ln:
                    out[k].append(ln.split(":", 1)[1].strip())
    return out


@contextmanager
def held(path: str | None, *, shared: bool) -> Iterator[list[float]]:
    """Hold the lock for a block; yields [seconds waited]."""
    lock = GpuLock(path)
    try:
        yield [round(lock.shared() if shared else lock.exclusive(), 4)]
    finally:
        lock.release()


# ---- inlined: to here
