"""The sandbox on its own: every hostile behaviour becomes a reason code, and the caller survives."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from pipeline.sandbox import run_sandboxed


def test_result_arrives_over_the_private_channel_not_stdout():
    r = run_sandboxed(
        'print(\'{"type": "result", "value": 42}\')\nemit_result({\'got\': PAYLOAD})', payload=[1, 2], timeout_s=20
    )
    assert r.ok and r.reason == ""
    assert r.result == {"got": [1, 2]}
    assert "42" in r.stdout  # the forged line stayed on stdout


def test_printing_a_fake_result_is_not_a_result():
    r = run_sandboxed('print(\'{"type": "result", "value": 42}\')', timeout_s=20)
    assert r.reason == "no_result" and r.result is None


@pytest.mark.parametrize(
    "code,reason",
    [
        ("def f(:\n  pass", "syntax_error"),
        ("raise ValueError('boom')", "exception"),
        ("while True:\n    pass", "timeout"),
        ("x = bytearray(8 * 2**30)", "memory_limit"),
        ("import ctypes\nctypes.string_at(0)", "segfault"),
        ("import sys\nsys.exit(3)", "sys_exit"),
        ("import os\nos._exit(0)", "sys_exit"),
        ("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)", "network_blocked"),
        ("open('/etc/opforge-sandbox-test', 'w').write('x')", "file_access_blocked"),
        ("import os\nwhile True:\n    os.fork()", "process_blocked"),
        ("import subprocess\nsubprocess.run(['sh', '-c', 'echo hi'])", "process_blocked"),
    ],
)
def test_hostile_code_gets_its_reason(code, reason):
    r = run_sandboxed(code, timeout_s=4, memory_mb=1024)
    assert r.reason == reason, (r.reason, r.error_message[-300:])
    assert not r.ok


def test_swallowed_violation_is_still_reported():
    code = (
        "import socket\ntry:\n    socket.create_connection(('192.0.2.1', 80), timeout=2)\n"
        "except Exception:\n    pass\nemit_result('fine')"
    )
    r = run_sandboxed(code, timeout_s=10)
    assert r.reason == "network_blocked"
    assert r.violations and r.violations[0]["kind"] == "network_blocked"


def test_flooding_stdout_is_drained_and_trimmed():
    r = run_sandboxed(
        "import sys\nfor _ in range(100000):\n    print('x' * 99)\nemit_result('done')",
        timeout_s=30,
        max_output_bytes=1000,
    )
    assert r.ok and r.result == "done"
    assert r.stdout_bytes == 100000 * 100
    assert len(r.stdout) == 1000


def test_writes_inside_the_workdir_are_allowed(tmp_path):
    r = run_sandboxed(
        "open('out.txt', 'w').write('ok')\nemit_result(open('out.txt').read())", workdir=tmp_path, timeout_s=10
    )
    assert r.ok and r.result == "ok"
    assert (tmp_path / "out.txt").read_text() == "ok"


def test_private_workdir_is_removed_and_env_is_reduced():
    os.environ["OPFORGE_SECRET_FOR_TEST"] = "s3cret"
    try:
        r = run_sandboxed(
            "import os\nemit_result([os.getcwd(), os.environ.get('OPFORGE_SECRET_FOR_TEST')])", timeout_s=10
        )
    finally:
        del os.environ["OPFORGE_SECRET_FOR_TEST"]
    cwd, secret = r.result
    assert secret is None
    assert not Path(cwd).exists()


def test_the_hosts_temp_dir_on_sys_path_stays_outside(monkeypatch):
    """A caller run from /tmp has the host's temp dir on sys.path: it must not be bound over the jail's private
    /tmp (the host's temp files would show, and a job dir inside a private 0700 dir could not be entered)."""
    import tempfile

    host_tmp = tempfile.gettempdir()
    root = Path(tempfile.mkdtemp(prefix="opforge-sandbox-test-"))  # 0700, like the judge's evaluation dirs
    work = root / "job"
    work.mkdir()
    marker = Path(tempfile.mkdtemp(prefix="opforge-host-file-")) / "visible"
    marker.write_text("host")
    monkeypatch.syspath_prepend(host_tmp)
    try:
        r = run_sandboxed(
            "import os\nemit_result([os.getcwd(), os.path.exists(PAYLOAD['marker'])])",
            payload={"marker": str(marker)},
            workdir=str(work),
            timeout_s=20,
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(marker.parent, ignore_errors=True)
    assert r.ok, (r.reason, r.stderr[-500:])
    assert r.result == [str(work), False]


def test_every_layer_is_reported():
    r = run_sandboxed("emit_result(1)", timeout_s=20)
    assert r.ok and r.jail == "bwrap" and r.netns and r.mountns
    assert all(r.layers[k] for k in ("pid_ns", "net_ns", "seccomp", "no_new_privs", "unprivileged_uid"))


def test_script_path_and_args(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import sys\nemit_result(sys.argv[1:])\n")
    r = run_sandboxed(script, args=["a", "b"], timeout_s=10)
    assert r.result == ["a", "b"]


def test_closing_every_pipe_does_not_dodge_the_timeout():
    code = (
        "import os, time\nfor fd in range(3, 64):\n    try:\n        os.close(fd)\n    except OSError:\n        pass\n"
        "os.close(1)\nos.close(2)\ntime.sleep(30)"
    )
    r = run_sandboxed(code, timeout_s=2)
    assert r.timed_out and r.reason == "timeout"


def test_cpu_limit_is_reported_as_cpu_limit_not_killed():
    # Soft limit first (SIGXCPU), so a busy loop that dodges nothing still gets its own reason code.
    r = run_sandboxed("while True:\n    pass\n", timeout_s=30, cpu_s=1, memory_mb=None)
    assert r.reason == "cpu_limit", r


def test_default_cpu_limit_scales_with_threads():
    # A torch op on N threads spends N CPU-seconds per wall second: the default must not kill honest work first.
    from pipeline.sandbox import _default_cpu_s

    assert _default_cpu_s(60, {"OMP_NUM_THREADS": "8"}) == 60 * 8 + 5
    assert _default_cpu_s(10, {"OMP_NUM_THREADS": "1"}) == 15
