"""Build artifacts the candidate cannot swap (stdlib only; trusted side).

A build (`build.compile_solution`) lands in a content-addressed place of the cache (workspace: builds/<hash of the
objects' keys, flags and compiler>/cuda_extension.so; single file: extensions/<hash of the source, arch, torch>/).
Right after the build, the trusted side seals it: the sha256 of every file is recorded in
`<cache>/manifests/<sha of the artifact path>.json`, a directory no jail ever mounts writable (first seal wins;
created exclusively). Before a candidate process starts, the artifact is copied into the candidate's private work
dir and the COPY is checked against the manifest (no window between check and use), so a cache entry changed
after its build (by anything) is refused (`artifact_tampered`) instead of loaded.

Builds of single-file solutions run torch's load_inline, which guards its build dir with a FileBaton (`lock`
file, left behind forever when the builder dies: every later build of that source waited for it). `compile_locked`
serialises builds of one source with an flock (released when its holder dies) and removes stale batons under it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from pipeline.evaluate.options import EvalOptions

_SKIP = {"lock", ".ninja_lock"}


def _sha_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_hashes(artifact: str | os.PathLike) -> dict[str, str]:
    """sha256 of every regular file of the artifact (a file, or a directory walked without following links)."""
    a = Path(artifact)
    if a.is_file():
        return {a.name: _sha_file(a)}
    out = {}
    for root, dirs, files in os.walk(a, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            p = Path(root) / name
            if name in _SKIP or p.is_symlink() or not p.is_file():
                continue
            out[str(p.relative_to(a))] = _sha_file(p)
    return out


def _manifest_path(cache_dir: str | os.PathLike, artifact: str | os.PathLike) -> Path:
    key = hashlib.sha256(os.path.realpath(artifact).encode()).hexdigest()[:40]
    return Path(cache_dir) / "manifests" / f"{key}.json"


def seal(cache_dir: str | os.PathLike, artifact: str | os.PathLike) -> dict[str, str]:
    """Record the artifact's hashes (once; an existing manifest is kept) and return the recorded ones."""
    mp = _manifest_path(cache_dir, artifact)
    if mp.is_file():
        return json.loads(mp.read_text())["files"]
    hashes = file_hashes(artifact)
    mp.parent.mkdir(parents=True, exist_ok=True)
    tmp = mp.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps({"artifact": os.path.realpath(artifact), "files": hashes}))
    try:
        os.link(tmp, mp)  # exclusive: a concurrent sealer's manifest wins and ours is dropped
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return json.loads(mp.read_text())["files"]


def private_copy(cache_dir: str | os.PathLike, artifact: str | os.PathLike, dest: str | os.PathLike) -> str:
    """Copy the sealed artifact to `dest` (mtimes kept: ninja sees an up-to-date build) and check the copy
    against the manifest; '' when they agree, else why not."""
    mp = _manifest_path(cache_dir, artifact)
    if not mp.is_file():
        return "the artifact was never sealed"
    want = json.loads(mp.read_text())["files"]
    a, d = Path(artifact), Path(dest)
    if a.is_file():
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy2(a, d / a.name)
    else:
        shutil.copytree(
            a, d, symlinks=True, ignore=lambda _, names: [n for n in names if n in _SKIP], dirs_exist_ok=True
        )
    got = file_hashes(d)
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))
        return "the artifact differs from its build record: " + ", ".join(sorted({k for k, _ in diff}))[:300]
    return ""


@contextlib.contextmanager
def flocked(path: str | os.PathLike):
    """An exclusive flock on `path` for the block; the kernel drops it when the holder dies (no stale lock)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def compile_locked(
    path: str | os.PathLike,
    cache_dir: str | os.PathLike,
    *,
    arch_list: str,
    timeout: float,
    slim_headers: bool = True,
    memory_mb: int = EvalOptions.build_memory_mb,
) -> Any:
    """`build.compile_solution` under a per-source flock, stale FileBatons removed, then sealed."""
    from pipeline.evaluate.build import compile_solution

    p = Path(path)
    src = p.read_bytes() if p.is_file() else b"workspace:" + str(p.resolve()).encode()
    lock = Path(cache_dir) / "locks" / f"build-{hashlib.sha256(src).hexdigest()[:32]}.lock"
    with flocked(lock):
        if p.is_file():
            remove_stale_batons(Path(cache_dir), src, arch_list)
        cr = compile_solution(
            p, cache_dir, arch_list=arch_list, timeout=timeout, slim_headers=slim_headers, memory_mb=memory_mb
        )
        if cr.ok and cr.artifact:
            seal(cache_dir, cr.artifact)
    return cr


def remove_stale_batons(cache_dir: Path, src: bytes, arch_list: str) -> list[str]:
    """torch FileBatons left in this source's extension dir by a builder that died. Builds of that dir run only
    under the caller's flock, so any baton found there is stale."""
    try:
        import torch

        from pipeline.evaluate.build import _sha
    except ImportError:
        return []
    ext_dir = cache_dir / "extensions" / _sha(src, arch_list, torch.__version__)
    removed = []
    for baton in ext_dir.glob("*/lock"):
        baton.unlink(missing_ok=True)
        removed.append(str(baton))
    return removed
