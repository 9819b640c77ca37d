"""The jail's seccomp policy, compiled to a BPF program by libseccomp (loaded with ctypes: its Python binding is
a Debian package for the system Python only). Standard library only.

Policy: allow by default; kill the whole process (SIGSYS, reason `seccomp_violation`: an attempt cannot be
swallowed by the code that made it) on the calls that change the jail itself or reach into the kernel or other
processes: mount and the new mount API, pivot_root, chroot, setns, unshare and clone with any namespace flag,
ptrace and cross-process memory access, bpf, perf_event_open, keyctl and its friends, kernel modules and kexec,
io_uring (its operations bypass seccomp), userfaultfd, handle-based opens, raw I/O ports, clock and syslog changes,
swap, reboot, accounting. A few calls that honest libraries may probe (perf_event_open, io_uring, personality)
fail with EPERM instead. clone3 answers ENOSYS so that libc falls back to clone, whose flags a filter can read.
Calls of another architecture (x32, i386 through int 0x80) kill the process (libseccomp's bad-arch action).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import tempfile

DENIED = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "setns",
    "unshare",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "iopl",
    "ioperm",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "fanotify_init",
    "vhangup",
    "uselib",
    "personality",
    "setdomainname",
    "sethostname",
)
# Namespace flags of clone(2): a clone that asks for any of them is denied.
CLONE_NS_FLAGS = (0x00000080, 0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)

# Probed by honest libraries (profilers, I/O runtimes): refused, not fatal.
SOFT_DENIED = ("perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "personality")

_ACT_ALLOW = 0x7FFF0000
_ACT_KILL_PROCESS = 0x80000000


def _act_errno(e: int) -> int:
    return 0x00050000 | (e & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


_SCMP_CMP_MASKED_EQ = 7


class SeccompUnavailable(RuntimeError):
    """libseccomp cannot be loaded or refused the policy."""


def _lib() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as e:
        raise SeccompUnavailable(f"libseccomp not found ({e}); install the libseccomp2 package") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


_BPF: bytes | None = None


def policy_bpf() -> bytes:
    """The compiled filter (cached per process). Raises SeccompUnavailable."""
    global _BPF
    if _BPF is not None:
        return _BPF
    lib = _lib()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        deny = _ACT_KILL_PROCESS
        for name in DENIED:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:  # not a syscall on this architecture
                continue
            act = _act_errno(errno.EPERM) if name in SOFT_DENIED else deny
            rc = lib.seccomp_rule_add_array(ctx, act, nr, 0, None)
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_rule_add({name}) failed: {rc}")
        clone = lib.seccomp_syscall_resolve_name(b"clone")
        for flag in CLONE_NS_FLAGS:
            cmp = (_ArgCmp * 1)(_ArgCmp(0, _SCMP_CMP_MASKED_EQ, flag, flag))
            rc = lib.seccomp_rule_add_array(ctx, deny, clone, 1, cmp)
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_rule_add(clone & {flag:#x}) failed: {rc}")
        clone3 = lib.seccomp_syscall_resolve_name(b"clone3")
        if clone3 >= 0:
            lib.seccomp_rule_add_array(ctx, _act_errno(errno.ENOSYS), clone3, 0, None)
        with tempfile.TemporaryFile() as f:
            rc = lib.seccomp_export_bpf(ctx, f.fileno())
            if rc < 0:
                raise SeccompUnavailable(f"seccomp_export_bpf failed: {rc}")
            f.seek(0)
            data = f.read()
    finally:
        lib.seccomp_release(ctx)
    if not data or len(data) % 8:
        raise SeccompUnavailable("libseccomp exported an empty or malformed program")
    _BPF = data
    return data


def policy_fd() -> int:
    """A readable fd positioned at the start of the compiled filter (for `bwrap --seccomp FD`); caller closes."""
    data = policy_bpf()
    r, w = os.pipe()
    if len(data) > 65536:  # a pipe holds 64 KiB; the policy is ~1 KiB
        os.close(r)
        os.close(w)
        raise SeccompUnavailable("the compiled filter is larger than a pipe buffer")
    os.write(w, data)
    os.close(w)
    return r
