"""Compile a solution with a content-addressed build cache (CPU side: needs nvcc, g++ and torch's headers).

Workspace solutions are built file by file: each `kernels/*.cu` with nvcc into its own object, each binding `.cpp`
(and the protected `binding.cpp`) with g++ against torch's headers, then one link into `cuda_extension.so`. Every
object is cached under the hash of what it is made of (source, the local headers it includes, flags, compiler and
torch versions, arch list), so a changed kernel costs one nvcc run (~1 s on an H200 host) plus a link, and an
unchanged workspace costs nothing. Single-file solutions (`load_inline` in the module) are built by importing them
in the sandbox with TORCH_EXTENSIONS_DIR set to a directory keyed by their source; the evaluation worker then
imports them from that directory without rebuilding. Their CUDA sources are first compiled with slim torch headers
(`SLIM_HEADERS`), and again with the real ones if that fails.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline.evaluate.options import EvalOptions
from pipeline.evaluate.workspace import EXTENSION_NAME, is_workspace

MAX_LOG_CHARS = 4000
BUILD_MEMORY_MB = EvalOptions.build_memory_mb  # its one default: the knob's
_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


@dataclass
class CompileResult:
    ok: bool
    seconds: float
    log: str  # compiler output, trimmed to the errors (what the agent reads)
    cached: bool  # nothing was rebuilt
    artifact: str  # workspace: path of cuda_extension.so; single file: its TORCH_EXTENSIONS_DIR
    kind: str = ""  # workspace | single_file
    reason: str = ""  # "" when ok; compile_error | compile_timeout | needs_cuda_torch | no_solution | ...
    arch_list: str = ""
    objects_built: list[str] = field(default_factory=list)  # sources compiled in this call
    objects_reused: list[str] = field(default_factory=list)  # sources whose cached object was reused
    step_seconds: dict = field(default_factory=dict)  # source (or "link") -> seconds
    headers: str = ""  # single file: "slim" (SLIM_HEADERS) or "full" (torch's own), what the kept build used

    def to_dict(self) -> dict:
        return asdict(self)


def default_cache_dir() -> Path:
    return Path(os.environ.get("OPFORGE_EVAL_CACHE") or Path.home() / ".cache" / "opforge" / "eval")


def resolve_arch_list(explicit: str | None = None) -> str:
    """TORCH_CUDA_ARCH_LIST for this build: explicit, else the visible GPU's capability, else the env, else 9.0."""
    if explicit:
        return explicit
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            return f"{major}.{minor}"
    except Exception:  # a broken driver must not stop a CPU build
        pass
    return os.environ.get("TORCH_CUDA_ARCH_LIST") or "9.0"


def gencode_flags(arch_list: str) -> list[str]:
    flags = []
    for item in re.split(r"[;\s,]+", arch_list.strip()):
        if not item:
            continue
        ptx = item.endswith("+PTX")
        num = item.replace("+PTX", "").replace(".", "")
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def trim_log(text: str, limit: int = MAX_LOG_CHARS) -> str:
    """Keep the error lines (with a line of context) first, then the tail, within `limit` characters."""
    text = text.replace("\r", "")
    if len(text) <= limit:
        return text
    lines = text.splitlines()
    keep: list[str] = []
    for i, line in enumerate(lines):
        if re.search(r"\berror\b|Error|undefined reference|fatal", line):
            keep.extend(lines[max(0, i - 1) : i + 2])
    head = "\n".join(dict.fromkeys(keep))[: limit // 2]
    tail = text[-(limit - len(head) - 20) :]
    return (head + "\n[...]\n" + tail) if head else "[...]\n" + tail


@functools.lru_cache(maxsize=1)
def _toolchain() -> dict:
    """Compiler versions, include and library paths: part of every cache key."""
    import torch
    import torch.utils.cpp_extension as cpp

    which_nvcc = shutil.which("nvcc")
    cuda_home = (
        os.environ.get("CUDA_HOME")
        or cpp.CUDA_HOME
        or (
            "/usr/local/cuda"
            if Path("/usr/local/cuda/include").is_dir() or not which_nvcc
            else str(Path(os.path.realpath(which_nvcc)).parent.parent)
        )
    )
    nvcc = which_nvcc or str(Path(cuda_home) / "bin" / "nvcc")

    def version(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()[-200:]
        except (OSError, subprocess.SubprocessError):
            return "missing"

    # torch's own include dirs (the "cuda" variant only adds CUDA_HOME/include, and raises when CUDA_HOME is unset)
    includes = list(cpp.include_paths())
    torch_lib = str(Path(torch.__file__).parent / "lib")
    inc_root = Path(torch.__file__).parent / "include"
    if not (inc_root / "c10/cuda/impl/cuda_cmake_macros.h").is_file():
        # CPU builds of torch ship c10/cuda headers without this generated one; supply it so bindings that use
        # c10::cuda::getCurrentCUDAStream() compile here too (they are only loaded under a CUDA torch).
        compat = Path(tempfile.gettempdir()) / "opforge-torch-compat"
        (compat / "c10/cuda/impl").mkdir(parents=True, exist_ok=True)
        (compat / "c10/cuda/impl/cuda_cmake_macros.h").write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(str(compat))
    cuda_include = str(Path(cuda_home) / "include")
    libs = ["c10", "torch", "torch_cpu", "torch_python"]
    libs += [lib for lib in ("c10_cuda", "torch_cuda") if (Path(torch_lib) / f"lib{lib}.so").exists()]
    return {
        "torch": torch.__version__,
        "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
        "nvcc": nvcc,
        "nvcc_version": version([nvcc, "--version"]),
        "cxx": os.environ.get("CXX", "g++"),
        "cxx_version": version([os.environ.get("CXX", "g++"), "--version"]),
        "includes": includes + [cuda_include, sysconfig.get_paths()["include"]],
        "torch_lib": torch_lib,
        "cuda_lib": str(Path(cuda_home) / "lib64"),
        "libs": libs,
        "python": sys.version.split()[0],
        "cuda_home": cuda_home,
    }


def _sha(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


def _local_deps(src: Path, roots: list[Path], seen: set[Path] | None = None) -> set[Path]:
    """Workspace headers reachable through #include "..." (system headers are covered by the toolchain key)."""
    seen = set() if seen is None else seen
    try:
        text = src.read_text(errors="replace")
    except OSError:
        return seen
    for name in _LOCAL_INCLUDE.findall(text):
        for base in [src.parent, *roots]:
            cand = (base / name).resolve()
            if cand.is_file():
                if cand not in seen:
                    seen.add(cand)
                    _local_deps(cand, roots, seen)
                break
    return seen


def _object_key(src: Path, roots: list[Path], flags: list[str], compiler_version: str) -> str:
    deps = sorted(_local_deps(src, roots))
    parts = [src.name, src.read_bytes(), " ".join(flags), compiler_version]
    for d in deps:
        parts += [d.name, d.read_bytes()]
    return _sha(*parts)


def _run(cmd: list[str], timeout: float, out_dir: Path, read: list[Path], memory_mb: int | None) -> tuple[int, str]:
    """A compiler on candidate sources, in the jail: it sees the sources (`read`, read-only), writes only `out_dir`,
    and no other host file (an `#include "/any/host/file"` or a symlink out of the workspace finds nothing)."""
    from pipeline.sandbox import run_command

    r = run_command(cmd, workdir=out_dir, read_dirs=[str(p) for p in read], timeout_s=timeout, memory_mb=memory_mb)
    if r.timed_out:
        return -9, f"compile timed out after {timeout:.0f} s\n" + r.output
    if r.reason == "sandbox_unavailable":
        return -1, f"the build jail is unavailable: {r.stderr}"
    return (r.returncode if r.returncode is not None else -1), r.output


def _atomic_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def build_workspace(
    ws: Path, cache_dir: Path, arch_list: str, timeout: float, memory_mb: int | None = BUILD_MEMORY_MB
) -> CompileResult:
    t0 = time.perf_counter()
    tc = _toolchain()
    roots = [ws, ws / "kernels"]
    inc = [f"-I{p}" for p in tc["includes"]] + [f"-I{ws}", f"-I{ws / 'kernels'}"]
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={tc['cxx11_abi']}"
    nvcc_flags = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC", abi, "--expt-relaxed-constexpr"] + gencode_flags(
        arch_list
    )
    cxx_flags = [
        "-O2",
        "-std=c++17",
        "-fPIC",
        abi,
        f"-DTORCH_EXTENSION_NAME={EXTENSION_NAME}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        "-w",
    ]
    inc_dirs = [Path(p) for p in tc["includes"] if Path(p).is_dir()]  # seen read-only by the jailed compilers
    kdir = ws / "kernels"
    kernels = sorted(kdir.glob("*.cu")) if kdir.is_dir() else []
    bindings = [ws / "binding.cpp"] + (sorted(p for p in kdir.glob("*.cpp")) if kdir.is_dir() else [])
    bindings = [b for b in bindings if b.is_file()]
    jobs = []  # (src, key, cmd-builder)
    for k in kernels:
        key = _object_key(k, roots, nvcc_flags, tc["nvcc_version"] + tc["torch"])
        jobs.append((k, key, lambda out, k=k: [tc["nvcc"], *nvcc_flags, *inc, "-c", str(k), "-o", str(out)]))
    for b in bindings:
        key = _object_key(b, roots, cxx_flags, tc["cxx_version"] + tc["torch"] + tc["python"])
        jobs.append((b, key, lambda out, b=b: [tc["cxx"], *cxx_flags, *inc, "-c", str(b), "-o", str(out)]))
    if not kernels and len(bindings) <= 1:
        return CompileResult(
            False,
            time.perf_counter() - t0,
            "no kernels/*.cu or *_binding.cpp in the workspace",
            False,
            "",
            "workspace",
            "no_kernels",
            arch_list,
        )
    obj_dir = cache_dir / "objects"
    obj_dir.mkdir(parents=True, exist_ok=True)
    link_flags = [
        "-shared",
        f"-L{tc['torch_lib']}",
        f"-L{tc['cuda_lib']}",
        *[f"-l{lib}" for lib in tc["libs"]],
        "-lcudart",
        f"-Wl,-rpath,{tc['torch_lib']}",
        f"-Wl,-rpath,{tc['cuda_lib']}",
    ]
    link_key = _sha(*sorted(key for _, key, _ in jobs), " ".join(link_flags), tc["cxx_version"])
    artifact = cache_dir / "builds" / link_key / f"{EXTENSION_NAME}.so"
    rel = lambda p: str(p.relative_to(ws))  # noqa: E731
    if artifact.is_file():
        return CompileResult(
            True,
            time.perf_counter() - t0,
            "",
            True,
            str(artifact),
            "workspace",
            "",
            arch_list,
            [],
            [rel(s) for s, _, _ in jobs],
        )
    built, reused, steps, logs = [], [], {}, []
    todo = []
    for src, key, cmd in jobs:
        if (obj_dir / f"{key}.o").is_file():
            reused.append(rel(src))
        else:
            todo.append((src, key, cmd))
    tmp = Path(tempfile.mkdtemp(prefix="opforge-build-"))
    failed = False
    timed_out = False
    try:

        def compile_one(job):
            src, key, cmd = job
            out_dir = tmp / key  # one dir per concurrent compiler job: each runs under its own uid
            out_dir.mkdir()
            out = out_dir / f"{key}.o"
            s = time.perf_counter()
            rc, log = _run(cmd(out), timeout, out_dir, [ws, *inc_dirs], memory_mb)
            return src, key, out, rc, log, time.perf_counter() - s

        workers = max(1, min(len(todo), os.cpu_count() or 1))
        with cf.ThreadPoolExecutor(workers) as pool:
            for src, key, out, rc, log, secs in pool.map(compile_one, todo):
                steps[rel(src)] = round(secs, 3)
                if rc == 0 and out.is_file():
                    _atomic_copy(out, obj_dir / f"{key}.o")
                    built.append(rel(src))
                else:
                    failed = True
                    timed_out |= rc == -9
                    logs.append(f"=== {rel(src)} ===\n{log.strip()}")
        if not failed:
            s = time.perf_counter()
            link_dir = tmp / "link"
            link_dir.mkdir()
            out = link_dir / f"{EXTENSION_NAME}.so"
            objs = [str(obj_dir / f"{key}.o") for _, key, _ in jobs]
            rc, log = _run(
                [tc["cxx"], *objs, "-o", str(out), *link_flags], timeout, link_dir, [ws, obj_dir], memory_mb
            )
            steps["link"] = round(time.perf_counter() - s, 3)
            if rc == 0 and out.is_file():
                _atomic_copy(out, artifact)
            else:
                failed = True
                logs.append(f"=== link ===\n{log.strip()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    secs = time.perf_counter() - t0
    if failed:
        reason = "compile_timeout" if timed_out else "compile_error"
        return CompileResult(
            False, secs, trim_log("\n".join(logs)), False, "", "workspace", reason, arch_list, built, reused, steps
        )
    return CompileResult(True, secs, "", False, str(artifact), "workspace", "", arch_list, built, reused, steps)


# The compile step of a single-file solution: import it (its module-level load_inline builds the extension).
_SINGLE_FILE_BUILD = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("opforge_solution", PAYLOAD["path"])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
emit_result({"has_model_new": hasattr(mod, "ModelNew")})
"""


# A KernelBench-style `.cu` includes <torch/extension.h>: torch's whole C++ frontend and pybind11, which nvcc parses
# three times (cudafe++, cicc, the host compiler): about two thirds of a cold load_inline build. Kernels and their
# launchers need the tensor API of <torch/types.h> (what load_inline itself puts first in every .cu). So nvcc alone
# (NVCC_PREPEND_FLAGS; g++ and the binding's main.cpp keep the real header) finds these first. A source that needs
# more fails to compile and is built again with torch's own headers: the slim attempt can cost time, never a verdict.
SLIM_HEADERS = {
    "torch/extension.h": "#pragma once\n#include <torch/types.h>\n",
    "torch/torch.h": "#pragma once\n#include <torch/types.h>\n",
}


def slim_include_dir(cache_dir: Path) -> Path:
    """The directory holding SLIM_HEADERS (written once per content, by the trusted side)."""
    root = cache_dir / "slim_include" / _sha(json.dumps(SLIM_HEADERS, sort_keys=True))
    for rel, text in SLIM_HEADERS.items():
        f = root / rel
        if not f.is_file() or f.read_text() != text:
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_name(f"{f.name}.tmp-{os.getpid()}-{threading.get_ident()}")  # builds run on threads
            tmp.write_text(text)
            os.replace(tmp, f)
    return root


def build_single_file(
    path: Path,
    cache_dir: Path,
    arch_list: str,
    timeout: float,
    slim_headers: bool = True,
    memory_mb: int | None = BUILD_MEMORY_MB,
) -> CompileResult:
    t0 = time.perf_counter()
    import torch

    src = path.read_bytes()
    key = _sha(src, arch_list, torch.__version__)
    ext_dir = cache_dir / "extensions" / key
    ok_marker = ext_dir / ".opforge_ok"
    if ok_marker.is_file():
        return CompileResult(True, time.perf_counter() - t0, "", True, str(ext_dir), "single_file", "", arch_list)
    if torch.version.cuda is None:
        return CompileResult(
            False,
            time.perf_counter() - t0,
            "this torch has no CUDA support: single-file (load_inline) solutions build on a GPU worker's torch",
            False,
            "",
            "single_file",
            "needs_cuda_torch",
            arch_list,
        )
    from pipeline.sandbox import run_sandboxed

    def attempt(slim: Path | None):
        env = build_env(ext_dir, arch_list)
        read = [str(path.resolve().parent)]
        if slim is not None:
            env["NVCC_PREPEND_FLAGS"] = f"-I{slim} " + os.environ.get("NVCC_PREPEND_FLAGS", "")
            read.append(str(slim))
        return run_sandboxed(
            _SINGLE_FILE_BUILD,
            payload={"path": str(path.resolve())},
            timeout_s=timeout,
            memory_mb=memory_mb,
            nproc=None,
            exec_dirs=[str(ext_dir)],
            read_dirs=read,
            env=env,
        )

    ext_dir.mkdir(parents=True, exist_ok=True)
    steps: dict = {}
    headers = "full"
    res = None
    if slim_headers:
        res = attempt(slim_include_dir(cache_dir))
        steps["slim_headers"] = round(time.perf_counter() - t0, 3)
        headers = "slim"
        if not res.ok and not res.timed_out:
            # Objects made with the slim headers must not be reused: ninja does not see NVCC_PREPEND_FLAGS.
            shutil.rmtree(ext_dir, ignore_errors=True)
            ext_dir.mkdir(parents=True, exist_ok=True)
            res = None
    if res is None:
        headers = "full"
        t1 = time.perf_counter()
        res = attempt(None)
        steps["full_headers"] = round(time.perf_counter() - t1, 3)
    secs = time.perf_counter() - t0
    steps[path.name] = round(secs, 3)
    if res.ok and (res.result or {}).get("has_model_new"):
        ok_marker.write_text(json.dumps({"seconds": secs, "headers": headers}))
        return CompileResult(
            True, secs, "", False, str(ext_dir), "single_file", "", arch_list, [path.name], [], steps, headers
        )
    log = trim_log((res.error_message or "") + "\n" + res.stdout + "\n" + res.stderr)
    reason = "compile_timeout" if res.timed_out else ("no_model_new" if res.ok else "compile_error")
    return CompileResult(False, secs, log, False, "", "single_file", reason, arch_list, [], [], steps, headers)


def build_env(ext_dir: Path | str, arch_list: str) -> dict[str, str]:
    """Environment for processes that build or load a single-file solution's extension."""
    import torch.utils.cpp_extension as cpp

    env = {
        "TORCH_EXTENSIONS_DIR": str(ext_dir),
        "TORCH_CUDA_ARCH_LIST": arch_list,
        "MAX_JOBS": str(max(1, min(4, os.cpu_count() or 1))),
    }
    env["CUDA_HOME"] = os.environ.get("CUDA_HOME") or cpp.CUDA_HOME or _toolchain()["cuda_home"]
    return env


def compile_solution(
    path: str | os.PathLike,
    cache_dir: str | os.PathLike | None = None,
    *,
    arch_list: str | None = None,
    timeout: float = 900.0,
    slim_headers: bool = True,
    memory_mb: int | None = BUILD_MEMORY_MB,
) -> CompileResult:
    """Build a solution (workspace dir or single .py file); never raises for a bad solution. `memory_mb` bounds
    the address space of every process of the build (the compilers included): a source written to blow up the
    compiler (template or macro bombs) ends as a compile error, not as the host's memory."""
    p = Path(path)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    arch = resolve_arch_list(arch_list)
    if not p.exists():
        return CompileResult(False, 0.0, f"{p} does not exist", False, "", "", "no_solution", arch)
    try:
        if is_workspace(p):
            return build_workspace(p.resolve(), cache, arch, timeout, memory_mb)
        if p.is_file():
            return build_single_file(p, cache, arch, timeout, slim_headers, memory_mb)
        return CompileResult(
            False, 0.0, f"{p}: neither a workspace (model_new.py) nor a .py file", False, "", "", "no_solution", arch
        )
    except OSError as e:  # unreadable files, a full disk: the candidate fails, the caller goes on
        return CompileResult(False, 0.0, f"{type(e).__name__}: {e}", False, "", "", "build_error", arch)
