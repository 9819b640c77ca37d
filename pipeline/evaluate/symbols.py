"""What a built extension links to: checks on the compiled binary, after the build and before it is ever loaded.

The source checks read C++ as text, and text can hide a name (macros, token pasting, namespace aliases, a function
pointer taken from a header's declaration). The linker cannot be fooled that way: whatever the extension calls
outside itself is an undefined dynamic symbol of its shared object, named in full. So the trusted side lists them
(`nm -D --undefined-only`, demangled) and names, with the same violation names as the source checks:

- ATen's kernels called directly, past the dispatcher (and past the op guard that watches it): `at::cpu::`,
  `at::cuda::` (beside a few device queries), `at::native::`, `at::meta::`, `at::composite...::`;
- ATen's compute ops called through the dispatcher (`at::_ops::softmax_int::call`) that the op guard would refuse:
  the guard sees them only while the Python dispatch key is on, and C++ can exclude it;
- the dispatcher's own state (`dispatch_mode_enabled`, the thread-local key sets): telling guarded calls from timed
  ones, or switching the guard off;
- vendor libraries (cuBLAS, cuDNN, cuFFT, cuSPARSE, cuSOLVER, NCCL) unless `allow_libraries` names them;
- dynamic loading, processes, threads and files (`dlsym`, `fork`, `pthread_create`, `fopen`, ...; not `open` and
  `syscall`, which the CUDA runtime that nvcc links into every extension calls: the jail, not this list, is what
  keeps files and processes out of reach);
- and, in the code itself, system-call instructions (`syscall`): a kernel's binding needs none.

Runs on the trusted side, beside the build (binutils come with the compiler)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from pipeline.evaluate.static_check import STRICT, Finding

# ATen namespaces that hold kernels themselves (no dispatch): at::cpu::_softmax, at::native::softmax, ...
_DIRECT_KERNELS = re.compile(
    r"^at::(cpu|native|meta|mps|sparsecpu|sparsecuda|quantizedcpu|quantizedcuda|nestedtensorcpu|nestedtensorcuda|"
    r"compositeexplicitautograd\w*|compositeimplicitautograd\w*)::"
)
# at::cuda:: is both ATen's CUDA kernels (at::cuda::mm) and device queries honest bindings use.
_AT_CUDA_OK = {
    "getCurrentDeviceProperties",
    "getDeviceProperties",
    "warp_size",
    "is_available",
    "getNumGPUs",
    "device_count",
    "current_device",
    "set_device",
    "getCurrentCUDAStream",
    "getDefaultCUDAStream",
    "getCUDADeviceAllocator",
}
_LIBRARY_HANDLES = re.compile(
    r"^at::cuda::(getCurrentCUDA(Blas|BlasLt|Sparse|SolverDn)Handle|blas::|solver::|sparse::)"
)
# The dispatcher's thread-local state: what the op guard's mode and key sets are, or changing them.
_DISPATCH_STATE = re.compile(
    r"^(c10::impl::(dispatch_mode_enabled|TorchDispatchModeTLS|tls_local_dispatch_key_set|"
    r"_force_tls_local_dispatch_key_set|tls_set_dispatch_key_(excluded|included)|tls_is_dispatch_key_(excluded|"
    r"included)|IncludeDispatchKeyGuard|PythonDispatcherTLS|raw_local_dispatch_key_set)|at::impl::("
    r"PythonTorchFunctionTLS|torch_function_mode_enabled|dispatch_mode_enabled)|c10::impl::tls_|"
    r"c10::impl::\w*[Dd]ispatch\w*[Tt][Ll][Ss]|at::impl::\w*TLS|torch::PythonTLSSnapshot)"
)
# Operators found by name at run time: the dispatcher's tables and calls through their handles (no
# `at::_ops::<op>` symbol names the op). Honest bindings call ops through at::_ops (named above) or not at all;
# registering their own ops (TORCH_LIBRARY: torch::Library, torch::jit::parseSchema) is not a lookup.
_OPS_BY_NAME = re.compile(
    r"^(c10::Dispatcher::|c10::OperatorHandle::|c10::TypedOperatorHandle|c10::impl::OperatorEntry::)"
)
# Composite ops that only view or cast (the op guard sees what they decompose into: views and copies)
_COMPOSITE_VIEWS = {
    "type_as",
    "swapaxes",
    "swapdims",
    "moveaxis",
    "mT",
    "mH",
    "adjoint",
    "matrix_H",
    "numpy_T",
    "reshape_as",
    "view_as",
    "expand_as",
    "flatten",
    "unflatten",
    "squeeze",
    "contiguous",
}
_LIBRARIES = ("cublasLt", "cublas", "cudnn", "cufft", "cusparse", "cusolver", "nccl", "cutensor")
_DYNAMIC = {
    "dlopen",
    "dlmopen",
    "dlsym",
    "dlvsym",
    "dladdr",
    "dladdr1",
    "dlinfo",
    "dl_iterate_phdr",
    "_r_debug",
    "_dl_sym",
    "_dl_open",
    "__libc_dlopen_mode",
    "__libc_dlsym",
    "__libc_dlvsym",
}
_PROCESSES = {
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "execl",
    "execlp",
    "execle",
    "fexecve",
    "system",
    "popen",
    "posix_spawn",
    "posix_spawnp",
    "pthread_create",
    "thrd_create",
    "kill",
    "tgkill",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "prctl",
    "seccomp",
}
_FILES = {
    "fopen",
    "fopen64",
    "freopen",
    "freopen64",
    "fdopen",
    "open64",
    "openat",
    "openat64",
    "creat",
    "creat64",
    "opendir",
    "fdopendir",
    "readdir",
    "readdir64",
    "dup",
    "dup2",
    "dup3",
    "socket",
    "connect",
    "bind",
    "shm_open",
    "memfd_create",
    "unlink",
    "rename",
    "mkfifo",
}
_OPS_CALL = re.compile(r"^at::_ops::(\w+)::(call|redispatch)$")
_SYSCALL_INSN = re.compile(r"\t(syscall|sysenter|int\s+\$0x80)\b")


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"{name} (binutils) not found: the build's binary cannot be checked")
    return path


def undefined_symbols(so: Path) -> list[str]:
    """The dynamic symbols `so` needs from elsewhere, demangled, without version suffixes."""
    out = subprocess.run(
        [_tool("nm"), "-D", "--undefined-only", "-C", str(so)], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise RuntimeError(f"nm {so.name}: {out.stderr.strip()[:200]}")
    names = []
    for line in out.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and len(parts[0]) == 1:
            names.append(parts[1].split("@", 1)[0].strip())
    return names


def _name(sym: str) -> str:
    """The qualified name of a demangled symbol, without template arguments, parameters or return type
    ("void at::cuda::blas::gemm<float>(char, ...)" -> "at::cuda::blas::gemm")."""
    s = sym
    while True:
        t = re.sub(r"<[^<>]*>", "", s)
        if t == s:
            break
        s = t
    s = s.split("(", 1)[0].strip()
    return s.split()[-1] if s else ""


def _op_allowed(op: str, allowed: set[str]) -> bool:
    """`op` is an ATen operator's struct name, the op and its overload joined (`empty_memory_format`, `view_dtype`)."""
    if op in allowed:
        return True
    if "scatter" in op or "backward" in op:
        return False
    return any(op.startswith(a + "_") for a in allowed)


def _classify(sym: str, allowed_ops: set[str]) -> tuple[str, str] | None:
    """(violation, detail) for one undefined symbol, or None."""
    plain = _name(sym)
    op = _OPS_CALL.match(plain)
    if op and not _op_allowed(op.group(1), allowed_ops | _COMPOSITE_VIEWS):
        return "torch_compute_op", f"{plain}: an ATen compute op called from C++"
    if _OPS_BY_NAME.match(plain):
        return "torch_compute_op", f"{plain}: an operator looked up by name"
    if _DIRECT_KERNELS.match(plain):
        return "torch_compute_op", f"{plain}: an ATen kernel called directly, past the dispatcher"
    if _LIBRARY_HANDLES.match(plain):
        return "library_call", f"{plain} (cublas)"
    if plain.startswith("at::cuda::") and plain.split("::")[2] not in _AT_CUDA_OK | {"detail"}:
        return "torch_compute_op", f"{plain}: an ATen CUDA function called directly"
    if _DISPATCH_STATE.match(plain):
        return "caller_introspection", f"{plain}: the dispatcher's thread-local state"
    for lib in _LIBRARIES:
        if plain.startswith(lib):
            return "library_call", f"{plain} ({'cublas' if lib == 'cublasLt' else lib})"
    if plain in _DYNAMIC:
        return "dynamic_code", f"{plain}: code found at run time"
    if plain in _PROCESSES or plain.startswith("std::thread::") or plain.startswith("std::jthread::"):
        return "threads_or_processes", plain
    if plain in _FILES or re.match(r"^std::(basic_[io]?fstream|basic_filebuf)", plain):
        return "io_access", plain
    return None


def allowed_ops(allow_libraries=(), allow_torch_ops=()) -> set[str]:
    """The operators the op guard lets through with these options (the same list: `guard.ALLOWED_OPS`)."""
    from pipeline.evaluate.guard import ALLOWED_OPS, LIBRARY_OPS

    out = set(ALLOWED_OPS) | set(allow_torch_ops or ())
    for lib in allow_libraries or ():
        out |= LIBRARY_OPS.get(str(lib).lower(), set())
    return out


def check_binary(so: Path, ops: set[str] | None = None) -> list[Finding]:
    """Findings for one shared object (see the module's docstring). A file that is not ELF cannot be loaded as an
    extension: nothing to check."""
    with open(so, "rb") as f:
        if f.read(4) != b"\x7fELF":
            return []
    ops = allowed_ops() if ops is None else ops
    findings = []
    seen = set()
    for sym in undefined_symbols(so):
        hit = _classify(sym, ops)
        if hit and hit not in seen:
            seen.add(hit)
            findings.append(Finding(hit[0], STRICT, 0, hit[1][:200], f"{so.name} (linked symbols)"))
    dis = subprocess.run(
        [_tool("objdump"), "-d", "--no-show-raw-insn", str(so)], capture_output=True, text=True, timeout=300
    )
    m = _SYSCALL_INSN.search(dis.stdout)
    if m:
        findings.append(
            Finding("raw_memory_access", STRICT, 0, f"a `{m.group(1)}` instruction in the code", f"{so.name}")
        )
    return findings


def check_artifact(artifact: str, ops: set[str] | None = None) -> list[Finding]:
    """Every shared object of a build's artifact (a workspace's .so, or a single file's extensions dir)."""
    p = Path(artifact)
    ops = allowed_ops() if ops is None else ops
    if p.is_file():
        return check_binary(p, ops)
    findings: list[Finding] = []
    for root, _, names in os.walk(p):
        for n in sorted(names):
            if n.endswith(".so"):
                findings += check_binary(Path(root) / n, ops)
    return findings
