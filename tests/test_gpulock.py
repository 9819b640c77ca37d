"""The GPU's lock (pipeline.gpulock): timings exclusive, other GPU work shared, a waiting timing served before new
shared holders, released when the holder dies, usable read-only from inside the jail."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

from pipeline.gpulock import GpuLock, ensure, held
from pipeline.sandbox import run_sandboxed

ROOT = Path(__file__).resolve().parents[1]


def _try(path: str, how: int) -> bool:
    """Could a new holder take the lock now (non-blocking)?"""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_timings_exclude_everything_and_untimed_work_shares(tmp_path):
    path = ensure(str(tmp_path / "gpu-0.lock"))
    a, b = GpuLock(path), GpuLock(path)
    a.shared()
    b.shared()  # an engine step beside a verification: both hold it
    assert not _try(path, fcntl.LOCK_EX)
    b.release()
    a.exclusive()  # a timing: nobody else
    assert not _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)
    a.shared()  # back to untimed work
    assert _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)
    a.release()
    assert _try(path, fcntl.LOCK_EX)
    with held(None, shared=False) as w:  # no lock configured (CPU): returns at once
        assert w == [0.0]


def test_a_waiting_timing_goes_before_new_shared_holders(tmp_path):
    """Overlapping shared holders (engine steps, verifications) must not starve a timing."""
    path = ensure(str(tmp_path / "gpu-0.lock"))
    first = GpuLock(path)
    first.shared()
    timing_in, timing_may_leave, late_in = threading.Event(), threading.Event(), threading.Event()
    order = []

    def timing():
        with held(path, shared=False):
            order.append("timing")
            timing_in.set()
            timing_may_leave.wait(30)

    def late_reader():
        with held(path, shared=True):
            order.append("late")
            late_in.set()

    t = threading.Thread(target=timing)
    t.start()
    # The timing now waits for `first`, holding the turnstile: wait for that state, not for time.
    turn = path + ".turn"
    while _try(turn, fcntl.LOCK_EX):
        pass
    r = threading.Thread(target=late_reader)
    r.start()
    first.release()  # the only shared holder leaves: the timing, not the late reader, gets the GPU
    assert timing_in.wait(30)
    assert not late_in.is_set()
    timing_may_leave.set()
    assert late_in.wait(30)
    t.join()
    r.join()
    assert order == ["timing", "late"]


def test_a_finished_timing_downgrades_before_waiting_timings(tmp_path):
    """Back to shared after a timing without queueing behind the timings waiting then: with several evaluations in
    flight, each gets its verdict after its own timing, not after the last one's."""
    path = ensure(str(tmp_path / "gpu-0.lock"))
    mine = GpuLock(path)
    mine.exclusive()
    other_in = threading.Event()

    def other_timing():
        with held(path, shared=False):
            other_in.set()

    t = threading.Thread(target=other_timing)
    t.start()
    turn = path + ".turn"
    while _try(turn, fcntl.LOCK_EX):  # until the other timing waits, holding the turnstile
        pass
    assert mine.downgrade() == 0.0  # at once: it did not wait for the other timing
    assert not other_in.is_set()
    assert _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)  # held shared now
    mine.release()
    assert other_in.wait(30)
    t.join()
    free = GpuLock(path)
    free.downgrade()  # not held: taken shared
    assert _try(path, fcntl.LOCK_SH) and not _try(path, fcntl.LOCK_EX)
    free.release()


def test_a_dead_holder_releases_the_gpu(tmp_path):
    path = ensure(str(tmp_path / "gpu-0.lock"))
    code = (
        "import sys, os; from pipeline.gpulock import GpuLock; GpuLock(sys.argv[1]).exclusive(); "
        "print('held', flush=True); os.kill(os.getpid(), 9)"
    )
    p = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == -9 and "held" in p.stdout
    assert _try(path, fcntl.LOCK_EX)


def test_a_jailed_job_takes_the_lock_read_only(tmp_path):
    """Jailed jobs (other uid, read-only view of the lock's folder) share the GPU with the trusted side."""
    path = ensure(str(tmp_path / "locks" / "gpu-0.lock"))
    mine = GpuLock(path)
    mine.shared()
    code = (
        "import fcntl, os\n"
        "from pipeline.gpulock import GpuLock\n"
        "lock = GpuLock(PAYLOAD['path'])\n"
        "lock.shared()\n"  # beside the trusted side's shared hold
        "fd = os.open(PAYLOAD['path'], os.O_RDONLY)\n"
        "try:\n"
        "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    ex = True\n"
        "except BlockingIOError:\n"
        "    ex = False\n"
        "emit_result({'shared': True, 'exclusive_while_shared': ex})\n"
    )
    r = run_sandboxed(
        code,
        payload={"path": path},
        timeout_s=60,
        read_dirs=[str(Path(path).parent)],
        env={"PYTHONPATH": str(ROOT)},
    )
    mine.release()
    assert r.ok, (r.reason, r.error_message, r.stderr[-2000:])
    assert r.result == {"shared": True, "exclusive_while_shared": False}


# The GPU's memory in slots (pipeline.gpumemory): validation candidates side by side never claim more than the GPU.


def _free_slots(d: str) -> int:
    from pipeline.gpumemory import SLOTS

    return sum(_try(os.path.join(d, f"slot-{i}"), fcntl.LOCK_EX) for i in range(SLOTS))


def test_memory_claims_never_exceed_the_gpu_and_a_big_claim_waits_for_room(tmp_path):
    from pipeline.gpumemory import SLOTS, claimed

    d = str(tmp_path / "mem")
    order: list[str] = []
    got = threading.Event()

    def big() -> None:
        with claimed(SLOTS // 2, d):
            order.append("big claimed")
            got.set()

    with claimed(SLOTS * 3 // 4, d):
        assert _free_slots(d) == SLOTS // 4
        t = threading.Thread(target=big)
        t.start()
        order.append("small released")
    assert got.wait(60), "the claim never got the slots freed for it"
    t.join(60)
    assert order == ["small released", "big claimed"]
    assert _free_slots(d) == SLOTS  # every slot back


def test_a_claim_takes_the_slots_of_whichever_job_ends_first(tmp_path):
    """A claim waiting for room gets it from the first job that ends, not from one chosen in advance: here the job
    holding the low-numbered slots keeps them until the claim is served."""
    from pipeline.gpumemory import SLOTS, claimed

    d = str(tmp_path / "mem")
    first_in, release_second, got = threading.Event(), threading.Event(), threading.Event()

    def second_job() -> None:
        with claimed(SLOTS // 2, d):
            first_in.set()
            release_second.wait(60)

    def claim() -> None:
        with claimed(SLOTS // 4, d):
            got.set()

    with claimed(SLOTS // 2, d):  # the low-numbered slots, held until the claim is served
        t2 = threading.Thread(target=second_job)
        t2.start()
        assert first_in.wait(60)
        assert _free_slots(d) == 0
        t3 = threading.Thread(target=claim)
        t3.start()
        # The claim is waiting once it holds the turnstile (a state, not a delay: checked until it holds)
        turnstile = os.path.join(d, "turnstile")
        while _try(turnstile, fcntl.LOCK_EX) and not got.is_set():
            threading.Event().wait(0.01)
        release_second.set()
        assert got.wait(60), "the claim waited for the job that had not ended"
    t2.join(60)
    t3.join(60)
    assert _free_slots(d) == SLOTS


def test_a_dead_claimant_frees_its_memory_slots(tmp_path):
    from pipeline.gpumemory import SLOTS, claimed

    d = str(tmp_path / "mem")
    code = f"from pipeline.gpumemory import claimed\nwith claimed({SLOTS}, {d!r}):\n    print('held', flush=True)\n"
    code += "    import time\n    time.sleep(600)\n"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert p.stdout.readline().strip() == "held"
    assert _free_slots(d) == 0
    p.kill()
    p.wait()
    with claimed(SLOTS, d) as waited:
        assert waited >= 0 and _free_slots(d) == 0


def test_slots_held_reads_every_holder(tmp_path):
    """The trusted side's count of memory slots held now (by any process; from /proc/locks), which decides whether a
    candidate that ran out of memory had others beside it."""
    from pipeline.gpumemory import claimed, slots_held

    d = str(tmp_path / "slots")
    assert slots_held(d) == 0
    with claimed(3, d):
        assert slots_held(d) == 3
        with claimed(2, d):
            assert slots_held(d) == 5
    assert slots_held(d) == 0
