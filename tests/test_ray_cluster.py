"""Whether opforge joins a Ray cluster is explicit: a leftover `ray_current_cluster` file or $RAY_ADDRESS never
hijacks a local run, and an unreachable `ray.address` is a one-line error."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = f"""
import sys; sys.path.insert(0, {str(ROOT)!r})
from pipeline.executor import RayUnreachable, ensure_ray
try:
    ensure_ray(sys.argv[1])
except RayUnreachable as e:
    print("UNREACHABLE", e)
ensure_ray(num_cpus=1, object_store_mb=100)  # no ray.address: our own local Ray
import ray
print("OK", ray.get_runtime_context().gcs_address)
ray.shutdown()
"""


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on exit: nothing listens there


def test_stale_cluster_file_and_env_are_ignored_and_unreachable_address_is_one_line():
    tmp = tempfile.mkdtemp(prefix="rt")  # short: Ray's socket paths live under it
    try:
        dead = f"127.0.0.1:{_dead_port()}"
        os.makedirs(os.path.join(tmp, "ray"))
        # What an uncleanly stopped `ray start` leaves behind, and a stale environment.
        Path(tmp, "ray", "ray_current_cluster").write_text(dead)
        env = dict(os.environ, RAY_TMPDIR=tmp, RAY_ADDRESS=dead, RAY_AUTH_MODE="disabled")
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT, dead], env=env, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-3000:]
        lines = out.stdout.splitlines()
        unreachable = next(line for line in lines if line.startswith("UNREACHABLE"))
        assert dead in unreachable and "unreachable" in unreachable and "\n" not in unreachable
        ok = next(line for line in lines if line.startswith("OK"))
        assert dead not in ok  # a fresh local instance, not the stale address
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
