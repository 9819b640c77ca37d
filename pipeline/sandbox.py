"""The project's one sandbox for untrusted Python (candidate tasks, generated kernels). Standard library only, so
GPU workers (torch + numpy, nothing else) import it too.

`run_sandboxed(code_or_script, ...)` runs the code in a fresh interpreter and returns a `SandboxResult` with a
reason code. Layers, and what each one covers:

- **Own process, own session** (`start_new_session`): a crash (segfault, abort) takes down only the child; on
  timeout the whole process group is SIGKILLed, so grandchildren die with it. Leftover group members are killed
  after a normal exit as well.
- **rlimits** set in the child before any untrusted line runs: RLIMIT_AS (memory bombs fail to allocate: MemoryError
  or a torch allocation error -> `memory_limit`), RLIMIT_CPU (busy loops that dodge the wall clock -> `cpu_limit`),
  RLIMIT_FSIZE (huge files -> `file_size_limit`), RLIMIT_NPROC (fork bombs; NOTE: not enforced for root, which is
  why the audit hook below also blocks fork/exec), RLIMIT_CORE = 0.
- **Network namespace**: the child calls unshare(CLONE_NEWNET) via ctypes; it then sees only a downed loopback, so
  no packet leaves even through C extensions. Needs root / CAP_SYS_ADMIN; whether it took is reported in
  `SandboxResult.netns` (False where the kernel refuses, e.g. unprivileged containers).
- **Audit hook** (`sys.addaudithook`, PEP 578): blocks socket connect/bind/sendto/getaddrinfo (`network_blocked`),
  opening files for writing or removing/renaming/creating paths outside the work dir and the extra writable dirs
  (`file_access_blocked`), and os.fork / os.system / os.exec* / subprocess spawns of anything but an allowlisted
  compiler (`process_blocked`). A blocked call raises PermissionError in the child AND is reported over the result
  channel at once, so code that swallows the exception still gets its reason code. The hook covers Python-level
  calls only: native code (ctypes, C extensions) bypasses it; the namespace and rlimits are the backstop there.
- **Read-only file system**: the child unshares a mount namespace (CLONE_NEWNS), bind-mounts the work dir and
  the extra writable dirs onto themselves and remounts every other mount read-only, so even native writers (C++
  file writers such as torch.save's) fail with EROFS (`file_access_blocked`). Needs root; `SandboxResult.mountns`
  says whether it took. The host's view of the file system is unaffected.
- **Private work dir**: a fresh temp dir (removed afterwards) is the cwd, HOME and TMPDIR; the environment is reduced
  to an allowlist.
- **Private result channel**: results travel as JSON lines over an inherited pipe fd, never stdout, so a candidate
  that prints cannot forge a result by printing. stdout/stderr are drained continuously (a flooding child never
  blocks) and only the first `max_output_bytes` are kept.
  Limit: the untrusted code shares the interpreter with the bootstrap, so deliberately hostile code could find the
  fd and write to it; the channel prevents accidents and print-forgery, it is not a security boundary.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Reason codes (snake_case). "" means the code ran and delivered a result.
REASONS = (
    "syntax_error", "exception", "timeout", "memory_limit", "cpu_limit", "file_size_limit", "segfault", "killed",
    "signal", "sys_exit", "no_result", "network_blocked", "file_access_blocked", "process_blocked",
    "result_too_large", "sandbox_error",
)

# Executables a sandboxed child may spawn (torch.compile's inductor invokes the C++ compiler).
DEFAULT_ALLOWED_EXECUTABLES = ("gcc", "g++", "cc", "c++", "clang", "clang++", "ld", "as", "nvcc", "ptxas",
                               "cicc", "fatbinary", "nvlink", "cudafe++", "ldconfig", "uname", "openssl", "sha256sum",
                               "sha512sum", "which", "ldd", "objcopy", "nm", "ar", "ld.gold", "collect2", "cc1plus")
# Environment variables passed through to the child (everything else is dropped).
_ENV_PASS = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
             "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


@dataclass
class SandboxResult:
    """What happened to one sandboxed run."""

    ok: bool  # the code finished and delivered a result
    reason: str  # "" when ok, else one of REASONS
    returncode: int | None  # exit status; negative: killed by that signal
    signal: str | None  # signal name when killed by a signal
    timed_out: bool
    result: Any  # the JSON value the code delivered (None when none)
    error_type: str  # exception class name, violation kind, or ""
    error_message: str  # trimmed message / traceback tail
    stdout: str  # first max_output_bytes of stdout
    stderr: str  # first max_output_bytes of stderr
    stdout_bytes: int  # total bytes the child wrote to stdout (kept or not)
    stderr_bytes: int
    wall_s: float
    max_rss_mb: float | None  # peak resident memory of the child, as reported by wait4
    netns: bool  # the network namespace was created
    mountns: bool = False  # the file system outside the writable dirs is read-only (private mount namespace)
    violations: list[dict] = field(default_factory=list)  # blocked calls, in order

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The bootstrap runs in the child: it sets up every layer, then runs the untrusted code. Kept as source text so the
# child needs nothing from this project on its path.
_BOOTSTRAP = r'''
import json, os, sys, resource, traceback
_cfg = json.loads(os.environ.pop("OPFORGE_SANDBOX_CFG"))
_fd = _cfg["fd"]
_chan = os.fdopen(_fd, "w", buffering=1)
def _send(msg):
    try:
        _chan.write(json.dumps(msg, default=str) + "\n"); _chan.flush()
    except Exception:
        pass
def _setlim(res, soft):
    # The hard limit a little above the soft one: RLIMIT_CPU then sends SIGXCPU (reason cpu_limit) before SIGKILL.
    hard = soft + 5 if res == resource.RLIMIT_CPU else soft
    try:
        resource.setrlimit(res, (soft, hard))
    except (ValueError, OSError):
        pass
# Network namespace first: it needs privileges that we keep (we drop nothing else).
_netns = False
if not _cfg["allow_network"]:
    try:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
        _netns = _libc.unshare(0x40000000) == 0  # CLONE_NEWNET
    except Exception:
        _netns = False
# Read-only file system outside the writable roots (a private mount namespace): covers native code (C++ file
# writers such as torch.save's) that the audit hook below cannot see.
_mountns = False
if _cfg["readonly_fs"]:
    try:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
        _RO, _REMOUNT, _BIND, _REC, _PRIVATE = 1, 32, 4096, 16384, 1 << 18
        if _libc.unshare(0x00020000) == 0 and _libc.mount(b"none", b"/", None, _REC | _PRIVATE, None) == 0:
            _keep = []
            for _r in _cfg["write_roots"]:
                _r = os.path.realpath(_r)
                if os.path.isdir(_r) and _libc.mount(_r.encode(), _r.encode(), None, _BIND | _REC, None) == 0:
                    _keep.append(_r)
            for _line in open("/proc/self/mountinfo").read().splitlines():
                _mp = _line.split()[4].replace("\\040", " ")
                if _mp in _keep or _mp.startswith(("/proc", "/sys", "/dev")):
                    continue
                if any(_mp.startswith(_k + "/") for _k in _keep):
                    continue
                _libc.mount(b"none", _mp.encode(), None, _BIND | _REMOUNT | _RO | _REC, None)
            _mountns = True
    except Exception:
        _mountns = False
_send({"type": "setup", "netns": _netns, "mountns": _mountns})
_setlim(resource.RLIMIT_CORE, 0)
if _cfg["memory_mb"]:
    _setlim(resource.RLIMIT_AS, _cfg["memory_mb"] * 2**20)
if _cfg["cpu_s"]:
    _setlim(resource.RLIMIT_CPU, int(_cfg["cpu_s"]))
if _cfg["fsize_mb"]:
    _setlim(resource.RLIMIT_FSIZE, _cfg["fsize_mb"] * 2**20)
if _cfg["nproc"]:
    _setlim(resource.RLIMIT_NPROC, _cfg["nproc"])
sys.dont_write_bytecode = True
_roots = [os.path.realpath(p) for p in _cfg["write_roots"]]
_allowed_exe = set(_cfg["allowed_executables"])
_allow_net = _cfg["allow_network"]
_reported = set()
def _violation(kind, what):
    key = (kind, str(what)[:200])
    if key not in _reported:
        _reported.add(key)
        _send({"type": "violation", "kind": kind, "what": str(what)[:500]})
    raise PermissionError(f"opforge sandbox: {kind}: {str(what)[:200]}")
def _writable(path):
    if isinstance(path, int):
        return True
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    p = os.path.realpath(os.path.abspath(str(path)))
    if p in ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/shm") or p.startswith("/dev/shm/"):
        return True
    return any(p == r or p.startswith(r + os.sep) for r in _roots)
_WFLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.remove": 0, "os.rename": 0, "os.rmdir": 0, "os.mkdir": 0, "shutil.rmtree": 0, "os.chmod": 0,
                "os.chown": 0, "os.symlink": 1, "os.link": 1, "os.truncate": 0, "os.utime": 0, "shutil.copyfile": 1,
                "shutil.move": 1}
def _hook(event, args):
    if event == "open":
        path, mode, flags = args
        if path is None:
            return
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & _WFLAGS)
        if writing and not _writable(path):
            _violation("file_access_blocked", path)
    elif event in _PATH_EVENTS:
        targets = [args[0]] + ([args[1]] if event in ("os.rename", "shutil.move", "os.symlink", "os.link",
                                                        "shutil.copyfile") and len(args) > 1 else [])
        for t in targets:
            if not isinstance(t, int) and not _writable(t):
                _violation("file_access_blocked", t)
    elif not _allow_net and event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        addr = args[1] if len(args) > 1 else None
        if isinstance(addr, (str, bytes)):  # AF_UNIX path: local IPC, not the network
            return
        _violation("network_blocked", addr)
    elif not _allow_net and event == "socket.getaddrinfo":
        _violation("network_blocked", args[0])
    elif event in ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile",
                   "pty.spawn"):
        exe = args[0] if args else ""
        if event in ("os.posix_spawn", "os.exec", "os.spawn") and os.path.basename(os.fsdecode(exe or b"")) in _allowed_exe:
            return
        _violation("process_blocked", f"{event} {exe}")
    elif event == "subprocess.Popen":
        exe, argv = args[0], args[1]
        prog = exe or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
        name = os.path.basename(os.fsdecode(prog)) if isinstance(prog, (str, bytes, os.PathLike)) else ""
        if name in _allowed_exe:
            return
        # torch inductor probes each compiled .so with `python -c "...cdll.LoadLibrary(path)"`: allow exactly that.
        if (isinstance(argv, (list, tuple)) and len(argv) == 3 and argv[1] == "-c"
                and os.path.realpath(os.fsdecode(prog)) == os.path.realpath(sys.executable)
                and isinstance(argv[2], str) and len(argv[2]) < 600 and argv[2].count("cdll.LoadLibrary(") == 1
                and not any(w in argv[2] for w in ("os.", "subprocess", "socket", "open(", "exec", "eval", ";"))):
            return
        _violation("process_blocked", f"subprocess {prog}")
    elif event == "ctypes.dlopen" and not _cfg["allow_ctypes"]:
        name = args[0]
        if name is not None:  # CDLL(None): the main program, used by ordinary libraries
            _violation("process_blocked", f"ctypes.dlopen {name}")
sys.addaudithook(_hook)
os.chdir(_cfg["workdir"])
PAYLOAD = _cfg.get("payload")
def emit_result(value):
    _send({"type": "result", "value": value})
_g = {"__name__": "__main__", "__file__": _cfg["filename"], "__builtins__": __builtins__,
      "PAYLOAD": PAYLOAD, "emit_result": emit_result}
sys.argv = [_cfg["filename"]] + list(_cfg["args"])
try:
    _src = _cfg["code"] if _cfg["code"] is not None else open(_cfg["script"]).read()
    try:
        _code = compile(_src, _cfg["filename"], "exec")
    except (SyntaxError, ValueError) as e:
        _send({"type": "error", "kind": "syntax_error", "exc_type": type(e).__name__, "message": str(e)[:2000]})
        os._exit(1)
    exec(_code, _g)
except SystemExit as e:
    _send({"type": "error", "kind": "sys_exit", "exc_type": "SystemExit", "message": repr(e.code)[:500]})
    os._exit(3)
except MemoryError as e:
    _send({"type": "error", "kind": "memory_limit", "exc_type": "MemoryError", "message": str(e)[:2000]})
    os._exit(1)
except BaseException as e:
    _send({"type": "error", "kind": "exception", "exc_type": type(e).__name__, "message": str(e)[:2000],
           "traceback": traceback.format_exc()[-4000:]})
    os._exit(1)
_send({"type": "done"})
try:
    _chan.close()
except Exception:
    pass
# Skip interpreter teardown: atexit handlers of untrusted code must not run after the result is in.
os._exit(0)
'''

# Messages that mean the address-space limit was hit, from Python or from torch's allocators.
_OOM_MARKERS = ("can't allocate memory", "cannot allocate memory", "out of memory", "std::bad_alloc",
                "memoryerror", "failed to allocate", "unable to allocate")


# Messages of a write refused by the read-only mount layer (native writers raise their own exception types).
READONLY_MARKERS = ("read-only file system", "errno 30", "erofs")


def _classify_error(msg: dict) -> str:
    kind = msg.get("kind", "exception")
    if kind == "exception":
        text = (msg.get("exc_type", "") + " " + msg.get("message", "")).lower()
        if any(m in text for m in _OOM_MARKERS):
            return "memory_limit"
        if any(m in text for m in READONLY_MARKERS):
            return "file_access_blocked"
    return kind


def _default_cpu_s(timeout_s: float, env: dict[str, str] | None) -> float:
    # RLIMIT_CPU counts every thread: a torch op on 8 threads spends 8 CPU-seconds per second, so a limit equal to
    # the wall clock SIGKILLed honest GPU-sized tasks on a 16-core worker. The wall clock bounds runaway code anyway.
    raw = (env or {}).get("OMP_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or ""
    threads = int(raw) if raw.isdigit() and int(raw) > 0 else (os.cpu_count() or 1)
    return timeout_s * threads + 5


def run_sandboxed(
    code_or_script: str | os.PathLike,
    *,
    args: list[str] | None = None,
    payload: Any = None,
    timeout_s: float = 60.0,
    memory_mb: int | None = 4096,
    cpu_s: float | None = None,
    fsize_mb: int | None = 256,
    nproc: int | None = 256,
    workdir: str | os.PathLike | None = None,
    write_dirs: list[str | os.PathLike] | None = None,
    allow_network: bool = False,
    allow_ctypes: bool = True,
    readonly_fs: bool = True,
    allowed_executables: tuple[str, ...] = DEFAULT_ALLOWED_EXECUTABLES,
    env: dict[str, str] | None = None,
    python: str | None = None,
    max_output_bytes: int = 20_000,
    max_result_bytes: int = 16 * 2**20,
) -> SandboxResult:
    """Run untrusted Python in a fresh, limited process and return what happened.

    `code_or_script`: source text, or a path (os.PathLike) to a .py file. The code sees `PAYLOAD` (any JSON value,
    `payload`) and delivers its result with `emit_result(value)` (a JSON-serialisable value; the last one counts).
    `workdir`: an existing dir to run in (kept); None makes a private temp dir that is removed afterwards.
    `cpu_s` defaults to the wall-clock limit times the threads the code may use (OMP_NUM_THREADS, else the cores),
    plus a little. Never raises for anything the code does.
    """
    is_path = isinstance(code_or_script, os.PathLike)
    own_dir = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="opforge-sbx-")) if own_dir else Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    cfg = {
        "fd": write_fd,
        "code": None if is_path else str(code_or_script),
        "script": str(Path(code_or_script).resolve()) if is_path else None,
        "filename": str(Path(code_or_script).resolve()) if is_path else "<sandboxed>",
        "args": list(args or []),
        "payload": payload,
        "memory_mb": memory_mb,
        "cpu_s": cpu_s if cpu_s is not None else _default_cpu_s(timeout_s, env),
        "fsize_mb": fsize_mb,
        "nproc": nproc,
        "allow_network": allow_network,
        "allow_ctypes": allow_ctypes,
        "readonly_fs": readonly_fs,
        "workdir": str(wd),
        "write_roots": [str(wd)] + [str(d) for d in (write_dirs or [])],
        "allowed_executables": list(allowed_executables),
    }
    child_env = {k: os.environ[k] for k in _ENV_PASS if k in os.environ}
    child_env.update({"HOME": str(wd), "TMPDIR": str(wd), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
                      "OMP_NUM_THREADS": os.environ.get("OPFORGE_SANDBOX_THREADS", "1"),
                      "TORCHINDUCTOR_COMPILE_THREADS": "1"})
    child_env.update(env or {})
    child_env["OPFORGE_SANDBOX_CFG"] = json.dumps(cfg)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-u", "-c", _BOOTSTRAP],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(wd), env=child_env,
            pass_fds=(write_fd,), start_new_session=True, close_fds=True,
        )
    except OSError as e:
        os.close(read_fd)
        os.close(write_fd)
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)
        return SandboxResult(False, "sandbox_error", None, None, False, None, type(e).__name__, str(e), "", "", 0, 0,
                             0.0, None, False)
    os.close(write_fd)

    buffers = {"stdout": bytearray(), "stderr": bytearray(), "chan": bytearray()}
    totals = {"stdout": 0, "stderr": 0, "chan": 0}
    limits = {"stdout": max_output_bytes, "stderr": max_output_bytes, "chan": max_result_bytes}
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    chan = os.fdopen(read_fd, "rb", buffering=0)
    sel.register(chan, selectors.EVENT_READ, "chan")
    timed_out = False
    deadline = t0 + timeout_s
    open_streams = 3
    # Drain all three pipes until they close or the deadline passes; never stop reading (a flooding child would block).
    while open_streams:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            name = key.data
            try:
                chunk = os.read(key.fileobj.fileno(), 65536)
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            totals[name] += len(chunk)
            room = limits[name] - len(buffers[name])
            if room > 0:
                buffers[name] += chunk[:room]
    # The pipes closed; the child may still run (it can close them itself): wait for it until the deadline.
    reaped = None
    while not timed_out:
        try:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            reaped = (status, rusage)
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        time.sleep(0.01)
    # Kill the whole group: on timeout, and also any child processes left behind after a normal exit.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        if reaped is None:
            _, status, rusage = os.wait4(proc.pid, 0)
            reaped = (status, rusage)
        returncode = os.waitstatus_to_exitcode(reaped[0])
        max_rss_mb = reaped[1].ru_maxrss / 1024.0
    except ChildProcessError:
        returncode, max_rss_mb = proc.poll(), None
    proc.returncode = returncode
    wall = time.monotonic() - t0
    sel.close()
    for f in (proc.stdout, proc.stderr, chan):
        try:
            f.close()
        except OSError:
            pass
    if own_dir:
        shutil.rmtree(wd, ignore_errors=True)

    # Parse the channel: JSON lines (a truncated last line is ignored).
    netns, mountns, result, got_result, error, violations, done = False, False, None, False, None, [], False
    for line in bytes(buffers["chan"]).split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        t = msg.get("type")
        if t == "setup":
            netns, mountns = bool(msg.get("netns")), bool(msg.get("mountns"))
        elif t == "result":
            result, got_result = msg.get("value"), True
        elif t == "error" and error is None:
            error = msg
        elif t == "done":
            done = True
        elif t == "violation":
            violations.append({"kind": msg.get("kind"), "what": msg.get("what")})
    sig_name = None
    if returncode is not None and returncode < 0:
        try:
            sig_name = signal.Signals(-returncode).name
        except ValueError:
            sig_name = f"SIG{-returncode}"

    error_type, error_message = "", ""
    if error is not None:
        error_type = error.get("exc_type", "")
        error_message = (error.get("traceback") or error.get("message") or "")[-4000:]
    # The reason, most specific first.
    if totals["chan"] > max_result_bytes:
        reason = "result_too_large"
    elif violations:
        reason = violations[0]["kind"]
        error_type = error_type or reason
        error_message = error_message or str(violations[0]["what"])
    elif timed_out:
        reason = "timeout"
    elif error is not None:
        reason = _classify_error(error)
    elif returncode is not None and returncode < 0:
        sig = -returncode
        reason = {signal.SIGSEGV: "segfault", signal.SIGBUS: "segfault", signal.SIGXCPU: "cpu_limit",
                  signal.SIGXFSZ: "file_size_limit", signal.SIGKILL: "killed", signal.SIGABRT: "signal"}.get(
            sig, "signal")
        if reason in ("signal", "killed"):
            text = bytes(buffers["stderr"]).decode(errors="replace").lower()
            if any(m in text for m in _OOM_MARKERS):
                reason = "memory_limit"
    elif not got_result:
        # Exited before the code finished (sys.exit swallowed elsewhere, os._exit): sys_exit; finished silently: no_result.
        reason = "no_result" if done else "sys_exit"
    else:
        reason = ""
    if reason == "" and returncode not in (0, None):
        reason = "sys_exit"
    return SandboxResult(
        ok=reason == "",
        reason=reason,
        returncode=returncode,
        signal=sig_name,
        timed_out=timed_out,
        result=result if got_result else None,
        error_type=error_type,
        error_message=error_message,
        stdout=bytes(buffers["stdout"]).decode(errors="replace"),
        stderr=bytes(buffers["stderr"]).decode(errors="replace"),
        stdout_bytes=totals["stdout"],
        stderr_bytes=totals["stderr"],
        wall_s=round(wall, 4),
        max_rss_mb=max_rss_mb,
        netns=netns,
        mountns=mountns,
        violations=violations,
    )


if __name__ == "__main__":  # tiny manual check: python -m pipeline.sandbox 'print(1); emit_result(2)'
    r = run_sandboxed(sys.argv[1] if len(sys.argv) > 1 else "emit_result(PAYLOAD)", payload={"x": 1})
    print(json.dumps(r.to_dict(), indent=1))
