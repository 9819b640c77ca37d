"""Deliberate attacks on the jail, with harmless payloads: each one is contained (the marker outside stays absent,
the listener on 127.0.0.1 gets no connection, the caller lives), gets a reason code where the attempt is visible,
and leaves no process behind. Run as root (these machines) and, for a subset, as an unprivileged user."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pipeline.sandbox import run_command, run_sandboxed

# libc through ctypes, as hostile native code would use it (the audit hook never sees these calls).
LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def _leftovers(uid: int | None) -> list[int]:
    """Processes still running under the job's uid (a scan of the whole process table)."""
    if uid is None:
        return []
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            status = (p / "status").read_text()
        except OSError:
            continue
        line = next((ln for ln in status.splitlines() if ln.startswith("Uid:")), "")
        if line and int(line.split()[1]) == uid:
            out.append(int(p.name))
    return out


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1 that counts connections (opened by the test, outside any jail)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, addr = srv.accept()
                hits.append(str(addr))
                c.close()
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], hits
    stop.set()
    t.join()
    srv.close()


def _run(code: str, tmp_path: Path, **kw):
    wd = tmp_path / "work"
    wd.mkdir(exist_ok=True)
    r = run_sandboxed(code, workdir=wd, timeout_s=kw.pop("timeout_s", 20), **kw)
    assert r.jail == "bwrap", (r.reason, r.error_message[-500:])
    assert _leftovers(r.uid) == [], "a process outlived the job"
    return r


def test_remount_root_read_write_is_killed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    code = LIBC + (
        f"libc.mount(None, b'/', None, 32 | 4096, None)\n"
        f"open('{outside}/marker', 'w').write('escaped')\nemit_result('done')"
    )
    r = _run(code, tmp_path)
    assert r.reason == "seccomp_violation" and r.signal == "SIGSYS"
    assert not (outside / "marker").exists()


def test_setns_into_the_parents_namespaces_and_connect_out(tmp_path, listener):
    port, hits = listener
    code = LIBC + (
        f"fd = os.open('/proc/{os.getpid()}/ns/net', os.O_RDONLY)\n"
        "libc.setns(fd, 0)\n"
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nemit_result('done')"
    )
    r = _run(code, tmp_path)
    assert not r.ok and r.reason in ("exception", "seccomp_violation")  # the parent's pid is not even visible
    code = LIBC + (
        "fd = os.open('/proc/self/ns/net', os.O_RDONLY)\nlibc.setns(fd, 0)\n"
        "libc.unshare(0x40000000)\nemit_result('done')"
    )
    r = _run(code, tmp_path)
    assert r.reason == "seccomp_violation"
    assert hits == []


def test_native_connect_to_localhost_reaches_nothing(tmp_path, listener):
    port, hits = listener
    code = LIBC + (
        "import struct\ns = libc.socket(2, 1, 0)\n"
        "addr = struct.pack('<HH4s8x', 2, socket_port, bytes([127, 0, 0, 1]))\n"
        "rc = libc.connect(s, addr, 16)\nemit_result([rc, ctypes.get_errno()])"
    )
    code = code.replace("socket_port", f"__import__('socket').htons({port})")
    r = _run(code, tmp_path)
    assert r.ok and r.result[0] == -1  # loopback inside the jail's own network namespace: nobody listens
    r = _run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)", tmp_path)
    assert r.reason == "network_blocked"
    assert hits == []


def test_a_script_named_gcc_in_the_work_dir_does_not_run(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    wd = tmp_path / "work"
    wd.mkdir()
    gcc = wd / "gcc"
    gcc.write_text(f"#!/bin/sh\ntouch {outside}/marker\nnsenter -t 1 -a true\n")
    gcc.chmod(0o755)
    r = _run("import subprocess\nsubprocess.run(['./gcc'])\nemit_result('ran')", tmp_path)
    assert r.reason == "process_blocked"  # its real path is in a writable dir, whatever its name
    r = _run(
        LIBC + "rc = libc.execv(b'./gcc', (ctypes.c_char_p * 2)(b'./gcc', None))\nemit_result(ctypes.get_errno())",
        tmp_path,
    )
    assert r.ok and r.result == 13  # EACCES: the work dir is mounted noexec
    assert not (outside / "marker").exists()


def test_no_secret_in_any_environ(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_opforge_test_secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-opforge-test-secret")
    code = (
        "import os\nfound = []\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        try:\n"
        "            found.append(open(f'/proc/{p}/environ', 'rb').read())\n        except OSError:\n"
        "            pass\n"
        f"emit_result([b'opforge_test_secret' in b''.join(found), os.path.exists('/proc/{os.getpid()}'), "
        "b'OPFORGE' in open('/proc/self/environ', 'rb').read()])"
    )
    r = _run(code, tmp_path, payload={"big": "x" * 10})
    assert r.ok and r.result == [False, False, False]


def test_a_setsid_daemon_does_not_outlive_the_job(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    code = LIBC + (
        "if libc.fork() == 0:\n    libc.setsid()\n    if libc.fork() == 0:\n"
        "        while True:\n            open('beat', 'a').write('.')\n            libc.usleep(20000)\n"
        "    libc._exit(0)\nemit_result('parent done')"
    )
    r = _run(code, tmp_path, timeout_s=60)
    assert r.ok and not r.timed_out and r.wall_s < 30
    beat = wd / "beat"
    size = beat.stat().st_size if beat.exists() else 0
    assert _leftovers(r.uid) == []
    assert (beat.stat().st_size if beat.exists() else 0) == size


def test_killing_the_parent_is_impossible(tmp_path):
    code = LIBC + (
        f"rc1 = libc.kill({os.getpid()}, 9)\ne1 = ctypes.get_errno()\nrc2 = libc.kill(os.getppid(), 9)\n"
        "emit_result([rc1, e1, os.getppid()])"
    )
    r = _run(code, tmp_path)
    assert r.ok and r.result[0] == -1 and r.result[1] == 3  # ESRCH: the caller is outside the pid namespace
    assert r.result[2] in (0, 1)


def test_proc_sys_and_cgroups_are_not_writable(tmp_path):
    code = (
        "import os\nres = []\nfor p in ('/proc/sys/kernel/hostname', '/proc/sys/vm/drop_caches',\n"
        "          '/sys/fs/cgroup/cgroup.procs', '/proc/sysrq-trigger'):\n"
        "    try:\n        fd = os.open(p, os.O_WRONLY)\n        os.write(fd, b'1')\n        res.append(p)\n"
        "    except OSError:\n        pass\nemit_result(res)"
    )
    r = _run(
        LIBC + code.replace("os.open(p", "libc_open(p").replace("import os\n", "import os\nlibc_open = os.open\n"),
        tmp_path,
    )
    assert r.reason == "file_access_blocked"  # the audit hook names the attempt ...
    native = LIBC + (
        "res = []\nfor p in (b'/proc/sys/kernel/hostname', b'/proc/sys/vm/drop_caches', "
        "b'/sys/fs/cgroup/cgroup.procs'):\n    fd = libc.open(p, 1)\n    if fd >= 0:\n"
        "        res.append(p.decode())\nemit_result(res)"
    )
    r = _run(native, tmp_path)
    assert r.ok and r.result == []  # ... and natively nothing opens for writing


def test_dev_shm_and_tmp_are_private_to_each_job(tmp_path):
    r1 = _run(
        "open('/dev/shm/opforge-x', 'w').write('1')\nopen('/tmp/opforge-y', 'w').write('1')\n"
        "import os\nemit_result(sorted(os.listdir('/dev/shm')))",
        tmp_path,
    )
    assert r1.ok and r1.result == ["opforge-x"]
    r2 = _run("import os\nemit_result([os.listdir('/dev/shm'), os.path.exists('/tmp/opforge-y')])", tmp_path)
    assert r2.ok and r2.result == [[], False]


def test_another_candidates_files_are_invisible(tmp_path):
    other = tmp_path / "other-candidate"
    other.mkdir()
    (other / "solution.py").write_text("SECRET = 1\n")
    r = _run(f"emit_result(open('{other}/solution.py').read())", tmp_path)
    assert r.reason == "exception" and "No such file" in r.error_message


def test_ptrace_of_the_parent_is_killed(tmp_path):
    r = _run(LIBC + "libc.ptrace(16, 1, None, None)\nemit_result('attached')", tmp_path)
    assert r.reason == "seccomp_violation"


def test_loading_a_shared_object_from_the_work_dir(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    src = tmp_path / "evil.c"
    src.write_text("int evil(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(wd / "evil.so")], check=True)
    r = _run("import ctypes\nemit_result(ctypes.CDLL('./evil.so').evil())", tmp_path)
    assert r.reason == "exec_blocked"
    # Without the interpreter's hook (any program), the noexec mount refuses to map it.
    c = run_command([sys.executable, "-c", "import ctypes; ctypes.CDLL('./evil.so')"], workdir=wd, timeout_s=30)
    assert not c.ok and "failed to map segment" in c.stderr


def test_fork_bomb_is_contained(tmp_path):
    code = LIBC + "while True:\n    libc.fork()\n"
    t = time.monotonic()
    r = _run(code, tmp_path, timeout_s=6, nproc=64)
    assert r.reason == "timeout" and time.monotonic() - t < 60
    r = _run("import os\nwhile True:\n    os.fork()\n", tmp_path)
    assert r.reason == "process_blocked"


def test_memory_bomb_is_contained(tmp_path):
    r = _run(
        LIBC + "libc.malloc.restype = ctypes.c_void_p\nblocks = []\nwhile True:\n"
        "    p = libc.malloc(1 << 28)\n    if not p:\n        raise MemoryError('malloc failed')\n"
        "    ctypes.memset(p, 1, 1 << 28)\n    blocks.append(p)\n",
        tmp_path,
        memory_mb=512,
    )
    assert r.reason == "memory_limit"


def test_huge_payload_travels(tmp_path):
    big = "x" * (20 * 2**20)
    r = _run("emit_result(len(PAYLOAD['code']))", tmp_path, payload={"code": big})
    assert r.ok and r.result == len(big)


def test_builds_cannot_read_host_files(tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("opforge-host-secret\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.cpp").write_text(f'#include "{secret}"\nint main() {{ return 0; }}\n')
    os.symlink(secret, ws / "opforge_secret_link.h")
    (ws / "b.cpp").write_text('#include "opforge_secret_link.h"\nint main() { return 0; }\n')
    for src in ("a.cpp", "b.cpp"):
        c = run_command(["g++", "-c", src, "-o", "/tmp/x.o"], workdir=ws, timeout_s=120)
        assert c.jail == "bwrap" and not c.ok, (src, c.output)
        assert "opforge-host-secret" not in c.output


def test_a_missing_layer_fails_closed(tmp_path, monkeypatch):
    import pipeline.sandbox as sb

    monkeypatch.setattr(sb, "_TOOLS", None)
    monkeypatch.setattr(sb, "_which", lambda name: None if name == "bwrap" else shutil.which(name))
    marker = tmp_path / "ran"
    r = run_sandboxed(f"open('{marker}', 'w').write('1')", timeout_s=10)
    assert r.reason == "sandbox_unavailable" and "bwrap" in r.error_message and r.jail == ""
    assert not marker.exists()


def test_unsafe_mode_is_explicit_and_marked(tmp_path, monkeypatch):
    monkeypatch.setenv("OPFORGE_SANDBOX_MODE", "unsafe")
    r = run_sandboxed("emit_result(1)", timeout_s=20)
    assert r.ok and r.jail == "unsafe" and not r.netns


_NONROOT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from pipeline.sandbox import run_sandboxed
attacks = {
    "remount": "import ctypes\nctypes.CDLL(None).mount(None, b'/', None, 32 | 4096, None)\nemit_result(1)",
    "ptrace": "import ctypes\nctypes.CDLL(None).ptrace(16, 1, None, None)\nemit_result(1)",
    "write_outside": f"open('{sys.argv[2]}/marker', 'w').write('1')\nemit_result(1)",
    "proc_sys": "open('/proc/sys/kernel/hostname', 'w').write('x')\nemit_result(1)",
    "honest": "emit_result(2 + 2)",
}
out = {}
for name, code in attacks.items():
    r = run_sandboxed(code, timeout_s=20)
    out[name] = [r.reason, r.jail, r.result]
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_as_an_unprivileged_user_attacks_are_contained_or_refused():
    tmp_path = Path(tempfile.mkdtemp(prefix="opforge-nonroot-"))  # pytest's tmp dirs are private to root
    os.chmod(tmp_path, 0o755)
    pkg = tmp_path / "src"
    shutil.copytree(Path(__file__).resolve().parents[1] / "pipeline", pkg / "pipeline")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    for p in [tmp_path, pkg, *pkg.rglob("*")]:
        os.chmod(p, os.stat(p).st_mode | 0o055)
    try:
        p = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                _NONROOT,
                str(pkg),
                str(outside),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
    finally:
        marker_found = (outside / "marker").exists()
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert p.returncode == 0, p.stderr[-2000:]
    import json

    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert not marker_found
    for name, (reason, jail, result) in out.items():
        if jail != "bwrap":  # refused: the jail could not be built for this user; never run open
            assert reason == "sandbox_unavailable" and jail == ""
            continue
        if name == "honest":
            assert reason == "" and result == 4
        else:
            # the host path does not exist in the jail (its /tmp is private): a plain exception, nothing written
            assert reason in ("seccomp_violation", "file_access_blocked", "exception"), (name, reason)


def test_unsafe_config_is_recorded_and_publish_refuses_its_tasks(tmp_path, monkeypatch):
    """`sandbox.mode=unsafe` sets the mode for this process and its Ray workers; a release holding a task whose
    validation ran unjailed is refused unless forced."""
    import pyarrow as pa

    from pipeline.config import load_config
    from pipeline.curate.stage import CurationResult
    from pipeline.publish.jail_check import unsafe_tasks
    from pipeline.storage import conform, write_table

    monkeypatch.setenv("OPFORGE_SANDBOX_MODE", "jail")  # undone at teardown: the process's own mode comes back
    cfg = load_config(overrides=["sandbox.mode=unsafe"])
    assert cfg.sandbox.mode == "unsafe" and os.environ["OPFORGE_SANDBOX_MODE"] == "unsafe"
    assert cfg.dump()["sandbox"]["mode"] == "unsafe"  # what the run's config in the catalog records
    monkeypatch.setenv("OPFORGE_SANDBOX_MODE", "jail")
    from pipeline.validate.stage import _empty_row

    rows = [
        {**_empty_row("t-jailed", "cpu"), "valid": True, "jail": "bwrap"},
        {**_empty_row("t-unsafe", "cpu"), "valid": True, "jail": "unsafe"},
    ]
    vdir = tmp_path / "tables" / "validation" / "run_id=r1"
    vdir.mkdir(parents=True)
    write_table("validation", rows, vdir / "shard-x.parquet")
    warm = conform("warmup", [])
    result = CurationResult("r1", pa.table({"task_id": ["t-jailed"]}), warm, warm, warm)
    assert unsafe_tasks(tmp_path, result) == []
    result = CurationResult("r1", pa.table({"task_id": ["t-jailed", "t-unsafe"]}), warm, warm, warm)
    assert unsafe_tasks(tmp_path, result) == ["t-unsafe"]
