"""One writer per run id: an exclusive `flock` on `<data_root>/locks/<run_id>.lock`, held for the whole run.

A second writer is refused with a message naming the holder (pid, host, start time, command). The kernel drops
an flock with the process that held it, so a run killed by `kill -9` or a power cut never blocks the next one, and
nothing has to be cleaned up. The file stays (removing a lock file while another process opens it races).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class RunLocked(RuntimeError):
    """Another process is writing this run."""


def lock_path(data_root: Path | str, run_id: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in run_id)
    return Path(data_root) / "locks" / f"{safe}.lock"


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 65536).decode() or "{}")
    except (OSError, ValueError):
        return {}


def describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "a process that has not recorded itself yet"
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}" + (
        f" ({holder['command']})" if holder.get("command") else ""
    )


@dataclass
class RunLock:
    run_id: str
    path: Path
    fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        # `holder()` probes with a shared lock for an instant: a few quick retries get past a probe, never past a
        # writer (which holds its lock for the whole run).
        for attempt in range(5):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == 4:
                    holder = _read_holder(fd)
                    os.close(fd)
                    raise RunLocked(
                        f"run {self.run_id} is being written by {describe(holder)}; lock {self.path}. "
                        "Wait for it to finish (or stop it); a dead holder's lock is released by the "
                        "system."
                    ) from None
                time.sleep(0.02)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "run_id": self.run_id,
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:300],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> "RunLock":
        return self.acquire() if self.fd is None else self

    def __exit__(self, *exc: object) -> None:
        self.release()


def run_lock(data_root: Path | str, run_id: str) -> RunLock:
    """`with run_lock(root, run_id): ...` holds the run's lock for the block (raises RunLocked if held)."""
    return RunLock(run_id, lock_path(data_root, run_id))


def holder(data_root: Path | str, run_id: str) -> dict[str, Any] | None:
    """Who holds the run's lock now (None when nobody does, or the run never took one)."""
    path = lock_path(data_root, run_id)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or {"pid": None}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
