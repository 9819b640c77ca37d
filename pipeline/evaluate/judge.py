"""The trusted side of an evaluation (stdlib + torch on the host; never runs task or candidate code).

It draws the secret seeds, has the reference process (jailed; task code) write reference outputs as files (the
candidate draws the same inputs from each seed at its call), drives the candidate process (jailed; ModelNew) over
two FIFOs one command at a time, measures its own wall clock around every timed call, loads every output with
`torch.load(weights_only=True)`, compares, checks the reported GPU times against its clock, and writes the report.
Protocol and trust argument: docs/judge.md.

Directory of one evaluation (`EvalDirs`, a fresh temp dir):
  ref/     written by the reference process, read here; never mounted into the candidate's jail
  cand/    the candidate's work dir: its FIFOs, its private copy of the solution, out/ (its outputs)
  calib/   the calibrator's work dir (a second candidate-process program that never loads candidate code)
  build/   the candidate's copy of its verified build (read-only in its view: native code loads from here)
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import secrets
import select
import shutil
import signal
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import torch

from pipeline.evaluate import artifacts, leafhash, tensorio
from pipeline.evaluate.clock import check_clock, off_stream
from pipeline.evaluate.timing import STOP_EVERY, TIMING_METHOD, check_positions, known_within, median_halfwidth, stats
from pipeline.evaluate.tolerance import compare, compare_device, degenerate, spread_caps
from pipeline.gpulock import GpuLock, ensure, held
from pipeline.gpumemory import SLOTS, claimed, memory_dir, slots_held
from pipeline.sandbox import run_sandboxed

ROOT = Path(__file__).resolve().parents[2]


def _pythonpath() -> str:
    """This checkout first (the jailed process imports the same pipeline), then the caller's PYTHONPATH."""
    extra = os.environ.get("PYTHONPATH")
    return str(ROOT) + (os.pathsep + extra if extra else "")


_REF_BOOT = "from pipeline.evaluate.reference import main\nmain(PAYLOAD, emit_result)\n"
_CAND_BOOT = "from pipeline.evaluate.candidate import main\nmain(PAYLOAD, emit_result)\n"
_MAX_LINE = 1 << 16
# Executables the jailed processes may start (old sandbox only; the bwrap jail decides by its own view).
_EXECUTABLES = (
    "gcc",
    "g++",
    "cc",
    "c++",
    "ld",
    "as",
    "nvcc",
    "ptxas",
    "cicc",
    "fatbinary",
    "nvlink",
    "cudafe++",
    "ldconfig",
    "uname",
    "ninja",
    "which",
    "nvidia-smi",
    "collect2",
    "cc1plus",
)


def jail_kwargs(
    *,
    gpu: bool,
    read_dirs: list[str],
    exec_dirs: list | None = None,
    write_dirs: list | None = None,
    started: Any = None,
) -> dict[str, Any]:
    """`run_sandboxed`'s parameters that only some versions of the jail have (`gpu`, `read_dirs`, `exec_dirs`,
    `started` in the bubblewrap jail; `allowed_executables` in the older one, where exec dirs are plain writable
    dirs)."""
    params = inspect.signature(run_sandboxed).parameters
    kw: dict[str, Any] = {"write_dirs": [str(d) for d in write_dirs or []]}
    if "gpu" in params:
        kw["gpu"] = gpu
    if "read_dirs" in params:
        kw["read_dirs"] = read_dirs
    if "exec_dirs" in params:
        kw["exec_dirs"] = [str(d) for d in exec_dirs or []]
    else:
        kw["write_dirs"] += [str(d) for d in exec_dirs or []]
    if "allowed_executables" in params:
        kw["allowed_executables"] = _EXECUTABLES
    if started is not None and "started" in params:
        kw["started"] = started
    return kw


def base_env(arch_list: str, private: Path) -> dict[str, str]:
    env = {
        "PYTHONPATH": _pythonpath(),
        "TORCH_CUDA_ARCH_LIST": arch_list,
        "PYTHONHASHSEED": "0",
        "TORCHINDUCTOR_CACHE_DIR": str(private / "inductor"),
        "TRITON_CACHE_DIR": str(private / "triton"),
    }
    if os.environ.get("CUDA_HOME"):
        env["CUDA_HOME"] = os.environ["CUDA_HOME"]
    return env


@dataclass
class EvalDirs:
    root: Path
    ref: Path
    cand: Path
    out: Path
    build: Path

    @classmethod
    def make(cls) -> EvalDirs:
        root = Path(tempfile.mkdtemp(prefix="opforge-judge-"))
        d = cls(root, root / "ref", root / "cand", root / "cand" / "out", root / "build")
        for p in (d.ref, d.cand, d.out, d.build):
            p.mkdir(parents=True)
        return d

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def calibrator(self) -> EvalDirs:
        d = replace(self, cand=self.root / "calib", out=self.root / "calib" / "out")
        d.out.mkdir(parents=True)
        return d


_OUT_OF_MEMORY = ("out of memory", "outofmemoryerror", "alloc_failed", "memoryallocation", "failed to allocate")


def said_out_of_memory(*texts: Any) -> bool:
    """Whether a reason or error text says the GPU's memory ran out (torch's, CUDA's, cuBLAS's and cuDNN's words)."""
    said = " ".join(str(t) for t in texts if t).lower()
    return any(w in said for w in _OUT_OF_MEMORY)


# --------------------------------------------------------------------------- the reference process


def run_reference(task_code: str, jobs: list[dict], dirs: EvalDirs, s: dict, arch: str, init_seed: int) -> dict:
    """Reference outputs of `jobs`, as files; returns the process's report plus
    `sandbox` (diagnostics only)."""
    work = Path(tempfile.mkdtemp(prefix="opforge-ref-", dir=dirs.root))
    lock = ensure(s["gpu_lock"]) if s.get("gpu_lock") and s["device"] != "cpu" else None
    payload = {
        "task_code": task_code,
        "device": s["device"],
        "gpu_lock": lock,  # taken shared inside, around the GPU work (reference.py)
        "init_seed": init_seed,
        "jobs": jobs,
        "ref_dir": str(dirs.ref),
        "io_budget_bytes": int(s["io_budget_mb"]) * 2**20,
        "timeout_s": float(s["reference_timeout_s"]),  # its own limit, counted once it holds the lock
    }
    sb = run_sandboxed(
        _REF_BOOT,
        payload=payload,
        # a backstop: the process bounds itself to reference_timeout_s past its wait for the GPU's lock, which is
        # other evaluations' timed calls, not this reference's time
        timeout_s=4 * float(s["reference_timeout_s"]) + 60,
        memory_mb=None,
        nproc=None,
        fsize_mb=tensorio.MAX_FILE_BYTES >> 20,  # one output alone can pass io_budget_mb
        workdir=str(work),
        env=base_env(arch, work),
        max_output_bytes=20_000,
        **jail_kwargs(
            gpu=s["device"] != "cpu",
            read_dirs=[str(Path(lock).parent)] if lock else [],
            write_dirs=[dirs.ref],
        ),
    )
    rep = sb.result if isinstance(sb.result, dict) else {}
    rep["gpu_wait_s"] = _num(rep.get("gpu_wait_s")) or 0.0
    rep["sandbox"] = {
        "reason": sb.reason,
        "wall_s": sb.wall_s,
        "error": (sb.error_message or sb.stderr)[-2000:],
        "jail": getattr(sb, "jail", ""),
    }
    shutil.rmtree(work, ignore_errors=True)
    return rep


# --------------------------------------------------------------------------- the candidate process

LIVE_MIN = 20  # the fewest null calls of the calibrator during timing (the clock check wants at least 10)
FREEZE_S = 5.0  # the longest the trusted side tries to stop a jail's processes before it keeps the GPU's lock instead
FINISH_GRACE_S = 15.0  # an honest candidate exits within about a second of its last reply (CUDA teardown)


class CandidateProcess:
    """The jailed candidate process and its two FIFOs. Replies are untrusted JSON lines."""

    def __init__(
        self, payload: dict, dirs: EvalDirs, s: dict, arch: str, read_dirs: list[str], fsize_mb: int = 4096
    ) -> None:
        self.cmd_path, self.reply_path = dirs.cand / "cmd", dirs.cand / "reply"
        os.mkfifo(self.cmd_path)
        os.mkfifo(self.reply_path)
        # The jail runs the candidate as an unprivileged uid of its own: it may read commands and write replies.
        os.chmod(self.cmd_path, 0o644)
        os.chmod(self.reply_path, 0o622)
        # O_RDWR: opening never blocks, and writes never raise SIGPIPE when the candidate is gone.
        self.cmd_fd = os.open(self.cmd_path, os.O_RDWR)
        self.reply_fd = os.open(self.reply_path, os.O_RDONLY | os.O_NONBLOCK)
        self.buf = b""
        self.sb = None
        self.gave_up = False  # no reply in time, or garbage: nothing more is asked, the process is killed
        self.pgid: int | None = None  # the jail's process group (run_sandboxed's `started`)
        # Its life limit (timeout_s) is kept here, extended by the time the trusted side waits for the GPU's lock
        # (Judge.gpu_wait): a queue behind other evaluations' timed calls is not the candidate's time. The jail's own
        # limit is a backstop well past it.
        self.deadline = time.monotonic() + float(s["timeout_s"])
        self.waiting_for = "start"
        env = base_env(arch, dirs.cand)
        env["TORCH_EXTENSIONS_DIR"] = str(dirs.build)  # the verified copy; load_inline imports it as built
        env["MAX_JOBS"] = "2"
        payload = {
            **payload,
            "fifo_cmd": str(self.cmd_path),
            "fifo_reply": str(self.reply_path),
            "out_dir": str(dirs.out),
        }

        self.launched = threading.Event()  # its process group known, or its jail over: `kill` can end it

        def run() -> None:
            try:
                self.sb = run_sandboxed(
                    _CAND_BOOT,
                    payload=payload,
                    # it starts beside the reference (Judge.start_processes), whose jail lives up to its own
                    # backstop: that time is not the candidate's, nor may it take the candidate's jail down
                    timeout_s=4 * float(s["timeout_s"]) + 60 + 4 * float(s["reference_timeout_s"]) + 60,
                    memory_mb=None,
                    nproc=None,
                    fsize_mb=fsize_mb,
                    workdir=str(dirs.cand),
                    env=env,
                    max_output_bytes=20_000,
                    **jail_kwargs(
                        gpu=s["device"] != "cpu", read_dirs=read_dirs, write_dirs=[dirs.out], started=self._started
                    ),
                )
            finally:
                self.launched.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def send(self, msg: dict) -> None:
        os.write(self.cmd_fd, (json.dumps(msg) + "\n").encode())

    def recv(self, timeout: float) -> dict | None:
        """The next reply line as a dict; None on timeout, death or garbage (the caller names the reason)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.reply_fd], [], [], min(left, 0.5))
            if not r:
                if not self.alive():
                    return None
                continue
            try:
                chunk = os.read(self.reply_fd, _MAX_LINE)
            except BlockingIOError:
                continue
            if not chunk:  # no writer (not yet opened, or gone)
                if not self.alive():
                    return None
                time.sleep(0.001)
                continue
            self.buf += chunk
            if len(self.buf) > 4 * _MAX_LINE:
                return None
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        return msg if isinstance(msg, dict) else None

    def request(self, msg: dict, timeout: float) -> tuple[dict | None, float]:
        """(reply, trusted wall ms from sending the command to reading its reply)."""
        if self.gave_up:
            return None, 0.0
        self.waiting_for = str(msg.get("op"))
        left = self.deadline - time.monotonic()
        if left <= 0:  # its whole life is over: killed as one that stopped answering
            self.gave_up = True
            return None, 0.0
        t0 = time.perf_counter()
        self.send(msg)
        rep = self.recv(min(timeout, left))
        self.gave_up = rep is None
        return rep, (time.perf_counter() - t0) * 1e3

    def _started(self, pgid: int) -> None:
        self.pgid = pgid
        self.launched.set()

    def freeze(self) -> bool:
        """Stop every process of its jail (SIGSTOP cannot be caught, blocked or ignored) and confirm each stopped in
        /proc, again until no new one appears; True then. A stopped process launches no GPU work, so the trusted side
        can let the GPU's lock go while it works on a reply. False (nothing stays stopped) where the jail's processes
        cannot be seen or do not stop within FREEZE_S: the caller keeps the lock."""
        if self.pgid is None or not self.alive():
            return False
        deadline = time.monotonic() + FREEZE_S
        while True:
            pids = [self.pgid, *_descendants(self.pgid)]
            running = [p for p in pids if not _stopped(p)]
            if not running:
                self._frozen = pids
                return True
            if time.monotonic() > deadline:
                self._frozen = pids
                self.thaw()
                return False
            for p in running:
                try:
                    os.kill(p, signal.SIGSTOP)
                except OSError:
                    pass
            time.sleep(0)

    def thaw(self) -> None:
        for p in getattr(self, "_frozen", []):
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass
        self._frozen = []

    @contextlib.contextmanager
    def frozen(self) -> Iterator[bool]:
        """Its jail stopped for a block (`freeze`: True where it stopped) and thawed after. Frozen time is not the
        candidate's: its life limit moves by it."""
        t0 = time.monotonic()
        stopped = self.freeze()
        try:
            yield stopped
        finally:
            if stopped:
                self.thaw()
                self.deadline += time.monotonic() - t0

    def kill(self) -> None:
        """End the candidate process now: its jail's process group (bwrap's death takes its pid namespace down),
        and every descendant of this process that holds one of its FIFOs open (a jail without `started`), so a hung
        or lingering candidate neither waits for the jail's own timeout nor keeps the GPU busy."""
        if self.pgid is not None and self.alive():  # alive: not reaped, so the group id is still its own
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except OSError:
                pass
        me = os.getpid()
        fifos = {str(self.cmd_path), str(self.reply_path)}
        for pid in _descendants(me):
            try:
                held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            except OSError:
                continue
            if held & fifos:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass

    def close(self, wait_s: float, kill: bool = False) -> dict:
        if kill:
            self.kill()
        fds, self.cmd_fd, self.reply_fd = (self.cmd_fd, self.reply_fd), -1, -1
        for fd in fds:  # once: a number closed twice may be another thread's file by then
            if fd >= 0:
                os.close(fd)
        self.thread.join(wait_s)
        sb = self.sb
        if sb is None:
            return {"reason": "still_running"}
        return {
            "reason": sb.reason,
            "returncode": sb.returncode,
            "signal": sb.signal,
            "timed_out": sb.timed_out,
            "wall_s": sb.wall_s,
            "violations": sb.violations,
            "stderr_tail": sb.stderr[-2000:],
            "error": (
                sb.error_message or str((sb.result or {}).get("error", "") if isinstance(sb.result, dict) else "")
            )[-2000:],
            "jail": getattr(sb, "jail", ""),
        }


def _stat(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...); [] when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _state(pid: int) -> str:
    """A process's state letter ('' when it is gone)."""
    return (_stat(pid) or [""])[0]


def _stopped(pid: int) -> bool:
    """Every thread of `pid` stopped (a stop reaches each thread in turn), or the process gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    return all(_state(int(t)) in ("T", "t", "Z", "X", "") for t in tids)


def _descendants(root: int) -> list[int]:
    """Pids of `root`'s descendants (from /proc; the jail's children included)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = _stat(int(name))
        if len(fields) > 1 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _num(x: Any) -> float | None:
    import math

    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e12
    return float(x) if ok else None


# --------------------------------------------------------------------------- the evaluation


class Judge:
    _caps: list[float | None] = []  # tolerance.spread_caps of the task's reference outputs, once they are read
    _ref_mutates: list[int] = []  # the inputs the task's own code changes in place

    def __init__(
        self, task_code: str, solution: dict, mode: str, s: dict, arch: str, artifact: str, alone: bool = False
    ) -> None:
        self.task_code, self.solution, self.mode, self.s, self.arch = task_code, solution, mode, s, arch
        self.artifact = artifact
        self.alone = alone  # the GPU's memory to itself (`memory_claim`): a second judgement after a host failure
        self._memory = contextlib.ExitStack()
        self._memory_held = False
        self._rng = secrets.SystemRandom()
        self._check_refs: dict[str, dict | None] = {}  # a checked call's sampled reference (None: whole, in ref/)
        self.rep: dict[str, Any] = {
            "stage": "start",
            "violations": [],
            "warnings": [],
            "details": {},
            "timing": {},
            "phase_s": {},
        }
        self._t = time.perf_counter()
        self._null_gaps: list[float] = []  # device-synchronised minus stream-ordered ms of null calls
        self.out_limit = tensorio.MAX_FILE_BYTES  # set from the reference outputs' size (load_out)
        self._waited_for_room = False  # request_written waited for room in vain once
        self._check_pool: list[tuple[str, int]] = []
        self._fingerprint_seed = self.seed()

    # report ------------------------------------------------------------
    def seed(self) -> int:
        return self._rng.randrange(1, 2**62)

    def phase(self, name: str) -> None:
        now = time.perf_counter()
        self.rep["phase_s"][name] = round(now - self._t, 4)
        self._t = now
        self.rep["stage"] = name

    def violation(self, name: str, detail: str = "") -> None:
        if name not in self.rep["violations"]:
            self.rep["violations"].append(name)
        self.rep["details"].setdefault("violation_details", []).append(f"{name}: {detail}"[:300])

    def fail(self, reason: str, error: str = "") -> dict:
        """The judgement's failure: the first one decides (its reason and error stay; what fails after it, the
        candidate may have caused knowing the verdict). What a second judgement reads is recorded as it happens:
        whether that failure said the GPU's memory ran out, and how many memory slots others held then (harness)."""
        self.rep["correct"] = False
        if self.rep.get("reason"):
            return self.rep
        self.rep["reason"] = reason
        if error:
            self.rep["error"] = error[-3000:]
        cand = getattr(self, "_cand", None)
        self._failed_no_reply = cand is not None and cand.gave_up  # the process's end is this failure's account
        self.rep["details"]["failed_out_of_memory"] = said_out_of_memory(reason, error)
        self.note_slots_beside()
        return self.rep

    def note_slots_beside(self) -> None:
        """Memory slots other jobs hold now (this judgement's own taken off), kept in `slots_beside` where more than
        an earlier reading: the job that took the memory may end while the candidate exits."""
        now = max(0, slots_held(self.memory_dir()) - (SLOTS if self.alone else 1))
        self.rep["details"]["slots_beside"] = max(self.rep["details"].get("slots_beside") or 0, now)

    # steps -------------------------------------------------------------
    def plan_inputs(self) -> tuple[list[dict], list[str], list[str]]:
        """The reference's jobs, most needed first: the first correctness trial and two checked timed calls are
        `required`; the reference process drops the others, from the end, that would pass io_budget_mb (tasks whose
        outputs take GiBs)."""
        s = self.s
        variants = list(s["input_variants"]) or ["base"]
        trials = int(s["trials"]) if self.mode != "profile" else 1
        post = int(s["post_timing_trials"]) if self.mode != "verify" else 0
        cor_jobs, post_jobs, check_jobs = [], [], []
        for k in range(trials):
            cor_jobs.append(
                # the first trial (the one always made) on the other distribution than the timed calls' (base)
                {"name": f"cor_{k}", "seed": self.seed(), "variant": variants[(k + 1) % len(variants)]}
            )
        for k in range(post):
            post_jobs.append({"name": f"post_{k}", "seed": self.seed(), "variant": variants[k % len(variants)]})
        # Reference outputs for the timed calls that will be checked, made now with the others: the seeds of those
        # calls (random like every timed call's) are drawn here, so no second reference process is needed.
        if self.mode != "verify":
            for k in range(int(s["check_max_calls"])):
                job = {"name": f"check_{k}", "seed": self.seed(), "variant": "base"}
                if int(s["check_leaves"]) > 0:  # judged on leaves picked with another secret seed
                    job["sample"] = {"seed": self.seed(), "leaves": int(s["check_leaves"])}
                check_jobs.append(job)
        self._check_pool = [(j["name"], j["seed"]) for j in check_jobs]
        # A trial's seed reaches the candidate at its call, like a timed call's: it draws the same inputs itself
        # (tensorio.make_inputs), so no input set is written, nor read twice, as a file (GiBs on large tasks).
        self._draw = {j["name"]: {"seed": j["seed"], "variant": j["variant"]} for j in cor_jobs + post_jobs}
        # Required: one correctness trial and two checked timed calls (the last, which also re-verifies after many
        # calls, and one at a secret random position: a candidate wrong on a share f of its timed calls, to look
        # faster, is caught with probability >= f even where io_budget_mb leaves no other check).
        need = cor_jobs[:1] + check_jobs[:2]
        jobs = [{**j, "required": True} for j in need]
        jobs += post_jobs[:1] + cor_jobs[1:] + post_jobs[1:] + check_jobs[2:]
        return jobs, [j["name"] for j in cor_jobs], [j["name"] for j in post_jobs]

    def made(self, names: list[str]) -> list[str]:
        """Those of `names` the reference process wrote (the others were dropped by io_budget_mb)."""
        return [n for n in names if any((self.dirs.ref / f"{n}{x}.pt").is_file() for x in ("", tensorio.SAMPLED))]

    def load_out(self, name: str) -> Any:
        # At most a little over the largest reference output: a candidate cannot make the trusted side read more.
        return tensorio.load(str(self.dirs.out / f"{name}.pt"), max_bytes=self.out_limit)

    def drop(self, *paths: Path) -> None:
        """Files no longer needed (outputs of GiBs add up over an evaluation)."""
        if self.s.get("keep_eval_dir"):
            return
        for path in paths:
            path.unlink(missing_ok=True)

    def failed_call(self, rep: dict) -> str:
        """Why a call failed: `host_error` where the candidate could not write its output because the file system is
        full (its claim checked here: less room than a reference output takes), else `runtime_error`."""
        if rep.get("no_room"):
            st = os.statvfs(self.dirs.out)
            if st.f_bavail * st.f_frsize < getattr(self, "out_limit", 0):
                return "host_error: no space left for the output"
        return "runtime_error"

    def request_written(self, cand: CandidateProcess, msg: dict, timeout: float) -> tuple[dict | None, float]:
        """A command whose output the candidate writes to a file. A claim that the file system is full which the
        trusted side does not see (room now: a neighbour's files went in between) is asked once more at once, one
        it does see once room came back (at most tensorio.NO_ROOM_WAIT_S; no more waits after one in vain): the
        first outcome was never judged, so a second costs the check nothing, and an honest candidate loses no
        reward to a neighbour's files."""
        rep, w = cand.request(msg, timeout)
        if rep is not None and not rep.get("ok") and rep.get("no_room"):
            if self.failed_call(rep).startswith("host_error"):
                if self._waited_for_room:
                    return rep, w  # one wait in vain per judgement: a candidate that fills the disk itself (it stays
                    # full while the candidate is frozen) stalls no more; a neighbour's files go
                with self._let_go(cand):  # the candidate frozen and the GPU let go meanwhile
                    self._waited_for_room = not tensorio.wait_for_room(str(self.dirs.out), tensorio.NO_ROOM_WAIT_S)
            rep, w = cand.request(msg, timeout)
        return rep, w

    def check_call(
        self, cand: CandidateProcess, name: str, ref: Any, tag: str, sentinel: bool, meta: list[dict]
    ) -> dict:
        """The candidate runs on the inputs of <name>'s seed (twice, for determinism); the outputs are judged here."""
        s = self.s
        rep, _ = self.request_written(
            cand,
            {"op": "call", **self._draw[name], "out": f"{name}_a", "sentinel": sentinel, "outputs": meta},
            float(s["call_timeout_s"]),
        )
        if rep is None:
            return {"ok": False, "reason": f"no_reply ({tag})"}
        if not rep.get("ok"):
            return {
                "ok": False,
                "reason": f"{self.failed_call(rep)} ({tag})",
                "error": str(rep.get("error", ""))[-3000:],
            }
        with self.unlocked(cand):
            try:
                out = self.load_out(f"{name}_a")
            except tensorio.BadFile as e:
                return {"ok": False, "reason": f"bad_output ({tag}): {e}"}
            with self.gpu_work([ref]):
                cmp = compare(ref, out, s, caps=self._caps)
            cmp["fingerprint"] = tensorio.fingerprint(out, self._fingerprint_seed)
        if cmp.get("violation"):
            self.violation(cmp["violation"], cmp["reason"])
        unwritten = rep.get("unwritten")
        if not cmp["ok"] and isinstance(unwritten, float) and unwritten > 0.01:
            self.violation("uninitialized_output", f"{unwritten:.1%} of the output is memory it never wrote")
        if not cmp["ok"] or s["determinism"] == "off":
            self.drop(self.dirs.out / f"{name}_a.pt")
            return cmp
        rep, _ = self.request_written(
            cand, {"op": "call", **self._draw[name], "out": f"{name}_b"}, float(s["call_timeout_s"])
        )
        if rep is None or not rep.get("ok"):
            return {
                **cmp,
                "ok": False,
                "reason": f"{self.failed_call(rep or {})} (repeat, {tag})",
                "error": str((rep or {}).get("error", ""))[-3000:],
            }
        with self.unlocked(cand):
            try:
                again = self.load_out(f"{name}_b")
            except tensorio.BadFile as e:
                return {**cmp, "ok": False, "reason": f"bad_output (repeat, {tag}): {e}"}
            if s["determinism"] == "exact":
                same = tensorio.identical(out, again)
            else:
                with self.gpu_work([out]):
                    same = compare(out, again, s)["ok"]
        self.drop(self.dirs.out / f"{name}_a.pt", self.dirs.out / f"{name}_b.pt")
        if not same:
            cmp.update(ok=False, reason=f"nondeterministic_output: same inputs gave different outputs ({tag})")
        return cmp

    def begin(self) -> None:
        """Start the reference process (it needs the task alone), so that it runs while the solution builds."""
        if getattr(self, "_ref", None) is not None:
            return
        self.dirs = EvalDirs.make()
        self._init_seed = self.seed()
        self._plan = self.plan_inputs()
        self._t = time.perf_counter()
        box: dict = {}
        own_slot = not self._memory_held  # a judgement alone holds every slot already (run)

        def work() -> None:
            try:
                # The reference holds a memory slot of its own while it runs (the build beside it needs none).
                with claimed(1, self.memory_dir()) if own_slot else contextlib.nullcontext():
                    box["rep"] = run_reference(
                        self.task_code, self._plan[0], self.dirs, self.s, self.arch, self._init_seed
                    )
            except Exception as e:  # noqa: BLE001 - reported as the reference's failure
                # a full disk where the trusted side writes is the host's, as in the reference process (judged again)
                why = "reference_error: NoRoom" if tensorio.out_of_room(e) else f"judge_error: {type(e).__name__}"
                box["rep"] = {"stage": "", "reason": why, "error": str(e)}

        self._ref = (threading.Thread(target=work, daemon=True), box)
        self._ref[0].start()

    def abandon(self) -> None:
        """The evaluation ends before the judge (the build failed): its directory goes once the reference is done."""
        self._memory.close()
        ref = getattr(self, "_ref", None)
        if ref is None or self.s.get("keep_eval_dir"):
            return

        def cleanup() -> None:
            ref[0].join()
            self.dirs.remove()

        threading.Thread(target=cleanup, daemon=True).start()

    def run(self) -> dict:
        s = self.s
        try:
            self.memory_claim()
            self.begin()
            return self._run()
        finally:
            self._memory.close()
            if not s.get("keep_eval_dir") and getattr(self, "dirs", None) is not None:
                self.dirs.remove()

    def memory_dir(self) -> str:
        return self.memory_dir_of(self.s["device"])

    @staticmethod
    def memory_dir_of(device: str) -> str:
        return memory_dir() if device != "cpu" else memory_dir(f"cpu-{os.getpid()}")

    def memory_claim(self) -> None:
        """A share of the GPU's memory slots (pipeline.gpumemory, the pool validation jobs claim from) for the
        judgement (the reference holds one of its own while it runs, `begin`): one slot, or every slot for a
        judgement `alone`, which so waits until every reference, judgement, baseline and validation job on the GPU
        has ended and keeps new ones out until it ends; builds hold none, so it never waits for one. Only trusted
        parents take the slots (their files are out of every jail's sight)."""
        waited = self._memory.enter_context(claimed(SLOTS if self.alone else 1, self.memory_dir()))
        self._memory_held = True
        if self.alone:
            self.rep["details"]["judged_alone"] = True
            self.rep["phase_s"]["memory_wait"] = waited

    def start_processes(self) -> CandidateProcess | str:
        """The candidate's process (its sources and verified build staged privately) and the calibrator's; the
        reason where the build's artifact was tampered with (nothing started)."""
        s, dirs = self.s, self.dirs
        self._driven = False
        self.calibrator = None
        sol = self.stage_solution()
        if isinstance(sol, str):
            return sol
        # The GPU's leaf hasher for the output commitment (leafhash.py): only a speed-up, never believed; where it
        # cannot be built the candidate's process hashes on the host, to the same digest.
        hasher, why = ("", "")
        if s["device"] != "cpu":
            hasher, why = leafhash.build(s["cache_dir"], self.arch)
            self.rep["details"]["leaf_hasher"] = "gpu" if hasher else f"host ({why})"
        common = {
            "task_code": self.task_code,
            "device": s["device"],
            "l2_flush": s["l2_flush"],
            "gpu_memory_fraction": s["gpu_memory_fraction"],
            "leaf_hasher": hasher,
        }
        cand = CandidateProcess(
            {
                **common,
                "solution": sol,
                "solution_files": [sol["path"]],
                "allow_libraries": list(s["allow_libraries"] or []),
                "allow_torch_ops": list(s["allow_torch_ops"] or []),
            },
            dirs,
            s,
            self.arch,
            read_dirs=[str(dirs.build)] + ([hasher] if hasher else []),
            # its outputs are as large as the reference's, not made yet; the trusted side reads at most out_limit
            fsize_mb=tensorio.MAX_FILE_BYTES >> 20,
        )
        # The calibrator: the same program, started beside the candidate, never told to load anything. Its null
        # calls during timing give the per-call overhead under the load of that moment (step 7, docs/judge.md).
        if self.mode != "verify" and int(s["live_calibration_calls"]) > 0:
            try:
                self.calibrator = CandidateProcess(
                    {**common, "solution": None, "solution_files": []},
                    dirs.calibrator(),
                    s,
                    self.arch,
                    read_dirs=[hasher] if hasher else [],
                )
            except BaseException:  # (no room for its FIFOs): the candidate started above must not outlive us
                self.discard(cand)
                raise
        return cand

    def discard(self, cand: CandidateProcess) -> None:
        """Processes started for a judgement that ended before driving them (the reference failed): killed."""
        for proc in (cand, self.calibrator):
            if proc is not None:
                proc.launched.wait(float(self.s["start_timeout_s"]))  # a jail not yet launched could not be killed
                proc.close(FINISH_GRACE_S, kill=True)  # killed now; its jail reaped before the judgement ends
        self.calibrator = None

    def _run(self) -> dict:
        init_seed = self._init_seed
        _, cor, post = self._plan
        # The candidate's and the calibrator's processes start now, while the reference runs: a jail's start and
        # torch's import (seconds) overlap it. Neither holds a secret, nor loads candidate code before `load`.
        cand = self.start_processes()
        try:
            return self._judge(cand, cor, post, init_seed)
        finally:
            if isinstance(cand, CandidateProcess) and not self._driven:
                self.discard(cand)

    def _judge(self, cand: CandidateProcess | str, cor: list[str], post: list[str], init_seed: int) -> dict:
        s, dirs = self.s, self.dirs
        # ---- reference: inputs and outputs of the correctness trials (secret seeds, sent only there)
        self._ref[0].join()
        ref_rep = self._ref[1]["rep"]
        self.rep["details"]["reference"] = {
            k: ref_rep.get(k) for k in ("stage", "reason", "gpu_wait_s", "bytes_written")
        }
        self.phase("reference")
        if ref_rep.get("stage") != "done":
            reason = ref_rep.get("reason") or f"reference_error: process {ref_rep['sandbox']['reason']}"
            error = ref_rep.get("error") or ref_rep["sandbox"]["error"]
            # The task's own code raised, before any candidate code ran; or it ran out of GPU memory with every
            # memory slot held by this judgement (nothing else of ours on the GPU, none of the candidate's code
            # started): the task's too. Other host failures (disk, host memory, time) are shared with the host's
            # other GPUs and processes: never the task's, nor a way out of -1.
            gpu_memory = reason.startswith("reference_error") and said_out_of_memory(reason, error)
            if reason.startswith("bad_task") or (self.alone and gpu_memory):
                self.rep["task_defect"] = "reference_failed"
            return self.fail(reason, error)
        # inputs the task's own code changes in place: a candidate that does the same is not changing them behind
        # the judge's back (its outputs are judged as any other's)
        self._ref_mutates = ref_rep.get("mutates_inputs") or []
        if self._ref_mutates:
            self.rep["details"]["reference_mutates_inputs"] = self._ref_mutates
        own = [n for n in ref_rep.get("own_inputs") or [] if n in self._draw]
        for n in own:  # trials the task refused perturbed inputs for: its own distribution, for the candidate too
            self._draw[n]["variant"] = "base"
        if own:
            self.rep["details"]["own_inputs"] = own
        planned = {"trials": len(cor), "post_timing_trials": len(post), "checked_calls": len(self._check_pool)}
        cor, post = self.made(cor) or cor[:1], self.made(post)  # no cor_0: the load below names the task's fault
        self._check_pool = [c for c in self._check_pool if self.made([c[0]])]
        made = {"trials": len(cor), "post_timing_trials": len(post), "checked_calls": len(self._check_pool)}
        if made != planned:
            self.rep["details"]["io_budget"] = {"planned": planned, "made": made, "io_budget_mb": s["io_budget_mb"]}
        try:
            refs = {n: tensorio.load(str(dirs.ref / f"{n}.pt")) for n in cor + post}
            self._check_refs = {n: self.check_ref(n) for n, _ in self._check_pool}
        except tensorio.BadFile as e:
            self.rep["task_defect"] = "reference_failed"
            return self.fail("bad_task: the reference output is not plain tensors", str(e))
        ref_max = max((f.stat().st_size for f in dirs.ref.glob("*.pt")), default=0)
        self.out_limit = ref_max + ref_max // 16 + 2**20
        self.drop(*(dirs.ref / f"{n}.pt" for n in cor + post))  # in memory now
        meta = (
            [
                {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
                for t in tensorio.tensors(refs[cor[0]])
            ]
            if cor
            else []
        )
        # small outputs (a loss) judged within their spread across the inputs drawn too: one constant must not fit
        self._caps = spread_caps([refs[n] for n in cor + post])
        if any(c is not None for c in self._caps):
            self.rep["details"]["spread_caps"] = self._caps
        if s["degenerate_check"]:
            with self.gpu_work(refs.values()):
                why = degenerate([refs[n] for n in cor + post], s)
            if why:
                self.rep["task_defect"] = "degenerate"
                self.rep["details"]["task_defect"] = why
        # ---- candidate
        if isinstance(cand, str):
            self.violation("artifact_tampered", cand)
            return self.fail("artifact_tampered", cand)
        for proc in (cand, self.calibrator):
            if proc is not None:  # its life limit counts from here: the reference's time is not the candidate's
                proc.deadline = time.monotonic() + float(s["timeout_s"])
        self._driven = True
        try:
            self.drive(cand, refs, cor, post, meta, init_seed)
        finally:
            self.end_calibrator()
            self.end_candidate(cand)  # where drive() did not (it returned before taking the lock)
        self.rep["waiting_for"] = cand.waiting_for
        if cand.gave_up:
            # It stopped answering: died (segfault, abort, its own exit) or hung (killed by us, or by the jail). After
            # an earlier failure (a wrong output, then a crash at `finish`) that failure stays the verdict's reason.
            why = self.rep["sandbox"].get("reason") or "no_reply"
            why = "timeout" if why == "killed" else why
            crash = f"crash:{why} (during {self.rep.get('waiting_for', '?')})"
            sb = self.rep["sandbox"]
            if self.rep.get("reason") and not getattr(self, "_failed_no_reply", False):
                self.rep["correct"] = False
                self.rep["details"]["crash_after"] = crash
                self.rep["details"]["crash_error"] = str(sb.get("error") or sb.get("stderr_tail") or "")[-1000:]
            else:  # the crash is the failure (its no-reply recorded first): told as the crash it was
                self.rep["reason"] = ""
                self.fail(crash, self.rep.get("error") or sb.get("error") or sb.get("stderr_tail", ""))
        for v in self.rep["sandbox"].get("violations") or []:
            name = {
                "process_blocked": "threads_or_processes",
                "network_blocked": "io_access",
                "file_access_blocked": "io_access",
            }.get(v.get("kind"), v.get("kind"))
            self.violation(name, f"sandbox blocked {v.get('what')}")
        if self.rep.get("stage") == "profiled":
            self.verify_timed_outputs()
        if not self.rep.get("correct"):
            # memory slots others held as it failed, or now (a candidate out of memory is judged again only beside
            # others: alone, the failure is its own)
            self.note_slots_beside()
        self.phase("done")
        return self.rep

    def stage_solution(self) -> dict | str:
        """The candidate's private copy of its sources and of its verified build."""
        sol, dirs = self.solution, self.dirs
        src_dir = dirs.cand / "solution"
        src_dir.mkdir()
        path = src_dir / Path(sol["path"]).name
        shutil.copy2(sol["path"], path)
        out = {"kind": sol["kind"], "path": str(path), "artifact_dir": ""}
        if self.artifact:
            if sol["kind"] == "workspace":
                out["artifact_dir"] = str(dirs.build)  # cuda_extension.so, imported from sys.path
            why = artifacts.private_copy(self.s["cache_dir"], self.artifact, dirs.build)
            if why:
                return why
        for root, subdirs, files in os.walk(dirs.build):  # readable by the jail's unprivileged uid
            for name in subdirs + files:
                p = os.path.join(root, name)
                if not os.path.islink(p):
                    os.chmod(p, os.stat(p).st_mode | 0o444 | (0o111 if os.path.isdir(p) else 0))
        return out

    def drive(
        self, cand: CandidateProcess, refs: dict, cor: list[str], post: list[str], meta: list[dict], init_seed: int
    ) -> None:
        s = self.s
        t_call = float(s["call_timeout_s"])
        self._cand = cand
        hello = cand.recv(float(s["start_timeout_s"]))
        if hello is None:
            cand.gave_up = True
            self.fail("crash:candidate_did_not_start")
            return
        # The GPU's lock (pipeline.gpulock), held from here by this trusted process (released when it dies): shared
        # for untimed work, exclusive for the timed calls.
        self.gpu = GpuLock(self.s.get("gpu_lock") if self.s["device"] != "cpu" else None)
        try:
            self.gpu_wait(self.gpu.shared())
            self._drive(cand, refs, cor, post, meta, init_seed, t_call)
        finally:
            self.end_candidate(cand)  # before the lock goes: nothing of it runs beside others' timed calls
            ended = getattr(self, "_calibrator_ended", None)
            if ended is not None:  # killed at the timed calls' end: its teardown overlapped what came since
                ended.thread.join(FINISH_GRACE_S)
            self.gpu.release()

    def end_candidate(self, cand: CandidateProcess) -> None:
        """The candidate's end, once: killed at once if it stopped answering; else it has FINISH_GRACE_S to exit by
        itself after its last reply, and is killed then (a process that answered `finish` and lingered kept the
        GPU busy, unlocked, for the rest of the jail's `timeout_s`)."""
        if "sandbox" in self.rep:
            return
        info = cand.close(FINISH_GRACE_S, kill=cand.gave_up)
        if info.get("reason") == "still_running":
            cand.kill()
            info = {**cand.close(float(self.s["timeout_s"])), "killed_after_last_reply": True}
        self.rep["sandbox"] = info

    @contextlib.contextmanager
    def unlocked(self, cand: CandidateProcess) -> Iterator[None]:
        """The trusted side's own work on a reply (loading, comparing, hashing outputs). Where a timing waits for the
        GPU's lock, the candidate's jail is frozen and the lock let go for it meanwhile (`_let_go`); where none waits,
        the work runs holding the lock (letting it go and taking it back queued this evaluation behind every timing
        that began to wait meanwhile: seconds per reply), and a timing that began to wait during the work still goes
        before the candidate's next call."""
        gpu = getattr(self, "gpu", None)
        if gpu is None or gpu.path is None:
            yield
        elif gpu.timing_waits():
            with self._let_go(cand):
                yield
        else:
            yield
            if gpu.timing_waits():
                with self._let_go(cand):
                    pass

    @contextlib.contextmanager
    def _let_go(self, cand: CandidateProcess) -> Iterator[None]:
        """The candidate's jail frozen and the GPU's lock let go for a block; the lock taken back (shared) and the
        candidate thawed at the end. Where there is no GPU lock, or the jail cannot be frozen, nothing changes."""
        gpu = getattr(self, "gpu", None)
        if gpu is None or gpu.path is None:
            yield
            return
        with cand.frozen() as stopped:
            if not stopped:
                yield
                return
            t0 = time.monotonic()
            gpu.release()
            waited = 0.0
            try:
                yield
            finally:
                waited = gpu.shared()
                ph = self.rep["phase_s"]
                ph["gpu_wait"] = round(ph.get("gpu_wait", 0.0) + waited, 4)
                ph["frozen"] = round(ph.get("frozen", 0.0) + time.monotonic() - t0, 4)

    @contextlib.contextmanager
    def gpu_work(self, outputs: Any) -> Iterator[None]:
        """The trusted side's own GPU work: outputs large enough to be compared on the GPU (tolerance.compare_device)
        are compared under the GPU's lock, shared, where this process does not hold it then (before the candidate
        starts, inside `unlocked`, after the candidate's end), so that no timing runs beside it."""
        holding = getattr(self, "gpu", None) is not None and self.gpu.holds
        big = any(compare_device(self.s, t.numel()) for o in outputs for t in tensorio.tensors(o))
        if holding or not big:
            yield
            return
        with held(self.s.get("gpu_lock"), shared=True) as waited:
            self.rep["phase_s"]["gpu_wait"] = round(self.rep["phase_s"].get("gpu_wait", 0.0) + waited[0], 4)
            yield

    def gpu_wait(self, seconds: float) -> None:
        ph = self.rep["phase_s"]
        ph["gpu_wait"] = round(ph.get("gpu_wait", 0.0) + seconds, 4)
        for proc in (getattr(self, "_cand", None), getattr(self, "calibrator", None)):
            if proc is not None:
                proc.deadline += seconds  # waiting for the lock is not the candidate's time

    def _drive(self, cand, refs, cor, post, meta, init_seed, t_call) -> None:
        s = self.s
        setup, _ = cand.request({"op": "setup"}, t_call)
        if not setup or not setup.get("ok"):
            self.fail("crash:candidate_setup", str((setup or {}).get("error", "")))
            return
        if isinstance(setup.get("device"), str):
            self.rep["device"] = setup["device"][:100]
        # ---- overhead calibration, before any candidate code is loaded
        calib = []
        for k in range(int(s["calibration_calls"]) + 3):
            c, err = self.null_call(cand, meta, t_call)
            if c is None:
                self.fail("crash:calibration", err)
                return
            if k >= 3:
                calib.append(c)
        self.phase("calibrated")
        r, _ = cand.request({"op": "load", "init_seed": init_seed}, float(s["load_timeout_s"]))
        if r is None or not r.get("ok"):
            self.rep["loaded"] = False
            reason = "crash:load"  # no reply: the process died or hung while loading
            if r is not None:
                reason = r.get("reason") if r.get("reason") in ("init_error", "no_model_new") else "load_error"
            self.fail(reason, str((r or {}).get("error", "")))
            self.finish(cand)
            return
        self.rep["loaded"] = True
        self.phase("loaded")
        # ---- correctness
        errs = {"max_abs_err": 0.0, "max_rel_err": 0.0, "max_tol_err": 0.0}
        seen: list[str] = []  # fingerprints of the trials' outputs
        kb_ok, correct = True, True
        for k, name in enumerate(cor):
            cmp = self.check_call(cand, name, refs[name], f"trial {k}", sentinel=(k == 0), meta=meta)
            for key, val in errs.items():
                errs[key] = max(val, float(cmp.get(key) or 0.0))
            kb_ok = kb_ok and bool(cmp.get("kernelbench_ok"))
            if not cmp["ok"]:
                correct = False
                if cmp.get("fingerprint") and cmp["fingerprint"] in seen:
                    self.violation("result_caching", f"trial {k}: the output is bit-identical to an earlier one")
                self.fail(cmp["reason"], cmp.get("error", ""))
                break
            seen.append(cmp["fingerprint"])
        self.rep.update(errs)
        self.rep["trials_run"] = k + 1 if cor else 0
        self.rep["details"]["kernelbench_ok"] = kb_ok and correct
        if correct and s["kernel_launch_check"] and s["device"] != "cpu":
            r, _ = cand.request({"op": "kernels", "seed": self.seed()}, t_call)
            n = (r or {}).get("n")
            self.rep["details"]["kernels_launched"] = n if isinstance(n, int) else None
            if n == 0:
                self.violation("no_kernel_launched", "the candidate returned without launching a GPU kernel")
        self.rep["correct"] = correct
        self.phase("verified")
        if not correct or self.mode == "verify":
            self.finish(cand)
            return
        # ---- timing, driven call by call
        if not self.timing(cand, calib, t_call, meta):
            self.finish(cand)
            return
        self.phase("profiled_calls")
        # ---- re-verify after timing (state that changes after many calls)
        for k, name in enumerate(post):
            cmp = self.check_call(cand, name, refs[name], f"post-timing {k}", sentinel=False, meta=meta)
            if not cmp["ok"]:
                self.fail("post_timing_" + cmp["reason"], cmp.get("error", ""))
                break
        self.finish(cand)
        self.phase("profiled")

    def end_calibrator(self) -> None:
        """The calibrator killed once its null calls are done; its end (a killed process's CUDA context takes
        seconds to go: every honest verdict on the H200 waited 5 s for it at the end) overlaps the post-timing trials
        and the candidate's own exit, and is awaited only before the GPU's lock goes (`drive`)."""
        if self.calibrator is not None:
            self.calibrator.close(0.0, kill=True)
            self._calibrator_ended = self.calibrator
            self.calibrator = None

    def start_calibrator(self, meta: list[dict], t_call: float) -> CandidateProcess | None:
        """The calibrator answered and is set up; None (the pre-load calibration alone) when it is not."""
        c = self.calibrator
        why = ""
        if c is None:
            return None
        if c.recv(float(self.s["start_timeout_s"])) is None:
            why = "did not start"
        else:
            r, _ = c.request({"op": "setup"}, t_call)
            if not r or not r.get("ok"):
                why = f"setup failed: {str((r or {}).get('error', ''))[:200]}"
        if why:
            self.rep["details"]["live_calibration"] = f"unavailable ({why})"
            return None
        return c

    def null_call(self, c: CandidateProcess, meta: list[dict], t_call: float) -> tuple[float | None, str]:
        """(per-call overhead: trusted wall ms minus the reported time, or None; the reply's error)."""
        r, w = c.request({"op": "null", "seed": self.seed(), "outputs": meta}, t_call)
        t, ts = _num((r or {}).get("t")), _num((r or {}).get("ts"))
        if t is not None and ts is not None:
            self._null_gaps.append(t - ts)
        return (None if t is None else w - t), str((r or {}).get("error", ""))

    def null_call_frozen(
        self, cand: CandidateProcess, calibrator: CandidateProcess, meta: list[dict], t_call: float
    ) -> float | None:
        """A null call of the calibrator with the candidate's jail stopped: a candidate that loads the host in the
        gaps between its own calls (threads that stop when its next command is pending) would slow the calibrator
        alone, raising the overhead and the slack its under-reported times hide in. None where it cannot be stopped
        (too few live readings: the calibration made before its code loaded stands). Frozen time is not its own."""
        with cand.frozen() as stopped:
            return self.null_call(calibrator, meta, t_call)[0] if stopped else None

    def timing(self, cand: CandidateProcess, calib: list[float], t_call: float, meta: list[dict]) -> bool:
        calibrator = self.start_calibrator(meta, t_call)
        # Changing from shared to exclusive lets the lock go first (no deadlock): the candidate waits frozen.
        with cand.frozen():
            self.gpu_wait(self.gpu.exclusive())
        try:
            ok = self._timed_calls(cand, calibrator, calib, t_call, meta)
        finally:
            self.gpu_wait(self.gpu.downgrade())
            self.end_calibrator()
        sent = getattr(self, "_keeps_sent", 0)
        if not sent:
            return ok
        # The checked calls' outputs were copied on the GPU at `keep`; written to files now, out of the timing.
        k, _ = self.request_written(cand, {"op": "save_kept"}, float(self.s["call_timeout_s"]))
        saved = k is not None and bool(k.get("ok"))
        if ok and not saved:
            self.fail(
                f"{self.failed_call(k or {})} (timing)",
                f"a timed output could not be kept: {str((k or {}).get('error', ''))[-2000:]}",
            )
        if not (ok and saved):
            # The candidate knew which of its outputs are checked (it was sent `keep`s): a run that fails after that
            # (a stale output it knows will be caught, then "out of memory") earns no second judgement unless those
            # outputs are shown right here; one that cannot be shown (a keep or the save failed) stays its own.
            if saved and sent == len(self._checked):
                self.verify_timed_outputs()
            else:
                self.rep["details"]["checks_unverified"] = sent
        return ok and saved

    def _timed_calls(self, cand, calibrator, calib, t_call, meta) -> bool:
        s = self.s
        warm_times, warm_walls = [], []
        t0 = time.perf_counter()
        n = 0
        while n < int(s["timing_warmup"]) or (
            (time.perf_counter() - t0) * 1e3 < float(s["timing_warmup_ms"]) and n < 5000
        ):
            r, w = cand.request({"op": "timed", "seed": self.seed(), "warm": True}, t_call)
            t = _num((r or {}).get("t"))
            if t is None:
                self.note_partial_timing([], [], warm_times[1:], warm_walls[1:], calib)
                self.fail("runtime_error (timing)", str((r or {}).get("error", "")))
                return False
            warm_times.append(t)
            warm_walls.append(w)
            n += 1
        # The planned count follows the reported warm-up times, but never a time above the trusted side's own clock
        # around the same calls: reporting slow warm-ups cannot buy a short timed run with few checks.
        warm_wall = statistics.median(warm_walls[-50:])
        # Nor a time at or below 0 (no call takes none), which would plan the shortest run: the wall's then.
        reported = statistics.median(warm_times[-50:])
        estimate = min(reported, warm_wall) if reported > 0 else warm_wall
        planned = int(s["timing_trials"])
        if float(s["timing_min_ms"]) > 0 and estimate > 0:
            planned = max(planned, int(float(s["timing_min_ms"]) / estimate) + 1)
        # The round trips, not the GPU, bound a short kernel's timing, and the calibrator's null calls (each commits
        # an output of the task's size, so each costs about a timed call's wall) share the same wall budget: on a
        # task with large outputs they took as long as the timed calls themselves, all under the GPU's lock.
        live_n = int(s["live_calibration_calls"])
        if float(s["timing_max_s"]) > 0:
            budget = int(float(s["timing_max_s"]) * 1e3 / max(warm_wall, 1e-3))
            live_n = min(live_n, max(LIVE_MIN, budget // 5))
            planned = min(planned, budget - live_n)
        planned = max(int(s["timing_trials"]), min(planned, int(s["timing_max_trials"])))
        # The count gets a secret random part, so the candidate cannot tell which call is the last (always checked,
        # and on a task past io_budget_mb one of only two checked).
        planned += self._rng.randrange(0, planned // 8 + 2)
        # The checked calls: the last one and others at random; their seeds are the pool's (plan_inputs), which the
        # candidate cannot tell from the other calls' fresh seeds. The digest commits each output before `keep`.
        pool = list(self._check_pool)
        last = pool.pop() if pool else None  # the last call's, wherever the run ends
        # (call 0 is discarded from the timing: a check there would guard nothing that counts)
        check_at = {i: pool.pop() for i in sorted(check_positions(self._rng, planned - 1, len(pool)))}
        times, stream, walls, checked, live = [], [], [], [], []
        first, first_wall = [], []  # the discarded first timed call

        def note_partial() -> None:  # the run fails here: what it measured so far floors a second judgement
            self.note_partial_timing(first + times, first_wall + walls, warm_times[1:], warm_walls[1:], calib)

        self._checked, self._keeps_sent = checked, 0  # as far as it got, should the run fail (timing)
        # The calibrator's null calls: live_n, beside timed calls drawn at random, each randomly before or after.
        live_at = set(self._rng.sample(range(planned + 1), min(live_n, planned + 1))) if calibrator else set()
        precision = float(s["timing_precision"])
        end, i, stop_width = planned, -1, None
        while i < end:
            i += 1
            null_at = self._rng.choice(("before", "after")) if i in live_at else ""
            if null_at == "before":
                live.append(self.null_call_frozen(cand, calibrator, meta, t_call))
            name, seed = (last if i == end else check_at.get(i)) or ("", self.seed())
            r, w = cand.request({"op": "timed", "seed": seed}, t_call)
            if null_at == "after":
                live.append(self.null_call_frozen(cand, calibrator, meta, t_call))
            t, ts = _num((r or {}).get("t")), _num((r or {}).get("ts"))
            dg = (r or {}).get("digest")
            if t is None or ts is None or not isinstance(dg, str):
                note_partial()
                self.fail("runtime_error (timing)", str((r or {}).get("error", "")))
                return False
            if name:
                # The leaves to compare, told only now that the output is committed (drawn by the reference process
                # with a seed the candidate never sees).
                ref = self._check_refs.get(name)
                picks = tensorio.check_picks(ref, int(s["check_leaves"])) if ref else None
                self._keeps_sent += 1
                k, _ = cand.request({"op": "keep", "out": f"timed_{i}", "picks": picks}, t_call)
                if k is None or not k.get("ok"):
                    note_partial()
                    self.fail(
                        "runtime_error (timing)",
                        f"a timed output could not be kept: {str((k or {}).get('error', ''))[-2000:]}",
                    )
                    return False
                checked.append({"i": i, "ref": name, "digest": dg[:4096], "picks": picks})
            if i == 0:
                first, first_wall = [t], [w]  # discarded from the timing; a partial run's floor reads it
                continue
            times.append(t)
            stream.append(ts)
            walls.append(w)
            # Known precisely enough: the run ends within the next STOP_EVERY calls, at a secret random one (the
            # candidate knows the rule and its own times, so "the next" would tell it which call is the last, and
            # checked). A candidate that reports steady times only ends its run sooner; its figure is still never
            # below the trusted clock's.
            if (
                stop_width is None
                and (calibrator is None or len(live) >= LIVE_MIN)
                and (width := known_within(times, precision, int(s["timing_trials"]))) is not None
            ):
                end = min(planned, i + 1 + self._rng.randrange(STOP_EVERY))
                stop_width = round(width, 6)
        live = [c for c in live if c is not None]
        source = "live" if len(live) >= 10 else "pre_load"
        ok, detail, fig = check_clock(
            walls,
            times,
            live if source == "live" else calib,
            slack_ms=float(s["clock_slack_ms"]),
            slack_frac=float(s["clock_slack_frac"]),
            live=source == "live",
        )
        fig.update(
            calibration=source,
            live_calls=len(live),
            pre_load_overhead_ms=round(statistics.median(calib), 5) if calib else None,
        )
        if not ok:
            self.violation("time_inconsistent", detail)
        self.rep["timing"] = {
            "method": TIMING_METHOD
            + "; driven call by call by the trusted side, at most timing_max_s of wall planned, stopped once the "
            "median is known within timing_precision",
            "solution": {
                "times_ms": times,
                "stream_times_ms": stream,
                "wall_ms": walls,
                "stats": stats(times),
                "stream_stats": stats(stream),
                "warmup": n,
                "warmup_estimate_ms": estimate,
                "warmup_wall_ms": round(warm_wall, 4),
                "trials": end,
                "planned": planned,
                "median_halfwidth": round(median_halfwidth(times), 6),  # relative, over every timed call
                # where the stop was decided (None: the planned run, never known precisely enough); the calls of
                # the random tail after it may widen the final figure a little
                "stop_median_halfwidth": stop_width,
                "discarded": 1,
            },
            "clock_check": fig,
            "calibration_ms": calib,
            "live_calibration_ms": live,
            "checked_calls": [c["i"] for c in checked],
        }
        # The figure is never below what the trusted clock says the calls took (their median wall time less the
        # calibrated overhead): under-reporting within the slack buys nothing. Honest calls' unexplained time is
        # negative (their overhead is below the null calls'), so for them this is the reported median.
        dev_ms, stream_ms = statistics.median(times), statistics.median(stream)
        by_wall = fig.get("median_wall_ms", 0.0) - fig.get("overhead_ms", 0.0)
        self.rep["solution_ms"] = max(dev_ms, by_wall)
        self.rep["timing"]["solution_ms_from"] = "reported" if dev_ms >= by_wall else "wall_clock"
        sync_ms = statistics.median(self._null_gaps) if self._null_gaps else 0.0
        self.rep["timing"]["sync_gap_ms"] = round(sync_ms, 5)
        why = off_stream(dev_ms, stream_ms, sync_ms, float(s["offstream_ratio"]), float(s["offstream_min_ms"]))
        if why:
            self.violation("work_off_stream", why)
        return True

    def note_partial_timing(
        self, times: list[float], walls: list[float], warm: list[float], warm_walls: list[float], calib: list[float]
    ) -> None:
        """A timed run that fails before its end leaves a figure a second judgement is never below (harness
        `_timing_floor`): a candidate that dislikes its times, timed or warm-up, could otherwise feign running out of
        memory for a fresh run. From 4 timed calls made (the discarded first one too): the lower quartile of the
        times reported and of the trusted clock's walls less the calibrated overhead, the higher of the two (the
        lower quartile keeps a short honest run's noise from raising it). Before that, the fastest of the warm-up
        calls after the first and the timed calls made (warm-ups are slower while the GPU's clocks ramp up: only the
        fastest stands for the kernel's time)."""
        overhead = statistics.median(calib) if calib else 0.0
        if len(times) >= 4 and len(walls) >= 4:
            low, by_wall = sorted(times)[len(times) // 4], sorted(walls)[len(walls) // 4] - overhead
        elif warm + times and warm_walls + walls:
            low, by_wall = min(warm + times), min(warm_walls + walls) - overhead
        else:
            return
        self.rep["details"]["partial_timing_ms"] = round(max(low, by_wall), 6)

    def finish(self, cand: CandidateProcess) -> None:
        r, _ = cand.request({"op": "finish"}, float(self.s["call_timeout_s"]))
        for item in (r or {}).get("violations") or []:
            if isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item):
                if item[0] == "input_mutation" and self._ref_mutates:
                    continue  # as the task's own code does
                self.violation(item[0][:40], item[1])
        for item in (r or {}).get("warnings") or []:
            if isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item):
                if item[0][:40] not in self.rep["warnings"]:
                    self.rep["warnings"].append(item[0][:40])
                self.rep["details"].setdefault("warning_details", []).append(item[1][:300])

    def check_ref(self, name: str) -> dict | None:
        """A checked call's reference as the reference process wrote it: its sampled record (`reference_sample`,
        held here, the file dropped), or None where the output is kept whole in ref/ (no sampling, or a dict)."""
        path = self.dirs.ref / f"{name}{tensorio.SAMPLED}.pt"
        if not path.is_file():
            return None
        rec = tensorio.load(str(path))
        ok = isinstance(rec, dict) and set(rec) == {"picks", "sample", "shapes", "scales"}
        n = len(tensorio.tensors(rec["sample"])) if ok else -1
        ok = ok and all(isinstance(rec[k], list) and len(rec[k]) == n for k in ("picks", "shapes", "scales"))
        for key in ("picks", "shapes"):
            ok = ok and all(isinstance(p, list) and all(type(j) is int and j >= 0 for j in p) for p in rec[key])
        ok = ok and all(isinstance(x, float) for x in rec["scales"])
        if not ok:
            raise tensorio.BadFile(f"{name}: not a sampled reference")
        self.drop(path)
        return rec

    def verify_timed_outputs(self) -> None:
        """Outputs of the checked timed calls: saved file == committed digest, and == the reference on the same
        seed (made by the reference process before any candidate code ran)."""
        checked = getattr(self, "_checked", [])
        if not checked:
            return
        mismatches = []
        for c in checked:
            sampled = self._check_refs.get(c["ref"])
            try:
                out = self.load_out(f"timed_{c['i']}")
                ref = sampled or tensorio.load(str(self.dirs.ref / f"{c['ref']}.pt"))
            except tensorio.BadFile as e:
                mismatches.append(f"timed call {c['i']}: {e}")
                continue
            if sampled is not None:
                why = self.check_sampled(c, out, sampled)
                if why:
                    mismatches.append(f"timed call {c['i']}: {why}")
                continue
            if tensorio.digest(out) != c["digest"]:
                self.violation(
                    "output_commitment_mismatch",
                    f"timed call {c['i']}: the saved output is not the one committed at the call",
                )
                mismatches.append(f"timed call {c['i']}: saved output differs from its commitment")
                continue
            with self.gpu_work([ref]):  # outputs too large for the host are compared on this GPU, under its lock
                cmp = compare(ref, out, self.s, caps=self._caps)
            if not cmp["ok"]:
                mismatches.append(f"timed call {c['i']}: {cmp['reason']}")
        self.rep["details"]["timed_outputs_checked"] = len(checked)
        if any(c["picks"] is not None for c in checked):
            self.rep["details"]["timed_leaves_checked"] = sum(
                len(p) for c in checked if c["picks"] for p in c["picks"]["at"].values()
            )
        if mismatches:
            self.violation("result_caching", "; ".join(mismatches[:3]))
            self.rep["correct"] = False
            self.rep["reason"] = "timed_output_mismatch: " + mismatches[0]

    def check_sampled(self, c: dict, rec: Any, ref: dict) -> str:
        """A sampled check: the record's leaf digests and structure give the committed digest, each picked leaf
        hashes to its digest, and the picked elements are the reference's (`ref`: `reference_sample`'s record)
        within the rule, at the scale of the whole reference tensor. The reason it fails, or ""."""
        try:
            dg, out, shapes = tensorio.open_sampled(rec, c["picks"])
        except (tensorio.Forged, tensorio.BadFile) as e:  # a record it cannot open proves nothing it committed
            why = str(e)
        else:
            why = "" if dg == c["digest"] else "its leaf digests and structure are not those committed at the call"
        if why:
            self.violation("output_commitment_mismatch", f"timed call {c['i']}: {why}")
            return "saved output differs from its commitment"
        why = _sampled_shapes(ref["sample"], ref["shapes"], out, shapes)
        if why:
            return why
        cmp = compare(ref["sample"], out, self.s, scales=ref["scales"], caps=self._caps)
        return "" if cmp["ok"] else cmp["reason"]


def _sampled_shapes(ref: Any, ref_shapes: list, out: Any, out_shapes: list) -> str:
    """Where both sides hold a tensor at the same place, their whole shapes agree (the samples are flat); the
    rest, structure and values included, is `compare`'s, as for whole outputs (a 0-dim tensor may stand for a
    number). No dict in a sampled output: `tensors` order is `flatten`'s."""
    r_shapes, o_shapes = iter(ref_shapes), iter(out_shapes)
    for i, (r, o) in enumerate(zip(tensorio.flatten(ref), tensorio.flatten(out))):
        rs = next(r_shapes) if isinstance(r, torch.Tensor) else None
        os_ = next(o_shapes) if isinstance(o, torch.Tensor) else None
        if rs is not None and os_ is not None and list(rs) != list(os_):
            return f"output_shape: output {i}: {tuple(os_)} != {tuple(rs)}"
    return ""


def judge_candidate(
    task_code: str,
    solution: dict,
    mode: str,
    s: dict,
    arch: str,
    artifact: str,
    judge: Judge | None = None,
    alone: bool = False,
) -> dict:
    """One evaluation's report (see `Judge`); never raises for anything the task or the candidate does. `judge`:
    one made (and begun, `Judge.begin`) before the build, for the same task, mode and settings. `alone`: with the
    GPU's memory to itself (`Judge.memory_claim`)."""
    j = judge or Judge(task_code, solution, mode, s, arch, artifact, alone=alone)
    j.solution, j.artifact = solution, artifact
    try:
        return j.run()
    except Exception as e:  # noqa: BLE001 - a judge bug must not take the actor down; the row keeps the reason
        import traceback

        # a full disk where the trusted side writes (the solution's copy, the jail's files) is the host's: judged
        # again once there is room, as a candidate's full disk is (harness)
        why = "host_error: no space left for the judge's files" if tensorio.out_of_room(e) else ""
        if why and getattr(j, "_keeps_sent", 0):  # not once it knew which outputs are checked (it can fill the disk)
            j.rep.setdefault("details", {})["checks_unverified"] = j._keeps_sent
        j.rep["reason"] = j.rep.get("reason") or why or f"judge_error: {type(e).__name__}"
        j.rep["error"] = traceback.format_exc()[-3000:]
        j.rep["correct"] = False
        return j.rep
