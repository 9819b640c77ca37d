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


def source_dirs(roots: tuple[str, ...], package_dir: str) -> list[str]:
    """What a job's imports come from and the jail shows it: the stdlib and the site dirs that lie under `roots`
    (the interpreter's dirs the jail binds; never the host's temp dir or the checkout), and this project's package."""
    paths = sysconfig.get_paths()
    dirs = [paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"]]
    dirs += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    dirs += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]

    def bound(d: str) -> bool:
        return any(d == r or d.startswith(r.rstrip("/") + "/") for r in roots)

    real = [os.path.realpath(d) for d in dirs if d and os.path.isabs(d)]
    out = [d for d in dict.fromkeys(real) if os.path.isdir(d) and bound(d)]
    return out + [os.path.realpath(package_dir)]


# Run as `python -I -c FILL prefix dir...` from "/": isolated (no PYTHON* variables, no cwd or user site on its
# path), so the compiler's own imports never come from the tree it writes or from a dir someone else controls. Each
# source goes where CPython looks under a pycache prefix; a file whose entry is up to date (its source's mtime and
# size in the header) is skipped; one that does not compile is left to Python to report when something imports it.
FILL = r"""
import concurrent.futures as cf, importlib.util, os, py_compile, re, sys
prefix, dirs = sys.argv[1], sys.argv[2:]
skip = re.compile(SKIP)
magic = importlib.util.MAGIC_NUMBER

def target(src):
    sys.pycache_prefix = prefix  # only for the path: nothing is imported while it is set
    try:
        return importlib.util.cache_from_source(src)
    finally:
        sys.pycache_prefix = None

def one(src):
    try:
        st = os.stat(src)
        dst = target(src)
        head = magic + (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        head += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
        try:
            with open(dst, "rb") as f:
                if f.read(16) == head:
                    return 0
        except OSError:
            pass
        py_compile.compile(src, cfile=dst, dfile=src, doraise=True)
        return 1
    except Exception:
        return 0

def batch(files):
    return sum(one(f) for f in files)

files = []
for d in dirs:
    for root, subdirs, names in os.walk(d):  # symlinked dirs are not followed
        files += [os.path.join(root, n) for n in names if n.endswith(".py") and not skip.search(os.path.join(root, n))]
files = [f for f in files if os.path.isfile(f)]
chunks = [files[i : i + 200] for i in range(0, len(files), 200)]
with cf.ProcessPoolExecutor(max(1, min(16, os.cpu_count() or 1))) as ex:
    print(sum(ex.map(batch, chunks)), len(files))
""".replace("SKIP", repr(r"/python3[.0-9]*/(test|idlelib|lib2to3|tkinter|turtledemo)/"))
FILL_TIMEOUT_S = 900.0


def fill(prefix: Path, dirs: list[str]) -> bool:
    """Compile every source under `dirs` into `prefix`, in a separate isolated interpreter (no fork of a threaded
    parent); True when it finished."""
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        r = subprocess.run(
            [sys.executable, "-I", "-c", FILL, str(prefix), *dirs],
            cwd="/",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=FILL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return False
    return r.returncode == 0


def _stamp(dirs: list[str]) -> str:
    # A dir's mtime changes when a package is installed into it or removed: then the tree is brought up to date.
    return json.dumps({d: os.stat(d).st_mtime_ns for d in dirs}, sort_keys=True)


def _open_nofollow(path: Path, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)


def ensure(prefix: Path, dirs: list[str]) -> bool:
    """Bring `prefix` up to date with `dirs` once for every parent on the host (under a lock); False where it cannot
    be written or filled. Its control files are never opened through a symlink."""
    try:
        prefix.mkdir(parents=True, exist_ok=True)
        stamp = _stamp(dirs)
        done = prefix / "done.json"
        lock = _open_nofollow(prefix / ".lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                fd = _open_nofollow(done, os.O_RDONLY)
                with os.fdopen(fd) as f:
                    current = f.read() == stamp
            except FileNotFoundError:
                current = False
            if not current:
                if not fill(prefix, dirs):
                    return False
                tmp = prefix / f".done.{os.getpid()}"
                with os.fdopen(_open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as f:
                    f.write(stamp)
                os.replace(tmp, done)
        finally:
            os.close(lock)
        return True
    except OSError:
        return False


def overlaps(tree: str, writable: list[str]) -> bool:
    """Whether a job's writable dir is the tree, lies in it or holds it: such a job could change what later jobs
    load, so it gets no tree."""
    t = os.path.realpath(tree).rstrip("/") + "/"
    return any(
        t.startswith(w.rstrip("/") + "/") or (w.rstrip("/") + "/").startswith(t)
        for w in map(os.path.realpath, writable)
    )


@functools.cache
def prefix(package_dir: str, roots: tuple[str, ...]) -> str | None:
    """The bytecode tree jobs read (PYTHONPYCACHEPREFIX), made if needed; None where the environment has its
    bytecode or the tree cannot be made (jobs then compile in memory, as before). `roots`: the interpreter's dirs the
    jail binds (sandbox._python_roots). $OPFORGE_JAIL_PYCACHE: auto (default), on, off; $OPFORGE_JAIL_PYCACHE_DIR:
    the tree (default ~/.cache/opforge/pycache/<python tag>)."""
    mode = os.environ.get("OPFORGE_JAIL_PYCACHE", "auto")  # auto | on | off
    if mode == "off" or (mode != "on" and not needed()):
        return None
    where = Path(os.environ.get("OPFORGE_JAIL_PYCACHE_DIR") or default_dir())
    return str(where) if ensure(where, source_dirs(roots, package_dir)) else None
