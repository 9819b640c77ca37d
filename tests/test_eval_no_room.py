"""A full file system is the host's fault: files that cannot be written for want of room are told apart from the
task's or the candidate's own failures (tensorio.NoRoom), on a real full file system (a 1 MiB tmpfs mounted in a
private mount namespace)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _in_small_fs(code: str, tmp_path: Path) -> dict:
    """Run `code` with a 1 MiB tmpfs at MNT (its last line prints a JSON result)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = tmp_path / "probe.py"
    script.write_text(f"MNT = {str(mnt)!r}\n" + textwrap.dedent(code))
    cmd = f"mount -t tmpfs -o size=1m none {mnt} && exec {sys.executable} {script}"
    r = subprocess.run(["unshare", "-rm", "sh", "-c", cmd], capture_output=True, text=True, cwd=ROOT)
    if "mount" in r.stderr and r.returncode != 0:
        pytest.skip(f"no private mount namespace here: {r.stderr[-200:]}")
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_write_that_finds_no_room_is_the_hosts_and_leaves_nothing_behind(tmp_path):
    got = _in_small_fs(
        """
        import json, os, torch
        from pipeline.evaluate import reference, tensorio
        out = {}
        try:
            tensorio.save(torch.randn(1 << 20), os.path.join(MNT, "o.pt"))  # 4 MiB into 1 MiB
        except tensorio.NoRoom as e:
            out["no_room"] = True
            out["errno_enospc"] = e.errno == 28
            out["blame"] = reference._blame(e)
        out["left"] = os.listdir(MNT)
        tensorio.save(torch.randn(1000), os.path.join(MNT, "small.pt"))  # what fits is written as ever
        out["small_ok"] = tensorio.load(os.path.join(MNT, "small.pt")).numel() == 1000
        print(json.dumps(out))
        """,
        tmp_path,
    )
    assert got == {"no_room": True, "errno_enospc": True, "blame": "reference_error", "left": [], "small_ok": True}


def test_a_failure_with_room_to_spare_stays_the_writers():
    """The task's (or candidate's) own error while saving, on a file system with room, is not a host failure."""
    import torch

    from pipeline.evaluate import reference, tensorio

    class Odd:  # not a tensor, number or container: torch.save's pickler refuses it
        def __reduce__(self):
            raise TypeError("cannot pickle this")

    with pytest.raises(TypeError):
        tensorio.save([torch.ones(3), Odd()], str(Path(__file__).parent / "never-written.pt"))
    assert not list(Path(__file__).parent.glob("never-written.pt*"))
    assert reference._blame(TypeError("x")) == "bad_task"


def test_a_candidates_claim_of_no_room_is_checked_against_the_file_system(tmp_path):
    """`no_room` in a reply names a host error only where the output's file system really lacks the room; the same
    claim with room to spare is the candidate's runtime error."""
    got = _in_small_fs(
        """
        import json, tempfile
        from pathlib import Path
        from pipeline.evaluate.judge import Judge, EvalDirs
        j = Judge("", {}, "full", {}, "", "")
        j.out_limit = 64 << 20
        j.dirs = EvalDirs(Path(MNT), Path(MNT), Path(MNT), Path(MNT), Path(MNT))
        full = j.failed_call({"ok": False, "no_room": True})
        roomy = tempfile.mkdtemp()
        j.dirs = EvalDirs(Path(roomy), Path(roomy), Path(roomy), Path(roomy), Path(roomy))
        j.out_limit = 1 << 20
        print(json.dumps([full, j.failed_call({"ok": False, "no_room": True}), j.failed_call({"ok": False})]))
        """,
        tmp_path,
    )
    assert got == ["host_error: no space left for the output", "runtime_error", "runtime_error"]
