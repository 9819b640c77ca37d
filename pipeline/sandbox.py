"""The one jail for untrusted code: task files, LLM-written kernels, their builds, rollout tool commands.

Standard library only (GPU workers import it with torch + numpy alone). Two entry points:

- `run_sandboxed(code_or_script, payload=...)`: Python in a fresh jailed interpreter; the code sees `PAYLOAD` and
  reports with `emit_result(value)`; returns a `SandboxResult` with a reason code.
- `run_command(argv, workdir=...)`: any program (nvcc, g++, a rollout tool's command) in the same jail; returns a
  `CommandResult`.

The jail is bubblewrap (`bwrap`) plus util-linux, and a seccomp filter compiled by libseccomp
(`pipeline.seccomp`). Layers, from the outside in (docs/jail.md has the threat model):

1. `unshare --mount` gives the launch its own mount namespace, in which the job's writable directories are
   bind-mounted onto themselves `noexec,nosuid,nodev`; bwrap keeps those flags when it binds them into the jail.
2. bwrap: new pid, network (loopback only, down), IPC, UTS and cgroup namespaces; a new root that holds only a
   read-only view of /usr, the Python environment, this project's `pipeline` package, the CUDA toolkit and driver
   files (GPU jobs), the job's directories, a private /tmp and /dev/shm (noexec), a minimal /dev (plus only the
   job's GPU device nodes), its own /proc; an environment built from an allowlist; the seccomp filter;
   `--die-with-parent` and a new session. When the pid namespace's first process ends, the kernel kills every
   other process in it, so nothing outlives the job.
3. Identity: as root, `setpriv` switches to a per-job unprivileged uid/gid with no capabilities (bounding set
   emptied) and `no_new_privs`; as another user, bwrap maps the job into a user namespace of its own.
4. `prlimit`: address space, CPU time, file size, process count (per-job uid, so one job's fork bomb cannot
   starve another), no core dumps.
5. Inside the interpreter (Python jobs only), an audit hook turns refused calls into reason codes (network,
   writes outside the writable dirs, process spawns of anything but a compiler in a read-only system directory,
   loading native code from a writable, non-exec dir). It is a reporter, not a boundary: native code bypasses it,
   and the layers above hold regardless.

Fail closed: if any layer cannot be set up (a tool is missing, namespaces are refused), the code does not run and
the result's reason is `sandbox_unavailable`, naming the layer. `OPFORGE_SANDBOX_MODE=unsafe` (config
`sandbox.mode: unsafe`) is a loud development opt-out: the code runs in a plain subprocess (layers 4-5 only) and
every result says `jail="unsafe"`.

Payloads and results travel through files and a pipe, never the environment. Everything the code reports was
written by untrusted code: callers compute verdicts from data they can check.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipeline import bytecode

log = logging.getLogger("opforge.sandbox")

# Reason codes (snake_case). "" means the code ran and delivered a result.
REASONS = (
    "syntax_error",
    "exception",
    "timeout",
    "memory_limit",
    "cpu_limit",
    "file_size_limit",
    "segfault",
    "killed",
    "signal",
    "sys_exit",
    "no_result",
    "network_blocked",
    "file_access_blocked",
    "process_blocked",
    "exec_blocked",
    "result_too_large",
    "sandbox_error",
    "sandbox_unavailable",
    "seccomp_violation",
)
MODES = ("jail", "unsafe")
MODE_ENV = "OPFORGE_SANDBOX_MODE"

# A Python job may spawn a program only when its real path lies in a read-only system directory of the jail (a
# compiler, ptxas, ldconfig: torch.compile and Triton need them) and it is not a shell, an interpreter or a
# namespace tool: those are refused by name too, so a task's attempt gets a reason code (the jail contains it anyway).
DENIED_PROGRAMS = (
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "csh",
    "tcsh",
    "fish",
    "busybox",
    "env",
    "nsenter",
    "unshare",
    "setpriv",
    "chroot",
    "su",
    "sudo",
    "perl",
    "ruby",
    "node",
    "lua",
    "tclsh",
    "nc",
    "ncat",
    "socat",
    "curl",
    "wget",
    "ssh",
    "scp",
    "mount",
    "umount",
    "gdb",
    "strace",
    "ltrace",
    "xargs",
    "find",
    "timeout",
    "nohup",
    "setsid",
    "script",
    "expect",
)
# Environment variables passed through from the caller (everything else is dropped; secrets never pass).
ENV_PASS = (
    "LANG",
    "LC_ALL",
    "CC",
    "CXX",
    "CUDAHOSTCXX",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "TORCH_CUDA_ARCH_LIST",
    "LD_LIBRARY_PATH",
)
# Host paths every job sees read-only (when present).
_SYSTEM_RO = (
    "/usr",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/usr/local/cuda",
    "/usr/local/nvidia",
    "/opt/nvidia",
)
_MERGED_USR = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")
_GPU_NODES = (
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
    "/dev/nvidia-caps",
    "/dev/dri",
)
# Per-job uids/gids (as root): a range no system account uses.
_UID_BASE, _UID_SPAN = 0x30000, 0xFFFF


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
    max_rss_mb: float | None  # peak resident memory, as reported by wait4
    netns: bool  # the job had its own network namespace
    mountns: bool = False  # the job saw only the jail's read-only file system view
    violations: list[dict] = field(default_factory=list)  # blocked calls, in order
    jail: str = ""  # "bwrap" (every layer up), "unsafe" (the development opt-out), "" (did not run)
    layers: dict[str, bool] = field(default_factory=dict)
    uid: int | None = None  # the job's uid, as reported before any untrusted code ran
    emitted: list = field(default_factory=list)  # every emit_result value, in order (a job that streams results)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CommandResult:
    """What happened to one jailed command."""

    ok: bool  # exit status 0 within the time limit
    reason: str  # "", "timeout", "exit_status", "killed", "signal", "memory_limit", "sandbox_unavailable", ...
    returncode: int | None
    timed_out: bool
    stdout: str
    stderr: str
    wall_s: float
    jail: str = ""
    layers: dict[str, bool] = field(default_factory=dict)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SandboxUnavailable(RuntimeError):
    """A layer of the jail cannot be set up here; the message names it."""

    def __init__(self, layer: str, detail: str) -> None:
        super().__init__(f"{layer}: {detail}")
        self.layer = layer


# --------------------------------------------------------------------------- mode and probing


def sandbox_mode(mode: str | None = None) -> str:
    """The mode in force: the argument, else $OPFORGE_SANDBOX_MODE, else "jail"."""
    m = (mode or os.environ.get(MODE_ENV) or "jail").strip().lower()
    if m not in MODES:
        raise ValueError(f"sandbox mode must be one of {MODES}, not {m!r}")
    return m


_WARNED_UNSAFE = False


def _warn_unsafe() -> None:
    global _WARNED_UNSAFE
    if not _WARNED_UNSAFE:
        _WARNED_UNSAFE = True
        msg = (
            "opforge: SANDBOX MODE 'unsafe' - untrusted code runs WITHOUT the jail (no namespaces, no seccomp, "
            "no read-only file system). Development only; every row records jail='unsafe'."
        )
        log.warning(msg)
        print(msg, file=sys.stderr)


@dataclass(frozen=True)
class _Tools:
    bwrap: str
    unshare: str
    prlimit: str
    setpriv: str | None  # as root
    sh: str
    as_root: bool


_TOOLS: _Tools | None = None
_PROBED: dict[str, Any] = {}


def _which(name: str) -> str | None:
    for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"):
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.realpath(p)
    found = shutil.which(name)
    return os.path.realpath(found) if found else None


def _tools() -> _Tools:
    """The programs the jail is built from (cached); raises SandboxUnavailable naming the missing one."""
    global _TOOLS
    if _TOOLS is not None:
        return _TOOLS
    as_root = os.geteuid() == 0
    need = {
        "bwrap": "bubblewrap (Debian/Ubuntu package `bubblewrap`; `make setup` installs it)",
        "unshare": "util-linux",
        "prlimit": "util-linux",
        "sh": "a POSIX shell",
    }
    if as_root:
        need["setpriv"] = "util-linux"
    found = {}
    for name, pkg in need.items():
        p = _which(name)
        if not p:
            raise SandboxUnavailable(name, f"`{name}` not found; install {pkg}")
        found[name] = p
    from pipeline.seccomp import SeccompUnavailable, policy_bpf

    try:
        policy_bpf()
    except SeccompUnavailable as e:
        raise SandboxUnavailable("seccomp", str(e)) from None
    _TOOLS = _Tools(found["bwrap"], found["unshare"], found["prlimit"], found.get("setpriv"), found["sh"], as_root)
    return _TOOLS


def jail_status() -> dict[str, Any]:
    """Whether the jail works here, by running one trivial job in it (cached per process)."""
    if "status" in _PROBED:
        return _PROBED["status"]
    try:
        _tools()
        r = run_command(["/bin/true"], timeout_s=60, mode="jail")
        ok, detail = r.ok, (r.stderr or r.reason)[-500:]
    except SandboxUnavailable as e:
        ok, detail = False, str(e)
    _PROBED["status"] = {"ok": ok, "detail": "" if ok else detail, "as_root": os.geteuid() == 0}
    return _PROBED["status"]


# --------------------------------------------------------------------------- building the jail

# Runs in the launch's own mount namespace (as root, or as root of a user namespace): makes each writable dir a
# noexec bind of itself, then execs bwrap. Arguments: N, N dirs, then bwrap's argv.
_REMOUNT = (
    'n=$1; shift; i=0; while [ "$i" -lt "$n" ]; do d=$1; shift; '
    'mount --bind "$d" "$d" && mount -o remount,bind,noexec,nosuid,nodev "$d" || exit 111; '
    'i=$((i+1)); done; exec "$@"'
)


def _python_roots() -> list[str]:
    """Read-only dirs the interpreter needs: its prefixes, site dirs, and the dir holding this project's package."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    roots |= {os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    checkout = os.path.dirname(_package_dir())
    tmp = os.path.realpath(tempfile.gettempdir())

    def around(rp: str, d: str) -> bool:
        return d == rp or d.startswith(rp.rstrip("/") + "/")

    # Site dirs added by .pth files or PYTHONPATH, but never the checkout around the package (data, secrets), nor
    # the host's temp dir or a dir around it (a script run from /tmp puts /tmp on sys.path): bound read-only, it
    # would cover the jail's private /tmp and show the host's temp files.
    for p in list(sys.path) + os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and os.path.isabs(p) and os.path.isdir(p):
            rp = os.path.realpath(p)
            if not (around(rp, checkout) or rp.startswith(checkout + "/") or around(rp, tmp)):
                roots.add(rp)
    return sorted({os.path.realpath(r) for r in roots if r and os.path.exists(r)})


def _tool_dirs() -> list[str]:
    """Toolchains installed outside /usr (e.g. a compiler under /opt/gcc on GPU images): the bin dirs on the
    caller's PATH (and of $CC/$CXX) that lie under /opt. Their whole /opt/<name> prefix is bound read-only."""
    cands = os.environ.get("PATH", "").split(os.pathsep)
    cands += [
        os.path.dirname(os.environ[k]) for k in ("CC", "CXX", "CUDAHOSTCXX") if os.path.isabs(os.environ.get(k, ""))
    ]
    return [d for d in dict.fromkeys(cands) if d.startswith("/opt/") and os.path.isdir(d)]


def _package_dir() -> str:
    """This project's `pipeline` package dir (bound alone: the checkout around it holds data and secrets)."""
    return str(Path(__file__).resolve().parent)


def _job_binds(
    wd_s: str, write_dirs: list | None, exec_dirs: list | None, read_dirs: list | None
) -> tuple[list[str], list[str], list[str], str | None]:
    """A job's writable, exec and read-only dirs (real paths, made if missing), and the bytecode tree it reads: that
    of an environment installed without bytecode, compiled once by this trusted side (pipeline.bytecode), bound
    read-only; none for a job that could write into the tree."""
    wdirs, xdirs = _dirs(write_dirs), _dirs(exec_dirs)
    tree = bytecode.prefix(_package_dir(), tuple(_python_roots()))
    pyc = tree if tree and not bytecode.overlaps(tree, [wd_s, *wdirs, *xdirs]) else None
    return wdirs, xdirs, _dirs(list(read_dirs or []) + ([pyc] if pyc else []), readable=True), pyc


def _gpu_indices(gpu: bool | list[int]) -> list[int]:
    if gpu is True:
        vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        if vis and all(v.strip().isdigit() for v in vis.split(",")):
            return [int(v) for v in vis.split(",")]
        return sorted(
            int(p[len("/dev/nvidia") :])
            for p in map(str, Path("/dev").glob("nvidia[0-9]*"))
            if p[len("/dev/nvidia") :].isdigit()
        )
    return [int(i) for i in (gpu or [])]


def _parents(path: str) -> list[str]:
    out, p = [], os.path.dirname(path)
    while p not in ("/", ""):
        out.append(p)
        p = os.path.dirname(p)
    return out[::-1]


class _Binds:
    """bwrap mount arguments; parent directories are created 0755 (bwrap would make them 0700)."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.dirs: set[str] = {"/"}
        self.ro: list[str] = []

    def _mkparents(self, dest: str) -> None:
        for p in _parents(dest):
            if p not in self.dirs:
                self.dirs.add(p)
                self.args += ["--perms", "0755", "--dir", p]

    def add(self, kind: str, src: str, dest: str | None = None) -> None:
        dest = dest or src
        self._mkparents(dest)
        self.args += [kind, src, dest]
        self.dirs.add(dest)
        if kind == "--ro-bind":
            self.ro.append(dest)

    def covered(self, path: str) -> bool:
        """Inside a dir already bound read-only (a mount point cannot be made there, and none is needed)."""
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.ro)


def _passwd_files(ctl: Path, uid: int, gid: int) -> tuple[Path, Path]:
    pw, gr = ctl / "passwd", ctl / "group"
    pw.write_text(
        f"root:x:0:0:root:/root:/usr/sbin/nologin\njail:x:{uid}:{gid}:opforge jail:/tmp:/usr/sbin/nologin\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    gr.write_text(f"root:x:0:\njail:x:{gid}:\nnogroup:x:65534:\n")
    return pw, gr


@dataclass
class _Spec:
    workdir: str
    write_dirs: list[str]
    exec_dirs: list[str]
    read_dirs: list[str]
    gpu: list[int]
    env: dict[str, str]
    memory_mb: int | None
    cpu_s: float | None
    fsize_mb: int | None
    nproc: int | None
    scratch: str  # private /tmp and /dev/shm (host dir, removed afterwards)
    ctl: str  # control files (config, payload, passwd), bound read-only at /jail


def _launch_argv(spec: _Spec, inner: list[str], seccomp_fd: int, info_fd: int) -> tuple[list[str], dict[str, Any]]:
    """The full argv (unshare -> sh remount -> bwrap -> setpriv -> prlimit -> inner) and the layers it sets."""
    t = _tools()
    uid = gid = _UID_BASE + secrets.randbelow(_UID_SPAN)
    ctl = Path(spec.ctl)
    pw, gr = _passwd_files(ctl, uid if t.as_root else 65534, gid if t.as_root else 65534)
    b = _Binds()
    b.add("--bind", spec.scratch, "/tmp")  # first: dirs under the host's /tmp (job dirs, PYTHONPATH) go inside it
    for p in _SYSTEM_RO:
        if os.path.exists(p) and not b.covered(p):
            b.add("--ro-bind", os.path.realpath(p), p) if os.path.islink(p) else b.add("--ro-bind", p)
    for name in _MERGED_USR:
        host = f"/{name}"
        if os.path.islink(host):
            b.args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            b.add("--ro-bind", host)
    b.add("--ro-bind", str(pw), "/etc/passwd")
    b.add("--ro-bind", str(gr), "/etc/group")
    for r in _python_roots():
        if not b.covered(r):
            b.add("--ro-bind", r)
    pkg = _package_dir()
    if not b.covered(pkg):
        b.add("--ro-bind", pkg)
    cuda_home = spec.env.get("CUDA_HOME") or os.environ.get("CUDA_HOME")
    for p in [cuda_home] + os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if p and os.path.isdir(p) and not b.covered(p) and not b.covered(os.path.realpath(p)):
            b.add("--ro-bind", os.path.realpath(p), p)
    for d in _tool_dirs():
        prefix = "/".join(d.split("/")[:3])  # /opt/<name>
        if not b.covered(prefix):
            b.add("--ro-bind", os.path.realpath(prefix), prefix)
    for r in spec.read_dirs:
        if not b.covered(r):
            b.add("--ro-bind", r)
    writable = [spec.workdir] + [d for d in spec.write_dirs if d != spec.workdir]
    for w in writable + spec.exec_dirs:
        b.add("--bind", w)
    b.args += ["--proc", "/proc", "--dev", "/dev"]
    shm = os.path.join(spec.scratch, ".shm")
    os.makedirs(shm, exist_ok=True)
    b.args += ["--bind", shm, "/dev/shm"]
    if spec.gpu:
        for node in _GPU_NODES + tuple(f"/dev/nvidia{i}" for i in spec.gpu):
            if os.path.exists(node):
                b.args += ["--dev-bind", node, node]
        b.add("--ro-bind", "/sys")
    elif os.path.isdir("/sys/devices/system/cpu"):
        b.add("--ro-bind", "/sys/devices/system/cpu")  # OpenMP reads the online CPUs here
    b.add("--ro-bind", str(ctl), "/jail")
    b.args += ["--remount-ro", "/"]
    for d in [spec.workdir, spec.scratch, shm] + list(spec.write_dirs) + list(spec.exec_dirs):
        if t.as_root:
            os.chown(d, uid, gid)
    env = dict(spec.env)
    bw = [
        t.bwrap,
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--seccomp",
        str(seccomp_fd),
        "--info-fd",
        str(info_fd),
    ]
    if not t.as_root:
        bw += ["--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns", "--cap-drop", "ALL"]
    for k, v in sorted(env.items()):
        bw += ["--setenv", k, v]
    bw += b.args + ["--chdir", spec.workdir, "--"]
    if t.as_root:
        bw += [
            t.setpriv,
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    bw += [t.prlimit, *_limit_flags(spec.memory_mb, spec.cpu_s, spec.fsize_mb, spec.nproc), "--"] + inner
    remount = writable + [spec.scratch, shm]
    outer = [t.unshare, "--mount", "--propagation", "private"]
    if not t.as_root:
        outer = [t.unshare, "--user", "--map-root-user", "--mount", "--propagation", "private"]
    argv = outer + ["--", t.sh, "-c", _REMOUNT, "opforge-jail", str(len(remount)), *remount] + bw
    layers = {
        "bwrap": True,
        "pid_ns": True,
        "net_ns": True,
        "ipc_ns": True,
        "uts_ns": True,
        "mount_ns": True,
        "readonly_root": True,
        "noexec_writable": True,
        "seccomp": True,
        "no_new_privs": True,
        "caps_dropped": True,
        "unprivileged_uid": True,
        "env_allowlist": True,
        "rlimits": True,
        "gpu_nodes_only": bool(spec.gpu),
    }
    return argv, layers


# --------------------------------------------------------------------------- the Python job's bootstrap

# Runs first in the jailed interpreter: reads its config and payload from /jail (read-only), installs the audit
# hook, runs the code. Kept as source so the job needs nothing from this project on its path.
_BOOTSTRAP = r'''
import json, os, sys, traceback
_cfgpath = sys.argv[1]
with open(_cfgpath) as _f:
    _cfg = json.load(_f)
_chan = os.fdopen(_cfg["fd"], "w", buffering=1)
def _send(msg):
    try:
        _chan.write(json.dumps(msg, default=str) + "\n"); _chan.flush()
    except Exception:
        pass
PAYLOAD = None
if _cfg.get("payload_file"):
    with open(_cfg["payload_file"]) as _f:
        PAYLOAD = json.load(_f)
_send({"type": "setup", "uid": os.getuid(), "pid": os.getpid()})
sys.dont_write_bytecode = True
_roots = [os.path.realpath(p) for p in _cfg["write_roots"]]
_exec_roots = [os.path.realpath(p) for p in _cfg["exec_roots"]]
_sys_roots = [os.path.realpath(p) for p in _cfg["system_roots"]]
_read_roots = [os.path.realpath(p) for p in _cfg["read_roots"]]
_denied = set(_cfg["denied_programs"])
_allow_net = _cfg["allow_network"]
_cfg_fork = _cfg.get("allow_fork", False)
_reported = set()
def _violation(kind, what):
    key = (kind, str(what)[:200])
    if key not in _reported:
        _reported.add(key)
        _send({"type": "violation", "kind": kind, "what": str(what)[:500]})
    raise PermissionError(f"opforge sandbox: {kind}: {str(what)[:200]}")
def _under(p, roots):
    return any(p == r or p.startswith(r + os.sep) for r in roots)
def _real(path):
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return os.path.realpath(os.path.abspath(str(path)))
def _deepest(p):
    """What the deepest bind holding `p` is: "w" writable, "x" writable exec dir, "r" a read-only dir the caller
    chose, "s" a system or Python dir; None outside every bind (the private /tmp, the jail's own root)."""
    cands = ([(len(r), "w") for r in _roots if _under(p, [r])] + [(len(r), "x") for r in _exec_roots if _under(p, [r])]
             + [(len(r), "r") for r in _read_roots if _under(p, [r])]
             + [(len(r), "s") for r in _sys_roots if _under(p, [r])])
    return max(cands)[1] if cands else None
def _writable(path):
    """Writes here are not reported: the job's dirs, the private /tmp, and read-only dirs the caller bound (the
    kernel refuses those natively, as it would without this hook). Writes to system dirs are reported."""
    if isinstance(path, int):
        return True
    p = _real(path)
    k = _deepest(p)
    if k is not None:
        return k != "s"
    return p in ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/shm", "/tmp") or p.startswith(
        ("/dev/shm/", "/tmp/"))
def _loadable(p):
    """Native code may come from exec dirs and read-only binds, never from a writable dir or the private /tmp."""
    return _deepest(p) in ("x", "r", "s")
def _allowed_program(prog):
    name = os.fsdecode(prog)
    p = _real(name if os.sep in name else (__import__("shutil").which(name) or name))
    bases = {os.path.basename(p), os.path.basename(name)}
    if any(b in _denied or b.startswith("python") for b in bases):
        return False
    return _deepest(p) == "s"
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
        if isinstance(addr, (str, bytes)):  # AF_UNIX path: local IPC inside the jail
            return
        _violation("network_blocked", addr)
    elif not _allow_net and event == "socket.getaddrinfo":
        _violation("network_blocked", args[0])
    elif event == "os.fork" and _cfg_fork:
        return
    elif event in ("os.fork", "os.forkpty", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn"):
        exe = args[0] if args else ""
        if event in ("os.posix_spawn", "os.exec", "os.spawn") and exe and _allowed_program(exe):
            return
        _violation("process_blocked", f"{event} {exe}")
    elif event == "subprocess.Popen":
        exe, argv = args[0], args[1]
        prog = exe or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
        if isinstance(prog, (str, bytes, os.PathLike)) and _allowed_program(prog):
            return
        # torch inductor probes each compiled .so with `python -c "...cdll.LoadLibrary(path)"`: allow exactly that.
        if (isinstance(argv, (list, tuple)) and len(argv) == 3 and argv[1] == "-c" and isinstance(prog, (str, bytes))
                and _real(prog) == _real(sys.executable) and isinstance(argv[2], str) and len(argv[2]) < 600
                and argv[2].count("cdll.LoadLibrary(") == 1
                and not any(w in argv[2] for w in ("os.", "subprocess", "socket", "open(", "exec", "eval", ";"))):
            return
        _violation("process_blocked", f"subprocess {prog}")
    elif event == "ctypes.dlopen":
        name = args[0]
        if name is not None and os.sep in os.fsdecode(name):
            p = _real(name)
            if not _loadable(p):
                _violation("exec_blocked", f"native code loaded from a writable dir: {p}")
sys.addaudithook(_hook)
os.chdir(_cfg["workdir"])
def emit_result(value):
    _send({"type": "result", "value": value})
_g = {"__name__": "__main__", "__file__": _cfg["filename"], "__builtins__": __builtins__,
      "PAYLOAD": PAYLOAD, "emit_result": emit_result, "INHERITED_FDS": list(_cfg.get("inherited_fds", []))}
sys.argv = [_cfg["filename"]] + list(_cfg["args"])
try:
    _src = _cfg["code"]
    try:
        _code = compile(_src, _cfg["filename"], "exec")
    except (SyntaxError, ValueError) as e:
        _send({"type": "error", "kind": "syntax_error", "exc_type": type(e).__name__, "message": str(e)[:2000]})
        os._exit(1)
    del _cfg, _src, _f
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
_OOM_MARKERS = (
    "can't allocate memory",
    "cannot allocate memory",
    "out of memory",
    "std::bad_alloc",
    "memoryerror",
    "failed to allocate",
    "unable to allocate",
)
# Messages of a write refused by the read-only file system view (native writers raise their own exception types).
READONLY_MARKERS = ("read-only file system", "errno 30", "erofs", "permission denied", "errno 13")
# Messages of native code refused by a noexec mount.
EXEC_MARKERS = ("failed to map segment from shared object",)


_SIGNAL_REASONS = {
    signal.SIGSEGV: "segfault",
    signal.SIGBUS: "segfault",
    signal.SIGXCPU: "cpu_limit",
    signal.SIGXFSZ: "file_size_limit",
    signal.SIGKILL: "killed",
    signal.SIGABRT: "signal",
    signal.SIGSYS: "seccomp_violation",
}


def _classify_error(msg: dict) -> str:
    kind = msg.get("kind", "exception")
    if kind == "exception":
        text = (msg.get("exc_type", "") + " " + msg.get("message", "")).lower()
        if any(m in text for m in _OOM_MARKERS):
            return "memory_limit"
        if any(m in text for m in READONLY_MARKERS):
            return "file_access_blocked"
        if any(m in text for m in EXEC_MARKERS):
            return "exec_blocked"
    return kind


def _default_cpu_s(timeout_s: float, env: dict[str, str] | None) -> float:
    # RLIMIT_CPU counts every thread: a torch op on 8 threads spends 8 CPU-seconds per second, so a limit equal to
    # the wall clock SIGKILLed honest GPU-sized tasks on a 16-core worker. The wall clock bounds runaway code anyway.
    raw = (env or {}).get("OMP_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS") or ""
    threads = int(raw) if raw.isdigit() and int(raw) > 0 else (os.cpu_count() or 1)
    return timeout_s * threads + 5


def _base_env(workdir: str, extra: dict[str, str] | None, gpu: bool, pycache: str | None = None) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_PASS if k in os.environ}
    pybin = os.path.dirname(os.path.realpath(sys.executable))
    path = [
        os.path.join(sys.prefix, "bin"),
        pybin,
        *_tool_dirs(),
        "/usr/local/cuda/bin",
        "/usr/local/bin",
        "/usr/bin",
        "/bin",
    ]
    cuda_home = (extra or {}).get("CUDA_HOME") or os.environ.get("CUDA_HOME")
    if cuda_home:
        path.insert(0, os.path.join(cuda_home, "bin"))
    pp = [os.path.dirname(_package_dir())] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(
        {
            "PATH": os.pathsep.join(dict.fromkeys(path)),
            "HOME": workdir,
            "TMPDIR": "/tmp",
            "USER": "jail",
            "LOGNAME": "jail",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(pp)),
            "OMP_NUM_THREADS": os.environ.get("OPFORGE_SANDBOX_THREADS", "1"),
            "TORCHINDUCTOR_COMPILE_THREADS": "1",
        }
    )
    if not gpu:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(extra or {})
    if pycache:  # the trusted bytecode tree (_job_binds)
        env["PYTHONPYCACHEPREFIX"] = pycache
    for k in list(env):  # nothing that looks like a credential ever enters the jail
        if any(s in k.upper() for s in ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "CREDENTIAL")):
            env.pop(k)
    return env


@dataclass
class _Raw:
    returncode: int | None
    timed_out: bool
    stdout: bytes
    stderr: bytes
    chan: bytes
    totals: dict[str, int]
    wall: float
    max_rss_mb: float | None


def _await_jail_exit(info: bytes) -> None:
    """Kill the jail's first process (pid 1 of its pid namespace, as bwrap's --info-fd names it) and wait until it
    is gone: the kernel kills and reaps every other process of the namespace before that, so when this returns,
    nothing of the job runs any more."""
    try:
        pid = int(json.loads(info.decode() or "{}").get("child-pid") or 0)
    except (ValueError, AttributeError):
        return
    if pid <= 1:
        return
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # already gone
        return
    try:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass
        sel = selectors.DefaultSelector()
        sel.register(pidfd, selectors.EVENT_READ)
        sel.select(timeout=60)  # readable once the process has exited
        sel.close()
    finally:
        os.close(pidfd)


def _drive(
    argv: list[str],
    env: dict[str, str] | None,
    cwd: str,
    pass_fds: tuple[int, ...],
    chan_fd: int | None,
    timeout_s: float,
    max_output: int,
    max_chan: int,
    info_fd: int | None = None,
    started: Callable[[int], None] | None = None,
) -> _Raw:
    """Start `argv` in its own process group, drain its pipes until they close or the deadline passes, kill the
    group (and the jail's pid namespace), reap. Closes every fd it is given. Never raises for anything the child
    does."""
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        _close(*pass_fds, chan_fd, info_fd)  # this function owns every fd it was given
        raise
    _close(*pass_fds)
    if started is not None:
        started(proc.pid)  # its process group: the caller may end the job early (os.killpg)
    buffers = {"stdout": bytearray(), "stderr": bytearray(), "chan": bytearray()}
    totals = {"stdout": 0, "stderr": 0, "chan": 0}
    limits = {"stdout": max_output, "stderr": max_output, "chan": max_chan}
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    chan = info = None
    if chan_fd is not None:
        chan = os.fdopen(chan_fd, "rb", buffering=0)
        sel.register(chan, selectors.EVENT_READ, "chan")
    if info_fd is not None:
        info = os.fdopen(info_fd, "rb", buffering=0)
        sel.register(info, selectors.EVENT_READ, "info")
        buffers["info"], totals["info"], limits["info"] = bytearray(), 0, 4096
    open_streams = len(sel.get_map())
    timed_out = False
    deadline = t0 + timeout_s
    while open_streams:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            try:
                chunk = os.read(key.fileobj.fileno(), 65536)
            except OSError:
                chunk = b""
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            name = key.data
            totals[name] += len(chunk)
            room = limits[name] - len(buffers[name])
            if room > 0:
                buffers[name] += chunk[:room]
    reaped = None
    while not timed_out:  # the pipes closed; the child may still run: wait for it until the deadline
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
    try:  # the whole group; in the jail, bwrap's death takes the pid namespace (and everything in it) down
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if info is not None:
        if not buffers["info"]:  # bwrap writes it at start; read what is there without blocking on a dead pipe
            try:
                os.set_blocking(info.fileno(), False)
                buffers["info"] += os.read(info.fileno(), 4096)
            except OSError:
                pass
        _await_jail_exit(bytes(buffers["info"]))
    try:
        if reaped is None:
            _, status, rusage = os.wait4(proc.pid, 0)
            reaped = (status, rusage)
        returncode = os.waitstatus_to_exitcode(reaped[0])
        max_rss = reaped[1].ru_maxrss / 1024.0
    except ChildProcessError:
        returncode, max_rss = proc.poll(), None
    proc.returncode = returncode
    sel.close()
    for f in (proc.stdout, proc.stderr, chan, info):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
    return _Raw(
        returncode,
        timed_out,
        bytes(buffers["stdout"]),
        bytes(buffers["stderr"]),
        bytes(buffers["chan"]),
        totals,
        time.monotonic() - t0,
        max_rss,
    )


def _dirs(paths: list[str | os.PathLike] | None, readable: bool = False) -> list[str]:
    """Real paths of the job's dirs (made if missing). A read-only dir is bound alone, so only its own mode bits
    matter inside: `readable` opens it to the job's uid (o+rx; its files keep theirs)."""
    out = []
    for p in paths or []:
        Path(p).mkdir(parents=True, exist_ok=True)
        rp = os.path.realpath(p)
        if readable and os.geteuid() == 0:
            mode = os.stat(rp).st_mode
            if mode & 0o005 != 0o005:
                os.chmod(rp, (mode & 0o7777) | 0o005)
        out.append(rp)
    return out


def _unavailable(err: SandboxUnavailable, wall: float = 0.0) -> SandboxResult:
    return SandboxResult(
        False,
        "sandbox_unavailable",
        None,
        None,
        False,
        None,
        err.layer,
        str(err),
        "",
        "",
        0,
        0,
        wall,
        None,
        False,
        False,
        [],
        "",
        {err.layer: False},
    )


# Exit status of the launch chain when the remount of writable dirs failed (set in _REMOUNT).
_REMOUNT_FAILED = 111


def _launch_failure(raw: _Raw) -> str | None:
    """The layer that failed when the jail itself did not come up (before any untrusted code ran)."""
    err = raw.stderr.decode(errors="replace")
    if raw.returncode == _REMOUNT_FAILED or "mount:" in err[:300] and "opforge-jail" not in err:
        return "noexec_mount"
    if err.startswith("unshare:") or "\nunshare:" in err[:200]:
        return "mount_ns"
    if err.startswith("bwrap:") or "\nbwrap:" in err[:400]:
        return "bwrap"
    if err.startswith("setpriv:"):
        return "uid_switch"
    if err.startswith("prlimit:"):
        return "rlimits"
    return None


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
    exec_dirs: list[str | os.PathLike] | None = None,
    read_dirs: list[str | os.PathLike] | None = None,
    gpu: bool | list[int] = False,
    env: dict[str, str] | None = None,
    allow_network: bool = False,
    allow_fork: bool = False,
    max_output_bytes: int = 20_000,
    max_result_bytes: int = 16 * 2**20,
    mode: str | None = None,
    inherit_fds: tuple[int, ...] = (),
    started: Callable[[int], None] | None = None,
) -> SandboxResult:
    """Run untrusted Python in a fresh jailed interpreter and return what happened. Never raises for anything the
    code does.

    `code_or_script`: source text, or a path (os.PathLike) to a .py file (bound read-only). The code sees `PAYLOAD`
    (any JSON value, delivered through a file) and reports with `emit_result(value)` (the last one counts;
    `emitted` holds them all, for a job that streams its results).
    `workdir`: an existing dir to run in (kept, writable); None makes a private one, removed afterwards.
    `write_dirs`: more writable dirs, private to this job (noexec). `exec_dirs`: writable dirs from which the job may
    load native code it compiles itself (an inductor cache, a load_inline build dir). `read_dirs`: read-only dirs.
    `gpu`: False, True (the GPUs in CUDA_VISIBLE_DEVICES) or a list of indices: only those device nodes appear.
    `allow_fork`: the code may fork (a trusted driver that isolates each task in a child); the jail still bounds
    the processes (pid namespace, per-job process limit).
    `cpu_s` defaults to the wall-clock limit times the threads the code may use, plus a little.
    `inherit_fds`: open fds the job inherits (a copy of each; the caller keeps and closes its own), seen by the code as
    `INHERITED_FDS` in the same order: a trusted driver's job queue shared by several jails. The driver must close
    them before any untrusted code of its own runs.
    `started`: called with the job's process group once it runs, so that the caller can end it before its
    `timeout_s` (`os.killpg(pgid, SIGKILL)`: in the jail, bwrap's death takes its pid namespace down).
    """
    mode = sandbox_mode(mode)
    jailed = mode == "jail"
    t0 = time.monotonic()
    is_path = isinstance(code_or_script, os.PathLike)
    with _job_dirs(workdir) as (wd_s, ctl, scratch):
        wdirs, xdirs, rdirs, pyc = _job_binds(wd_s, write_dirs, exec_dirs, read_dirs)
        script = os.path.realpath(code_or_script) if is_path else None
        code = Path(script).read_text(errors="replace") if script else str(code_or_script)
        (ctl / "payload.json").write_text(json.dumps(payload, default=str))
        inside = "/jail" if jailed else str(ctl)
        gpus = _gpu_indices(gpu) if gpu else []
        read_fd, write_fd = os.pipe()
        shared = tuple(os.dup(fd) for fd in inherit_fds)
        cfg = {
            "fd": write_fd,
            "inherited_fds": list(shared),
            "code": code,
            "script": script,
            "filename": script or "<sandboxed>",
            "args": list(args or []),
            "payload_file": f"{inside}/payload.json",
            "workdir": wd_s,
            "write_roots": [wd_s] + wdirs,
            "exec_roots": xdirs,
            "system_roots": ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/etc/alternatives"]
            + _python_roots()
            + [p for p in (os.environ.get("CUDA_HOME"), (env or {}).get("CUDA_HOME")) if p],
            "read_roots": [_package_dir(), *rdirs],
            "denied_programs": list(DENIED_PROGRAMS),
            "allow_network": allow_network,
            "allow_fork": allow_fork,
        }
        (ctl / "cfg.json").write_text(json.dumps(cfg))
        (ctl / "bootstrap.py").write_text(_BOOTSTRAP)
        for f in ctl.iterdir():
            os.chmod(f, 0o644)
        child_env = _base_env(wd_s, env, bool(gpus), pyc)
        cpu = cpu_s if cpu_s is not None else _default_cpu_s(timeout_s, env)
        info_r = None
        if not jailed:
            _warn_unsafe()
            child_env.update({"HOME": wd_s, "TMPDIR": str(scratch)})
            argv = _unsafe_limits(memory_mb, cpu, fsize_mb, nproc) + [
                sys.executable,
                "-u",
                f"{inside}/bootstrap.py",
                f"{inside}/cfg.json",
            ]
            layers = {"rlimits": True, "audit_hook": True}
            pass_fds: tuple[int, ...] = (write_fd, *shared)
        else:
            spec = _Spec(
                wd_s, wdirs, xdirs, rdirs, gpus, child_env, memory_mb, cpu, fsize_mb, nproc, str(scratch), str(ctl)
            )
            try:
                argv, layers, seccomp_fd, info_r, info_w = _jail_launch(
                    spec, [sys.executable, "-u", "/jail/bootstrap.py", "/jail/cfg.json"]
                )
            except SandboxUnavailable as e:
                _close(read_fd, write_fd, *shared)
                return _unavailable(e, time.monotonic() - t0)
            child_env = {"PATH": "/usr/bin:/bin"}
            pass_fds = (write_fd, seccomp_fd, info_w, *shared)
        try:  # _drive owns the fds from here: it closes pass_fds and the read ends
            raw = _drive(
                argv,
                child_env,
                str(scratch) if jailed else wd_s,
                pass_fds,
                read_fd,
                timeout_s,
                max_output_bytes,
                max_result_bytes,
                info_r,
                started,
            )
        except OSError as e:
            return SandboxResult(
                False,
                "sandbox_error",
                None,
                None,
                False,
                None,
                type(e).__name__,
                str(e),
                "",
                "",
                0,
                0,
                time.monotonic() - t0,
                None,
                False,
            )
    return _result(raw, max_result_bytes, jailed, layers)


def _limit_flags(memory_mb, cpu_s, fsize_mb, nproc) -> list[str]:
    """prlimit's flags: address space, CPU seconds (soft first: SIGXCPU, reason cpu_limit, before SIGKILL), file
    size, processes, no core dumps."""
    lim = ["--core=0"]
    if memory_mb:
        lim.append(f"--as={int(memory_mb) * 2**20}")
    if cpu_s:
        lim.append(f"--cpu={int(cpu_s)}:{int(cpu_s) + 5}")
    if fsize_mb:
        lim.append(f"--fsize={int(fsize_mb) * 2**20}")
    if nproc:
        lim.append(f"--nproc={int(nproc)}")
    return lim


def _unsafe_limits(memory_mb, cpu_s, fsize_mb, nproc) -> list[str]:
    """The opt-out's limits (no per-job uid there: a process limit would count every process of the caller's)."""
    p = _which("prlimit")
    if not p:
        return []
    return [p, *_limit_flags(memory_mb, cpu_s, fsize_mb, nproc if os.geteuid() != 0 else None), "--"]


@contextlib.contextmanager
def _job_dirs(workdir: str | os.PathLike | None):
    """(work dir, control dir, scratch dir) of one job: the work dir is the caller's or a private one; the control
    dir (config, payload, passwd; read-only at /jail) and the scratch dir (/tmp, /dev/shm) are removed afterwards."""
    own_dir = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="opforge-job-")) if own_dir else Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    ctl = Path(tempfile.mkdtemp(prefix="opforge-ctl-"))
    scratch = Path(tempfile.mkdtemp(prefix="opforge-tmp-"))
    os.chmod(ctl, 0o755)
    try:
        yield os.path.realpath(wd), ctl, scratch
    finally:
        shutil.rmtree(ctl, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
        if own_dir:
            shutil.rmtree(wd, ignore_errors=True)


def _jail_launch(spec: _Spec, inner: list[str]) -> tuple[list[str], dict[str, Any], int, int, int]:
    """(argv, layers, seccomp fd, info read fd, info write fd) of a jailed launch; raises SandboxUnavailable with
    no fd left open."""
    from pipeline.seccomp import policy_fd

    _tools()
    seccomp_fd = policy_fd()
    info_r, info_w = os.pipe()
    try:
        argv, layers = _launch_argv(spec, inner, seccomp_fd, info_w)
    except BaseException:
        for fd in (seccomp_fd, info_r, info_w):
            os.close(fd)
        raise
    return argv, layers, seccomp_fd, info_r, info_w


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None and fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass


def _result(raw: _Raw, max_result_bytes: int, jailed: bool, layers: dict[str, bool]) -> SandboxResult:
    setup, result, got_result, error, violations, done, uid = False, None, False, None, [], False, None
    emitted: list = []
    for line in raw.chan.split(b"\n"):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        t = msg.get("type")
        if t == "setup" and not setup:
            setup, uid = True, msg.get("uid")
        elif t == "result":
            result, got_result = msg.get("value"), True
            emitted.append(result)
        elif t == "error" and error is None:
            error = msg
        elif t == "done":
            done = True
        elif t == "violation":
            violations.append({"kind": msg.get("kind"), "what": msg.get("what")})
    rc = raw.returncode
    stderr = raw.stderr.decode(errors="replace")
    if jailed and not setup and not raw.timed_out:
        layer = _launch_failure(raw)
        if layer:
            return SandboxResult(
                False,
                "sandbox_unavailable",
                rc,
                None,
                False,
                None,
                layer,
                f"{layer}: the jail did not start: {stderr[-1500:]}",
                "",
                stderr,
                0,
                raw.totals["stderr"],
                round(raw.wall, 4),
                raw.max_rss_mb,
                False,
                False,
                [],
                "",
                {**layers, layer: False},
            )
    sig_name = None
    if rc is not None and rc < 0:
        try:
            sig_name = signal.Signals(-rc).name
        except ValueError:
            sig_name = f"SIG{-rc}"
    error_type, error_message = "", ""
    if error is not None:
        error_type = str(error.get("exc_type", ""))
        error_message = str(error.get("traceback") or error.get("message") or "")[-4000:]
    if raw.totals["chan"] > max_result_bytes:
        reason = "result_too_large"
    elif violations:
        reason = str(violations[0]["kind"])
        error_type = error_type or reason
        error_message = error_message or str(violations[0]["what"])
    elif raw.timed_out:
        reason = "timeout"
    elif error is not None:
        reason = _classify_error(error)
    elif rc is not None and rc < 0:
        sig = -rc
        reason = _SIGNAL_REASONS.get(sig, "signal")
        if reason in ("signal", "killed") and any(m in stderr.lower() for m in _OOM_MARKERS):
            reason = "memory_limit"
    elif rc is not None and rc > 128 and jailed:
        # bwrap's pid 1 reports a child killed by signal N as exit status 128 + N.
        sig = rc - 128
        reason = _SIGNAL_REASONS.get(sig, "signal")
        try:
            sig_name = signal.Signals(sig).name
        except ValueError:
            sig_name = f"SIG{sig}"
        if reason in ("signal", "killed") and any(m in stderr.lower() for m in _OOM_MARKERS):
            reason = "memory_limit"
    elif not got_result:
        reason = "no_result" if done else "sys_exit"
    else:
        reason = ""
    if reason == "" and rc not in (0, None):
        reason = "sys_exit"
    return SandboxResult(
        ok=reason == "",
        reason=reason,
        returncode=rc,
        signal=sig_name,
        timed_out=raw.timed_out,
        result=result if got_result else None,
        error_type=error_type,
        error_message=error_message,
        stdout=raw.stdout.decode(errors="replace"),
        stderr=stderr,
        stdout_bytes=raw.totals["stdout"],
        stderr_bytes=raw.totals["stderr"],
        wall_s=round(raw.wall, 4),
        max_rss_mb=raw.max_rss_mb,
        netns=jailed,
        mountns=jailed,
        violations=violations,
        jail="bwrap" if jailed else "unsafe",
        layers=layers,
        uid=uid if isinstance(uid, int) else None,
        emitted=emitted,
    )


def run_command(
    argv: list[str],
    *,
    workdir: str | os.PathLike | None = None,
    read_dirs: list[str | os.PathLike] | None = None,
    write_dirs: list[str | os.PathLike] | None = None,
    exec_dirs: list[str | os.PathLike] | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 600.0,
    memory_mb: int | None = None,
    cpu_s: float | None = None,
    fsize_mb: int | None = 1024,
    nproc: int | None = 512,
    gpu: bool | list[int] = False,
    max_output_bytes: int = 200_000,
    mode: str | None = None,
) -> CommandResult:
    """Run a program in the jail (a compiler on candidate sources, a rollout tool's command). `argv[0]` is looked
    up on the jail's PATH; the program sees only what `run_sandboxed` code would see. Never raises."""
    mode = sandbox_mode(mode)
    jailed = mode == "jail"
    t0 = time.monotonic()
    with _job_dirs(workdir) as (wd_s, ctl, scratch):
        wdirs, xdirs, rdirs, pyc = _job_binds(wd_s, write_dirs, exec_dirs, read_dirs)
        child_env = _base_env(wd_s, env, bool(gpu), pyc)
        info_r = None
        if not jailed:
            _warn_unsafe()
            child_env.update({"HOME": wd_s, "TMPDIR": str(scratch)})
            full = _unsafe_limits(memory_mb, cpu_s, fsize_mb, nproc) + list(argv)
            layers = {"rlimits": True}
            pass_fds: tuple[int, ...] = ()
            cwd = wd_s
        else:
            spec = _Spec(
                wd_s,
                wdirs,
                xdirs,
                rdirs,
                _gpu_indices(gpu) if gpu else [],
                child_env,
                memory_mb,
                cpu_s or timeout_s * (os.cpu_count() or 1) + 5,
                fsize_mb,
                nproc,
                str(scratch),
                str(ctl),
            )
            try:
                full, layers, seccomp_fd, info_r, info_w = _jail_launch(spec, list(argv))
            except SandboxUnavailable as e:
                return CommandResult(
                    False, "sandbox_unavailable", None, False, "", str(e), time.monotonic() - t0, "", {e.layer: False}
                )
            child_env = {"PATH": "/usr/bin:/bin"}
            pass_fds = (seccomp_fd, info_w)
            cwd = str(scratch)
        try:  # _drive owns the fds from here
            raw = _drive(full, child_env, cwd, pass_fds, None, timeout_s, max_output_bytes, 0, info_r)
        except OSError as e:
            return CommandResult(
                False, "sandbox_error", None, False, "", f"{type(e).__name__}: {e}", time.monotonic() - t0, "", {}
            )
    out, err = raw.stdout.decode(errors="replace"), raw.stderr.decode(errors="replace")
    rc = raw.returncode
    jailed = mode == "jail"
    if jailed and rc not in (0, None) and not raw.timed_out:
        layer = _launch_failure(raw)
        if layer:
            return CommandResult(
                False,
                "sandbox_unavailable",
                rc,
                False,
                out,
                f"{layer}: the jail did not start: " + err,
                round(raw.wall, 4),
                "",
                {**layers, layer: False},
            )
    if raw.timed_out:
        reason = "timeout"
    elif rc == 0:
        reason = ""
    elif rc is not None and (rc < 0 or rc > 128):
        sig = -rc if rc < 0 else rc - 128
        reason = _SIGNAL_REASONS.get(sig, "signal")
        reason = "signal" if reason == "segfault" else reason
        if any(m in err.lower() for m in _OOM_MARKERS):
            reason = "memory_limit"
    else:
        reason = "exit_status"
    return CommandResult(
        reason == "", reason, rc, raw.timed_out, out, err, round(raw.wall, 4), "bwrap" if jailed else "unsafe", layers
    )


if __name__ == "__main__":  # tiny manual check: python -m pipeline.sandbox 'print(1); emit_result(2)'
    r = run_sandboxed(sys.argv[1] if len(sys.argv) > 1 else "emit_result(PAYLOAD)", payload={"x": 1})
    print(json.dumps(r.to_dict(), indent=1))
