"""Bytecode for the Python that jailed jobs import, compiled once by the trusted side.

The jail shows the Python environment read-only, so an interpreter there cannot cache what it compiles. Where the
environment was installed without bytecode (`pip install --no-compile`, images built with PYTHONDONTWRITEBYTECODE:
the GPU image's torch has no .pyc at all), every jailed job compiled torch's sources again: seconds of CPU per job,
and more for torch.compile's modules. Here the trusted parent compiles the environment once into a private tree
(PYTHONPYCACHEPREFIX) that jobs see read-only: no candidate writes bytecode that another job loads. Compiling runs
no code of the compiled modules. Where the environment has its bytecode, nothing changes (no tree, no variable).

Stale entries are harmless: Python checks each .pyc against its source's mtime and size, and compiles in memory
when they differ.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

# Modules whose bytecode tells whether the environment has it: the jail imports all of them.
PROBES = ("json", "torch")
# The stdlib's own test suite is never imported by a job.
_SKIP = r"/python3[.0-9]*/(test|idlelib|lib2to3|tkinter|turtledemo)/"


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "opforge" / "pycache" / sys.implementation.cache_tag


def has_bytecode(origin: str) -> bool:
    """Whether a source file has its .pyc beside it (in __pycache__), whatever this process's own prefix."""
    prev = sys.pycache_prefix
    sys.pycache_prefix = None
    try:
        return os.path.exists(importlib.util.cache_from_source(origin))
    finally:
        sys.pycache_prefix = prev


def needed() -> bool:
    """Whether some module every job imports has no bytecode beside its source."""
    for name in PROBES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and spec.origin.endswith(".py") and not has_bytecode(spec.origin):
            return True
    return False


def source_dirs(extra: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The stdlib, the site dirs and `extra` (this project's package): what a job's imports come from. Not the
    checkout around the package (on PYTHONPATH for it: its data and tests are never imported in the jail)."""
    paths = sysconfig.get_paths()
    dirs = [paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"], *extra]
    dirs += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    around = {os.path.dirname(os.path.realpath(e)) for e in extra}
    real = dict.fromkeys(os.path.realpath(d) for d in dirs if d)
    return [d for d in real if os.path.isdir(d) and d not in around]


def fill(prefix: Path, dirs: list[str]) -> None:
    """Compile every source under `dirs` into `prefix` (a separate interpreter: no fork of a threaded parent). A
    file that does not compile is left to Python to report when something imports it."""
    prefix.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "compileall", "-q", "-q", "-j", "0", "-x", _SKIP, *dirs]
    subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stamp(dirs: list[str]) -> str:
    # A dir's mtime changes when a package is installed into it or removed: then the tree is brought up to date.
    return json.dumps({d: os.stat(d).st_mtime_ns for d in dirs}, sort_keys=True)


def ensure(prefix: Path, dirs: list[str]) -> bool:
    """Bring `prefix` up to date with `dirs` once for every parent on the host (under a lock); False where it cannot
    be written."""
    try:
        prefix.mkdir(parents=True, exist_ok=True)
        stamp = _stamp(dirs)
        done = prefix / "done.json"
        with open(prefix / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists() or done.read_text() != stamp:
                fill(prefix, dirs)
                done.write_text(stamp)
        return True
    except OSError:
        return False


@functools.cache
def prefix(package_dir: str) -> str | None:
    """The bytecode tree jobs read (PYTHONPYCACHEPREFIX), made if needed; None where the environment has its
    bytecode or the tree cannot be made (jobs then compile in memory, as before). $OPFORGE_JAIL_PYCACHE: auto
    (default), on, off; $OPFORGE_JAIL_PYCACHE_DIR: the tree (default ~/.cache/opforge/pycache/<python tag>)."""
    mode = os.environ.get("OPFORGE_JAIL_PYCACHE", "auto")  # auto | on | off
    if mode == "off" or (mode != "on" and not needed()):
        return None
    where = Path(os.environ.get("OPFORGE_JAIL_PYCACHE_DIR") or default_dir())
    return str(where) if ensure(where, source_dirs([package_dir])) else None
