"""The semantic view and the functional confirmation: what a task computes, not how it is spelled.

`semantic_views(codes)`: each task's Model.forward traced (in the jail, meta tensors) into core ATen ops after
PyTorch's core decompositions, normalized and fingerprinted (pipeline.decontam.graphfp). Traced once per distinct
code: the normalized trace is cached on disk, content-addressed by sha256(tracer version, torch version, code).
`confirm_pairs(pairs)`: a candidate and a reference problem run (jailed) on the candidate's inputs with the
candidate's tensors taken from the reference's by shape; the parent compares the reported difference to its own
tolerance. Both batch their jobs into one jailed process per worker that imports torch once and forks per job.
"""

from __future__ import annotations

import ast
import json
import os
import re
import symtable
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from pipeline.decontam.graphfp import SemGraph, fingerprint, from_fingerprint, normalize, op_of
from pipeline.decontam.jailed import TRACER_VERSION, code_key, graph_of, pack, ready_fingerprint  # noqa: F401
from pipeline.decontam.settings import DecontamSettings

# bump when jailed.confirm changes: cached confirmation reports become stale (5: outputs compared in float32 where
# both are: jailed._compared; 6: inputs too large even at 2 rows run with their trailing dims cut: jailed._cut;
# 7: outputs that differ try the ties _match could not tell apart: jailed._retie; 8: a match on drawn inputs is
# tried again on signed ones: jailed._signed_check; 9: a flattened weight also tied as its transpose; 10: a match-only
# pair's costly first run on its inputs cut first: jailed._cheap_first; 11: a tensor tied by an order of its dims;
# 12: a problem rebuilt at the candidate's constructor arguments needs its parameter count: jailed.SAME_PARAMS; a
# match is tried again with every tensor shifted: jailed._shifted_check; 13: constants folded into weights, tensors
# packed in one, float64 near misses; 14: ties also in the order the forwards read the tensors, a slice's pieces
# from one list, every square slice flipped at once: jailed._retie; the screen reads outputs on cut inputs; 15: the
# screen's constant probe: jailed._const_fill; 18: an alarm never interrupts an import, whose half-made module
# failed later pairs that were then cached: jailed._pair_alarm; 21: an output scale folded into a norm's gain and
# zero shift: jailed._one_fold, jailed._fold_of; the constant probe at the weights' own scales: jailed._fold_ratios;
# 20 was taken by a version never released, whose reports may be cached; 22: the ties in the order the forwards
# read the tensors are tried without slices too: jailed._retie; 23: the screen's probe with an offset folded into a
# vector: jailed._fold_shifts; 24: the problem's parameters made constant kept at their value: jailed._keep_constants,
# jailed._kept; 25: augmented matrices, merged vectors, flipped filters, ties past a dropped bias: jailed._augments,
# jailed._other_ties; 26: two problem matrices joined into one, their biases added: jailed._joins, the screen's
# pieces with the problem's left over: jailed._pieces_of; a layer read gate by gate: jailed._strided; a parameter
# multiplied into each row of other ties (`&*`); a scale and an offset folded in together: jailed._scale_trials;
# every forward seeded alike: jailed._call; 28: each group's first other tie alone before the combinations:
# jailed._tie_combinations (27 was taken by a version never released); 29: at most RETIES of those)
CONFIRM_VERSION = "29"
# The default tolerances (their reports' cache keys carry none)
RETIE_DEFAULT = (
    DecontamSettings.model_fields["confirm_atol"].default,
    DecontamSettings.model_fields["confirm_rtol"].default,
)
_EMPTY = np.zeros(0, dtype=np.uint32)
_MEM: dict[tuple[str, str], dict] = {}  # in-process copy of the on-disk caches, per cache directory
PROBE_TOL = 1e-3  # relative: a probe only shortlists (the confirmation's run decides)
_MAX_SIG = 20_000  # bytes of a trace's signature sent on to the worker (a task's report: bounded)
_LOCK = threading.Lock()


@dataclass
class SemView:
    ok: bool
    reason: str = ""  # why there is no graph (trace_error, timeout, graph_too_large ...)
    features: np.ndarray = field(default_factory=lambda: _EMPTY)
    summary: SemGraph | None = None  # the graph without its nodes (graphfp.from_fingerprint): what decisions read
    trace_s: float = 0.0
    cached: bool = False
    error: str = ""
    truncated: bool = False  # the forward's first MAX_NODES ops only: shortlists for confirmation, nothing else
    sig: dict | None = None  # shapes and dtypes the trace reported (tracer 7; jailed.screen): screens confirmations
    record: dict | None = field(default=None, repr=False)  # the stored trace: the whole graph is rebuilt from it
    _graph: SemGraph | None = field(default=None, repr=False)
    # The keys below are made once per view (cached_property: a view is not changed once made): the shortlists read
    # each problem's `init` and keys once per candidate (136,028 times in a 6,000-candidate check, 3.6 s profiled)

    @property
    def status(self) -> str:
        return ("truncated" if self.truncated else "traced") if self.ok else self.reason

    @cached_property
    def input_key(self) -> str:
        return json.dumps(self.summary.inputs) if self.summary is not None else ""

    @cached_property
    def rowless_key(self) -> str:
        """The input shapes with each first dim left out: a paraphrase that changes the batch size alone."""
        return json.dumps([s[1:] for s in self.summary.inputs]) if self.summary is not None else ""

    @cached_property
    def ranks_key(self) -> str:
        """Sizes aside, what a functional match needs: the inputs' and outputs' ranks and dtypes (scalars as such) and
        the element counts of its parameters and buffers (a match ties them by role and shape, so a rewrite that
        resized them cannot match). "" without the trace's signature or outputs. A truncated trace (a forward too
        long to trace whole: an RNN over 512 steps) has its outputs' ranks and dtypes from shorter forwards
        (jailed._shape_probe)."""
        sig, g = self.sig, self.summary
        if not (isinstance(sig, dict) and g is not None):
            return ""
        outs = sig.get("outputs") or (sig.get("shape_probe") if self.truncated else None)
        if not (isinstance(outs, list) and outs):
            return ""

        def ranks(items: list) -> list:
            return [
                [len(x[0]), x[1]] if isinstance(x, list) and len(x) == 2 and isinstance(x[0], list) else "v"
                for x in items
            ]

        sizes = sorted(int(np.prod(p, dtype=np.int64)) for p in g.params)
        return json.dumps([ranks(sig.get("inputs") or []), ranks(outs), sizes])

    @cached_property
    def io_key(self) -> str:
        """The inputs' and outputs' ranks and dtypes alone (ranks_key without the parameter sizes); "" without them."""
        return json.dumps(json.loads(self.ranks_key)[:2]) if self.ranks_key else ""

    @cached_property
    def init(self) -> list | None:
        """The constructor's arguments as literals (jailed._literal), None where unknown or not plain values."""
        init = self.sig.get("init") if isinstance(self.sig, dict) else None
        return init if _literal_ok(init) and init[0] == "l" else None

    @cached_property
    def resize_key(self) -> str:
        """What a problem rebuilt at this task's constructor arguments needs to share with it: the inputs' and
        outputs' ranks and dtypes and the arguments' kinds (how many, int or float or tuple of n ...); "" where
        it has no such arguments."""
        init, io = self.init, self.io_key
        if init is None or not init[1] or not io:
            return ""
        return json.dumps([json.loads(io), [_kinds(x) for x in init[1]]])  # positions kept

    @cached_property
    def probe_key(self) -> str:
        """A weightless task's probe (jailed._probe) as far as it must equal another's: the inputs' ranks and dtypes
        and the outputs' shapes on the probe; "" without one."""
        probe, ranks = self.sig.get("probe") if isinstance(self.sig, dict) else None, self.ranks_key
        if not (ranks and _probe_ok(probe)):
            return ""
        return json.dumps([json.loads(ranks)[0], probe["shapes"]])

    @property
    def graph(self) -> SemGraph | None:
        """The whole normalized graph (nodes and operands), rebuilt on first use: only the auditor's report shows
        it; decisions read `summary` and `features`, made once where the trace was made."""
        if self._graph is None and self.ok and self.record is not None:
            src = graph_of(self.record)
            self._graph = normalize(*src) if src is not None else None
        return self._graph


_SCALARS = {"b": bool, "i": int, "f": float, "s": str}


def _literal_ok(lit: object, depth: int = 0) -> bool:
    """A well-formed jailed._literal (it comes from the candidate's trace: checked before code is written from it)."""
    if not (isinstance(lit, list) and len(lit) == 2 and isinstance(lit[0], str)):
        return False
    kind, v = lit
    if kind == "n":
        return v is None
    if kind in _SCALARS:  # the tracer's own bounds: a finite float, an int of 31 bits, a string of 64 characters
        if type(v) is not _SCALARS[kind]:
            return False
        if kind == "f":
            return bool(np.isfinite(v))
        if kind == "i":
            return abs(v) < 1 << 31
        return kind != "s" or len(v) <= 64
    if kind in ("l", "t"):
        return isinstance(v, list) and len(v) <= 16 and depth < 3 and all(_literal_ok(x, depth + 1) for x in v)
    return False


def _probe_ok(probe: object) -> bool:
    shapes, values = (probe.get("shapes"), probe.get("values")) if isinstance(probe, dict) else (None, None)
    if not (isinstance(shapes, list) and isinstance(values, list)):
        return False
    return (
        0 < len(shapes) == len(values) <= 8
        and all(isinstance(s, list) and all(type(d) is int for d in s) for s in shapes)
        and all(isinstance(v, list) and 0 < len(v) <= 64 and all(type(x) is float for x in v) for v in values)
    )


def _probed(view: SemView, ref: SemanticReference) -> list[int]:
    """Weightless problems whose probe (jailed._probe) gives the candidate's values: the same function on the same
    small inputs, whatever the sizes either was written for and however it is spelled (an activation through
    another formula at other sizes shares little of its graph and none of its shapes)."""
    key = view.probe_key
    if not key:
        return []
    mine = [np.asarray(v, dtype=np.float64) for v in view.sig["probe"]["values"]]
    out = []
    for j in ref.by_probe.get(key, []):
        theirs = [np.asarray(v, dtype=np.float64) for v in ref.views[j].sig["probe"]["values"]]
        if all(a.shape == b.shape for a, b in zip(mine, theirs)) and all(
            np.all(np.abs(a - b) <= PROBE_TOL * (1.0 + np.abs(b).max())) for a, b in zip(mine, theirs)
        ):
            out.append(j)
    return out


def _kinds(lit: list) -> object:
    """A literal's kinds without its values: ints and floats as such, a tuple with its length (a shape), a list by
    the kinds it holds (layer widths: a copy may have another number of layers)."""
    kind, v = lit
    if kind == "l":
        return ["l", sorted({json.dumps(_kinds(x)) for x in v})]
    return ["t", [_kinds(x) for x in v]] if kind == "t" else kind


def python_literal(lit: list) -> str:
    """Python source for a checked literal (repr of plain scalars only: no code can come from it)."""
    kind, v = lit
    if kind == "l":
        return "[" + ", ".join(python_literal(x) for x in v) + "]"
    if kind == "t":
        return "(" + ", ".join(python_literal(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def rebuilt_code(ref_code: str, init: list | None, inputs: list | None = None) -> str:
    """The problem's code built at other constructor arguments (`init`, a checked literal list: its own
    get_init_inputs replaced) and, where its model reads a module-level size that its get_inputs also gives an
    input (KernelBench's VanillaRNN makes its state at `batch_size`), with that size the candidate's (`inputs`, the
    candidate's input signatures): the problem at the candidate's sizes, not only its arguments."""
    sized = _sizes_at(ref_code, inputs)
    out = ref_code + "".join(f"\n{name} = {value}  # rebuilt at a candidate's input sizes\n" for name, value in sized)
    if init is None:
        return out
    head = "\n\n\ndef get_init_inputs():  # rebuilt at a candidate's arguments\n    return "
    return f"{out}{head}{python_literal(init)}\n"


def _inputs_of(view: SemView) -> list | None:
    return view.sig.get("inputs") if isinstance(view.sig, dict) else None


def _sizes_at(ref_code: str, inputs: list | None) -> list[tuple[str, int]]:
    """(name, value): the problem's input-size globals (_input_globals) at the candidate's sizes, where they
    differ from the problem's and every input that names one agrees on its value."""
    sizes: dict[str, set] = {}  # name -> the candidate's sizes where the problem's inputs name it (None: no plain one)
    own: dict[str, int] = {}
    for name, i, d, value in _input_globals(ref_code) if isinstance(inputs, list) else ():
        sig = inputs[i] if i < len(inputs) else None
        ok = isinstance(sig, list) and len(sig) == 2 and isinstance(sig[0], list) and d < len(sig[0])
        size = sig[0][d] if ok else None
        sizes.setdefault(name, set()).add(size if type(size) is int and 0 < size < 1 << 31 else None)
        own[name] = value
    return sorted((n, v) for n, vs in sizes.items() if len(vs) == 1 for v in vs if v is not None and v != own[n])


@lru_cache(maxsize=1024)
def _input_globals(ref_code: str) -> tuple[tuple[str, int, int, int], ...]:
    """(name, input, dim, value): module-level integers that the problem's classes read (symtable: a global
    referenced in a method or class body) and that its get_inputs passes as a size of an input it makes
    (`torch.rand(batch_size, n)`): one computation at the candidate's sizes needs them at those sizes too."""
    try:
        tree = ast.parse(ref_code)
        top = symtable.symtable(ref_code, "<problem>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    ints: dict[str, object] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for tg in (t for t in targets if isinstance(t, ast.Name)):
            plain = isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            # a name bound once, to an int: any other binding makes its value at run time unknown here
            ints[tg.id] = node.value.value if tg.id not in ints and plain and type(node.value.value) is int else None
    read: set[str] = set()
    tables = [(t, t.get_type() == "class") for t in top.get_children()]
    while tables:
        table, inside = tables.pop()
        if inside:
            read |= {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()}
        tables += [(c, inside or c.get_type() == "class") for c in table.get_children()]
    read = {n for n in read if ints.get(n) is not None}
    gi = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    ret = gi.body[-1] if gi is not None and gi.body else None
    if not read or not isinstance(ret, ast.Return) or not isinstance(ret.value, (ast.List, ast.Tuple)):
        return ()
    out = []
    for i, el in enumerate(ret.value.elts):
        if not isinstance(el, ast.Call):
            continue
        one = len(el.args) == 1 and isinstance(el.args[0], (ast.Tuple, ast.List))
        for d, a in enumerate(el.args[0].elts if one else el.args):
            if isinstance(a, ast.Name) and a.id in read:
                out.append((a.id, i, d, int(ints[a.id])))
    return tuple(out)


def cache_dir(settings: DecontamSettings) -> Path:
    if settings.semantic_cache_dir:
        return Path(settings.semantic_cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "opforge" / "decontam-semantic"


# Plain os calls, not pathlib: a 6,000-candidate check reads and writes about 13,000 confirmation reports, and
# pathlib's objects and a mkdir per report took 3.4 s of the parent's time writing them (1.2 s so).


def _cache_get(root: Path, key: str) -> dict | None:
    got = _MEM.get((str(root), key))
    if got is not None:
        return got
    try:
        with open(os.path.join(root, key[:2], f"{key}.json")) as f:
            got = json.loads(f.read())
    except (OSError, ValueError):
        return None
    _MEM[(str(root), key)] = got
    return got


def _cache_put(root: Path, key: str, value: dict) -> None:
    _MEM[(str(root), key)] = value
    sub = os.path.join(root, key[:2])
    tmp = os.path.join(sub, f"{key}.tmp{os.getpid()}.{threading.get_ident()}")
    try:
        try:
            f = open(tmp, "w")
        except FileNotFoundError:  # its subdirectory's first entry: made then, not asked for before each write
            os.makedirs(sub, exist_ok=True)
            f = open(tmp, "w")
        with f:
            f.write(json.dumps(value))
        os.replace(tmp, os.path.join(sub, f"{key}.json"))
    except OSError:  # a read-only cache only costs time
        pass


def run_worker(source: str, payload: dict, timeout_s: float, memory_mb: int, inherit_fds: tuple[int, ...] = ()):
    """The worker program in the jail (one place, so that benchmarks can say what runs it)."""
    from pipeline.sandbox import run_sandboxed

    # torch's caches inside the jail's own work dir (the caller's cache dirs are not writable there)
    env = {"TORCHINDUCTOR_CACHE_DIR": "torch-cache/inductor", "TRITON_CACHE_DIR": "torch-cache/triton"}
    # The worker forks one child per task (each task's trace isolated from the others'); the jail contains them.
    return run_sandboxed(
        source,
        payload=payload,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        env=env,
        allow_fork=True,
        max_result_bytes=1 << 30,
        inherit_fds=inherit_fds,
    )


def _messages(res) -> list:
    got = getattr(res, "emitted", None)
    return got if isinstance(got, list) else ([res.result] if getattr(res, "result", None) is not None else [])


def _job_units(job: list) -> int:
    """Time limits a job gets (jailed.WORKER's _job_time): one, or one per pair of a candidate's confirmations."""
    return max(1, len(job[2])) if job and job[0] == "confirm_many" else 1


@dataclass
class _Run:
    """What one jailed worker did: its results by job index, the job it had taken and not finished (it died on
    it), whether it started, whether the jail refused its fork."""

    got: dict = field(default_factory=dict)
    taken: int | None = None
    started: bool = False
    nofork: bool = False
    res: object = None


def _one_worker(
    source: str,
    jobs: list,
    settings: DecontamSettings,
    per_job_s: float,
    queue: int | None,
    groups: list[list[int]] | None = None,
    codes: list[str] | None = None,
) -> _Run:
    """One jailed process over `jobs` in order, or over those it takes from `queue` (shared with other workers):
    one job per record, or, with `groups`, one group of job indexes per record (run in its order). `codes`: the
    problems' codes the confirmation jobs name by index (_shared_codes)."""
    payload = {
        "jobs": jobs,
        "per_job_s": per_job_s,
        "max_numel": settings.confirm_max_numel,
        "tolerance": [settings.confirm_atol, settings.confirm_rtol],
        "queue": queue is not None,
        **({"groups": groups} if groups is not None else {}),
        **({"codes": codes} if codes else {}),
    }
    limit = 60 + per_job_s * sum(map(_job_units, jobs))
    res = _RUN[0](source, payload, limit, settings.semantic_memory_mb, () if queue is None else (queue,))
    run = _Run(res=res)
    run.nofork = any(str(v.get("what", "")).startswith("os.fork") for v in (getattr(res, "violations", None) or []))
    for m in _messages(res):
        if not isinstance(m, dict):
            continue
        run.started = run.started or bool(m.get("start"))
        if isinstance(m.get("done"), int) and isinstance(m.get("cpu_s"), (int, float)):
            with _LOCK:
                STATS["worker_cpu_s"] += float(m["cpu_s"])
                STATS["worker_starts"] += 1
        if m.get("nofork"):
            run.nofork = True
        i = m.get("c")
        if type(i) is int and 0 <= i < len(jobs):
            run.taken = i
        # one result per job (a child cannot reach the channel: these are the worker's)
        i = m.get("i")
        if type(i) is int and 0 <= i < len(jobs) and i not in run.got:
            run.got[i] = m["r"] if isinstance(m.get("r"), dict) else {"ok": False, "reason": "bad_result"}
            run.taken = None if run.taken == i else run.taken
    if run.nofork:
        run.taken = None  # not this job's fault: it runs again, one jailed process for it alone
    return run


_QUEUE_MAX = 16_384  # jobs per shared queue: their 4-byte records fit a pipe's 64 KB, written at once before any read


def _round(jobs: list, settings: DecontamSettings, per_job_s: float, groups: list[list[int]] | None) -> list[_Run]:
    """The jobs over `settings.workers` jailed workers at a time (threads wait on them). Two or more share one queue
    of job indexes: whoever is free takes the next, so one worker's long real runs do not hold back the jobs dealt
    to it (round-robin shares ended 4.3 and 8.2 s apart in a 6,000-candidate check). With `groups` (consecutive
    runs of job indexes, in order), the queue deals whole groups: a group's jobs run in one worker, one after the
    other."""
    from pipeline.decontam.jailed import WORKER

    records = len(groups) if groups is not None else len(jobs)  # what the queue deals: groups, else jobs
    w = max(1, min(settings.workers, records))
    jobs, codes = _shared_codes(jobs)
    if w == 1:
        return [_one_worker(WORKER, jobs, settings, per_job_s, None, codes=codes)]
    r, wq = os.pipe()
    try:
        os.write(wq, b"".join(i.to_bytes(4, "little") for i in range(records)))
    finally:
        os.close(wq)  # drained, the queue reads empty: the workers end
    try:
        with ThreadPoolExecutor(w) as ex:
            return list(ex.map(lambda _: _one_worker(WORKER, jobs, settings, per_job_s, r, groups, codes), range(w)))
    finally:
        os.close(r)


def _shared_codes(jobs: list) -> tuple[list, list[str]]:
    """Confirmation jobs with their problems' codes as indexes into one list of the distinct codes (the worker puts
    them back: jailed.WORKER): 12,949 pairs of a 6,000-candidate check name about 1,200 distinct codes, and each
    worker's payload held every pair's copy (33 MB of JSON written and read per worker)."""
    index: dict[str, int] = {}
    out = []
    for job in jobs:
        if job and job[0] == "confirm_many":
            job = [job[0], job[1], [index.setdefault(r, len(index)) for r in job[2]], *job[3:]]
        out.append(job)
    return out, list(index)


def _size(job: list) -> int:
    """Elements a confirmation's candidate reported for its inputs and outputs (its trace's `sig`): the queue deals
    the largest first, and the small ones fill in around them."""
    sig = job[4] if len(job) > 4 and isinstance(job[4], dict) else {}
    n = 0
    for part in ("inputs", "outputs"):
        for item in sig.get(part) or []:
            try:
                n += int(np.prod([int(d) for d in item[0]], dtype=np.float64))
            except (TypeError, ValueError, IndexError, OverflowError):
                pass
    return n


def _order(jobs: list, affinity: list[str] | None) -> list[int]:
    """Job indexes in the order the workers take them: the largest first (the small ones fill in around them), or,
    with `affinity`, jobs of one key together (the group of the largest first), each group largest first."""
    order = sorted(range(len(jobs)), key=lambda i: -_size(jobs[i]))
    if affinity is None:
        return order
    first = {}
    for i in order:
        first.setdefault(affinity[i], len(first))
    return sorted(order, key=lambda i: first[affinity[i]])  # stable: each group keeps the size order


def _groups_of(part: list[int], affinity: list[str] | None, most: int) -> list[list[int]] | None:
    """Runs of `part` (positions) that share an affinity key, at most `most` jobs each (a key most jobs share would
    keep the other workers idle), or None without keys."""
    if affinity is None:
        return None
    out: list[list[int]] = []
    for n, i in enumerate(part):
        if out and affinity[part[out[-1][0]]] == affinity[i] and len(out[-1]) < most:
            out[-1].append(n)
        else:
            out.append([n])
    return out


def run_jobs(
    jobs: list, settings: DecontamSettings, per_job_s: float, affinity: list[str] | None = None
) -> list[dict]:
    """Run jobs in long-lived jailed processes (torch imported once, a fork per job); results in job order. A job
    that kills its process gets a `worker_died` row and the jobs nobody took run in new processes; a jail that
    forbids fork runs one jailed process per job. `affinity`: a key per job; jobs of one key run in one worker, one
    after the other (what the worker keeps from one job, another of the same key reads: confirm_pairs)."""
    from pipeline.decontam.jailed import SINGLE

    out: dict[int, dict] = {}
    order = _order(jobs, affinity)
    while len(out) < len(jobs):
        part = [i for i in order if i not in out][:_QUEUE_MAX]
        most = max(1, -(-len(part) // (4 * max(1, settings.workers))))  # a quarter of a worker's share
        runs = _round([jobs[i] for i in part], settings, per_job_s, _groups_of(part, affinity, most))
        before = len(out)
        for run in runs:
            out.update({part[k]: r for k, r in run.got.items()})
            if run.taken is not None:
                res = run.res
                out[part[run.taken]] = {
                    "ok": False,
                    "reason": "worker_died",
                    "error": f"{res.reason}: {res.error_message[-200:]}",
                }
        left = [i for i in part if i not in out]
        if any(run.nofork for run in runs):
            for i in left:
                one = _one_worker(SINGLE, [jobs[i]], settings, per_job_s, None)
                out[i] = one.got.get(0) or _jail_failed(one.res)
        elif left and (not any(run.started for run in runs) or len(out) == before):
            # the jail or the workers failed before any task ran: nothing is these jobs' fault
            out.update({i: _jail_failed(runs[0].res) for i in left})
    return [out[i] for i in range(len(jobs))]


def _jail_failed(res) -> dict:
    """The row of a job whose jailed process failed on its own account (not the job's): tried again next time."""
    return {"ok": False, "reason": f"jail_{res.reason or 'bad_result'}", "error": res.error_message[-300:]}


_RUN = [run_worker]  # benchmarks/bench_decontam.py --unjailed swaps it, and says so in its output
STATS = {"worker_cpu_s": 0.0, "worker_starts": 0}  # what the workers that finished reported (benchmarks read it)


def _view_of(rec: dict, cached: bool) -> SemView:
    if not rec.get("ok") or not (isinstance(rec.get("nodes"), list) or isinstance(rec.get("graph"), str)):
        return SemView(
            False,
            str(rec.get("reason") or "trace_error")[:40],
            trace_s=float(rec.get("wall_s") or 0),
            cached=cached,
            error=str(rec.get("error", ""))[:300],
        )
    try:
        # the fingerprint made where the trace was made (jailed.pack), else made now from the nodes
        fp = ready_fingerprint(rec) or fingerprint(*graph_of(rec))
        feats, summary = from_fingerprint(fp)
        n_outputs = int(fp["n_outputs"])
    except Exception as e:  # malformed report from a hostile trace: no semantic view for that task only
        return SemView(False, "bad_trace", cached=cached, error=f"{type(e).__name__}: {e}"[:300])
    if not n_outputs:
        return SemView(False, "no_tensor_output", cached=cached)
    sig = rec.get("sig")
    ok_sig = isinstance(sig, dict) and isinstance(sig.get("inputs"), list) and len(json.dumps(sig)) <= _MAX_SIG
    return SemView(
        True,
        "",
        feats,
        summary,
        float(rec.get("wall_s") or 0),
        cached,
        truncated=bool(rec.get("truncated")),
        sig=sig if ok_sig else None,
        record=rec,
    )


def semantic_views(
    codes: list[str], settings: DecontamSettings, carried: dict[str, str] | None = None
) -> list[SemView]:
    """The semantic view of each code: the trace validation carried for it (`carried`: code -> the validation
    table's `semantic_trace`, used when made for that code by this tracer and torch), else from the cache, else
    traced in the jail (and cached)."""
    from pipeline.decontam.jailed import carried as carried_trace

    root = cache_dir(settings)
    keys = [code_key(c) for c in codes]
    recs: dict[str, dict] = {}
    cached: set[str] = set()
    todo: dict[str, str] = {}
    for k, c in zip(keys, codes):
        got = carried_trace(carried.get(c), c) if carried else None
        if got is None:
            got = _cache_get(root, k)
        if got is not None and not _stale(got, settings.trace_timeout_s):
            recs[k] = got
            cached.add(k)
        elif k not in todo:
            todo[k] = c
    if todo:
        results = run_jobs([["trace", c] for c in todo.values()], settings, settings.trace_timeout_s)
        for k, r in zip(todo, results):
            if _transient(r):
                recs[k] = r  # the jail failed: not cached, tried again next time
                continue
            r = pack({**r, "limit_s": settings.trace_timeout_s})  # with its fingerprint, made once
            recs[k] = r
            _cache_put(root, k, r)
    return [_view_of(recs[k], k in cached) for k in keys]


def _transient(rep: dict) -> bool:
    return str(rep.get("reason") or "").startswith("jail_")


def _stale(rec: dict, limit_s: float) -> bool:
    """A cached timeout under a shorter time limit than today's is tried again (a longer limit may finish it)."""
    return rec.get("reason") == "timeout" and float(rec.get("limit_s") or 0) < limit_s


def tolerance_ok(rec: dict, atol: float, rtol: float) -> bool:
    """The parent's verdict on a confirmation report: same output shapes and every output within tolerance."""
    d, s = rec.get("max_abs_diff"), rec.get("ref_scale")
    if not rec.get("ok") or not isinstance(d, (int, float)) or not isinstance(s, (int, float)):
        return False
    if not rec.get("finite", False) or d != d:
        return False
    if rec.get("ref_shapes") != rec.get("cand_shapes"):
        return False
    # the absolute term shrinks with outputs under 1: two functions of tiny outputs are not one (the child's own
    # choices, which ties to try and which near misses to decide in float64, keep the plain rule: looser, never
    # costing a match)
    return float(d) <= atol * min(1.0, float(s)) + rtol * float(s) and float(s) > 0


def _confirm_key(cand: str, ref: str, full: bool, tol: tuple[float, float] = RETIE_DEFAULT) -> str:
    # The tolerances decide which runs try other ties (jailed.confirm): a report made under others is not reused.
    extra = "" if tuple(tol) == RETIE_DEFAULT else f"tol{tol[0]!r},{tol[1]!r}"
    return code_key(f"confirm{CONFIRM_VERSION}{'' if full else 'match'}{extra}\0" + cand + "\0" + ref)


def _affinity(sig: dict | None) -> str:
    """Which candidates' confirmations go to one worker together: those built at the same constructor arguments
    (the problems rebuilt at them are the same code for each: the worker's screen builds, probes and dry-runs each
    once, not once per worker, and keeps them while it needs them: the screens of a 6,000-candidate check's 12,949
    pairs replayed in-process took 12.8 s of CPU so against 21.7 s dealt one by one to two workers), else those with
    the same inputs (the problems' dry runs on them).
    Where a job runs decides no report: the screen's answers depend on the codes and the signature alone."""
    if not isinstance(sig, dict):
        return ""
    return json.dumps(["init", sig["init"]] if sig.get("init") is not None else ["inputs", sig.get("inputs")])


def confirm_pairs(
    pairs: list[tuple[str, str]],
    settings: DecontamSettings,
    full: list[bool] | None = None,
    sigs: dict[str, dict] | None = None,
    rebuilt: list[bool] | None = None,
) -> list[dict]:
    """Functional confirmation of (candidate code, reference code) pairs, each run once (reports cached like the
    traces, by both codes); each report gains `equivalent` (the parent's verdict at the current tolerances).
    `full[i]` false: only whether pair i's outputs match matters (it cannot be a near_variant): the jailed run may
    stop at outputs whose shapes differ on meta tensors (`output_shapes_differ`); a full report serves it too.
    `sigs`: candidate code -> its trace's signature: the worker screens its pairs first (jailed.screen: `screened`
    reports, decided without the candidate's code) and forks a child for the candidate only when a pair is left.
    `rebuilt[i]`: pair i's problem was rebuilt at the candidate's constructor arguments (rebuilt_code): match-only,
    and no match unless it has the candidate's parameter count (jailed.SAME_PARAMS)."""
    root = cache_dir(settings)
    tol = (settings.confirm_atol, settings.confirm_rtol)
    # the worker's mode per pair: 0 the whole run, 1 match-only, jailed.SAME_PARAMS a rebuilt problem's match
    modes = [
        2 if b else (0 if f else 1)
        for f, b in zip(full if full is not None else [True] * len(pairs), rebuilt or [False] * len(pairs))
    ]
    keys = [_confirm_key(c, r, m == 0, tol) for (c, r), m in zip(pairs, modes)]
    reps: dict[str, dict] = {}
    todo: dict[str, tuple[str, str, int]] = {}
    for k, (c, r), m in zip(keys, pairs, modes):
        got = _cache_get(root, k)
        if got is None and m == 1:
            got = _cache_get(root, _confirm_key(c, r, True, tol))
        if got is not None and not _stale(got, settings.confirm_timeout_s):
            reps[k] = got
        else:
            todo.setdefault(k, (c, r, m))
    # one job per candidate: its pairs in one forked child
    groups: dict[str, list[str]] = {}
    for k, (c, _, _) in todo.items():
        groups.setdefault(c, []).append(k)
    sigs = sigs or {}
    jobs = [
        ["confirm_many", c, [todo[k][1] for k in ks], [todo[k][2] for k in ks], sigs.get(c)]
        for c, ks in groups.items()
    ]
    affinity = [_affinity(sigs.get(c)) for c in groups]
    for ks, res in zip(groups.values(), run_jobs(jobs, settings, settings.confirm_timeout_s, affinity)):
        got = res.get("reports") if res.get("ok") else None
        for n, k in enumerate(ks):
            if got is None:  # the child as a whole failed (timeout, worker_died, jail_*): each of its pairs so
                rep = {key: res[key] for key in ("ok", "reason", "error") if key in res}
            elif isinstance(got, list) and n < len(got) and isinstance(got[n], dict):
                rep = got[n]
            else:
                rep = {"ok": False, "reason": "bad_result"}
            reps[k] = rep
            if not _transient(rep):
                _cache_put(root, k, {**rep, "limit_s": settings.confirm_timeout_s})
    out = []
    for k in keys:
        rep = dict(reps[k])
        rep["equivalent"] = tolerance_ok(rep, settings.confirm_atol, settings.confirm_rtol)
        out.append(rep)
    return out


# The view that fired, per reason code of the contamination table.
VIEW_OF_REASON = {
    "exact_md5": "md5",
    "canonical_and_ops": "canon+ops",
    "same_ops_signature": "ops",
    "raw_near_copy": "raw",
    "functional_match": "functional",
    "semantic_structure": "semantic",
    "near_variant": "semantic",
}
SEM_COLUMNS = ("view", "semantic_score", "semantic_ref", "semantic_status", "near_variant", "evidence")


class SemanticReference:
    """The reference problems' semantic views (traced once, cached by code) with exact and MinHash-LSH lookup."""

    def __init__(self, codes: list[str], settings: DecontamSettings) -> None:
        from pipeline.decontam.index import _to_matrix

        self.settings = settings
        self.views = semantic_views(codes, settings)
        sets = [v.features for v in self.views]
        self.matrix = _to_matrix(sets)
        self.matrix.mat_t = self.matrix.mat.T.tocsr()
        self.by_inputs: dict[str, list[int]] = {}
        self.by_rowless: dict[str, list[int]] = {}
        self.by_ranks: dict[str, list[int]] = {}
        self.by_resize: dict[str, list[int]] = {}
        self.by_probe: dict[str, list[int]] = {}
        self.by_io: dict[str, list[int]] = {}  # the inputs' and outputs' ranks and dtypes (_realigned)
        self.outputs_keys = [_outputs_key(v) for v in self.views]  # read per candidate by _shortlist
        self.outputs_rowless = [_outputs_key(v, rowless=True) for v in self.views]
        for j, v in enumerate(self.views):
            if v.ok:
                self.by_inputs.setdefault(v.input_key, []).append(j)
                self.by_rowless.setdefault(v.rowless_key, []).append(j)
                if v.ranks_key:
                    self.by_ranks.setdefault(v.ranks_key, []).append(j)
                    self.by_io.setdefault(v.io_key, []).append(j)
                if v.resize_key:
                    self.by_resize.setdefault(v.resize_key, []).append(j)
                if v.probe_key:
                    self.by_probe.setdefault(v.probe_key, []).append(j)
        self.lsh = None
        if len(codes) > settings.exact_max_refs:  # large references: LSH candidates, verified exactly
            from datasketch import MinHashLSH

            from pipeline.decontam.signatures import as_minhashes, signatures

            self.lsh = MinHashLSH(threshold=settings.lsh_threshold, num_perm=settings.num_perm)
            for j, m in enumerate(as_minhashes(signatures(sets, settings), settings)):
                if len(sets[j]):
                    self.lsh.insert(j, m)

    def similarities(self, feats: list[np.ndarray]) -> np.ndarray:
        """Exact Jaccard of each feature set against every reference (LSH misses are 0 for large references)."""
        from pipeline.decontam.index import _to_matrix

        cand = _to_matrix(feats, self.matrix.vocab)
        inter = (cand.mat @ self.matrix.mat_t).toarray()
        union = cand.sizes[:, None] + self.matrix.sizes[None, :] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            jac = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
        if self.lsh is not None:
            from pipeline.decontam.signatures import as_minhashes, signatures

            mask = np.zeros_like(jac, dtype=bool)
            for i, m in enumerate(as_minhashes(signatures(feats, self.settings), self.settings)):
                mask[i, list(self.lsh.query(m))] = True
            jac = np.where(mask, jac, 0.0)
        return jac


def _shortlist(sims: np.ndarray, view: SemView, ref: SemanticReference, settings: DecontamSettings) -> list[int]:
    """Reference problems worth running beside the candidate: the semantically nearest ones above the threshold,
    then those with the same input shapes (a paraphrase keeps get_inputs) and some similarity (same_inputs_floor),
    nearest first, at most top_k + 2 so far; then every problem with the same input and output shapes and dtypes,
    whatever its similarity, nearest first, at most same_shapes_max (rewriting one op of a small graph, ReLU as
    (x + |x|) / 2, leaves a Jaccard of 0.1-0.3: only running both can tell, and only such a pair can match); then
    those with its ranks and parameter sizes (same_ranks_max), weightless ones with its probe (probe_max), and those
    built at its very constructor arguments (same_init_max)."""
    order = np.argsort(-sims, kind="stable")
    picked = [int(j) for j in order[: settings.semantic_top_k] if sims[j] >= settings.semantic_threshold]
    same = sorted(ref.by_inputs.get(view.input_key, []), key=lambda j: -sims[j])
    exact = set(same)
    # then those whose inputs differ in their first dims alone (a paraphrase that changed the batch size)
    same += sorted((j for j in ref.by_rowless.get(view.rowless_key, []) if j not in exact), key=lambda j: -sims[j])
    for j in (j for j in same if sims[j] >= settings.same_inputs_floor):
        if len(picked) >= settings.semantic_top_k + 2:
            break
        if j not in picked:
            picked.append(j)
    outs, rowless = _outputs_key(view), _outputs_key(view, rowless=True)
    if outs:
        shaped = [j for j in same if j not in picked and j in exact and ref.outputs_keys[j] == outs]
        # of those whose shapes differ in their first dims alone, the nearest few (each is a confirmation run)
        shaped += [j for j in same if j not in picked and j not in exact and ref.outputs_rowless[j] == rowless][
            : settings.semantic_top_k
        ]
        picked += shaped[: settings.same_shapes_max]
    # then, sizes aside, those with the same ranks and parameter sizes, nearest first: a rewrite that also resized
    # its inputs (a convolution or a pool through unfold at another length) shares little of the graph and none of
    # the shapes; the problem's model runs on the candidate's inputs (confirm)
    if settings.same_ranks_max and view.ranks_key:
        ranked = sorted((j for j in ref.by_ranks.get(view.ranks_key, []) if j not in picked), key=lambda j: -sims[j])
        picked += ranked[: settings.same_ranks_max]
    # and weightless problems that give its values on the probe's small inputs, nearest first
    if settings.probe_max:
        probed = sorted((j for j in _probed(view, ref) if j not in picked), key=lambda j: -sims[j])
        picked += probed[: settings.probe_max]
    # and problems built at its very constructor arguments, with its ranks (KernelBench's own values: a copy run on
    # smaller inputs, its weights reorganized)
    if settings.same_init_max and view.resize_key:
        same = [
            j for j in ref.by_resize.get(view.resize_key, []) if j not in picked and ref.views[j].init == view.init
        ]
        picked += sorted(same, key=lambda j: -sims[j])[: settings.same_init_max]
    return picked


def _resized(sims: np.ndarray, view: SemView, ref: SemanticReference, settings: DecontamSettings) -> list[int]:
    """Problems to rebuild at the candidate's constructor arguments (rebuilt_code) and run beside it: those whose
    arguments are of the same kinds with other values and whose inputs and outputs have its ranks and dtypes,
    nearest first, at most rebuilt_max (a copy resized through its constructor keeps its problem's arguments: the
    KernelBench format passes them; which ones match shows only on meta, in the worker's screen)."""
    key = view.resize_key if settings.rebuilt_max else ""
    if not key:
        return []
    js = sorted((j for j in ref.by_resize.get(key, []) if ref.views[j].init != view.init), key=lambda j: -sims[j])
    if not isinstance(view.sig.get("canon"), dict):
        # unscreened, each would run (jailed._canon_screen: no canonical probe, e.g. a network whose pools need its
        # full-size images): only the problem whose whole graph is the candidate's, sizes aside
        return [j for j in js if sims[j] >= settings.structure_threshold][:1]
    return js[: settings.rebuilt_max]


def _realigned(sims: np.ndarray, view: SemView, ref: SemanticReference, settings: DecontamSettings) -> list:
    """(problem, arguments) pairs to rebuild and run beside the candidate where its constructor takes one or two
    arguments fewer or more than the problem's (an argument fixed as a constant of the task, one added with a
    default): the problem's arguments with the candidate's values where their kinds align (_aligned), its own
    elsewhere; problems with the candidate's input and output ranks and dtypes and semantically near it
    (realign_min_similarity), nearest first, at most realign_max (each alignment a pair)."""
    if not settings.realign_max or view.init is None or not view.io_key or not view.init[1]:
        return []
    if not isinstance(view.sig.get("canon"), dict):  # unscreened, each would run (jailed._canon_screen)
        return []
    js = [
        j
        for j in ref.by_io.get(view.io_key, [])
        if sims[j] >= settings.realign_min_similarity and ref.views[j].init is not None and ref.views[j].init[1]
    ]
    out: list = []
    for j in sorted(js, key=lambda j: -sims[j]):
        got = _aligned(view.init[1], ref.views[j].init[1])
        if got:
            out += [(j, ["l", args]) for args in got]
        if len({j for j, _ in out}) >= settings.realign_max:
            break
    return out


def _aligned(cand: list, prob: list, most: int = 2, ways: int = 2) -> list[list]:
    """The problem's arguments with the candidate's values in their places: the shorter list (by one or two) laid
    into the longer in order, each argument onto one of its kind; where the candidate's is shorter, the problem's
    own values stay in the places left over, where it is longer, its extra arguments are dropped. [] where the
    lengths are equal or further apart, where no laying fits, or where more than `ways` do (each is a pair run)."""
    n, m = len(cand), len(prob)
    if n == m or abs(n - m) > most:
        return []
    short, long = (cand, prob) if n < m else (prob, cand)
    ks, kl = [json.dumps(_kinds(x)) for x in short], [json.dumps(_kinds(x)) for x in long]
    found: list[list[int]] = []

    def lay(i: int, start: int, at: list[int]) -> None:
        if len(found) > ways:
            return
        if i == len(ks):
            found.append(list(at))
            return
        for p in range(start, len(kl) - (len(ks) - i) + 1):
            if kl[p] == ks[i]:
                lay(i + 1, p + 1, at + [p])

    lay(0, 0, [])
    if not found or len(found) > ways:
        return []
    out = []
    for at in found:
        if n < m:
            args = list(prob)
            for i, p in enumerate(at):
                args[p] = cand[i]
        else:
            args = [cand[p] for p in at]
        if args != prob:
            out.append(args)
    return out


def _outputs_key(view: SemView, rowless: bool = False) -> str:
    """The output shapes and dtypes the trace reported ("" where it reported none); `rowless`: each first dim left
    out, and for a truncated view (no outputs: a forward too long to trace whole) those of its forward on the
    inputs' first rows (`sliced`: an RNN's sequence cut to 2 steps gives its outputs but for their first dims)."""
    outs = view.sig.get("outputs") if isinstance(view.sig, dict) else None
    if outs is None and rowless and view.truncated and isinstance(view.sig, dict):
        sliced = view.sig.get("sliced")
        outs = next((o for o in sliced[:2] if o), None) if isinstance(sliced, list) else None
    if not (isinstance(outs, list) and outs):
        return ""
    if rowless:
        outs = [
            [o[0][1:], o[1]] if isinstance(o, list) and len(o) == 2 and isinstance(o[0], list) else o for o in outs
        ]
    return json.dumps(outs)


def semantic_pass(
    codes: list[str],
    cols: dict[str, list],
    ref_codes: list[str],
    ref_ids: list[str],
    ref: SemanticReference,
    settings: DecontamSettings,
    carried: dict[str, str] | None = None,
) -> dict[str, list]:
    """The semantic columns of each row, and the decision updated in `cols` for rows the other views let through:
    functional_match (outputs equal to a reference problem's) or near_variant (semantically near, outputs differ,
    at most near_variant_changes ops changed; removed or kept per near_variant_policy). `carried`: the traces
    validation made (code -> JSON), used instead of tracing again."""
    n = len(codes)
    out: dict[str, list] = {
        "view": [VIEW_OF_REASON.get(r, "") if c else "" for r, c in zip(cols["reason"], cols["contaminated"])],
        "semantic_score": [0.0] * n,
        "semantic_ref": [""] * n,
        "semantic_status": ["not_run"] * n,
        "near_variant": [False] * n,
        "evidence": [""] * n,
    }
    todo = [i for i in range(n) if not cols["contaminated"][i] and cols["parse_ok"][i]]
    if not settings.semantic:
        return out
    pos = {rid: j for j, rid in enumerate(ref_ids)}
    # copies of a problem without a full view of its own (a level-4 model that times out, a truncated RNN) cannot
    # be shown to be near-variants of it: not traced
    copies = [
        i
        for i in range(n)
        if cols["contaminated"][i]
        and cols["reason"][i] in ("canonical_and_ops", "same_ops_signature")
        and cols["nearest_ref"][i] in pos
        and ref.views[pos[cols["nearest_ref"][i]]].ok
        and not ref.views[pos[cols["nearest_ref"][i]]].truncated
    ]
    # every trace of this pass in one set of workers (one torch start-up per worker), then every confirmation
    views_all = semantic_views([codes[i] for i in copies + todo], settings, carried)
    recheck = _recheck_candidates(copies, views_all[: len(copies)], cols, out, ref_ids, pos, ref, settings)
    views = views_all[len(copies) :]
    ok = [k for k, v in enumerate(views) if v.ok]
    for k, v in enumerate(views):
        out["semantic_status"][todo[k]] = v.status
    sims = ref.similarities([views[k].features for k in ok]) if ok else np.zeros((0, len(ref_ids)))
    jobs, owners = [], []
    for row, k in enumerate(ok):
        i = todo[k]
        best = int(np.argmax(sims[row])) if sims.shape[1] else -1
        if best >= 0:
            out["semantic_score"][i] = float(sims[row, best])
            out["semantic_ref"][i] = ref_ids[best]
        for j in _shortlist(sims[row], views[k], ref, settings):
            jobs.append((codes[i], rebuilt_code(ref_codes[j], None, _inputs_of(views[k]))))
            owners.append((row, k, j, None))
        for j in _resized(sims[row], views[k], ref, settings):
            jobs.append((codes[i], rebuilt_code(ref_codes[j], views[k].init, _inputs_of(views[k]))))
            owners.append((row, k, j, python_literal(views[k].init)))
        for j, args in _realigned(sims[row], views[k], ref, settings):
            jobs.append((codes[i], rebuilt_code(ref_codes[j], args, _inputs_of(views[k]))))
            owners.append((row, k, j, python_literal(args)))
    re_jobs = [(codes[i], rebuilt_code(ref_codes[j], None, _inputs_of(v))) for i, v, j, _, _ in recheck]
    # a re-checked copy becomes a near_variant only on outputs of equal shapes: its run can stop where they differ
    full = [False] * len(re_jobs) + [
        init is None and _could_be_near_variant(views[k], j, sims[row, j], ref, settings) for row, k, j, init in owners
    ]
    rebuilt = [False] * len(re_jobs) + [init is not None for *_, init in owners]
    sigs = {codes[i]: v.sig for i, v in zip(copies + todo, views_all) if v.ok and v.sig is not None}
    reports = confirm_pairs(re_jobs + jobs, settings, full, sigs, rebuilt) if re_jobs or jobs else []
    _recheck_apply(recheck, reports[: len(re_jobs)], cols, out, ref_ids, ref, settings)
    reports = reports[len(re_jobs) :]
    per_row: dict[int, list] = {}
    for (row, _k, j, init), rep in zip(owners, reports):
        per_row.setdefault(row, []).append((j, rep, init))
    for row, k in enumerate(ok):
        i = todo[k]
        # a problem rebuilt at the candidate's arguments can only match: near_variant and structure read the rest
        tried_all = per_row.get(row, [])
        tried = [(j, rep) for j, rep, init in tried_all if init is None]
        match = next(((j, rep, init) for j, rep, init in tried_all if rep.get("equivalent")), None)
        summary = [
            {
                "ref": ref_ids[j],
                "semantic": round(float(sims[row, j]), 4),
                "equivalent": rep["equivalent"],
                "max_abs_diff": rep.get("max_abs_diff"),
                "status": rep.get("reason", "") or "ran",
                **({"rebuilt_at": init} if init is not None else {}),
            }
            for j, rep, init in tried_all
        ]
        if match is not None:
            j, rep, init = match
            _flag(cols, out, i, "functional_match", ref_ids[j], float(sims[row, j]))
            out["evidence"][i] = json.dumps(
                {
                    "kind": "functional",
                    "ref": ref_ids[j],
                    "rebuilt_at": init,  # the problem's constructor arguments replaced by the candidate's (or None)
                    # and its module-level sizes its model reads, at the candidate's input sizes (rebuilt_code)
                    "rebuilt_sizes": dict(_sizes_at(ref_codes[j], _inputs_of(views[k]))),
                    "max_abs_diff": rep.get("max_abs_diff"),
                    "ref_scale": rep.get("ref_scale"),
                    "mapping": rep.get("mapping", [])[:40],
                    "same_inputs": rep.get("same_inputs"),
                    "inputs": rep.get("inputs"),  # which of the candidate's inputs ran: "all" (2 rows) ... "cut"
                    "shifted_params": rep.get("shifted_params"),  # the run again with the weights moved
                    "kept": rep.get("kept") or [],  # the problem's parameters made constant, at their values
                    "precision": rep.get("precision") or "float32",  # float64 decided a near miss (jailed._in_double)
                    "tolerance": [settings.confirm_atol, settings.confirm_rtol],
                    "graph_candidate": graph_text(views[k]),
                    "graph_reference": graph_text(ref.views[j]),
                    "tried": summary,
                }
            )
            continue
        # the same graph as a problem's, which no run could compare: the computation rewritten at other sizes (the
        # problem's model, built at its own, does not take the candidate's inputs)
        same = _structure_match(views[k], tried, sims[row], ref, settings)
        if same is not None and same[2] is None:
            j, rep, _ = same
            _flag(cols, out, i, "semantic_structure", ref_ids[j], float(sims[row, j]))
            out["evidence"][i] = json.dumps(
                {
                    "kind": "structure",
                    "ref": ref_ids[j],
                    "semantic": round(float(sims[row, j]), 4),
                    "confirmation": rep.get("reason") or "ran",
                    "error": str(rep.get("error", ""))[:200],
                    "shapes": [rep.get("ref_shapes"), rep.get("cand_shapes")],
                    "graph_candidate": graph_text(views[k]),
                    "graph_reference": graph_text(ref.views[j]),
                    "tried": summary,
                }
            )
            continue
        # near_variant: the nearest problem, among those run beside it (outputs shown to differ on the same
        # inputs) and semantically near, from which only one or two ops changed in place
        best, diff = (same[0], same[2]) if same is not None else (-1, None)  # the same ops over other axes
        for j, rep in sorted(tried, key=lambda t: -sims[row, t[0]]) if diff is None else ():
            if not (rep.get("ok") and rep.get("cand_shapes")):
                continue
            d = _near_variant_difference(views[k], j, sims[row, j], ref, settings)
            if d is not None:
                best, diff = j, d
                break
        if best < 0:
            if summary:
                out["evidence"][i] = json.dumps({"kind": "checked", "tried": summary})
            continue
        out["near_variant"][i] = True
        out["view"][i] = "semantic"
        out["semantic_ref"][i], out["semantic_score"][i] = ref_ids[best], float(sims[row, best])
        if settings.near_variant_policy == "remove":
            cols["contaminated"][i] = True
        cols["reason"][i], cols["nearest_ref"][i] = "near_variant", ref_ids[best]
        out["evidence"][i] = json.dumps(
            {
                "kind": "near_variant",
                "ref": ref_ids[best],
                "difference": diff,
                "policy": settings.near_variant_policy,
                "tried": summary,
                "graph_candidate": graph_text(views[k]),
                "graph_reference": graph_text(ref.views[best]),
            }
        )
    return out


def _flag(cols: dict[str, list], out: dict[str, list], i: int, reason: str, ref_id: str, sim: float) -> None:
    """Row i decided contaminated for `reason` against problem `ref_id` (semantic similarity `sim`)."""
    cols["contaminated"][i], cols["reason"][i], cols["nearest_ref"][i] = True, reason, ref_id
    cols["score"][i] = max(cols["score"][i], sim)
    out["view"][i] = VIEW_OF_REASON[reason]
    out["semantic_ref"][i], out["semantic_score"][i] = ref_id, sim


def _structure_match(
    view: SemView, tried: list, sims: np.ndarray, ref: SemanticReference, settings: DecontamSettings
) -> tuple[int, dict, dict | None] | None:
    """(problem, its confirmation report, None) when the candidate's whole graph is a problem's whole graph
    (semantic >= structure_threshold: the same ops, operands and constants, sizes aside), over the same axes, and
    the problem's model could not take the candidate's inputs (no run compared them), for problems of at least
    structure_min_ops primitive ops; (problem, report,
    difference) when only the axes its reductions run over differ (a layer norm against a batch norm: a
    near_variant, as softmax over another axis is); else None."""
    if settings.structure_threshold > 1.0 or view.truncated:
        return None
    dims = _reduced_dims(view.summary)
    other = None
    for j, rep in sorted(tried, key=lambda t: -sims[t[0]]):
        if sims[j] < settings.structure_threshold or not ref.views[j].ok or ref.views[j].truncated:
            continue
        if sum(ref.views[j].summary.detail.values()) < settings.structure_min_ops:
            continue  # a building block at other sizes: no evidence of a rewrite without a run
        if rep.get("ok") or rep.get("reason") == "output_shapes_differ":
            continue  # the problem took the candidate's inputs and gave other outputs: another function
        ref_dims = _reduced_dims(ref.views[j].summary)
        if dims == ref_dims:
            return j, rep, None
        if other is None:
            diff = {"level": "axes", "candidate_axes": sorted(dims), "reference_axes": sorted(ref_dims)}
            other = (j, rep, {**diff, "n_changes": len(dims ^ ref_dims), "substitution": True})
    return other


# Ops whose first argument names the axes they reduce or run along (in the decomposed graph's labels)
_REDUCING = {
    "sum", "mean", "var", "var_mean", "std", "std_mean", "amax", "amin", "max", "min", "prod", "logsumexp",
    "_softmax", "_log_softmax", "softmax", "log_softmax", "argmax", "argmin", "cumsum", "cumprod", "norm",
    "linalg_vector_norm", "any", "all",
}  # fmt: skip
_DIMS = re.compile(r"^\[(\[[-\d,\s]*\]|-?\d+)")


def _reduced_dims(summary) -> set[str]:
    """The axes the graph's reductions run over, as written (`mean[[1],True]` -> "[1]"): the semantic view keeps no
    sizes, and axes are what tells a layer norm from a batch norm when no run can compare them."""
    out = set()
    for label in getattr(summary, "detail", None) or ():
        op = op_of(label)
        if op in _REDUCING:
            m = _DIMS.match(label[len(op) :])
            out.add(_axes(m.group(1)) if m else "?")
    return out


def _axes(text: str) -> str:
    """Axes as a label: a list of them in order (`[4,3,2]` is `[2,3,4]`, and a single `1` is `[1]`: the same
    reduction written otherwise)."""
    return "[" + ",".join(str(d) for d in sorted(int(d) for d in re.findall(r"-?\d+", text))) + "]"


def _near_variant_difference(
    view: SemView, j: int, sim: float, ref: SemanticReference, settings: DecontamSettings
) -> dict | None:
    """The difference from problem j when the graphs allow a near_variant of it (outputs shown to differ then
    decide), else None: semantically near, both views whole (a graph's first ops cannot show what changed), 1 to
    near_variant_changes ops changed in place, or the same graph and called ops (tensors the mapping could not tie:
    the problem itself, at the least a near-variant of it)."""
    from pipeline.decontam.graphfp import difference, is_near_variant

    if sim < settings.near_variant_threshold or not ref.views[j].ok or view.truncated or ref.views[j].truncated:
        return None
    d = difference(view.summary, ref.views[j].summary)
    if is_near_variant(d, settings.near_variant_changes, settings.near_variant_min_kept) or (
        sim >= 1.0 and not d["n_changes"]
    ):
        return d
    return None


def _could_be_near_variant(view: SemView, j: int, sim: float, ref: SemanticReference, settings) -> bool:
    """Whether the run beside problem j can make the row a near_variant (then it must run to its end)."""
    return _near_variant_difference(view, j, float(sim), ref, settings) is not None


def _recheck_candidates(
    rows: list[int],
    views: list[SemView],
    cols: dict[str, list],
    out: dict[str, list],
    ref_ids: list[str],
    pos: dict[str, int],
    ref: SemanticReference,
    settings: DecontamSettings,
) -> list[tuple]:
    """Rows the canonical/ops views flagged that could be near-variants of their nearest problem (softmax over
    another axis reads like a copy to the token views): semantically near it with 1..near_variant_changes ops
    changed in place. A graph and ops equal to the problem's are its copy; one far from it stays the copy the token
    views found. Returns (row, view, problem, similarity, difference) to run beside the problem."""
    from pipeline.decontam.graphfp import difference, is_near_variant

    cand = []
    ok = [k for k, v in enumerate(views) if v.ok]
    sims = ref.similarities([views[k].features for k in ok]) if ok else None  # one product for all the rows
    row_of = {k: r for r, k in enumerate(ok)}
    for k, (i, v) in enumerate(zip(rows, views)):
        j = pos[cols["nearest_ref"][i]]
        out["semantic_status"][i] = v.status
        if not (v.ok and ref.views[j].ok) or v.truncated or ref.views[j].truncated:
            continue
        sim = float(sims[row_of[k], j])
        out["semantic_score"][i], out["semantic_ref"][i] = sim, ref_ids[j]
        if sim < settings.near_variant_threshold:
            continue
        diff = difference(v.summary, ref.views[j].summary)
        if is_near_variant(diff, settings.near_variant_changes, settings.near_variant_min_kept):
            cand.append((i, v, j, sim, diff))
    return cand


def _recheck_apply(
    cand: list[tuple],
    reps: list[dict],
    cols: dict[str, list],
    out: dict[str, list],
    ref_ids: list[str],
    ref: SemanticReference,
    settings: DecontamSettings,
) -> None:
    """A re-checked copy shown to compute another function than the problem's is a near_variant (removed or kept per
    near_variant_policy): its outputs differ from the problem's on the same inputs; or, where no values could be
    compared (outputs of other shapes, or the problem cannot take its inputs: the copy resized) and only arguments
    of the same ops changed, the axes its reductions run over differ (a sum over another axis), as rule 6 reads a
    graph no run can compare. Equal outputs, or a run that failed otherwise, keep the copy's reason."""
    for (i, v, j, sim, diff), rep in zip(cand, reps):
        status = _recheck_differs(rep, diff, v, ref.views[j])
        if status is None:
            continue
        out["near_variant"][i], out["view"][i] = True, "semantic"
        cols["reason"][i] = "near_variant"
        cols["contaminated"][i] = settings.near_variant_policy == "remove"
        out["evidence"][i] = json.dumps(
            {
                "kind": "near_variant",
                "ref": ref_ids[j],
                "difference": diff,
                "policy": settings.near_variant_policy,
                "flagged_first_by": "canon/ops",
                "tried": [
                    {
                        "ref": ref_ids[j],
                        "semantic": round(sim, 4),
                        "equivalent": False,
                        "max_abs_diff": rep.get("max_abs_diff"),
                        "status": status,
                        "shapes": [rep.get("ref_shapes"), rep.get("cand_shapes")],
                        "error": str(rep.get("error", ""))[:200],
                    }
                ],
                "graph_candidate": graph_text(v),
                "graph_reference": graph_text(ref.views[j]),
            }
        )


def _recheck_differs(rep: dict, diff: dict, view: SemView, ref_view: SemView) -> str | None:
    """How a re-checked copy's run showed another function than the problem's (its evidence status), or None."""
    if rep.get("ok"):
        return None if rep.get("max_abs_diff") is None or rep.get("equivalent") else "ran"
    # No values compared: only axes tell another function from the problem resized (a kernel size, a stride, a
    # pool's window changed the shapes as much as the axes do: scale, not meaning)
    ranks = [len(s) for s in view.summary.inputs], [len(s) for s in ref_view.summary.inputs]
    if not diff.get("same_ops") or ranks[0] != ranks[1]:
        return None
    if _reduced_dims(view.summary) == _reduced_dims(ref_view.summary):
        return None
    if rep.get("reason") == "output_shapes_differ":
        return "output_shapes_differ; other axes"
    if rep.get("reason") == "exception":
        return "not run: the problem does not take its inputs; other axes"
    return None


def graph_text(v: SemView, limit: int = 60) -> list[str]:
    from pipeline.decontam.graphfp import graph_lines

    return graph_lines(v.graph, limit) if v.ok and v.graph is not None else []
