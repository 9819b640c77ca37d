"""Code that runs inside the jail (pipeline.sandbox.run_sandboxed): tracing tasks into core ATen graphs, and running
a candidate beside a reference problem on the same inputs. Kept as source text: it is the jailed process's program.

One jailed process imports torch once (~3 s) and forks one child per job, so that a hostile task cannot alter
another task's trace (monkey-patched torch, altered globals): each child starts from the clean parent and dies
after its job. The child's answer travels over a pipe; the parent kills a child that runs past its time limit.
Everything a child reports is written by untrusted code: the stage computes verdicts from data it can check (the
graph's shape, a numeric difference) and a task can only misreport about itself.
The worker itself runs only trusted code: before forking a candidate's child it screens the candidate's pairs
(`screen`: the problems' dry runs on meta tensors of the shapes the candidate's trace reported), and forks only for
the pairs that screen cannot decide.
"""

import functools
import hashlib
import json

from pipeline.inlining import inline

# Bump when TRACER or graphfp.normalize change: cached and carried traces (validation's) become stale.
# 12: the canonical probe seeds the generator before the forward (a forward that draws its own states); a forward
# that makes tensors without a device traced on meta with them made there
# 11: `sliced` also on inputs cut to fit the confirmation (`sliced_at`), a truncated trace's outputs from
# shorter forwards (`sliced`, `shape_probe`), the canonical probe with every weight at one value (`constant`), and
# the probe of a model that keeps a few constants (_constants_probe); 10: the canonical probe also at the weights'
# own scales (`natural`, `scales`), and graphfp takes the tensors an op is given as a list (cat, stack) as its
# operands; 9: `sig["init"]`, the constructor's arguments as literals; 8: a forward that reads its data is traced on
# small real tensors; 7: `sig`, the inputs' and outputs' shapes and dtypes (confirmations screened)
TRACER_VERSION = "12"


@functools.cache  # read once: code_key is called per candidate
def torch_version() -> str:
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:  # pragma: no cover - torch is a dependency
        return "?"


def code_key(code: str) -> str:
    """The key of a code's trace: sha256(tracer version, torch version, code). The trace cache and the trace that
    validation carries (pipeline.validate) are both keyed by it: a trace is used only for the code, tracer and torch
    it was made with."""
    return hashlib.sha256(f"{TRACER_VERSION}\0{torch_version()}\0{code}".encode("utf-8", "surrogatepass")).hexdigest()


TRACE_FIELDS = ("ok", "reason", "nodes", "top", "wall_s", "cpu_s", "error", "limit_s", "n_nodes", "truncated", "sig")
GRAPH_FIELDS = ("nodes", "top")  # stored as one JSON text (`graph`): parsed only where the graph itself is shown
STORED_FIELDS = tuple(k for k in TRACE_FIELDS if k not in GRAPH_FIELDS) + ("graph", "fp")
# A failed trace is final (carried like a graph: the same tracer on the same code fails the same way on meta tensors),
# but for failures that depend on the process it ran in rather than on the code: a timeout (validation's budget is
# the time it had left), a jail's failure, and exceptions from memory, recursion depth or state the task's own
# checks left behind in validation's process (a custom op or a class registered twice).
TRANSIENT_ERRORS = ("MemoryError", "RecursionError", "OSError", "SystemError", "_TraceTimeout", "KeyboardInterrupt")
TRANSIENT_MARKERS = ("already", "out of memory", "registered")


def fp_key(graph_text: str) -> str:
    """The key a stored fingerprint is read back by: sha256(graphfp's version, the graph text it was made of)."""
    from pipeline.decontam.graphfp import FP_VERSION

    return hashlib.sha256(f"{FP_VERSION}\0{graph_text}".encode("utf-8", "surrogatepass")).hexdigest()


def pack(rec: dict) -> dict:
    """A trace report as it is stored (decontamination's trace cache, validation's `semantic_trace` column): its
    fields, the graph (nodes, top) as one JSON text (`graph`: a reader that needs only the fingerprint does not
    parse it) and the fingerprint made of it here (graphfp.fingerprint, keyed by fp_key of that text). Only the
    report's fields are read (its nodes, or the graph text of a record packed before): an `fp` the (untrusted)
    report brings itself is dropped, so every stored fingerprint was made by this function from the nodes stored
    beside it."""
    out = {k: rec[k] for k in TRACE_FIELDS if k in rec and k not in GRAPH_FIELDS}
    try:
        src = graph_of(rec)
    except (ValueError, RecursionError):
        src = None
    if src is not None:
        from pipeline.decontam.graphfp import fingerprint

        text = json.dumps({"nodes": src[0], "top": src[1]})
        out["graph"] = text
        try:
            out["fp"] = {"of": fp_key(text), **fingerprint(*src)}
        except Exception:  # a malformed graph: its reader normalizes it and fails the same way (bad_trace)
            pass
    return out


def graph_of(rec: dict) -> tuple[list, list | None] | None:
    """The traced nodes and called ops of a stored record (packed, or a report with `nodes`), or None."""
    if isinstance(rec.get("graph"), str):
        g = json.loads(rec["graph"])
        return (g.get("nodes"), g.get("top")) if isinstance(g, dict) and isinstance(g.get("nodes"), list) else None
    return (rec["nodes"], rec.get("top")) if isinstance(rec.get("nodes"), list) else None


def ready_fingerprint(rec: dict) -> dict | None:
    """The record's stored fingerprint when it was made (by `pack`, this graphfp version) of the graph text stored
    beside it; None otherwise (the reader normalizes the graph itself): a fingerprint is never read for another
    graph than its own."""
    fp, text = rec.get("fp"), rec.get("graph")
    if isinstance(fp, dict) and isinstance(text, str) and fp.get("of") == fp_key(text):
        return fp
    return None


def carry(text: object, code: str) -> str | None:
    """A trace reported by validation's harness (JSON text), as the `semantic_trace` column keeps it: its fields
    packed with their fingerprint (`pack`: made here, where the trace is made, so that decontamination reads it
    ready) and the key of the code the parent sent (computed here, never taken from the report)."""
    try:
        rec = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    return json.dumps({"key": code_key(code), **pack(rec)})


def carried(text: object, code: str) -> dict | None:
    """The trace record a `semantic_trace` value holds for `code`, when it was made for this code by this tracer and
    torch and is final (a graph, or a failure of the code's own: final_failure); else None (decontamination traces
    the task itself)."""
    try:
        rec = json.loads(text) if isinstance(text, str) and text else None
    except ValueError:
        return None
    if not isinstance(rec, dict) or rec.get("key") != code_key(code):
        return None
    if not (rec.get("ok") is True or final_failure(rec)):
        return None  # a failure of the process it ran in, not of the code: traced again
    return {k: rec[k] for k in TRACE_FIELDS + STORED_FIELDS if k in rec}


def final_failure(rec: dict) -> bool:
    """A failed trace that tracing again would repeat: graph_too_large, or an exception of the code's own (not
    memory, recursion or process state: TRANSIENT_*); a timeout is traced again (validation's time was what it had
    left).
    Trusting it costs nothing a task could not get anyway: its code runs in decontamination's trace too, and can
    fail there at will (a failed trace only hides the task from the semantic view: about itself)."""
    reason = rec.get("reason")
    if reason == "graph_too_large":
        return True
    if reason != "exception":
        return False
    err = str(rec.get("error") or "")
    kind = err.split(":", 1)[0].strip()
    return bool(kind) and kind not in TRANSIENT_ERRORS and not any(m in err.lower() for m in TRANSIENT_MARKERS)


# The tracer: `trace(code)` -> {"ok", "nodes", "top"} or {"ok": False, "reason"}. The decontamination worker below
# runs it in a forked child per task; validation's harness (pipeline.validate.harness) runs the same text after its
# checks, so that a validated task arrives with its trace (one tracer, one key).
TRACER = r'''
import collections, contextlib, gc, json, math, os, select, signal, sys, time, weakref
import torch

MAX_NODES = int(PAYLOAD.get("max_nodes", 4000))
MAX_NUMEL = int(PAYLOAD.get("max_numel", 20_000_000))  # a confirmation's inputs at most (decontamination's payload)


_COMPILED = {}  # (code, name) -> its code object: a screen loads each problem several times (meta, CPU, scales)


def _load(code, name):
    key = (code, name)
    obj = _COMPILED.get(key)
    if obj is None:
        if len(_COMPILED) > 512:
            _COMPILED.clear()
        obj = _COMPILED[key] = compile(code, "<" + name + ">", "exec")
    g = {"__name__": name}
    exec(obj, g)
    return g


def _new_model(g, init):
    """The task's Model(*init); a task whose class has another name: the last nn.Module subclass it defines that
    builds from get_init_inputs() (a copy with its class renamed must not escape the view by that alone)."""
    if isinstance(g.get("Model"), type):
        return g["Model"](*init)
    mine = [v for v in list(g.values()) if isinstance(v, type) and issubclass(v, torch.nn.Module)
            and getattr(v, "__module__", "") == g.get("__name__")]
    for cls in reversed(mine):
        try:
            return cls(*init)
        except Exception:
            continue
    raise KeyError("Model")


def _build(g, device, seed):
    torch.manual_seed(seed)
    with torch.device(device):
        init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
        model = _new_model(g, init)
    torch.manual_seed(seed + 1)
    with torch.device(device):
        inputs = g["get_inputs"]()
    return model, list(inputs)


from torch._decomp import core_aten_decompositions, get_decompositions
from torch.utils._python_dispatch import TorchDispatchMode
# Core ATen keeps some composite ops whole (softmax, layer/group/batch norm, gelu, var ...): decomposed as well, so
# that a formula written by hand and the library call reach the same primitive ops.
_a = torch.ops.aten
DECOMP = {**core_aten_decompositions(), **get_decompositions([
    _a._softmax, _a._log_softmax, _a.gelu, _a.native_layer_norm, _a.native_group_norm,
    _a._native_batch_norm_legit_functional, _a._native_batch_norm_legit, _a._native_batch_norm_legit_no_training,
    _a.native_batch_norm, _a.silu, _a.mish, _a.hardswish, _a.hardsigmoid, _a.elu, _a.leaky_relu, _a.softplus,
    _a.logsumexp, _a.hardtanh, _a.var_mean, _a.var, _a.std, _a.addcmul, _a.addcdiv, _a.rsub,
    _a.linalg_vector_norm, _a.norm])}


class _Recorder(TorchDispatchMode):
    """Records every ATen op the forward runs on meta tensors, after the decompositions above: the same core-ATen
    op list make_fx with that table produces, without building an FX graph (~5x cheaper per op). A tensor is a
    node by identity (kept alive, so ids are not reused); an in-place op is recorded as its functional form and
    its result replaces the mutated tensor; copy_ passes its source on."""

    def __init__(self):
        super().__init__()
        self.nodes, self.ids, self.keep = [], {}, []
        self.top, self.depth = [], 0  # the ops the forward called (before decomposition), with their arguments

    def label(self, func, args):
        plain = [a for a in args if not isinstance(a, torch.Tensor) and not (
            isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a))]
        return [str(func), self.enc(plain)]

    def bind(self, t, k):
        self.ids[id(t)] = k
        self.keep.append(t)

    def leaf(self, t, kind, shape=None):
        if isinstance(t, torch.Tensor):
            self.bind(t, len(self.nodes))
            self.nodes.append(["P", kind, t.dim(), shape or list(t.shape)])
        else:
            self.nodes.append(["P", kind, -1, []])

    def enc(self, a):
        if isinstance(a, torch.Tensor):
            k = self.ids.get(id(a))
            if k is None and a._base is not None:  # a view made outside the recorder: its base's value
                k = self.ids.get(id(a._base))
            if k is None:  # a tensor constant made outside any recorded op
                k = len(self.nodes)
                self.bind(a, k)
                self.nodes.append(["C", a.dim()])
            return ["n", k]
        if isinstance(a, (list, tuple)):
            return [self.enc(x) for x in a]
        if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
            return a
        if isinstance(a, float):
            return a if a == a and abs(a) != float("inf") else str(a)
        return str(a)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.depth == 0 and len(self.top) < MAX_NODES:
            self.top.append(self.label(func, args))
        self.depth += 1
        try:
            d = DECOMP.get(func)
            if d is not None:
                with self:
                    r = d(*args, **kwargs)
                if r is not NotImplemented:
                    return r
            with self:
                r = func.decompose(*args, **kwargs)
            if r is not NotImplemented:
                return r
        finally:
            self.depth -= 1
        if len(self.nodes) >= MAX_NODES:
            raise OverflowError("graph_too_large")
        out = func(*args, **kwargs)
        name = str(func)
        schema = func._schema.name
        if schema in ("aten::copy_", "aten::copy") and len(args) >= 2:
            name, args = "aten.alias.default", (args[1],)
        elif schema.endswith("_") and not schema.endswith("__") and func._schema.is_mutable:
            name = name.replace(schema.split("::")[1] + ".", schema.split("::")[1][:-1] + ".", 1)
        k = len(self.nodes)
        self.nodes.append([name, self.enc(list(args)), out.dim() if isinstance(out, torch.Tensor) else -1])
        if isinstance(out, torch.Tensor):
            self.bind(out, k)
        elif isinstance(out, (list, tuple)):
            for i, o in enumerate(out):
                if isinstance(o, torch.Tensor):
                    self.bind(o, len(self.nodes))
                    self.nodes.append(["getitem", [["n", k], i], o.dim()])
        return out


def _truncated(rec):
    """A forward past MAX_NODES ops (a loop unrolled: an RNN over hundreds of steps): its first ops, with the results
    nothing used yet as its outputs, marked truncated (such a view only shortlists problems for the functional
    confirmation: it cannot show what the rest of the forward does)."""
    nodes = rec.nodes[: MAX_NODES - 1]
    used = set()
    stack = [n[1] for n in nodes if n and n[0] not in ("P", "C")]
    while stack:
        a = stack.pop()
        if isinstance(a, list):
            if len(a) == 2 and a[0] == "n" and isinstance(a[1], int):
                used.add(a[1])
            else:
                stack.extend(a)
    sinks = [["n", k] for k, n in enumerate(nodes) if n and n[0] not in ("P", "C") and k not in used]
    nodes.append(["O", [sinks[-64:]], -1])
    return {"ok": True, "nodes": nodes, "top": rec.top, "truncated": True, "n_nodes": len(rec.nodes)}


from pipeline.decontam.slicing import batch_slice


# Ops whose output's shape reads their inputs' values (or that hand a value to Python, which may branch on it)
_DATA_SHAPED = {getattr(torch.ops.aten, n) for n in (
    "nonzero", "masked_select", "_unique", "_unique2", "unique_dim", "unique_consecutive", "repeat_interleave",
    "argwhere", "_local_scalar_dense", "is_nonzero", "equal") if hasattr(torch.ops.aten, n)}


class _OpBudget(TorchDispatchMode):
    """At most n ops (the worker's dry runs' budget, DRY_OPS): past it the run stops (OverflowError). `fixed`: no
    op ran whose output's shape depends on values (_DATA_SHAPED, or indexing by a mask): the outputs' shapes follow
    from the inputs' shapes alone, whatever the weights hold."""

    def __init__(self, n):
        super().__init__()
        self.left = n
        self.fixed = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.left -= 1
        if self.left < 0:
            raise OverflowError("op_budget")
        packet = func.overloadpacket
        if packet in _DATA_SHAPED or (packet is torch.ops.aten.index and len(args) > 1 and any(
                isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1] or ())):
            self.fixed = False
        return func(*args, **(kwargs or {}))


def _sliced_outputs(model, inputs):
    """The output signatures of the forward on the inputs' variants as confirm makes them first (_variants: "all"
    and "first" rows, and "cut" where neither they nor the whole inputs fit the confirmation's budget), on meta
    tensors within the dry runs' budget; None for a variant that raises, runs past it or is not made. The budget
    is the payload's (MAX_NUMEL), reported beside them (`sliced_at`): a screen at another reads no "cut"."""
    variants = [batch_slice(inputs), batch_slice(inputs, first_only=True)]
    cut = None
    if all(_numel(v) > MAX_NUMEL for v in variants + [inputs]):
        cut = _cut(variants[0], MAX_NUMEL // 16)
    return [_outputs_on(model, ins) for ins in variants] + [_outputs_on(model, cut) if cut is not None else None]


def _outputs_on(model, ins, budget=1000):
    try:
        with torch.no_grad(), _OpBudget(budget), _factories():
            return [_sig(t) for t in _flat(model(*ins))]
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":  # validation's alarm (pipeline.validate.harness): the trace's end
            raise
        return None


PROBE_MIDDLE = 4  # a truncated forward's shape probe: the first input's middle dims (a sequence's steps) cut to this


def _shape_probe(model, inputs, sliced):
    """Output signatures of a forward too long to trace whole (truncated: a loop over 512 steps), on meta tensors of
    smaller inputs: the first input's rows cut, all rows cut, its middle dims cut to PROBE_MIDDLE, both; the first
    that runs within the budget, else None. Only the outputs' ranks and dtypes are read from it (semantic's
    ranks_key: which problems a candidate is run beside); their sizes are the smaller inputs'. `sliced`
    (_sliced_outputs): the first rows' outputs where they ran already, within a smaller budget."""
    if sliced[1]:
        return sliced[1]
    variants = [batch_slice(inputs, first_only=True), batch_slice(inputs)]
    x = inputs[0] if inputs and isinstance(inputs[0], torch.Tensor) else None
    if x is not None and x.dim() >= 3:
        short = x[(slice(None), *[slice(0, PROBE_MIDDLE)] * (x.dim() - 2))]
        variants += [[short] + list(inputs[1:]), [short[:2]] + list(inputs[1:])]
    for ins in variants:
        got = _outputs_on(model, ins, budget=4000)
        if got:
            return got
    return None


def _sig(x):
    """A value's signature: [shape, dtype] of a tensor, ["v", value] of a plain scalar, else None (opaque)."""
    if isinstance(x, torch.Tensor):
        return [list(x.shape), str(x.dtype).replace("torch.", "")]
    if x is None or isinstance(x, (bool, int)) or (isinstance(x, float) and x == x and abs(x) != float("inf")):
        return ["v", x]
    return None


def _flat(out):
    # The tensors of a (nested) output; the worker below, which runs after this text, uses it too.
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    return []


def _literal(x, depth=0):
    """A constructor argument as JSON that keeps its Python type (["i", 3], ["t", [...]] for a tuple ...), or None
    where it is no plain literal (a tensor, an object): a problem can then be rebuilt at these values (the
    semantic view's resized pairs: semantic.rebuilt_code)."""
    if isinstance(x, bool):
        return ["b", x]
    if isinstance(x, int):
        return ["i", x] if abs(x) < 1 << 31 else None
    if isinstance(x, float):
        return ["f", x] if x == x and abs(x) != float("inf") else None
    if x is None:
        return ["n", None]
    if isinstance(x, str):
        return ["s", x] if len(x) <= 64 else None
    if isinstance(x, (list, tuple)) and len(x) <= 16 and depth < 3:
        items = [_literal(v, depth + 1) for v in x]
        return None if any(v is None for v in items) else ["t" if isinstance(x, tuple) else "l", items]
    return None


def _init_literal(g):
    """get_init_inputs() as _literal gives it (None where any argument is no literal, or it raises)."""
    try:
        torch.manual_seed(0)
        with torch.device("meta"):
            init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
        return _literal(list(init))
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
        return None


def trace(code):
    g = _load(code, "task")
    rec = _trace_of(g)
    if rec.get("ok") and isinstance(rec.get("sig"), dict):
        rec["sig"]["init"] = _init_literal(g)
        rec["sig"]["canon"] = _canon_probe(g, rec["sig"])
        if rec["sig"].get("probe") is None:
            rec["sig"]["probe"] = _constants_probe(g, rec["sig"])
    return rec


PROBE_CONSTANTS = 64  # floats a model may keep (parameters and buffers) and still be probed, built for real


def _constants_probe(g, sig):
    """_probe for a model that keeps a few constants (SELU's alpha and scale as buffers, a learnable gain of one
    element): built for real as its constructor makes it (the trace's model is on meta, its constants without
    values); None past PROBE_CONSTANTS floats or without any."""
    n = sig.get("params"), sig.get("buffers")
    if not all(type(x) is int for x in n) or not 0 < sum(n) <= PROBE_CONSTANTS:
        return None
    ins = sig.get("inputs") or []
    if not all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], list) and x[1] in _CANON_DTYPES for x in ins):
        return None
    try:
        init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
        torch.default_generator.manual_seed(0)
        with torch.device("cpu"):
            model = _new_model(g, init)
        if sum(p.numel() for p in model.parameters()) + _float_buffers(model) > PROBE_CONSTANTS:
            return None
        return _probe(model, [torch.empty(s, dtype=getattr(torch, dt), device="meta") for s, dt in ins], True)
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
        return None


# The canonical probe: a model with its weights set to canonical values (by each tensor's element count and
# position: two copies that tie their weights by shape, order or layout agree), run on canonical inputs of its own
# input shapes cut small. A problem rebuilt at a candidate's constructor arguments (semantic.rebuilt_code) is run the
# same way in the worker (screen): outputs that differ there under every layout tried are no copy's, and the pair
# ends without a fork. The candidate reports its own outputs (as it reports its trace): a false report hides only it.
CANON_PARAMS = 1 << 24  # weights of a model probed (more: no probe, and no rebuilt pairs)
CANON_NUMEL = 1 << 16  # elements of its probe's inputs
CANON_SIDE = 16  # the inputs' trailing dims tried first (the same shapes for tasks that differ only there)
CANON_VARIANTS = ("flat", "t2", "t", "hwio")  # the weights' layouts a problem is tried in (_canon_fill)
_RANDOM_INITS = ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                 "xavier_normal_", "orthogonal_", "sparse_")


@contextlib.contextmanager
def _random_inits_skipped(skipped=None):
    """torch.nn.init's random initializers as no-ops while a model is built whose weights are overwritten after (the
    tensors they were called on go into `skipped`); constant initializers run."""
    saved = {n: getattr(torch.nn.init, n) for n in _RANDOM_INITS}

    def skip(t, *a, **k):
        if skipped is not None:
            skipped.add(id(t))
        return t

    for n in _RANDOM_INITS:
        setattr(torch.nn.init, n, skip)
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(torch.nn.init, n, f)


_CANON_BASE = []  # the canonical sequence, made once per process and grown as needed (a forked child inherits it)


def _canon_values(n, offset=0):
    """Elements offset..offset+n of a fixed sequence in [-1, 1): a mixing hash of the position on 31 bits (integer
    arithmetic: the same values on any machine; a bare multiplicative hash is linear along a weight's rows, and
    different functions agreed on it)."""
    end = offset + n
    if not _CANON_BASE or _CANON_BASE[0].numel() < end:
        _CANON_BASE[:] = [torch.from_numpy(_canon_sequence(1 << max(16, (end - 1).bit_length())))]
    return _CANON_BASE[0][offset:end]


def _canon_sequence(size, chunk=1 << 18):
    """_canon_values' sequence, made in place chunk by chunk on 32-bit words (4x faster than whole int64 tensors:
    1.4 s for 16M values). Each step keeps the low 31 bits, which a 32-bit product wraps to exactly as a 64-bit
    one does, so the values are those of the int64 formula bit for bit (the candidates' probes were made with it)."""
    import numpy as np

    out = np.empty(size, dtype=np.float32)
    m = np.uint32(0x7FFFFFFF)
    h, tmp, f = np.empty(chunk, np.uint32), np.empty(chunk, np.uint32), np.empty(chunk, np.float64)
    for lo in range(0, size, chunk):
        n = min(chunk, size - lo)
        hh, tt, ff = h[:n], tmp[:n], f[:n]
        hh[:] = np.arange(lo, lo + n, dtype=np.uint32)
        np.multiply(hh, np.uint32(2654435761), out=hh)
        np.add(hh, np.uint32(12345), out=hh)
        np.bitwise_and(hh, m, out=hh)
        for shift, mult in ((15, 0x2C1B3C6D), (12, 0x297A2D39), (15, 0x1B873593), (13, None)):
            np.right_shift(hh, np.uint32(shift), out=tt)
            np.bitwise_xor(hh, tt, out=hh)
            if mult is not None:
                np.multiply(hh, np.uint32(mult), out=hh)
                np.bitwise_and(hh, m, out=hh)
        np.divide(hh, 1073741824.0, out=ff)
        np.subtract(ff, 1.0, out=ff)
        out[lo:lo + n] = ff
    return out


NATURAL_KEEP = 2  # outputs of the natural probe kept in a trace (its size is bounded: semantic._MAX_SIG)
CANON_CONST = 1 / 64  # the constant probe: every weight at this one value, so that any layout or cut of one agrees


def _const_fill(model, ratios=None):
    """Every floating parameter at CANON_CONST; `ratios`: each parameter at CANON_CONST over its own factor instead
    (the problem's side of a constant probe whose candidate made its weights at other scales: _fold_ratios)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            if p.is_floating_point() and p.numel():
                p.fill_(CANON_CONST / (ratios[i] if ratios is not None else 1.0))


def _canon_fill(model, variant, scales=None):
    """Every floating parameter set to canonical values (scaled by its element count's fourth root: the same for
    any layout of it): laid out flat ("flat"), or with each 2-D one ("t2") or each of 2 dims or more ("t") stored
    transposed, its first dim last (a Linear kept as (in, out), a filter bank as (C*k*k, F)), or each of 3 dims or
    more with its first two dims last, reversed ("hwio": a filter kept as (kh, kw, in, out)). `scales`: each
    parameter at the scale its constructor makes it instead (the natural probe: _natural_scales)."""
    _fill(model, variant, _canon_scaled, scales)


_SCALED = {}  # element count -> _canon_values(n) * n ** -0.25 (each layout and each problem of a screen reads them)
SCALED_KEEP = 1 << 25  # elements kept at most (128 MB)


def _canon_scaled(n):
    got = _SCALED.get(n)
    if got is None:
        if n + sum(t.numel() for t in _SCALED.values()) > SCALED_KEEP:
            _SCALED.clear()
        got = _canon_values(n) * n ** -0.25
        if n <= SCALED_KEEP:
            _SCALED[n] = got
    return got


def _fill(model, variant, values, scales=None):
    """Every floating parameter set to values(its element count), laid out as `variant` (_laid_out); `scales`: each
    parameter's own factor instead of its element count's fourth root, where there is one (_natural_scales)."""
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            if p.is_floating_point() and p.numel():
                u = values(p.numel())
                if scales is not None:
                    u = u * p.numel() ** 0.25 * (scales[i] if i < len(scales) and scales[i] else p.numel() ** -0.25)
                p.copy_(_laid_out(u, tuple(p.shape), variant))


def _laid_out(u, shape, variant):
    """A flat sequence as a tensor of `shape`, read in one of CANON_VARIANTS' layouts (_canon_fill)."""
    n, d = u.numel(), len(shape)
    if (variant == "t" and d >= 2) or (variant == "t2" and d == 2):
        u = u.reshape(n // shape[0], shape[0]).t()
    elif variant == "hwio" and d >= 3:
        u = u.reshape(shape[2:] + (shape[1], shape[0])).permute(d - 1, d - 2, *range(d - 2))
    return u.reshape(shape)


_CANON_INPUTS = {}


def _canon_inputs(shapes):
    """Canonical inputs of these shapes (kept: a screen's problems read the same ones; a model may not change them
    in place: each call gets clones)."""
    key = json.dumps(shapes)
    if key not in _CANON_INPUTS:
        if len(_CANON_INPUTS) > 256:
            _CANON_INPUTS.clear()
        _CANON_INPUTS[key] = _make_canon_inputs(shapes)
    return [t.clone() for t in _CANON_INPUTS[key]]


def _make_canon_inputs(shapes):
    out = []
    for k, (shape, dtype) in enumerate(shapes):
        dt = getattr(torch, dtype)
        base = _canon_values(math.prod(shape), offset=7919 * (k + 1)).reshape(shape)
        out.append((base * 2).to(dt) if dt.is_floating_point else (base > 0).to(dt))
    return out


_CANON_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool")


def _canon_shapes(inputs):
    """The probe's input shapes to try: 2 rows and trailing dims of CANON_SIDE at most (all but batch and channels;
    a 2-D input keeps its features; a smaller side where that does not fit), then 2 rows cut as a confirmation
    cuts them, then 2 rows with the last dim kept and the middle ones cut (a sequence's features); each within
    CANON_NUMEL."""
    if not inputs or not all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], list) and len(x[0]) >= 1
                             and x[1] in _CANON_DTYPES for x in inputs):
        return []
    tries = []
    for side in (CANON_SIDE, 12, 8, 6):  # volumes need a smaller side than images to fit
        tries.append([[[min(d, 2) if i == 0 else (min(d, side) if i >= 2 else d) for i, d in enumerate(s)], dt]
                      for s, dt in inputs])
        if sum(math.prod(s) for s, _ in tries[-1]) <= CANON_NUMEL:
            tries = tries[-1:]
            break
    else:
        tries = []
    # a sequence (batch, time, features): its features kept, its middle dims cut
    tries.append([[[min(d, 2) if i == 0 else (d if i == len(s) - 1 else min(d, CANON_SIDE))
                    for i, d in enumerate(s)], dt] for s, dt in inputs])
    metas = [torch.empty(s, dtype=getattr(torch, dt), device="meta") for s, dt in inputs]
    cut = _cut(batch_slice(metas), CANON_NUMEL)
    tries += [[[list(t.shape), dt] for t, (_, dt) in zip(cut, inputs)]] if cut is not None else []
    out = []
    for t in tries:
        if sum(math.prod(s) for s, _ in t) <= CANON_NUMEL and t not in out:
            out.append(t)
    return out


def _canon_outputs(model, shapes):
    """The model's outputs on the canonical inputs of `shapes`: [shapes, sampled values + sum, whether the shapes
    follow from the inputs' shapes alone (_OpBudget.fixed)], or None where the forward fails, runs past the dry
    runs' budget or gives no finite floating outputs."""
    budget = _OpBudget(2000)
    try:
        ins = _canon_inputs(shapes)
        torch.default_generator.manual_seed(0)  # a forward's own draws (KernelBench's LSTMs' states) alike in any
        with torch.no_grad(), budget:
            outs = _flat(model(*ins))
    except Exception as e:
        if type(e).__name__ in ("_TraceTimeout", "_PairTimeout"):
            raise
        return None
    got = _sampled(outs, keep=8)
    return None if got is None else got + [budget.fixed]


def _sampled(outs, keep=None):
    """[the outputs' shapes, PROBE_VALUES of each one's values at fixed positions and its sum] for the first `keep`
    outputs (all: None), or None where there is no output, one is no floating CPU tensor, or one kept is not
    finite."""
    if not outs or not all(isinstance(o, torch.Tensor) and o.is_floating_point() and o.device.type == "cpu"
                           for o in outs):
        return None
    res = [[], []]
    for o in outs[:keep]:
        flat = o.detach().double().reshape(-1)
        if not bool(torch.isfinite(flat).all()):
            return None
        idx = torch.linspace(0, max(flat.numel() - 1, 0), min(PROBE_VALUES, flat.numel())).round().long()
        res[0].append(list(o.shape))
        res[1].append([float(v) for v in flat[idx]] + [float(flat.sum())])
    return res


@contextlib.contextmanager
def _draws_as_scales(lazy=True):
    """Random draws as constants of the draw's root mean square while a model is built whose scales are read
    (_natural): uniform on [a, b) fills sqrt((a^2 + ab + b^2) / 3), normal (mean, std) sqrt(mean^2 + std^2), rand
    and randn alike (nn.init's initializers draw through Tensor.uniform_ and normal_). What a constructor makes of a
    draw (a product with a scale, a division by a fan) keeps its ratio exactly, without the sampling noise of real
    draws. `lazy`: torch.empty gives one element seen at every index (no memory to fill: a KernelBench-sized layer's
    268 MB were most of the build); a constructor that writes into one elementwise fails there (_natural then builds
    without it)."""
    T = torch.Tensor

    def uniform_(t, a=0.0, b=1.0, **k):
        return t.fill_(math.sqrt((a * a + a * b + b * b) / 3))

    def normal_(t, mean=0.0, std=1.0, **k):
        return t.fill_(math.sqrt(mean * mean + std * std))

    def made(like, value):
        def make(*a, **k):
            k.pop("generator", None)
            return (torch.empty_like(*a, **k) if like else empty(*a, **k)).fill_(value)
        return make

    methods = {n: T.__dict__.get(n) for n in ("uniform_", "normal_")}
    funcs = {n: getattr(torch, n) for n in ("rand", "randn", "rand_like", "randn_like", "empty")}
    empty = torch.empty

    def one_element(*size, **k):
        if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
            size = tuple(size[0])
        size = tuple(k.pop("size", size))
        k.pop("out", None)
        return empty(1, **k).expand(size) if size else empty((), **k)

    T.uniform_, T.normal_ = uniform_, normal_
    if lazy:
        torch.empty = one_element
    torch.rand, torch.randn = made(False, math.sqrt(1 / 3)), made(False, 1.0)
    torch.rand_like, torch.randn_like = made(True, math.sqrt(1 / 3)), made(True, 1.0)
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the ratios exact to float64 (a float32 fill was off by 7e-9)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.set_default_dtype(dtype)
        for n, f in methods.items():
            if f is None:
                delattr(T, n)
            else:
                setattr(T, n, f)
        for n, f in funcs.items():
            setattr(torch, n, f)


def _meta_model(g, max_params):
    """The model on meta tensors (no memory, no data); MemoryError when it has more than max_params parameters."""
    init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
    with torch.device("meta"):
        model = _new_model(g, init)
    size = sum(p.numel() for p in model.parameters())
    if size > max_params:
        raise MemoryError(f"{size} parameters")
    return model


def _natural(g, max_params):
    """The task's model as its own constructor makes it, its draws as their scales (_draws_as_scales); where the
    constructor writes into a tensor it made (a convolution's initializer copies into its weight, a `mul_` of a
    fresh draw), built again with memory behind torch.empty."""
    _meta_model(g, max_params)
    init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
    try:
        with _draws_as_scales():
            return _new_model(g, init)
    except Exception:
        with _draws_as_scales(lazy=False):
            return _new_model(g, init)


def _scale_list(model, scales):
    """[element count, scale] of each floating parameter, in order of element count then scale (what a screen
    compares: the same list on both sides means no constant was folded into a weight), or None past 64."""
    out = sorted([p.numel(), float(s or 0.0)] for p, s in zip(model.parameters(), scales) if p.is_floating_point())
    return out if len(out) <= 64 else None


def _natural_scales(g, params=None):
    """Each parameter's root mean square as the task's constructor makes it (_natural; None: not floating, zero);
    `params`: those parameters, already made."""
    return [_rms(p) for p in (params if params is not None else _natural(g, CANON_PARAMS).parameters())]


def _rms(t):
    if t is None or not t.is_floating_point() or t.numel() < 1:
        return None
    if all(s == 0 for s in t.stride()):  # one element seen everywhere (_draws_as_scales' torch.empty)
        m = float(t.detach()[(0,) * t.dim()].double()) ** 2
    else:
        m = float((t.detach().double() ** 2).mean())
    return math.sqrt(m) if m > 0 and math.isfinite(m) else None


def _canon_model(g, skipped=None):
    """The task's model on the CPU with its random initializers skipped (its weights are overwritten; the tensors
    they were called on go into `skipped`)."""
    init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
    torch.default_generator.manual_seed(0)  # torch.manual_seed(0) on the CPU (it also queues lazy seeds for other
    # devices, each capturing a stack trace: 0.45 ms a call; the model is built on the CPU)
    with _random_inits_skipped(skipped), torch.device("cpu"):
        return _new_model(g, init)


def _canon_probe(g, sig):
    """The task's canonical probe: {"inputs": shapes, "shapes", "values"} (flat layout), or None."""
    if type(sig.get("params")) is not int or sig["params"] > CANON_PARAMS:
        return None
    try:
        shapes = _canon_shapes(sig.get("inputs"))
        if not shapes:
            return None
        model = _canon_model(g)
        _canon_fill(model, "flat")
        for s in shapes:
            got = _canon_outputs(model, s)
            if got is not None:
                probe = {"inputs": s, "shapes": got[0], "values": got[1]}
                break
        else:
            return None
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
        return None
    try:  # and with every weight at one value (the same outputs whatever the layout or cut of each weight)
        _const_fill(model)
        got = _canon_outputs(model, probe["inputs"])
        if got is not None and got[0] == probe["shapes"]:
            probe["constant"] = got[1][:NATURAL_KEEP]
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
    try:  # and with each weight at the scale its constructor makes it (a constant folded into it shows)
        scales = _natural_scales(g)
        _canon_fill(model, "flat", scales)
        got = _canon_outputs(model, probe["inputs"])
        if got is not None and got[0] == probe["shapes"]:
            probe["natural"] = got[1][:NATURAL_KEEP]
            probe["scales"] = _scale_list(model, scales)
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
    return probe


_ON_META = {"factories": False}  # tensors a forward makes without a device made on meta too (_trace_of)


def _factories():
    return torch.device("meta") if _ON_META["factories"] else contextlib.nullcontext()


def _trace_of(g):
    try:
        return _trace(*_build(g, "meta", 0))  # meta tensors: shapes only, no memory, no data-dependent work
    except Exception as e:
        if "on the expected device" in str(e):
            # a forward that makes tensors without a device (`torch.randn(shape)` for its states: CPU tensors beside
            # the meta ones): again with those made on meta (not first: a constant made in a forward keeps its value)
            _ON_META["factories"] = True
            try:
                return _trace(*_build(g, "meta", 0))
            except Exception:
                pass
            finally:
                _ON_META["factories"] = False
        # A forward that reads its data (`.item()`, `if x.isfinite().all()`, an op without a meta kernel) cannot run
        # on meta tensors: traced again on small real ones (two rows, trailing dims cut) where its weights are small
        try:
            real = _real_build(g) if _needs_data(e) else None
        except Exception:  # the meta trace's failure stands (what the cache classifies: final or transient)
            real = None
        if real is None:
            raise
    return _trace(*real)


def _numel(ins):
    return sum(t.numel() for t in ins if isinstance(t, torch.Tensor))


def _cut(ins, max_numel):
    """The inputs with their trailing dims halved (all but batch and channels; a 2-D input's second) until they fit
    max_numel (the caller asks a 16th of the confirmation's budget: a copy shows on small images as on large ones,
    and these runs were the costliest), each dim kept at 16 or more; None where they cannot. Both sides run on the
    same cut inputs, and a cut the reference does not take (a dim a weight must match) is left out like any other
    variant: a problem's function on smaller images, sequences or rows is still its function, so outputs equal there
    are a copy's."""
    for _ in range(24):
        if _numel(ins) <= max_numel:
            return ins
        out, changed = [], False
        for t in ins:
            if isinstance(t, torch.Tensor) and t.dim() >= 2:
                idx = [slice(None)] * t.dim()
                for d in (range(2, t.dim()) if t.dim() >= 3 else (1,)):
                    if t.shape[d] >= 32:
                        idx[d] = slice(0, t.shape[d] // 2)
                        changed = True
                t = t[tuple(idx)]
            out.append(t)
        if not changed:
            return None
        ins = out
    return None


REAL_MAX_NUMEL = 1 << 22  # the inputs of a trace on real tensors
REAL_MAX_PARAMS = 1 << 28  # its weights (1 GiB of float32: a Linear(8192, 8192) holds 67M)


def _needs_data(e):
    return isinstance(e, NotImplementedError) or "meta" in str(e).lower() or "data-dependent" in str(e).lower()


def _real_build(g):
    """The task's model on the CPU and random real inputs of its input shapes cut to fit (None where its weights are
    too large); integer inputs drawn as 0 or 1 (valid indices and labels)."""
    try:  # its size first, on meta, where the model builds there (a constructor may read data too: Swin's .item())
        shell, meta = _build(g, "meta", 0)
        if sum(p.numel() for p in shell.parameters()) > REAL_MAX_PARAMS:
            return None
    except Exception as e:
        if not _needs_data(e):
            raise
        torch.manual_seed(1)  # the inputs as _build draws them
        with torch.device("meta"):
            meta = list(g["get_inputs"]())
    cut = _cut(batch_slice(meta), REAL_MAX_NUMEL)
    if cut is None:
        return None
    torch.manual_seed(0)
    with torch.device("cpu"):
        init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
        model = _new_model(g, init)
    if sum(p.numel() for p in model.parameters()) > REAL_MAX_PARAMS:
        return None
    torch.manual_seed(1)
    ins = [(torch.randn(t.shape, dtype=t.dtype) if t.is_floating_point()
            else torch.randint(0, 2, t.shape, dtype=t.dtype)) if isinstance(t, torch.Tensor) else t for t in cut]
    return model, ins, meta


PROBE_SHAPES = {1: (96,), 2: (4, 96), 3: (3, 8, 40), 4: (2, 4, 12, 12), 5: (2, 3, 6, 6, 6)}
PROBE_VALUES = 48


def _probe(model, inputs, constants=False):
    """A model without weights (an activation, a reduction, a pool, a loss) on fixed small inputs of its inputs'
    ranks and dtypes: its outputs' shapes and PROBE_VALUES of their values at fixed positions, and their sum. Two
    such tasks computing one function give the same probe whatever their sizes and however written (the semantic
    view's shortlist reads it: semantic._probed). None where it has weights, an input that is no floating tensor
    of rank 1-5, or the forward fails, runs past the dry runs' budget or gives no finite floating outputs.
    `constants`: the model may keep a few (_constants_probe: built for real)."""
    try:
        if not constants and (any(True for _ in model.parameters()) or _float_buffers(model)):
            return None
        if not inputs or not all(isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() in PROBE_SHAPES
                                 for t in inputs):
            return None
        gen = torch.Generator().manual_seed(7)
        ins = [torch.randn(PROBE_SHAPES[t.dim()], generator=gen, dtype=torch.float64).to(t.dtype) * 2
               for t in inputs]
        with torch.no_grad(), _OpBudget(1000):
            got = _sampled(_flat(model(*ins)))
        return {"shapes": got[0], "values": got[1]} if got is not None else None
    except Exception as e:
        if type(e).__name__ == "_TraceTimeout":
            raise
        return None


def _float_buffers(model):
    return sum(b.numel() for b in model.buffers() if b.is_floating_point())


def _trace(model, inputs, shown=None):
    """The forward's op graph; `shown`: the inputs as get_inputs() gives them, on meta, where `inputs` are a cut
    of them (a trace on real tensors): the graph and the signature carry their shapes, and no output shapes."""
    # what the confirmation's screen needs to run a problem beside this task without its code (jailed.screen)
    sig = {"inputs": [_sig(t) for t in shown or inputs], "params": sum(p.numel() for p in model.parameters()),
           "buffers": _float_buffers(model)}
    rec = _Recorder()
    for _, p in model.named_parameters():
        rec.leaf(p, "param")
    for _, b in model.named_buffers():
        rec.leaf(b, "buffer")
    for k, t in enumerate(inputs):
        rec.leaf(t, "input", list(shown[k].shape) if shown and isinstance(shown[k], torch.Tensor) else None)
    try:
        with torch.no_grad(), rec, _factories():
            out = model(*inputs)
        truncated = None
    except OverflowError as e:
        if str(e) != "graph_too_large":
            raise
        truncated = _truncated(rec)
    if shown is None:  # the outputs' signatures a screen and the shortlist read (shorter forwards where truncated)
        if truncated is None:
            sig["outputs"] = [_sig(t) for t in _flat(out)]
        sig["sliced"], sig["sliced_at"] = _sliced_outputs(model, inputs), MAX_NUMEL
        if truncated is not None:
            sig["shape_probe"] = _shape_probe(model, inputs, sig["sliced"])
    if truncated is not None:
        return {**truncated, "sig": sig}
    sig["probe"] = _probe(model, inputs)

    def outs(o):
        if isinstance(o, torch.Tensor):
            return rec.enc(o)
        if isinstance(o, (list, tuple)):
            return [outs(x) for x in o]
        return None

    rec.nodes.append(["O", [outs(out)], -1])
    return {"ok": True, "nodes": rec.nodes, "top": rec.top, "sig": sig}

'''
TRACER = inline(TRACER, "pipeline.decontam.slicing")  # one batch_slice for the tracer and the calibration

WORKER = (
    TRACER
    + r'''
torch.set_num_threads(1)
TIME_S = float(PAYLOAD.get("per_job_s", 20.0))


def _seed(seed):
    """torch.manual_seed(seed) as this worker's jail sees it (no GPU there: only the CPU generator exists to seed).
    torch.manual_seed also queues a lazy seed for each other kind of device, each capturing a stack trace: 1 ms a
    call, about 650 calls in the children of a 6,000-candidate check."""
    torch.default_generator.manual_seed(seed)


def _plain_name(n):
    return "".join(ch for ch in n.lower() if ch.isalnum())


MATCH_ORDER = ("name", "augment", "join", "shape", "transpose", "permute", "numel", "split")
SPLIT_FIRST = ("name", "augment", "join", "split", "shape", "transpose", "permute", "numel")  # where outputs differ
# and in the order the forwards read the tensors, the slices of one tensor from one list first (_use_order)
LISTS_FIRST = ("name", "augment", "join", "split_list", "shape", "transpose", "permute", "numel", "split")
# or a layer's tensors read gate by gate, each problem tensor's pieces one per gate (_strided)
STRIDED_FIRST = ("name", "augment", "join", "strided", "shape", "transpose", "permute", "numel", "split")
WHOLE_ONLY = ("name", "shape", "transpose", "permute", "numel")  # the tensors left around pinned slices


def _match(cand, ref, order=MATCH_ORDER, write=True):
    """Candidate tensors (parameters, then buffers, each in the order the source assigns them: _source_order) ->
    reference tensors of the same shape and the same name but for punctuation (`gemm_bias` for `gemm.bias`); then of
    the same shape, in that order; then the transpose of a matrix, then an order of its dims (a filter stored as
    (kh, kw, in, out)), then the same number of elements (a flattened weight), then slices of one tensor (_splits);
    before the shapes, a matrix and its bias kept as one augmented matrix (_augments). A wrong tie only makes
    outputs differ. `write`: the candidate's tensors take the tied values (else only the mapping is made)."""
    mapping, used = [], set()
    for how in order:
        if how in ("augment", "join", "strided", "split", "split_list"):  # ties made by their own search
            made = (_augments(cand, ref, mapping, used) if how == "augment" else _joins(cand, ref, mapping, used)
                    if how == "join" else _strided(cand, ref, mapping, used) if how == "strided"
                    else _splits(cand, ref, mapping, used, same_list=how == "split_list"))
            for m in made:
                if write:
                    with torch.no_grad():
                        dict(cand)[m[0]].copy_(_tied(dict(ref)[m[1]], dict(cand)[m[0]].shape, m[2]))
            continue
        for cn, ct in cand:
            if any(m[0] == cn for m in mapping):
                continue
            for rn, rt in ref:
                if rn in used or ct.dtype != rt.dtype:
                    continue
                tie = how
                if how == "name" and not (ct.shape == rt.shape and _plain_name(cn) == _plain_name(rn)):
                    continue
                if how == "shape" and ct.shape != rt.shape:
                    continue
                if how == "transpose" and not (ct.dim() == 2 and rt.dim() == 2 and ct.shape == rt.t().shape):
                    continue
                if how == "permute":
                    perms = _perms(rt.shape, ct.shape, 1) if ct.dim() == rt.dim() >= 3 else []
                    if not perms:
                        continue
                    tie = "permute:" + ",".join(map(str, perms[0]))
                if how == "numel" and not (ct.numel() == rt.numel() and ct.numel() > 1):
                    continue
                if write:
                    with torch.no_grad():
                        ct.copy_(_tied(rt, ct.shape, tie))
                mapping.append([cn, rn, tie])
                used.add(rn)
                break
    return mapping


_REF_BY_NAME = {}  # the problem's tensors of the pair running (confirm): an augmented tie reads its bias here


def _augments(cand, ref, mapping, used):
    """Untied candidate matrices that are an untied problem matrix W (out, in) and an untied vector b (out,) kept as
    one augmented matrix applied to [x, 1]: (out, in + 1) = [W | b] (`augment:col_last:<b>`), or (in + 1, out) =
    [W^T; b] (`augment:row_last:<b>`); b first is another tie (_other_ties). The vector is W's module's `bias`
    where there is one, else the first of that size. The ties (on W, naming b) are appended to `mapping`, and both
    problem tensors marked used; returned."""
    made = []
    tied = {m[0] for m in mapping}
    for cn, ct in cand:
        if cn in tied or ct.dim() != 2 or any(rn not in used and rt.shape == ct.shape for rn, rt in ref):
            continue  # (a problem tensor of its very shape: the shape tie's)
        for rn, rt in ref:
            if rn in used or rt.dim() != 2 or rt.dtype != ct.dtype:
                continue
            layout = ("col_last" if tuple(ct.shape) == (rt.shape[0], rt.shape[1] + 1)
                      else "row_last" if tuple(ct.shape) == (rt.shape[1] + 1, rt.shape[0]) else None)
            vectors = [bn for bn, bt in ref if bn not in used and bn != rn and bt.dim() == 1
                       and bt.shape[0] == rt.shape[0] and bt.dtype == ct.dtype]
            if layout is None or not vectors:
                continue
            own = rn.rsplit(".", 1)[0] + ".bias" if "." in rn else "bias"
            bn = own if own in vectors else vectors[0]
            made.append([cn, rn, f"augment:{layout}:{bn}"])
            used.update((rn, bn))
            break
    mapping += made
    return made


def _joins(cand, ref, mapping, used):
    """Untied candidate matrices that are two untied problem matrices A and B joined along a dim, maybe each stored
    transposed (an LSTM layer written as [x, h] @ W for its input and recurrent matrices: (in + hidden, 4 hidden) =
    [A^T; B^T]): `join:<layout>:<B>` on A, layouts `row` ([A; B]), `col` ([A | B]), `row_t` ([A^T; B^T]), `col_t`
    ([A^T | B^T]); A and B the first untied pair that fits, in the problem's order. Where A and B each have their
    bias (`weight...` -> `bias...` in the name, both untied), the candidate's vector of their size (its own module's
    first) is tied to their sum (`shape&+<B's bias>`: the two biases a fused cell adds as one). Appended to
    `mapping`, the problem tensors marked used; returned."""
    made = []
    tied = {m[0] for m in mapping}
    mats = [(n, t) for n, t in ref if t.dim() == 2]
    for cn, ct in cand:
        if cn in tied or ct.dim() != 2 or any(
            rn not in used and tuple(rt.shape) in (tuple(ct.shape), tuple(ct.shape)[::-1]) for rn, rt in ref
        ):
            continue  # (a problem tensor of its very shape or its transpose: those ties')
        found = None
        for a, (an, at) in enumerate(mats):
            for bn, bt in mats[a + 1:] if an not in used and at.dtype == ct.dtype else ():
                if bn in used or bt.dtype != ct.dtype:
                    continue
                for layout, d, t in (("row", 0, False), ("col", 1, False), ("row_t", 0, True), ("col_t", 1, True)):
                    sa, sb = (at.shape[::-1], bt.shape[::-1]) if t else (at.shape, bt.shape)
                    if sa[1 - d] == sb[1 - d] == ct.shape[1 - d] and sa[d] + sb[d] == ct.shape[d]:
                        found = (an, bn, layout, sa[1 - d])
                        break
                if found:
                    break
            if found:
                break
        if not found:
            continue
        an, bn, layout, size = found
        made.append([cn, an, f"join:{layout}:{bn}"])
        used.update((an, bn))
        ab, bb = ("bias".join(n.rsplit("weight", 1)) for n in (an, bn))  # the last `weight` read as `bias`
        vecs = {n: t for n, t in ref if t.dim() == 1 and t.shape[0] == size and n not in used}
        if ab != an and bb != bn and ab in vecs and bb in vecs:
            own = cn.rsplit(".", 1)[0] + "." if "." in cn else ""
            free = [n for n, t in cand if n not in tied and t.dim() == 1 and t.shape[0] == size
                    and t.dtype == vecs[ab].dtype and all(m[0] != n for m in made)]
            pick = next((n for n in free if n.startswith(own)), free[0] if free else None)
            if pick is not None:
                made.append([pick, ab, f"shape&+{bb}"])
                used.update((ab, bb))
    mapping += made
    return made


def _list_of(name):
    """The list a tensor's name places it in (`Wx.4` -> `Wx`: an nn.ParameterList's fifth), else the name itself."""
    head, _, tail = name.rpartition(".")
    return head if head and tail.isdigit() else name


def _index_of(name):
    """The numbers in a tensor's name (`Wr.1` -> ("1",), `cells.0.w_ih` -> ("0",)): the layer of a list it is in."""
    return tuple(part for part in name.split(".") if part.isdigit())


def _piece(ct, rt, d):
    """How a candidate tensor lies along dim d of a problem tensor as one of its slices (of its dims): ("split",
    length), ("split_t", length) for a matrix stored transposed, or None."""
    if tuple(ct.shape[:d]) + tuple(ct.shape[d + 1:]) == tuple(rt.shape[:d]) + tuple(rt.shape[d + 1:]):
        return "split", ct.shape[d]
    if ct.dim() == 2 and ct.shape[d] == rt.shape[1 - d]:
        return "split_t", ct.shape[1 - d]
    return None


def _tile(pieces, rt):
    """The ties of `pieces` (name, tensor) laid end to end along one dim of `rt`, each maybe transposed, covering it
    exactly (as _splits lays them), or None."""
    for d in range(rt.dim()):
        ties, off = [], 0
        for cn, ct in pieces:
            if ct.dtype != rt.dtype or ct.dim() != rt.dim():
                return None
            got = _piece(ct, rt, d)
            if got is None:
                break
            ties.append(f"{got[0]}:{d}:{off}")
            off += got[1]
        if len(ties) == len(pieces) and off == rt.shape[d]:
            return ties
    return None


STRIDES = 8  # tensors per gate a layer read gate by gate may have (_strided)


def _strided(cand, ref, mapping, used):
    """A layer's untied tensors (one _index_of: the same place in several ParameterLists) read gate by gate (a GRU
    written as r = sigmoid(x @ Wr + br + h @ Ur + cr), then z, then n), each problem tensor packing one piece per
    gate (a GRU's weight_ih = [W_ir; W_iz; W_in]): with R tensors per gate, the candidate's r-th, (r + R)-th, ...
    tensors are the pieces of one problem tensor, the first untied one they tile in the problem's order (_tile);
    the least R for which every one of the R tiles one. The ties are appended to `mapping`, and returned."""
    tied, made = {m[0] for m in mapping}, []
    layers = {}
    for cn, ct in cand:  # elements of ParameterLists only (`Wr.1`): a network's numbered modules are no gates
        if cn not in tied and _list_of(cn) != cn:
            layers.setdefault(_index_of(cn), []).append((cn, ct))
    for layer in layers.values():
        for r in range(2, min(STRIDES, len(layer) // 2) + 1):
            if len(layer) % r:
                continue
            trial, taken = [], set()
            for role in range(r):
                pieces = layer[role::r]
                fit = next(((rn, t) for rn, rt in ref if rn not in used and rn not in taken
                            for t in [_tile(pieces, rt)] if t is not None), None)
                if fit is None:
                    trial = None
                    break
                taken.add(fit[0])
                trial += [[cn, fit[0], how] for (cn, _), how in zip(pieces, fit[1])]
            if trial:
                made += trial
                used.update(taken)
                break
    mapping += made
    return made


def _splits(cand, ref, mapping, used, same_list=False):
    """Problem tensors that are untied candidate tensors laid end to end along one dim, each maybe stored transposed
    (a packed q/k/v projection written as three, a Linear over [x, h] as an input and a recurrent matrix): taken in
    the candidate's order, the first that fit, until they cover the dim exactly (at least two). `same_list`: the
    pieces after the first come from its list (_list_of: a gate's input maps in one ParameterList, its recurrent
    maps in another, of the same shapes). The ties (`split:<dim>:<offset>`, `split_t:...` for a transposed piece)
    are appended to `mapping`, and returned."""
    made = []
    for rn, rt in ref:
        if rn in used or rt.dim() == 0:
            continue
        for d in range(rt.dim()):
            tied = {m[0] for m in mapping}
            pieces, off = [], 0
            for cn, ct in cand:
                if cn in tied or ct.dtype != rt.dtype or ct.dim() != rt.dim() or off >= rt.shape[d]:
                    continue
                if same_list and pieces and _list_of(cn) != _list_of(pieces[0][0]):
                    continue
                got = _piece(ct, rt, d)
                if got is not None and off + got[1] <= rt.shape[d]:
                    pieces.append([cn, rn, f"{got[0]}:{d}:{off}"])
                    off += got[1]
            if len(pieces) >= 2 and off == rt.shape[d]:
                mapping += pieces
                made += pieces
                used.add(rn)
                break
    return made


def _tied(rt, shape, how):
    """The reference tensor as a candidate tensor of `shape` takes it under a tie (_match, _other_ties); a tie
    ending in `*s` also multiplies it by s, one ending in `+=d` adds d (a scale or an offset folded into the
    weights: _scaled_tie); one ending in `&+<name>` or `&-<name>` adds or subtracts another problem tensor of as many
    elements (two biases merged into one: _other_ties), `&*<name>` multiplies each row by one of its elements."""
    if "+=" in how:
        how, d = how.rsplit("+=", 1)
        return _tied(rt, shape, how) + float(d)
    if "*" in how and not how.rsplit("*", 1)[0].endswith("&"):
        how, s = how.rsplit("*", 1)
        return _tied(rt, shape, how) * float(s)
    if how.endswith("|flip"):  # a filter stored flipped over its spatial dims (a transposed convolution as one)
        return _tied(rt, shape, how[:-5]).flip(tuple(range(2, len(shape))))
    if "&" in how:
        how, other = how.split("&", 1)
        if other[0] == "*":  # times a problem tensor of one element per row (a per-channel scale folded in)
            return _tied(rt, shape, how) * _REF_BY_NAME[other[1:]].reshape((shape[0],) + (1,) * (len(shape) - 1))
        extra = _REF_BY_NAME[other[1:]].reshape(shape)
        return _tied(rt, shape, how) + (extra if other[0] == "+" else -extra)
    if how == "transpose":
        return rt.t()
    if how.startswith("join:"):  # two problem matrices joined (_joins)
        _, layout, bn = how.split(":", 2)
        parts = [rt, _REF_BY_NAME[bn]]
        if layout.endswith("_t"):
            parts = [p.t() for p in parts]
        return torch.cat(parts, 0 if layout.startswith("row") else 1)
    if how.startswith("augment:"):  # a matrix and its bias as one (_augments)
        _, layout, bn = how.split(":", 2)
        b = _REF_BY_NAME[bn]
        if layout.startswith("col"):
            parts = [rt, b[:, None]]
            return torch.cat(parts if layout == "col_last" else parts[::-1], 1)
        parts = [rt.t(), b[None, :]]
        return torch.cat(parts if layout == "row_last" else parts[::-1], 0)
    if how.startswith("split"):  # a slice along a dim, maybe transposed (_splits)
        kind, d, off = how.split(":")
        d, off = int(d), int(off)
        if kind == "split_t":
            return rt.narrow(d, off, shape[1 - d]).t()
        return rt.narrow(d, off, shape[d])
    if how == "numel":
        return rt.reshape(shape)
    if how == "numel_t":  # a flattened weight stored transposed
        return rt.reshape(tuple(shape)[::-1]).t()
    if how.startswith("permute:"):
        return rt.permute(*[int(d) for d in how.split(":")[1].split(",")])
    return rt  # name, shape


def _perms(ref_shape, cand_shape, limit):
    """Up to `limit` orders of the reference's dims that give the candidate's shape (a filter stored as (kd, kh, kw,
    in, out) for a convolution's (out, in, kd, kh, kw)), in lexicographic order."""
    import itertools

    if sorted(ref_shape) != sorted(cand_shape) or tuple(ref_shape) == tuple(cand_shape):
        return []
    out = []
    for p in itertools.permutations(range(len(ref_shape))):
        if all(ref_shape[d] == c for d, c in zip(p, cand_shape)):
            out.append(p)
            if len(out) >= limit:
                break
    return out


def _variants(g, max_numel, meta_only=False, meta=None, named=False):
    """The candidate's inputs to try, smallest first (all batch inputs cut to 2 rows, the first one cut, whole);
    get_inputs() when small, else random tensors of its shapes; any above max_numel skipped. `meta_only`: the
    same variants as meta tensors of the shapes get_inputs() gives on meta (or of `meta`, given: the screen's).
    `named`: (variant, inputs)."""
    if meta is None:
        _seed(1)
        with torch.device("meta"):
            meta = list(g["get_inputs"]())
    real = None
    if meta_only:
        pass
    elif _numel(meta) <= max_numel:
        _seed(1)
        real = list(g["get_inputs"]())
    src = real if real is not None else meta
    fits = [(v, src if v == "none" else batch_slice(src, first_only=v == "first")) for v in ("all", "first", "none")]
    fits = [(v, ins) for v, ins in fits if _numel(ins) <= max_numel]
    if not fits:  # even 2 rows are too large (a fifth of KernelBench): 2 rows with their trailing dims cut
        cut = _cut(batch_slice(src), max_numel // 16)
        fits = [("cut", cut)] if cut is not None else []
    for variant, ins in fits:
        if real is None and not meta_only:
            ins = [(torch.rand(t.shape, dtype=t.dtype) if t.is_floating_point() else
                    torch.randint(0, 2, t.shape, dtype=t.dtype)) if isinstance(t, torch.Tensor) else t for t in ins]
        yield (variant, ins) if named else ins


def _model(g, seed, max_params, skipped):
    """The task's model with its random initializers skipped (about half of a confirmation's time went into
    kaiming_uniform_ on large layers; the values are overwritten: the reference's by normal_, the candidate's by
    the reference's or normal_). The tensors they were called on go into `skipped`; constant initializers run."""
    _meta_model(g, max_params)
    init = g["get_init_inputs"]() if callable(g.get("get_init_inputs")) else []
    _seed(seed)
    # the order the source assigns a module's parameters and submodules in (named_parameters lists a module's own
    # parameters before its submodules': a bias moved up from a Linear would come before a `scale` defined after it)
    assigned = []
    with _random_inits_skipped(skipped), _recording(assigned):
        model = _new_model(g, init)
    return model, _source_order(model, assigned)


_RECORDED = ("__setattr__", "register_parameter", "register_buffer", "add_module")
_RECORDING = {"to": None, "stay": False}  # where _model's recorders append; "stay": the recorders stay installed


def _recorder(name, f):
    def rec(self, attr, value, *a, **k):
        to = _RECORDING["to"]
        if to is not None and isinstance(value, (torch.Tensor, torch.nn.Module)):
            to.append((self, attr))
        return f(self, attr, value, *a, **k)
    rec.recorder = True
    return rec


def _install_recorders():
    """nn.Module's attribute setters wrapped by recorders (where not already: task code may have replaced one), and
    what they replaced."""
    Module = torch.nn.Module
    saved = {n: getattr(Module, n) for n in _RECORDED}
    for n, f in saved.items():
        if not getattr(f, "recorder", False):
            setattr(Module, n, _recorder(n, f))
    return saved


def _keep_recorders():
    """The recorders installed for good, in a worker about to fork a confirmation's child (it inherits them). Setting
    a method of nn.Module invalidates the type caches of all its subclasses: 0.35 ms a set in the children, 1.3 ms
    for each of a fresh child's first four (the pages it writes are copied), and each model put 4 in and took them
    out. Outside _model the recorders pass through."""
    _RECORDING["stay"] = True
    _install_recorders()


@contextlib.contextmanager
def _recording(assigned):
    """(module, name) recorded into `assigned` for each tensor or module set on an nn.Module while inside. After, the
    setters are again what they were before (a constructor that replaced one does not keep it): the recorders where
    they stay installed, else what they went over."""
    saved = _install_recorders()
    if _RECORDING["stay"]:
        saved = {n: getattr(torch.nn.Module, n) for n in _RECORDED}
    _RECORDING["to"] = assigned
    try:
        yield
    finally:
        _RECORDING["to"] = None
        for n, f in saved.items():
            if getattr(torch.nn.Module, n) is not f:
                setattr(torch.nn.Module, n, f)


def _source_order(model, assigned):
    """(parameters, floating buffers) as (name, tensor), each in the order the source assigned them, depth first
    (anything not seen assigned after, in torch's order); a tensor reachable twice is listed once."""
    order = {}
    for mod, attr in assigned:
        order.setdefault(id(mod), [])
        if attr not in order[id(mod)]:
            order[id(mod)].append(attr)
    params, bufs, seen = [], [], set()

    def walk(mod, prefix):
        names = order.get(id(mod), []) + list(mod._parameters) + list(mod._buffers) + list(mod._modules)
        done = set()
        for n in names:
            if n in done:
                continue
            done.add(n)
            t = mod._parameters.get(n) if n in mod._parameters else mod._buffers.get(n)
            if isinstance(t, torch.Tensor) and id(t) not in seen:
                seen.add(id(t))
                if n in mod._parameters:
                    params.append((prefix + n, t))
                elif t.is_floating_point():
                    bufs.append((prefix + n, t))
            elif mod._modules.get(n) is not None:
                walk(mod._modules[n], prefix + n + ".")

    walk(model, "")
    return params + bufs


def _on_meta(t):
    return torch.empty_like(t, device="meta") if isinstance(t, torch.Tensor) else t


class _OverBudget(Exception):
    pass


class _Budget(TorchDispatchMode):
    """At most DRY_OPS ops per dry run: on meta tensors a loop the real kernel runs in C++ (an LSTM over 512 steps)
    unrolls into Python-dispatched ops (seconds); past the budget the dry runs stop and the real run decides."""

    def __init__(self):
        super().__init__()
        self.left = DRY_OPS

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.left -= 1
        if self.left < 0:
            DRY["off"] = True
            raise _OverBudget()
        return func(*args, **(kwargs or {}))


DRY_OPS = 1000
DRY = {"off": False}  # set for the rest of a confirmation when a dry run ran past its budget


def _dry(model, ins):
    with torch.no_grad(), _Budget():
        return _flat(model(*[_on_meta(t) for t in ins]))


def _accepts(model, ins):
    """None when the (trusted) reference's forward runs on meta tensors of these inputs' shapes and dtypes, else
    the exception it raised. Meta kernels make the same shape checks as real ones (and skip some: a transposed
    convolution's channels), so a reference that rejects an input on meta rejects it for real (most pairs
    shortlisted for sharing graph features with a problem fail so: its layers do not fit the candidate's inputs); a
    meta kernel's own limits (no kernel, data-dependent output) or a dry run past its budget prove nothing: None,
    the real run decides."""
    return _dry_run(model, ins)[0]


def _dry_run(model, ins):
    """_accepts's answer and the output shapes of the dry run (None unless it ran through)."""
    if DRY["off"]:
        return None, None
    try:
        outs = _dry(model, ins)
    except (RuntimeError, ValueError, IndexError, TypeError, AssertionError) as e:
        if isinstance(e, NotImplementedError) or "meta" in str(e).lower() or "data-dependent" in str(e).lower():
            return None, None
        return (None if DRY["off"] else e), None
    except Exception:
        return None, None
    return None, [list(t.shape) for t in outs]


def _meta_shapes(ref, cand, ins, ref_code=None):
    """Both models' output shapes on meta tensors of these inputs, or None where either does not run on meta (the
    real run decides). Honest code has the same shapes on meta as for real; a task that makes them differ only
    turns its own pair into a mismatch, as its trace can. `ref_code`: the problem's shapes from the screen's dry run
    where it made one (_ref_dry)."""
    if DRY["off"]:
        return None
    ro = _ref_dry(ref_code, None, ins, replay_only=True)[1] if ref_code is not None else None
    try:
        ro = ro if ro is not None else [list(t.shape) for t in _dry(ref, ins)]
        co = _dry(cand, ins)
    except Exception:
        return None
    return ro, [list(t.shape) for t in co]


def _ref_dry(ref_code, model, ins, replay_only=False):
    """_dry_run of the problem's meta model on `ins`, replayed from the screen's (_on_variant: kept in the worker,
    inherited by its forked child) where it made one: the same run of the same code on the same shapes and dtypes,
    with the same latch (a run past the budget turns the dry runs after it off). Else run here (`replay_only`: not
    run, (None, None))."""
    if DRY["off"]:
        return None, None
    got = _ON_VARIANT.get(_variant_key(ref_code, ins))
    if got is None:
        return (None, None) if replay_only else _dry_run(model, ins)
    ans, over = got
    if over:
        if not replay_only:
            DRY["off"] = True
        return None, None
    return ans


CHEAP_NUMEL = 1 << 21  # elements in and out of a match-only pair's first real run


def _cheap_first(variants, ref_shapes, ref_meta, cand_meta):
    """For a pair only a match can flag, whose first run would move more than CHEAP_NUMEL elements (a 3-D
    convolution's two rows: tens of millions, most of these pairs' cost), the same inputs with their trailing dims
    cut (_cut) tried first, where the problem takes them and both models give outputs of the same shapes on meta;
    the others follow should the cut run raise. Outputs equal on smaller images are a copy's (_cut); outputs that
    differ there differ at full size for all but code that branches on its input's size."""
    first = variants[0][1]
    n_in, n_out = _numel(first), sum(math.prod(s) for s in ref_shapes)
    if n_in + n_out <= CHEAP_NUMEL:
        return variants
    for target in (n_in * CHEAP_NUMEL // (n_in + n_out), n_in * 4 * CHEAP_NUMEL // (n_in + n_out)):
        cut = _cut(first, max(target, 1))
        if cut is None or _accepts(ref_meta, cut) is not None:
            continue
        shapes = _meta_shapes(ref_meta, cand_meta, cut)
        if shapes is None or shapes[0] == shapes[1]:
            return [("cut", cut)] + variants
    return variants


def _same_inputs(r_meta, c_in):
    return c_in is not None and len(r_meta) == len(c_in) and all(
        isinstance(a, torch.Tensor) == isinstance(b, torch.Tensor)
        and (not isinstance(a, torch.Tensor) or a.shape[1:] == b.shape[1:]) for a, b in zip(r_meta, c_in))


SAME_PARAMS = 2  # a match-only pair whose problem was rebuilt at the candidate's constructor arguments (semantic's
# resized pairs): a copy at other sizes has the problem's parameter count (or with its floating buffers), else no match


_SIZES = weakref.WeakKeyDictionary()  # a problem's model on meta -> _sizes (read by each of its pairs' screens)


def _sizes(model):
    got = _SIZES.get(model)
    if got is None:
        got = sum(p.numel() for p in model.parameters()), _float_buffers(model)
        try:
            _SIZES[model] = got
        except TypeError:  # not weakly referable
            pass
    return got


def _same_sizes(ref, params, buffers, model):
    """The candidate's parameter count against a rebuilt problem's: equal, or with its floating buffers, or less
    some of its vectors (a bias a normalization cancels, dropped)."""
    if type(params) is not int:
        return False
    if params == ref[0] or (type(buffers) is int and params + buffers == sum(ref)):
        return True
    vectors = sum(p.numel() for p in model.parameters() if p.dim() <= 1)
    return ref[0] - vectors <= params <= ref[0]


def _params_differ(ref_meta, params, buffers):
    """A rebuilt problem's report where the candidate's parameter count is not its (_same_sizes), else None."""
    ref = _sizes(ref_meta)
    if _same_sizes(ref, params, buffers, ref_meta):
        return None
    return {"ok": False, "reason": "params_differ", "on_meta": True, "ref_params": list(ref),
            "cand_params": [params, buffers]}


def _call(model, ins):
    """The model's outputs (_flat) on copies of the inputs (a forward that writes into its inputs changes no later
    run), the generator seeded alike for every forward: one that draws tensors itself (KernelBench's LSTMs draw their
    states where none is given, a dropout in training mode its mask) draws the same for the problem and the
    candidate where they draw alike."""
    ins = [t.clone() if isinstance(t, torch.Tensor) else t for t in ins]
    _seed(0)
    return _flat(model(*ins))


def _made_constant(rt, skipped):
    """The problem's parameters its constructor makes one value everywhere (a norm's gain of ones and shift of zeros,
    `nn.Parameter(torch.tensor(c))`), read as built (before any weight is drawn): name -> the value. A tensor whose
    random initializer was skipped holds no value of its constructor's."""
    out = {}
    for n, t in rt:
        if isinstance(t, torch.nn.Parameter) and id(t) not in skipped and t.is_floating_point() and t.numel():
            flat = t.detach().reshape(-1)
            if flat[-1] != flat[0] or flat[flat.numel() // 2] != flat[0]:  # a draw: no need to read it all
                continue
            v = _one_value(t)
            if v is not None:
                out[n] = v
    return out


def _keep_constants(rt, made, tied):
    """The problem's parameters made constant (_made_constant) that no candidate tensor is tied to, set back to their
    constructor's value: a copy that writes such a parameter as the number it is made (a norm written out without
    its gain of ones, a constant kept as a plain float) computes the problem's function as built, and the drawn
    value would set them apart. Returns their names (the report's `kept`); the weights moved (_shifted_check) and
    the layouts drawn (_layout_tie) leave them."""
    kept = {}
    with torch.no_grad():
        for n, t in rt:
            if n in made and n not in tied:
                t.fill_(made[n])
                kept[n] = made[n]
    return kept


def confirm(cand_code, ref_code, max_numel, match_only=False):
    DRY["off"] = False
    gr, gc = _load(ref_code, "reference"), _load(cand_code, "task")
    with torch.device("meta"):
        r_meta = list(gr["get_inputs"]())
    # Which of the candidate's input variants the reference takes, known on meta tensors before any weight is drawn
    # (drawing them was half of a confirmation's time; most pairs end here). The same variants, weights and
    # inputs as a run without this step: it only leaves out runs that would raise.
    ref_meta, cand_meta = _meta_model(gr, 4 * max_numel), _meta_model(gc, 4 * max_numel)
    differ = _params_differ(ref_meta, *_sizes(cand_meta)) if match_only == SAME_PARAMS else None
    if differ is not None:
        return differ
    # First at the shapes the candidate's get_inputs gives on meta, without drawing its inputs (a quarter of what
    # was left): a task whose inputs' shapes depend on the device can mislead only this, about itself, as its
    # trace (which chose these pairs) can.
    _seed(1)
    with torch.device("meta"):
        c_meta = list(gc["get_inputs"]())  # the shapes every variant below is made from
    # (the problem's dry runs as the worker's screen made them, where it did: _ref_dry)
    shown = [_ref_dry(ref_code, ref_meta, ins)[0] for ins in _variants(gc, max_numel, meta_only=True, meta=c_meta)]
    if shown and all(e is not None for e in shown):
        raise shown[-1]
    drawn = _numel(c_meta) > max_numel  # the variants' inputs drawn uniform, not get_inputs()'s own (_variants)
    variants, err = [], None
    for name, c_in in _variants(gc, max_numel, named=True, meta=c_meta):
        e = _ref_dry(ref_code, ref_meta, c_in)[0]
        if e is None:
            variants.append((name, c_in))
        else:
            err = e
    if not variants:
        if err is not None:
            raise err
        return {"ok": False, "reason": "inputs_too_large"}
    shapes = _meta_shapes(ref_meta, cand_meta, variants[0][1], ref_code) if match_only else None
    if shapes is not None and shapes[0] != shapes[1]:
        # The outputs' shapes differ on the inputs the run would take: the run would raise (meta kernels skip some
        # checks: a transposed convolution's channels) or give outputs of these shapes; no match either way. Asked
        # only where the outputs cannot make a near_variant (the caller knows from the graphs).
        return {"ok": False, "reason": "output_shapes_differ", "on_meta": True,
                "ref_shapes": shapes[0][:4], "cand_shapes": shapes[1][:4]}
    if shapes is not None:
        variants = _cheap_first(variants, shapes[0], ref_meta, cand_meta)
    skipped = set()
    (ref, rt), (cand, ct) = _model(gr, 0, 4 * max_numel, skipped), _model(gc, 0, 4 * max_numel, skipped)
    _REF_BY_NAME.clear()
    _REF_BY_NAME.update(rt)
    made = _made_constant(rt, skipped)
    with torch.no_grad():  # weights from the reference: random, not the defaults (BatchNorm's ones and zeros)
        for p in ref.parameters():
            p.normal_(0, 0.5)
    mapping = _match(ct, rt)
    tied = {m[0] for m in mapping}
    with torch.no_grad():  # the candidate's own tensors whose random initializer was skipped
        for n, t in ct:
            if n not in tied and id(t) in skipped:
                t.normal_(0, 0.5)
    kept = _keep_constants(rt, made, {m[1] for m in mapping})
    def run(ins):
        with torch.no_grad():
            return _call(ref, ins), _call(cand, ins)

    ro = co = c_in = None
    for name, c_in in variants:
        try:
            ro, co = run(c_in)
            break
        except Exception as e:  # this slice does not fit the model (A[:2] @ B[:2]): the next one
            err = e
    if ro is None:
        raise err
    same_inputs = _same_inputs(r_meta, c_in) and name != "cut"
    shapes_r = [list(t.shape) for t in ro]
    shapes_c = [list(t.shape) for t in co]
    out = {"ok": True, "mapping": mapping, "kept": sorted(kept), "unmatched_cand": len(ct) - len(mapping),
           "unmatched_ref": len(rt) - len({m[1] for m in mapping}), "same_inputs": same_inputs,
           "ref_shapes": shapes_r[:4], "cand_shapes": shapes_c[:4], "max_abs_diff": None, "ref_scale": None,
           "inputs": name}
    if shapes_r == shapes_c and ro:
        out["max_abs_diff"], out["ref_scale"] = _differ(ro, co)
        atol, rtol = PAYLOAD.get("tolerance") or (1e-4, 1e-4)
        if out["max_abs_diff"] > float(atol) + float(rtol) * out["ref_scale"]:  # the parent's rule (tolerance_ok)
            co = _retie(cand, ct, ref, rt, mapping, c_in, ro, co, out)
        if out["max_abs_diff"] > float(atol) + float(rtol) * out["ref_scale"]:
            co = _scaled_tie((gr, rt), (gc, cand, ct), mapping, c_in, ro, co, out, float(atol), float(rtol),
                             4 * max_numel)
        if match_only == SAME_PARAMS and out["max_abs_diff"] > float(atol) + float(rtol) * out["ref_scale"]:
            co = _layout_tie(ref, cand, run, c_in, co, out, float(atol), float(rtol),
                             [(n, t, kept[n]) for n, t in rt if n in kept])
        # float16/32 -> float64 keeps inf and nan as they are: the outputs' own dtypes answer the same
        out["finite"] = all(_finite(t) for t in ro + co if not t.is_complex())
        atol, rtol = float(atol), float(rtol)

        def checks(run):  # a match is run again: on signed inputs (where drawn), then with the weights moved
            if drawn and out["finite"] and out["max_abs_diff"] <= atol + rtol * out["ref_scale"]:
                _signed_check(run, c_in, out, atol, rtol)
            if out["finite"] and out["max_abs_diff"] <= atol + rtol * out["ref_scale"]:
                _shifted_check(run, c_in, out, (ref, rt), (cand, ct), atol, rtol)

        checks(run)
        if out["finite"] and atol + rtol * out["ref_scale"] < out["max_abs_diff"]:
            if out["max_abs_diff"] <= NEAR * (atol + rtol * out["ref_scale"]):
                _in_double(run, c_in, out, (ref, rt), (cand, ct), atol, rtol, checks)
    tied_now = {m[1] for m in out.get("mapping") or ()}  # a constant kept that a later tie took is no longer one
    out["kept"] = [n for n in out.get("kept") or () if n not in tied_now]
    return out


NEAR = 100  # a near miss: outputs apart by at most this many tolerances (decided again in float64: _in_double)


def _in_double(run, c_in, out, ref_side, cand_side, atol, rtol, checks):
    """A near miss decided again in float64: both models' float32 tensors and inputs widened, new tensors made in
    float64, the same runs and checks. Two computations of one function in other orders round apart in float32
    where the function is ill-conditioned (attention over large logits, written with einsum and by hand, differs by
    2.5e-4 of its scale), and agree in float64; two functions stay apart. A run that fails in float64 (a tensor kept
    outside the model, mixed dtypes) leaves the float32 verdict (`precision` says which one decided). The ties are
    made again from the widened problem's tensors (a scaled tie rounded to float32 was off by 6e-8 of each weight)."""
    (ref, rt), (cand, ct) = ref_side, cand_side
    with torch.no_grad():
        for m in (ref, cand):
            for t in list(m.parameters()) + list(m.buffers()):
                if t.dtype == torch.float32:
                    t.data = t.data.double()
        cd, rd = dict(ct), dict(rt)
        for cn, rn, how in out.get("mapping") or []:
            if cn in cd and rn in rd and cd[cn].dtype == rd[rn].dtype:
                cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))

    def run64(ins):
        prev = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            return run([t.double() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t for t in ins])
        finally:
            torch.set_default_dtype(prev)

    try:
        ro, co = run64(c_in)
    except Exception:
        return
    if [list(t.shape) for t in ro] != [list(t.shape) for t in co]:
        return
    if not all(_finite(t) for t in ro + co if not t.is_complex()):
        return
    d, scale = _differ(ro, co)
    if d <= atol + rtol * scale:
        out.update(max_abs_diff=d, ref_scale=scale, precision="float64")
        checks(run64)


def _shifted_check(run, c_in, out, ref_side, cand_side, atol, rtol):
    """A match is tried again with the weights of both models moved by one elementwise map (x -> x / 10 - 1/2): a
    copy's weights are tied to the problem's (or drawn alike), so it still agrees; two functions that agree only
    where the drawn weights put them (a softmax saturated to one-hot, a GELU after a large log-sum-exp: the identity
    there) come apart. Moved: every parameter of the problem and every untied one of the candidate, and the
    problem's tensor of a tie where either side is a parameter (a filter bank kept in a buffer); the candidate's
    tied tensors are then tied again (a tie that scales keeps its scale); buffers tied to buffers stay (a mask
    compared with 0), and so do the problem's constants kept (_keep_constants). Where either side is not finite
    there (a log of a weight), the first verdict stands; outputs that differ are no match (`shifted_params`)."""
    (ref, rt), (cand, ct) = ref_side, cand_side
    params = {id(t) for t in list(ref.parameters()) + list(cand.parameters())}
    rd, cd = dict(rt), dict(ct)
    ties = [m for m in out.get("mapping") or [] if m[0] in cd and m[1] in rd
            and (id(cd[m[0]]) in params or id(rd[m[1]]) in params)]
    retied = {id(cd[m[0]]) for m in ties} | {id(rd[n]) for n in out.get("kept") or () if n in rd}
    moved = {id(t): t for t in list(ref.parameters()) + list(cand.parameters()) if id(t) not in retied}
    moved.update({id(rd[m[1]]): rd[m[1]] for m in ties})
    with torch.no_grad():
        for t in moved.values():
            if t.is_floating_point():
                t.mul_(0.1).sub_(0.5)
        for cn, rn, how in ties:
            cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))
    _recheck(run, c_in, out, "shifted_params", atol, rtol)


def _layout_tie(ref, cand, run, c_in, co, out, atol, rtol, kept=()):
    """A rebuilt problem's pair whose ties left the outputs apart (it reached this child because its canonical probe
    agreed in some layout): every tensor of both models drawn by its element count, the candidate's laid out flat and
    the problem's in each layout the probe tries (_canon_fill), random values instead of canonical ones; the first
    layout whose outputs agree is the tie (mapping "layout:<name>"). Outputs equal under it mean the candidate's
    weights are the problem's stored in another layout (a depthwise filter kept as (k, k, C)). `kept`: (name,
    tensor, value) of the problem's constants kept (_keep_constants), tried drawn first (the first ties may have
    left one over that the candidate has), then at their value."""
    draws = {}

    def drawn(n):
        if n not in draws:
            draws[n] = torch.randn(n, generator=torch.Generator().manual_seed(n)) * n ** -0.25
        return draws[n]

    _fill(cand, "flat", drawn)
    for keep in ((), kept) if kept else ((),):
        for variant in CANON_VARIANTS:
            _fill(ref, variant, drawn)
            with torch.no_grad():
                for _, t, v in keep:
                    t.fill_(v)
            try:
                ro2, co2 = run(c_in)
            except Exception:
                continue
            if [list(t.shape) for t in ro2] != [list(t.shape) for t in co2]:
                continue
            d, scale = _differ(ro2, co2)
            if d <= atol + rtol * scale:
                out.update(max_abs_diff=d, ref_scale=scale, mapping=[["*", "*", "layout:" + variant]], retied=True,
                           kept=sorted(n for n, _, _ in keep))
                return co2
    return co


def _signed_check(run, c_in, out, atol, rtol):
    """Inputs too large to draw from get_inputs() are drawn uniform on [0, 1): there ReLU, ReLU6, LeakyReLU,
    HardTanh, ELU and the identity all agree. A match on them is tried again on signed, wider draws (normal, sd 3);
    where both sides stay finite there, outputs that differ are no match (recorded as `signed_inputs`). A copy
    agrees on any inputs; where the signed draw leaves the task's domain (a log, a sqrt) the first verdict stands."""
    _seed(2)
    signed = [torch.randn(t.shape, dtype=t.dtype) * 3 if isinstance(t, torch.Tensor) and t.is_floating_point()
              else t for t in c_in]
    _recheck(run, signed, out, "signed_inputs", atol, rtol)


def _recheck(run, ins, out, field, atol, rtol):
    """A match run again (other inputs, or weights moved): where both sides give finite outputs of equal shapes,
    their difference is recorded as `field`, and outputs that differ are no match (the run's figures replace the
    first); a run that raises or leaves the finite leaves the first verdict."""
    try:
        ro2, co2 = run(ins)
    except Exception:
        return
    if [list(t.shape) for t in ro2] != [list(t.shape) for t in co2]:
        return
    if not all(_finite(t) for t in ro2 + co2 if not t.is_complex()):
        return
    d, scale = _differ(ro2, co2)
    out[field] = {"max_abs_diff": d, "ref_scale": scale}
    if d > atol + rtol * scale:
        out["max_abs_diff"], out["ref_scale"] = d, scale


RETIES = 12  # at most this many other ties per pair (each a run of the candidate alone)


def _differ(ro, co):
    diffs, scale = [], []
    for a, b in zip(ro, co):
        a, b = _compared(a, b)
        d = (a - b).abs()
        diffs.append(float(d.max()) if d.numel() else 0.0)
        scale.append(float(a.abs().max()) if a.numel() else 0.0)
    return max(diffs), max(scale)


def _other_ties(mapping, ct, rt):
    """Ties _match could not tell from the one it made, as whole mappings: tensors of one shape tied by shape alone,
    permuted among themselves (vectors declared in another order: a BatchNorm's weight and bias and a scale), and a
    square matrix tied by shape, transposed (a weight stored as (in, out) and used as x @ w); every combination of
    these, and a matrix tied by its number of elements, read as the transpose (a flattened weight stored (in, out)),
    and a tensor tied by an order of its dims, in the other orders (dims of equal sizes); the tie made first left out,
    at most RETIES after each group's first other option alone (_tie_combinations); then single changes (vectors
    merged, filters flipped: _tied), at most SINGLES."""
    import itertools

    shapes = {n: tuple(t.shape) for n, t in ct}
    ref_shapes = {n: tuple(t.shape) for n, t in rt}
    taken = {m[1] for m in mapping} | {_second(m[2]) for m in mapping} - {None}
    groups = {}
    for m in mapping:
        if m[2] == "shape":
            groups.setdefault(shapes[m[0]], []).append(m)
    options = []
    for shape, ms in groups.items():
        if 1 < len(ms) <= 4:
            opts = [[[m[0], r, "shape"] for m, r in zip(ms, p)] for p in itertools.permutations([m[1] for m in ms])]
        else:
            opts = [[list(m) for m in ms]]
        # and problem tensors of that shape left untied in their places (a norm's gain tied first to a bias the
        # candidate dropped, as a normalization cancels it)
        free = [n for n, t in rt if n not in taken and tuple(t.shape) == shape]
        if free and len(ms) <= 4:
            pool = [m[1] for m in ms] + free
            opts += [[[m[0], r, "shape"] for m, r in zip(ms, p)]
                     for p in itertools.islice(itertools.permutations(pool, len(ms)), 24) if set(p) & set(free)]
        if len(ms) == 1 and len(shape) == 2 and shape[0] == shape[1]:
            opts.append([[ms[0][0], ms[0][1], "transpose"]])
        options.append(opts)
    flips = {}  # slices of one tensor read the other way round where square (x @ w_q for a packed (3C, C) weight)
    for m in mapping:
        if m[2].startswith("split") and len(shapes[m[0]]) == 2 and shapes[m[0]][0] == shapes[m[0]][1]:
            kind, d, off = m[2].split(":")
            other = "split" if kind == "split_t" else "split_t"
            flips.setdefault(m[1], []).append([m[0], m[1], f"{other}:{d}:{off}"])
    for ms in flips.values():
        options.append([[], ms])
    # one change at a time, tried after the combinations above (as options, a few filters' flips would fill the
    # combinations' budget before a transposed classifier is reached)
    singles = []
    # a problem parameter of n elements multiplied into every tie whose tensor has n rows (a random per-channel scale
    # folded into a filter and its bias when they are made); what was tied to it moves to an untied tensor of its size
    params = [(n, t) for n, t in rt if isinstance(t, torch.nn.Parameter) and t.numel() >= 2]
    for sn, st in params:
        rows = [m for m in mapping if m[1] != sn and m[2] in ("name", "shape", "numel")
                and shapes[m[0]][:1] == (st.numel(),)]
        on = [m for m in mapping if m[1] == sn]
        if not rows or len(on) > 1 or (on and on[0][2] not in ("name", "shape", "numel")):
            continue
        moved = []
        if on:
            free = [n for n, t in params if n not in taken and n != sn and t.numel() == st.numel()]
            if not free:
                continue
            moved = [[on[0][0], free[0], "numel"]]
        singles.append([[m[0], m[1], f"{m[2]}&*{sn}"] for m in rows] + moved)
    for m in mapping:  # a vector that is two of the problem's parameters merged (a bias and a subtracted shift): plus
        # or minus (not a buffer: a norm's running mean is no weight of the function)
        extra = [n for n, t in rt if n not in taken and isinstance(t, torch.nn.Parameter)
                 and t.numel() == shapes[m[0]][0]] if len(shapes[m[0]]) == 1 else []
        if m[2] in ("shape", "numel"):
            singles += [[[m[0], m[1], f"{m[2]}&{sign}{n}"]] for n in extra[:2] for sign in "+-"]
    for m in mapping:  # a filter flipped over its spatial dims, maybe its two channel dims swapped too (a transposed
        # convolution written as a plain one over a dilated input)
        if len(shapes[m[0]]) >= 3 and (m[2] == "shape" or m[2].startswith("permute:")):
            d = len(shapes[m[0]])
            swap = "permute:" + ",".join(map(str, [1, 0] + list(range(2, d))))
            ok = tuple(ref_shapes[m[1]][i] for i in [1, 0] + list(range(2, d))) == shapes[m[0]]
            singles += [[[m[0], m[1], m[2] + "|flip"]]]
            singles += [[[m[0], m[1], swap + f]] for f in ("", "|flip")] if ok and m[2] != swap else []
    for m in mapping:  # an augmented matrix with its bias first ([1, x] @ [b; W^T])
        if m[2].startswith("augment:"):
            options.append([[], [[m[0], m[1], m[2].replace("_last:", "_first:", 1)]]])
    for m in mapping:  # a flattened weight stored transposed: a filter bank as (C*k*k, F) for im2col @ w
        if m[2] == "numel" and len(shapes[m[0]]) == 2:
            options.append([[list(m)], [[m[0], m[1], "numel_t"]]])
        if m[2].startswith("permute:"):  # the other orders of dims of equal sizes (the first is the tie made)
            opts = [[list(m)]] + [[[m[0], m[1], "permute:" + ",".join(map(str, p))]]
                                  for p in _perms(ref_shapes[m[1]], shapes[m[0]], RETIES + 1)[1:]]
            options.append(opts)
    return [[m for part in combo for m in part] for combo in _tie_combinations(options, RETIES)] + singles[:SINGLES]


def _tie_combinations(options, limit):
    """Combinations of one option per group, the first of each (the tie made) left out: each group's first other
    option alone, at most `limit` of those (a square matrix's transpose is not left behind the permutations of a
    group of vectors that fill the budget; a network of many square layers does not run once per layer more), then
    every combination in order, at most `limit` of those (two groups changed at once: two flattened filters both
    stored transposed)."""
    import itertools

    firsts = [[o[1] if g == k else o[0] for g, o in enumerate(options)] for k in range(len(options))
              if len(options[k]) > 1][:limit]
    rest = itertools.product(*options)
    next(rest, None)  # the tie made
    out = []
    for combo in itertools.chain(firsts, itertools.islice(rest, limit)):
        if list(combo) not in out:
            out.append(list(combo))
    return out


SINGLES = 8  # single changes _other_ties adds after its combinations


def _second(how):
    """The second problem tensor a tie reads (an augmented matrix's bias, a merged vector's other half), or None."""
    if how.startswith(("augment:", "join:")):
        return how.split(":", 2)[2].split("*")[0].split("+=")[0]
    if "&" in how:
        return how.split("&", 1)[1][1:].split("*")[0].split("+=")[0]
    return None


def _flipped(mapping, ct):
    """The mapping with every square slice's tie read the other way (split <-> split_t), or None without one."""
    shapes = {n: tuple(t.shape) for n, t in ct}
    out, flips = [], 0
    for m in mapping:
        sh = shapes.get(m[0], ())
        if m[2].startswith("split") and len(sh) == 2 and sh[0] == sh[1]:
            kind, rest = m[2].split(":", 1)
            out.append([m[0], m[1], ("split" if kind == "split_t" else "split_t") + ":" + rest])
            flips += 1
        else:
            out.append(list(m))
    return out if flips >= 2 else None


class _Reads(TorchDispatchMode):
    """The watched tensors (id -> name) in the order the ops reach them as arguments (lists of tensors included)."""

    def __init__(self, watched):
        super().__init__()
        self.watched, self.order = watched, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for a in list(args) + list((kwargs or {}).values()):
            for t in a if isinstance(a, (list, tuple)) else (a,):
                name = self.watched.pop(id(t), None) if isinstance(t, torch.Tensor) else None
                if name is not None:
                    self.order.append(name)
        return func(*args, **(kwargs or {}))


def _use_order(model, ins, named):
    """`named` ((name, tensor) ...) in the order the forward on `ins` first reads them (those it never reads after,
    in their order); None where the forward fails."""
    rec = _Reads({id(t): n for n, t in named})
    try:
        with torch.no_grad(), rec:
            _call(model, ins)
    except Exception:
        return None
    pos = {n: k for k, n in enumerate(rec.order)}
    return sorted(named, key=lambda nt: pos.get(nt[0], len(pos)))


def _paired_splits(first, cu, ru):
    """`first` with the slices of a problem's tensor that no candidate tensor has the shape of (a packed q/k/v
    weight and its bias) pinned, a 1-dim one's pieces picked again where it has a sibling cut into as many (one
    module's weight and bias): the candidate's 1-dim tensor read right after each of the sibling's pieces (x @ w_q
    + b_q), and every other tensor tied again around them (_match without slices), both sides in the order their
    forwards read them (`cu`, `ru`: _use_order). Slices made first take the earliest tensors that fit (a norm's
    gain and shift for the bias of the q/k/v projection after it); None where nothing changes."""
    shapes = {n: tuple(t.shape) for n, t in cu}
    rshape = {n: tuple(t.shape) for n, t in ru}
    order = [n for n, _ in cu]
    pieces = {}
    for m in first:
        if m[2].startswith("split") and m[0] in shapes and m[1] in rshape:
            pieces.setdefault(m[1], []).append(list(m))
    needed = {rn: sorted(ms, key=lambda m: int(m[2].split(":")[2])) for rn, ms in pieces.items()
              if rshape[rn] not in set(shapes.values())}  # fmt: skip
    pinned, changed = {}, False
    for rn, ms in needed.items():
        pinned[rn] = ms
        if len(rshape[rn]) != 1:
            continue
        head = rn.rpartition(".")[0]
        for sib, ws in needed.items():
            if sib == rn or sib.rpartition(".")[0] != head or len(ws) != len(ms) or len(rshape[sib]) < 2:
                continue
            taken = {w[0] for w in ws}
            picked, off = [], 0
            for w in ws:
                nxt = next((n for n in order[order.index(w[0]) + 1:] if len(shapes[n]) == 1 and n not in taken), None)
                if nxt is None:
                    break
                taken.add(nxt)
                picked.append([nxt, rn, f"split:0:{off}"])
                off += shapes[nxt][0]
            if len(picked) == len(ws) and off == rshape[rn][0] and sorted(picked) != sorted(ms):
                pinned[rn], changed = picked, True
                break
    if not changed:
        return None
    kept = [m for ms in pinned.values() for m in ms]
    tc, tr = {m[0] for m in kept}, {m[1] for m in kept}
    rest = _match([(n, t) for n, t in cu if n not in tc], [(n, t) for n, t in ru if n not in tr], WHOLE_ONLY, False)
    return kept + rest


def _retie(cand, ct, ref, rt, mapping, c_in, ro, co, out):
    """The candidate run again under each of _other_ties; the tie whose outputs come nearest the problem's is kept
    (mapping and report updated). Only the candidate runs again: the problem's outputs are the same. A tie can only
    make a candidate equal to the problem if it computes the problem's function with its tensors relabelled."""
    cd, rd = dict(ct), dict(rt)
    best = None
    alts = [{**{m[0]: m for m in mapping}, **{m[0]: m for m in alt}} for alt in _other_ties(mapping, ct, rt)]
    # slices tied before the same shapes could take their tensors (q, k, v and the output projection, all C x C);
    # and with both sides' tensors in the order their forwards read them, each slice's pieces from one list (a
    # GRU's per-gate maps in ParameterLists: every layer's input maps listed before the recurrent ones, which have
    # the same shapes past the first layer)
    bases = [_match(ct, rt, SPLIT_FIRST, write=False)]
    cu, ru = _use_order(cand, c_in, ct), _use_order(ref, c_in, rt)
    used = None  # the ties in the order the forwards read the tensors, slices or not (a post-norm encoder layer
    # registers its norms after its feed-forward maps and reads them between: same-shaped vectors taken in
    # registration order tie a norm's gain to a bias)
    if cu is not None and ru is not None and (cu != ct or ru != rt):
        used = _match(cu, ru, LISTS_FIRST, write=False)
        bases.append(used)
        by_gate = _match(cu, ru, STRIDED_FIRST, write=False)
        if any(m[2].startswith("split") for m in by_gate) and sorted(by_gate) != sorted(used):
            bases.append(by_gate)
    if cu is not None and ru is not None:  # a packed weight's bias cut beside it: pieces read after its pieces
        bases += [p for p in (_paired_splits(b, cu, ru) for b in [mapping] + bases) if p is not None]
    seen = [sorted(mapping)]
    for first in bases:
        if (first is not used and not any(m[2].startswith("split") for m in first)) or sorted(first) in seen:
            continue
        seen.append(sorted(first))
        base = {m[0]: m for m in first}
        alts += [base] + [{**base, **{m[0]: m for m in alt}} for alt in _other_ties(first, ct, rt)]
    for first in [mapping] + bases:  # every square slice read the other way at once (weights stored (in, out))
        flipped = _flipped(first, ct)
        if flipped is not None and sorted(flipped) not in seen:
            seen.append(sorted(flipped))
            alts.append({m[0]: m for m in flipped})
    # tensors only those ties take: their own values back where the kept tie leaves them untied
    untied = {cn: cd[cn].clone() for cn in {n for alt in alts for n in alt} - {m[0] for m in mapping}}
    for tied in alts:
        with torch.no_grad():
            for cn, rn, how in tied.values():
                cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))
            try:
                alt_co = _call(cand, c_in)
            except Exception:
                continue
        if [list(t.shape) for t in alt_co] != [list(t.shape) for t in ro]:
            continue
        d, _ = _differ(ro, alt_co)
        if d < out["max_abs_diff"]:
            out["max_abs_diff"], best, co = d, list(tied.values()), alt_co
    if best is not None:
        mapping[:] = best
        out["mapping"], out["retied"] = best, True
    with torch.no_grad():  # the tensors as the kept tie has them (the loop left the last one tried): later runs
        for cn, rn, how in mapping:  # (the signed and shifted checks) must see what the verdict saw
            cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))
        for cn, t in untied.items():
            if cn not in {m[0] for m in mapping}:
                cd[cn].copy_(t)
    return co


def _scaled_tie(ref_side, cand_side, mapping, c_in, ro, co, out, atol, rtol, max_params):
    """A pair whose ties leave the outputs apart, where the two constructors make tied tensors at different scales
    (a constant folded into the weights when they are made: W * 2 * alpha for `(x @ W) * alpha` added to itself):
    the candidate runs again with each tied tensor the problem's times the ratio of the two constructors' scales
    (their draws as constants: _natural), and with every tied tensor times the ratio of the largest; outputs equal
    under one of them mean the candidate computes the problem's function with those constants moved into its
    weights (mapping `<tie>*<ratio>`). Nothing runs where every ratio is 1 (the weights already on one scale)."""
    (gr, rt), (gc, cand, ct) = ref_side, cand_side
    try:
        cnat = dict(_source_order(_natural(gc, max_params), []))
        rnat = dict(_source_order(_natural(gr, max_params), []))
    except Exception:
        return co
    cd, rd = dict(ct), dict(rt)
    # the ties kept, then a few others (_other_ties: a square weight stored transposed as well as scaled, which
    # neither the scale nor the other tie alone brings near)
    bases = [mapping] + [list({**{m[0]: m for m in mapping}, **{m[0]: m for m in alt}}.values())
                         for alt in _other_ties(mapping, ct, rt)[:SCALED_ALTS]]
    for base in bases:
        for trial in _scale_trials(base, cnat, rnat, cd):
            tied = [[cn, rn, _tie_folding(how, r)] for (cn, rn, how), r in zip(base, trial)]
            with torch.no_grad():
                for cn, rn, how in tied:
                    cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))
                try:
                    got = _call(cand, c_in)
                except Exception:
                    continue
            if [list(t.shape) for t in got] != [list(t.shape) for t in ro]:
                continue
            d, scale = _differ(ro, got)
            if d <= atol + rtol * scale:
                mapping[:] = tied
                out.update(max_abs_diff=d, ref_scale=scale, mapping=tied, retied=True)
                return got
    with torch.no_grad():  # no match: the ties as they were
        for cn, rn, how in mapping:
            cd[cn].copy_(_tied(rd[rn], cd[cn].shape, how))
    return co


SCALED_ALTS = 4  # other ties _scaled_tie tries its scales on (each up to four runs of the candidate)


def _scale_trials(mapping, cnat, rnat, cd):
    """The factors (or `+=d` offsets) per tie that _scaled_tie runs the candidate with: each tie's ratio of the two
    constructors' scales, the largest tensor's ratio for all, an unread tie taking the one factor read elsewhere,
    the offsets the constructors show; [] where every ratio is 1 and no offset shows."""
    ratios, shifts, unread = [], [], []
    for cn, rn, _ in mapping:
        a, b = _rms(cnat.get(cn)), _rms(rnat.get(rn))
        ratios.append(a / b if a is not None and b is not None and 1e-3 < a / b < 1e3 else 1.0)
        unread.append(a is None or b is None)
        shifts.append(_offset(cnat.get(cn), rnat.get(rn)))
    scaled = any(abs(math.log(r)) >= 0.01 for r in ratios)
    if not scaled and not any(shifts):
        return []
    largest = max(range(len(mapping)), key=lambda i: cd[mapping[i][0]].numel())
    trials = [ratios, [ratios[largest]] * len(ratios)] if scaled else []
    # a scale of the output folded into a norm's gain and its shift: the gain made at the factor, the shift made
    # zeros (no scale to read on either side): every unread tie takes the one factor read elsewhere
    folds = _one_fold(ratios, unread)
    if folds is not None and any(unread):
        trials.append([folds if u else r for r, u in zip(ratios, unread)])
    if any(shifts):  # an offset folded into a tensor when it is made (a bias that takes a subtracted constant)
        trials.append([f"+={d!r}" if d else 1.0 for d in shifts])
    # a scale and an offset folded in together (relu(m * (x W^T + b - c)) kept as x (mW)^T + m (b - c)): the
    # largest tensor's ratio on every tie, and the offset left after it where a tie's two draws are one value each
    big = ratios[largest]
    both = [_offset(cnat.get(cn), rnat.get(rn), big) for cn, rn, _ in mapping]
    if abs(math.log(big)) >= 0.01 and any(both):
        trials.append([f"*{big!r}+={d!r}" if d else big for d in both])
    return trials


def _one_fold(ratios, unread=None):
    """The one factor other than 1 among the read ratios (equal within 1e-9), or None where there are none or
    several."""
    # (within 1e-3 and 1e3, as _scaled_tie reads ratios: one of the candidate's reported scales may be 0, tiny,
    # huge or nan)
    got = [r for k, r in enumerate(ratios)
           if not (unread and unread[k]) and 1e-3 < r < 1e3 and abs(math.log(r)) >= 0.01]
    if not got or any(abs(r - got[0]) > 1e-9 * abs(got[0]) for r in got):
        return None
    return got[0]


def _tie_folding(how, r):
    """A tie with a constant folded in: a scale r (none where r is 1) or an offset ("+=d")."""
    if isinstance(r, str):
        return how + r
    return how if abs(math.log(r)) < 0.01 else f"{how}*{r!r}"


def _offset(c, r, scale=1.0):
    """The offset between two tensors as their constructors make them (draws as constants: _natural), the problem's
    times `scale`, where each is one value and they differ beyond rounding; 0.0 otherwise."""
    if c is None or r is None or not (c.is_floating_point() and r.is_floating_point()) or not c.numel() * r.numel():
        return 0.0
    cv, rv = c.detach().double().reshape(-1), r.detach().double().reshape(-1)
    if bool((cv != cv[0]).any()) or bool((rv != rv[0]).any()):
        return 0.0
    d = float(cv[0] - rv[0] * scale)
    return d if math.isfinite(d) and abs(d) > 1e-9 * max(1.0, abs(float(rv[0] * scale))) else 0.0


def _finite(t):
    """torch.isfinite(t).all(), in one pass without a copy: a float tensor holds a nan or an infinity exactly when
    its least or greatest element is one (aminmax propagates nan). isfinite's five passes over the 2 x 28M-element
    outputs of the largest confirmations were a tenth of their time; integers and bools are always finite."""
    if not t.is_floating_point() or t.numel() == 0:
        return True
    try:
        lo, hi = torch.aminmax(t)
    except (RuntimeError, NotImplementedError):  # a dtype aminmax lacks (float8): the plain check
        return bool(torch.isfinite(t).all())
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def _compared(a, b):
    """Both outputs in the dtype their difference is taken in: float32 when both are float32 or narrower floats
    (the difference of two float32 values rounded once, within 2**-24 of it relative, far below the tolerance's
    1e-4; upcasting 2 x 30M-element outputs to float64 was a third of the largest confirmations' time), float64
    otherwise (float64, integers, mixed), complex as (real, imag) pairs."""
    if a.is_complex() or b.is_complex():
        return torch.view_as_real(a.cdouble()), torch.view_as_real(b.cdouble())
    narrow = (torch.float32, torch.float16, torch.bfloat16)
    if a.dtype in narrow and b.dtype in narrow:
        return a.float(), b.float()
    return a.double(), b.double()


def _from_sig(sig, max_dims=8):
    """Meta tensors and plain values of an input signature the candidate's trace reported (untrusted data: checked
    here), or None where it cannot be rebuilt (an opaque input, a malformed entry)."""
    if not isinstance(sig, list) or len(sig) > 64:
        return None
    out = []
    for s in sig:
        if not (isinstance(s, list) and len(s) == 2):
            return None
        if s[0] == "v":
            # small plain values only: the problem runs in the worker itself, and a size it allocates from
            # an input must not be the candidate's to choose
            if not (s[1] is None or (isinstance(s[1], (bool, int, float)) and abs(s[1]) <= 1 << 16)):
                return None
            out.append(s[1])
            continue
        shape, dt = s
        ok = isinstance(shape, list) and len(shape) <= max_dims and all(
            type(d) is int and 0 <= d < 1 << 40 for d in shape)
        dtype = getattr(torch, dt, None) if isinstance(dt, str) and dt.isidentifier() else None
        if not ok or not isinstance(dtype, torch.dtype):
            return None
        out.append(torch.empty(shape, dtype=dtype, device="meta"))
    return out


_REF_META = {}  # problem's code -> (its model on meta, None) or (None, the exception building it raised)
_ON_VARIANT = {}  # (problem's code, input variant's signature) -> (_dry_run's answer, over its budget)


def _shapes_of(outs):
    """Output shapes from reported output signatures ([shape, dtype] each), or None if malformed."""
    if not isinstance(outs, list) or not all(isinstance(o, list) and len(o) == 2 and isinstance(o[0], list)
                                             for o in outs):
        return None
    return [o[0] for o in outs]


def _failed(e):
    return {"ok": False, "reason": "exception", "error": (type(e).__name__ + ": " + str(e))[:300]}


def _ref_meta(ref_code, max_numel):
    got = _REF_META.get(ref_code)
    if got is None:
        try:
            gr = _load(ref_code, "reference")
            with torch.device("meta"):
                gr["get_inputs"]()
            got = (_meta_model(gr, 4 * max_numel), None)
        except Exception as e:  # confirm() raises the same before the candidate's model is built
            got = (None, e)
        _REF_META[ref_code] = got
    return got


REBUILD_S = 2.0  # a problem's constructor at another task's arguments, in this worker (a loop over a layer count)


def _rebuilt_meta(ref_code, max_numel):
    """_ref_meta for a problem rebuilt at a candidate's constructor arguments (trusted code on values the candidate
    reported: plain literals, semantic.rebuilt_code), under an alarm: past REBUILD_S the pair goes to the child,
    whose own alarm ends it (a timeout is not kept; a failure is, as _ref_meta keeps it)."""
    got = _REF_META.get(ref_code)
    if got is not None:
        return got
    try:
        with _alarm(REBUILD_S):
            got = _ref_meta(ref_code, max_numel)
    except _PairTimeout as e:
        return None, e
    if len(_REF_META) > 4096:  # rebuilt codes are one candidate's each: the memo must not grow with the corpus
        _REF_META.clear()
    return got


def _variant_key(ref_code, ins):
    return ref_code, json.dumps([_sig(t) for t in ins])


def _on_variant(ref_code, model, ins):
    """The problem's dry run on one input variant, as confirm() makes it first (a fresh budget: each variant's
    answer is kept apart, and a pair any of whose variants ran past the budget is left to confirm())."""
    key = _variant_key(ref_code, ins)
    got = _ON_VARIANT.get(key)
    if got is None:
        DRY["off"] = False
        ans = _dry_run(model, ins)
        got = _ON_VARIANT[key] = (ans, DRY["off"])
        DRY["off"] = False
    return got


def screen(ref_code, sig, max_numel, match_only):
    """confirm(candidate, problem)'s report where it is decided before the candidate's code would matter, or None
    (confirm then runs). Runs in the worker itself, never in a candidate's child: only the problem's code
    (trusted) runs here, on meta tensors rebuilt from the candidate's reported signature (its trace's `sig`: input
    shapes and dtypes, parameter count, output shapes on each input variant), making confirm()'s own first steps in
    its order: the problem's model on meta (an exception there ends every pair of it), the candidate's parameter
    count (over 4 * max_numel: MemoryError), the same input variants (_variants: none left is inputs_too_large),
    the same dry runs (_accepts: a problem that rejects every variant raises), and, for a pair only a match can
    flag, the output shapes on the first variant taken (output_shapes_differ). Each ends confirm() with the same
    report it gives here: no match, and no near_variant (which needs outputs compared). The problem's answers depend
    on its code and the shapes and dtypes only: kept per (problem, variant) in this worker (its meta model is built
    once, as confirm() uses one for all its dry runs). The signature is the candidate's report about itself, as its
    trace (which chose the pair) is: a false one can only hide the candidate, as its own code in its child can."""
    try:
        ins = _from_sig(sig.get("inputs")) if isinstance(sig, dict) else None
        return _screen(ref_code, sig, ins, max_numel, match_only) if ins is not None else None
    except Exception:
        return None
    finally:
        DRY["off"] = False


def _screen(ref_code, sig, ins, max_numel, match_only):
    ref_meta, err = _rebuilt_meta(ref_code, max_numel) if match_only == SAME_PARAMS else _ref_meta(ref_code, max_numel)
    if err is not None:
        return None if isinstance(err, _PairTimeout) else _failed(err)
    params = sig.get("params")
    if type(params) is int and params > 4 * max_numel:
        return _failed(MemoryError(f"{params} parameters"))
    if match_only == SAME_PARAMS:
        differ = _params_differ(ref_meta, params, sig.get("buffers"))
        if differ is not None:
            return differ
        # the canonical probe first: small real tensors cost less than the dry runs on meta below
        said = _canon_screen(ref_code, sig.get("canon")) if sum(_sizes(ref_meta)) <= CANON_PARAMS else None
        if said is not None:
            return said or None
    variants = list(_variants(None, max_numel, meta_only=True, meta=ins, named=True))
    if not variants:
        return {"ok": False, "reason": "inputs_too_large"}
    runs = [_on_variant(ref_code, ref_meta, v) for _, v in variants]
    if any(over for _, over in runs):
        return None  # past the budget: confirm() stops its dry runs there and runs for real
    if all(e is not None for (e, _), _ in runs):
        return _failed(runs[-1][0][0])
    if not match_only:
        return None
    name, ref = next((n, shapes) for (n, _), ((e, shapes), _) in zip(variants, runs) if e is None)
    sliced = sig.get("sliced") if isinstance(sig.get("sliced"), list) and len(sig["sliced"]) == 3 else [None] * 3
    cut = sliced[2] if sig.get("sliced_at") == max_numel else None  # cut to fit this budget, not another
    cand = _shapes_of({"all": sliced[0], "first": sliced[1], "none": sig.get("outputs"), "cut": cut}.get(name))
    if cand is None or ref is None:
        return None
    if ref != cand:
        return {"ok": False, "reason": "output_shapes_differ", "on_meta": True, "ref_shapes": ref[:4],
                "cand_shapes": cand[:4]}
    return None


def _canon_ok(canon):
    try:
        ins = canon["inputs"]
        return (0 < len(ins) <= 16 and sum(math.prod(s) for s, _ in ins) <= CANON_NUMEL
                and all(all(type(d) is int and d >= 0 for d in s) and dt in _CANON_DTYPES for s, dt in ins)
                and len(canon["shapes"]) == len(canon["values"])
                and all(all(type(v) is float for v in vs) for vs in canon["values"])
                and (canon.get("scales") is None or (
                    isinstance(canon["scales"], list) and len(canon["scales"]) <= 64
                    and all(isinstance(x, list) and len(x) == 2 and type(x[0]) is int and type(x[1]) is float
                            for x in canon["scales"])))
                and all(canon.get(f) is None or (
                    isinstance(canon[f], list) and len(canon[f]) <= len(canon["values"])
                    and all(isinstance(vs, list) and len(vs) == len(w) and all(type(v) is float for v in vs)
                            for vs, w in zip(canon[f], canon["values"]))) for f in ("natural", "constant")))
    except Exception:
        return False


_CANON = {}  # (problem's code, probe input shapes, layout, natural) -> its canonical outputs (None: no answer)
_CANON_MODEL = {}  # problem's code -> its model on the CPU (None: it does not build)
_CANON_WEIGHTS = {}  # the same codes -> their model's weight count (MODELS_KEEP), least recently read first
_NATURAL = {}  # problem's code -> its parameters' scales as its constructor makes them (_natural_scales)
_MADE = {}  # the codes in _CANON_MODEL -> ((parameter index, value), ...) of those made constant (_made_constant)


def _model_of(ref_code):
    """The problem's model on the CPU (None: it does not build here), built again where the worker dropped it (a few
    kept, while their outputs stay cached): what a screen reads of it (_layouts, _filters, _pieces_of, _folded)
    never depends on what the worker ran before."""
    if ref_code in _CANON_MODEL:
        _CANON_WEIGHTS[ref_code] = _CANON_WEIGHTS.pop(ref_code)  # the most recently read last
        return _CANON_MODEL[ref_code]
    model, skipped = None, set()
    try:
        with _alarm(REBUILD_S):
            model = _canon_model(_load(ref_code, "reference"), skipped)
    except BaseException:  # a timeout, or the problem that will not build here
        pass
    _CANON_MODEL[ref_code] = model
    # its parameters made constant, by index (as confirm keeps them: _made_constant), read before any probe fills them
    made = _made_constant(list(enumerate(model.parameters())) if model is not None else [], skipped)
    _MADE[ref_code] = tuple(sorted(made.items()))
    weights = _CANON_WEIGHTS[ref_code] = 0 if model is None else sum(p.numel() for p in model.parameters())
    # past MODELS_KEEP weights, the least recently read of the same tier dropped (small or large, so that a few
    # KernelBench-sized layers do not push out the hundreds of small ones): a rebuilt problem is one candidate's,
    # while the problems most pairs screen against stay (dropping them all every 32 builds rebuilt each ~12 times)
    tier = [c for c, w in _CANON_WEIGHTS.items() if (w > LARGE_MODEL) == (weights > LARGE_MODEL)]
    while len(tier) > 1 and (sum(_CANON_WEIGHTS[c] for c in tier) > MODELS_KEEP or len(tier) > 512):
        gone = tier.pop(0)
        del _CANON_MODEL[gone], _CANON_WEIGHTS[gone], _MADE[gone]
    return model


MODELS_KEEP = 1 << 25  # weights of the problems' CPU models a worker keeps per tier (128 MB of float32 each)
LARGE_MODEL = 1 << 20  # weights from which a model is of the large tier


def _canon_of(ref_code, shapes, variant, natural=False, kept=()):
    """The problem's canonical outputs on inputs of `shapes` with its weights filled as `variant` says (a layout,
    "const", a tuple of ratios, a shift) at the natural scales (`natural`: True, or a fold's factor); `kept`: indexes
    of its parameters made constant then set back to their constructor's value (_kept)."""
    key = (ref_code, json.dumps(shapes), variant, natural, kept)
    if key not in _CANON:
        if len(_CANON) > 4096:
            _CANON.clear()
        model = _model_of(ref_code)  # each under its own alarm (alarms do not nest)
        scales = _natural_of(ref_code) if natural else None
        if scales is not None and model is not None and natural is not True:
            # a factor folded into the candidate's gain and zero shift (_fold_of): the problem's tensors made zeros
            # at the canonical fill's scale over the factor, so that the candidate's shift, at the canonical scale
            # and tied times the factor, is what they hold
            scales = [s if s or not p.numel() else p.numel() ** -0.25 / natural
                      for s, p in zip(scales, model.parameters())]
        try:
            with _alarm(REBUILD_S):
                if model is None or (natural and scales is None):
                    _CANON[key] = None
                    return None
                if isinstance(variant, tuple) and variant[0] == "shift":  # (_fold_shifts) the offset taken out
                    _canon_fill(model, variant[3])
                    with torch.no_grad():
                        list(model.parameters())[variant[1]].sub_(variant[2])
                elif variant == "const" or isinstance(variant, tuple):
                    _const_fill(model, variant if isinstance(variant, tuple) else None)
                else:
                    _canon_fill(model, variant, scales)
                if kept:
                    params, made = list(model.parameters()), dict(_MADE.get(ref_code, ()))
                    with torch.no_grad():
                        for i in kept:
                            params[i].fill_(made[i])
                _CANON[key] = _canon_outputs(model, shapes)
        except BaseException:  # a timeout, or the problem that will not build here: the child decides
            _CANON[key] = None
    return _CANON[key]


def _canon_close(got, canon, field="values"):
    if got[0] != canon["shapes"]:
        return False
    for a, b in zip(got[1], canon[field]):
        a, b = a[:-1], b[:-1]  # the sums left out: the positions sampled decide (a loose screen, never a match)
        scale = 1.0 + max((abs(x) for x in a), default=0.0)
        if len(a) != len(b) or any(abs(x - y) > PROBE_TOL * scale for x, y in zip(a, b)):
            return False
    return True


PROBE_TOL = 1e-3


def _layouts(ref_code):
    """CANON_VARIANTS less those that lay this problem's weights out as an earlier one does (no weight of 2 dims or
    more: one layout; only 2-D ones: "t" is "t2")."""
    model = _model_of(ref_code)
    if model is None:
        return CANON_VARIANTS
    dims = {p.dim() for p in model.parameters() if p.is_floating_point() and p.numel()}
    out = ["flat"]
    if 2 in dims:
        out.append("t2")
    if any(d >= 3 for d in dims):
        out += ["t", "hwio"]
    return out


def _canon_screen(ref_code, canon):
    """A rebuilt problem's pair against the candidate's canonical probe: its report (`probe_differs`) where the
    problem's canonical outputs differ from the candidate's in every layout tried (CANON_VARIANTS), at the weights'
    own scales where they differ, and with every weight at one value (`constant`); {} where they agree in one (the
    child runs the pair); None where either has no answer (no probe, a forward that fails or is not finite: the dry
    runs on meta decide what they can, as for any pair)."""
    if not _canon_ok(canon):
        return None
    kept, first = _kept(ref_code, canon.get("scales")), None
    # as made, then with the problem's parameters made constant that the candidate's weights leave over kept at
    # their constructor's value (a norm written out without its gain and shift, a constant kept as a plain float)
    for k in ((), kept) if kept else ((),):
        said = _probes(ref_code, canon, k)
        if not isinstance(said, dict):
            return None if said is None else {}
        first = first or said
        if "shapes" in said:  # other shapes: constants kept change values only
            break
    # weights that are the problem's cut in pieces (q, k, v of a packed projection): canonical values by element
    # count cannot tie them, so the child decides (_splits)
    if _pieces_of(canon.get("scales"), _model_of(ref_code)):
        return {}
    return {**first, **({"kept": list(kept)} if kept else {})}


def _probes(ref_code, canon, kept):
    """The canonical probes of one regime (`kept`: _canon_of): True where one agrees, None where the problem has no
    answer, else the `probe_differs` report."""
    tried, apart = [], None
    for variant in CANON_VARIANTS:  # "flat" first: it builds the model _layouts reads
        if tried and variant not in _layouts(ref_code):
            continue
        got = _canon_of(ref_code, canon["inputs"], variant, kept=kept)
        if got is None:
            return None
        if _canon_close(got, canon):
            return True
        tried.append(variant)
        if got[2] and got[0] != canon["shapes"]:
            # outputs of other shapes, which the inputs' shapes alone decide (_OpBudget.fixed): no layout or value of
            # the weights below gives the candidate's
            apart = [got[0][:4], canon["shapes"][:4]]
            break
    agree, natural, fold, constant = _valued_probes(ref_code, canon, tried, kept) if apart is None else (False,) * 4
    if agree:
        return True
    return {"ok": False, "reason": "probe_differs", "on_meta": False, "layouts": tried, "natural": natural,
            "fold": fold, "constant": constant, **({"shapes": apart} if apart is not None else {})}


def _kept(ref_code, scales):
    """Indexes of the problem's parameters made constant (_MADE) that the candidate's weights leave over: where its
    element counts (`scales`, from its trace) are the problem's less some of those, the first made-constant ones of
    each count left over; () otherwise."""
    model = _model_of(ref_code) if scales is not None else None
    made = _MADE.get(ref_code) if model is not None else None
    if not made:
        return ()
    params = list(model.parameters())
    mine = collections.Counter(p.numel() for p in params if p.is_floating_point())
    left = mine - collections.Counter(x[0] for x in scales)
    if not left or sum(left.values()) != sum(mine.values()) - len(scales):  # else it has a count the problem lacks
        return ()
    out = []
    for i, _ in made:
        if left[params[i].numel()] > 0:
            left[params[i].numel()] -= 1
            out.append(i)
    return tuple(out) if not +left else ()


def _valued_probes(ref_code, canon, tried, kept=()):
    """The probes with other weight values than the canonical ones, after the layouts `tried` all differed:
    (whether one agrees, natural, fold, constant: which ran, for the report); `kept` as _canon_of reads it."""
    # at the scales the constructors make the weights (a constant folded into them: _scaled_tie finds it), where
    # the weights are the problem's by element count and some scale differs
    natural = canon.get("natural") is not None and _folded(ref_code, canon.get("scales"), kept)
    fold = _fold_of(ref_code, canon.get("scales"), kept) if natural else None
    for variant in tried if natural else ():
        for how in (True, fold) if fold is not None else (True,):
            got = _canon_of(ref_code, canon["inputs"], variant, natural=how, kept=kept)
            if got is not None and _canon_close(got, canon, "natural"):
                return True, natural, fold, False
    # an offset folded into one of the candidate's vectors when made: the problem's vector less it, in each layout
    for i, d in _fold_shifts(ref_code, canon.get("scales"), kept) if natural else ():
        for variant in tried:
            got = _canon_of(ref_code, canon["inputs"], ("shift", i, d, variant), kept=kept)
            if got is not None and _canon_close(got, canon):
                return True, natural, fold, False
    # every weight at one value: a layout none of the above ties (a filter stored tap-major, a 1x1 convolution as
    # an einsum over (in, out)) or a cut agrees there; the child decides
    constant = canon.get("constant") is not None and _filters(ref_code) and _informative(canon["constant"])
    if constant:
        got = _canon_of(ref_code, canon["inputs"], "const", kept=kept)
        if got is not None and _canon_close(got, canon, "constant"):
            return True, natural, fold, constant
        # and where the candidate's weights are made at other scales than the problem's (a divisor folded into a
        # filter stored channels-last): the problem's weights at the constant over each factor
        ratios = _fold_ratios(ref_code, canon.get("scales"), kept) if natural else None
        got = _canon_of(ref_code, canon["inputs"], ratios, kept=kept) if ratios is not None else None
        if got is not None and _canon_close(got, canon, "constant"):
            return True, natural, fold, constant
    return False, natural, fold, constant


def _filters(ref_code):
    """Whether the problem has a weight of 3 dims or more (a filter: the layouts above cover some of its orders, and
    the constant probe the rest). Linear layers alone get no constant probe: every output feature is the same sum
    there, and a softmax or a norm after it makes any two activations agree."""
    model = _model_of(ref_code)
    return model is not None and any(p.dim() >= 3 for p in model.parameters() if p.is_floating_point())


def _informative(values):
    """Whether a constant probe's outputs say anything: some output's sampled values (its sum last) apart by more
    than the probe's tolerance (a pooled or normalized output of equal channels is one value everywhere)."""
    for vs in values:
        vs = vs[:-1]
        if vs and max(vs) - min(vs) > PROBE_TOL * (1.0 + max(abs(v) for v in vs)):
            return True
    return False


def _pieces_of(scales, model, steps=20000):
    """Whether the candidate's weights (element counts from its trace's `scales`) are the problem model's cut in
    pieces: grouped, each group sums to one of the problem's weights (others left whole: a layer the problem builds
    and never uses, KernelBench's LSTMs' `fc`), and at least one group holds two or more (a bounded search: `steps`
    placements); or the other way round, the problem's joined (a matrix and its bias kept as one augmented matrix:
    _augments; an LSTM layer's input and recurrent matrices as one: _joins), where every weight of the candidate is
    a group and the problem's left over are unused or merged into one tied (its two biases added as one)."""
    if scales is None or model is None:
        return False
    theirs = sorted((x[0] for x in scales), reverse=True)
    mine = sorted((p.numel() for p in model.parameters() if p.is_floating_point()), reverse=True)
    # (the other way round leaves parts over: a wider search, given a tenth of the budget)
    return _grouped(theirs, mine, steps) or _grouped(mine, theirs, steps // 10, every_whole=True)


def _grouped(parts, wholes, steps, every_whole=False):
    """Whether `parts` (element counts, largest first) group into some of `wholes`, each group summing to its whole,
    with at least one group of two or more (a bounded search: `steps` placements). `every_whole`: the other way,
    every whole filled and parts may be left over."""
    if not parts or (sum(parts) > sum(wholes) and not every_whole) or parts == wholes:
        return False
    left, count, budget = list(wholes), [0] * len(wholes), [steps]

    def place(i, first):
        if every_whole and all(x == 0 for x in left):
            return any(c >= 2 for c in count)
        if i == len(parts):
            done = all(c == 0 or x == 0 for x, c in zip(left, count))
            return not every_whole and done and any(c >= 2 for c in count)
        seen = set()
        for j in range(first, len(left)):
            room, key = left[j], (left[j], count[j] > 0)
            if room >= parts[i] and key not in seen:
                seen.add(key)
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                left[j] -= parts[i]
                count[j] += 1
                # equal parts go to the same whole or a later one (their order among themselves is no choice)
                ok = place(i + 1, j if i + 1 < len(parts) and parts[i + 1] == parts[i] else 0)
                left[j] += parts[i]
                count[j] -= 1
                if ok:
                    return True
        if every_whole:  # this part left over (a layer never used, a bias merged into another's tie)
            budget[0] -= 1
            return budget[0] >= 0 and place(i + 1, 0)
        return False

    return place(0, 0)


def _natural_of(ref_code):
    """The problem's weight scales (_natural_scales), made once per worker under the rebuild alarm (its constructor
    may run at a candidate's arguments); None where it does not build."""
    if ref_code not in _NATURAL:
        if len(_NATURAL) > 4096:  # a few floats each, but rebuilt problems are one candidate's each
            _NATURAL.clear()
            _NATURAL_FIRST.clear()
        _NATURAL[ref_code] = _NATURAL_FIRST[ref_code] = None
        try:
            with _alarm(REBUILD_S):
                params = list(_natural(_load(ref_code, "reference"), CANON_PARAMS).parameters())
                _NATURAL[ref_code] = _natural_scales(None, params)
                _NATURAL_FIRST[ref_code] = [_one_value(p) for p in params]
        except BaseException:
            pass
    return _NATURAL[ref_code]


_NATURAL_FIRST = {}  # the same codes -> each parameter's one value as its constructor makes it (None: several)


def _one_value(t):
    """The tensor's one value (every element the same, as a draw made a constant gives), or None."""
    if not t.is_floating_point() or t.numel() < 1:
        return None
    flat = t.detach().double().reshape(-1)
    v = float(flat[0])
    return v if math.isfinite(v) and bool((flat == flat[0]).all()) else None


def _fold_shifts(ref_code, scales, kept=()):
    """(parameter index, offset) pairs to probe the problem at where one of the candidate's vectors may be the
    problem's with a constant folded in when made (a bias made as `uniform_(-r, r) - c` for a problem that subtracts
    c): the two models' weights pair by element count (as _fold_ratios pairs them) and one 1-dim weight's scale alone
    differs; its offset is the candidate's value less the problem's, the candidate's known up to its sign (its trace
    keeps its scale). [] otherwise."""
    pairs, firsts = _paired_scales(ref_code, scales, kept), _NATURAL_FIRST.get(ref_code)
    differ = [(i, t) for i, s, t in pairs or () if _differs(s, t)]
    if len(differ) != 1 or firsts is None:
        return []
    i, theirs = differ[0]
    if list(_model_of(ref_code).parameters())[i].dim() != 1 or firsts[i] is None:
        return []
    return [(i, d) for d in (theirs - firsts[i], -theirs - firsts[i]) if abs(d) > 1e-9]


def _folded(ref_code, scales, kept=()):
    """Whether a constant may be folded into the candidate's weights: the same element counts as the problem's
    weights, and some scale other than its (_scale_list on both sides, within 1e-6). Weights of other counts are
    another model (or one packed otherwise, which the canonical probe cannot tie either)."""
    pairs = _paired_scales(ref_code, scales, kept)
    return pairs is not None and any(_differs(s, t) for _, s, t in pairs)


def _differs(a, b):
    """Two scales apart beyond rounding (1e-6 of the larger)."""
    return abs(a - b) > 1e-6 * max(abs(a), abs(b))


def _paired_scales(ref_code, scales, kept=()):
    """The problem's floating weights paired with the candidate's reported ones (`scales`: [element count, scale]
    from its trace, as _scale_list lists them), both in order of element count and scale: (the weight's index in
    the problem's parameters, its scale, the candidate's), or None where either side is unknown or the element
    counts do not pair. `kept`: the problem's weights the candidate keeps as constants (_kept), left out."""
    model = _model_of(ref_code) if scales is not None else None
    natural = _natural_of(ref_code) if model is not None else None
    if natural is None:
        return None
    mine = sorted((p.numel(), float(s or 0.0), i) for i, (p, s) in enumerate(zip(model.parameters(), natural))
                  if p.is_floating_point() and i not in kept)
    if len(mine) != len(scales) or any(a[0] != b[0] for a, b in zip(mine, scales)):
        return None
    return [(i, s, b[1]) for (_, s, i), b in zip(mine, scales)]


def _fold_of(ref_code, scales, kept=()):
    """The factor of an output scale folded into the candidate's weights, where the problem's weights have a
    tensor made zeros (a norm's shift, whose scale the candidate's tie must take too: _scaled_tie) and their
    scales, paired with the candidate's in order of element count and scale, differ by one factor alone; else
    None."""
    pairs = _paired_scales(ref_code, scales, kept)
    zeros = sum(s == 0.0 for _, s, _ in pairs or ())
    if not zeros:
        return None
    ratios = [t / s for _, s, t in pairs if s > 0 and t > 0]
    return _one_fold(ratios) if len(ratios) + zeros == len(pairs) else None


def _fold_ratios(ref_code, scales, kept=()):
    """Per parameter of the problem's model, the factor by which the candidate's weight of it is made (their scales
    paired in order of element count and scale, as _scale_list lists them; a zero scale takes the one factor read
    elsewhere, else 1), as a tuple; None where the element counts do not pair or every factor is 1."""
    pairs = _paired_scales(ref_code, scales, kept)
    if pairs is None:
        return None
    read = {i: t / s for i, s, t in pairs if s > 0 and t > 0}
    fold = _one_fold(list(read.values())) or 1.0
    ratios = tuple(read.get(i, fold) for i in range(len(_natural_of(ref_code))))
    ok = all(1e-3 < r < 1e3 for r in ratios)  # as _scaled_tie reads ratios (a reported scale may be 0, huge, nan)
    return ratios if ok and any(abs(math.log(r)) >= 0.01 for r in ratios) else None


def run_job(job):
    """A job in a forked child; a confirm_many job carrying the candidate's signature (job[4]) first has its pairs
    screened here (screen): only the pairs left, if any, go to a child."""
    if job[0] != "confirm_many" or len(job) < 5 or not isinstance(job[4], dict):
        return fork_one(job)
    max_numel = MAX_NUMEL
    decided = [screen(r, job[4], max_numel, m) for r, m in zip(job[2], job[3])]
    keep = [k for k, d in enumerate(decided) if d is None]
    reports = [dict(d, screened=True, wall_s=0.0) if d is not None else None for d in decided]
    if keep:
        res = fork_one(["confirm_many", job[1], [job[2][k] for k in keep], [job[3][k] for k in keep]])
        got = res.get("reports") if res.get("ok") else None
        for n, k in enumerate(keep):
            if got is None:  # the child as a whole failed: each of its pairs so
                reports[k] = {key: res[key] for key in ("ok", "reason", "error") if key in res}
            elif isinstance(got, list) and n < len(got) and isinstance(got[n], dict):
                reports[k] = got[n]
            else:
                reports[k] = {"ok": False, "reason": "bad_result"}
    return {"ok": True, "reports": reports, "forked": bool(keep)}


class _PairTimeout(BaseException):  # not an Exception: a model's own `except Exception` does not swallow it
    pass


_DEFER = {"n": 0}
_DEFER_MAX = 100  # times 0.05 s: an import that never ends is still interrupted (the parent's kill backs it)


def _importing(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _pair_alarm(_signum, frame):
    # An alarm inside an import leaves the module half made in sys.modules: every later pair of this process then
    # fails on it ("partially initialized module"), and those failures would be cached as the problems' own. The
    # alarm waits for the import to end.
    if _importing(frame) and _DEFER["n"] < _DEFER_MAX:
        _DEFER["n"] += 1
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        return
    raise _PairTimeout()


@contextlib.contextmanager
def _alarm(seconds):
    """_PairTimeout raised past `seconds` of what runs inside (a pair in a child, a rebuilt problem in the worker),
    never inside an import."""
    _DEFER["n"] = 0
    signal.signal(signal.SIGALRM, _pair_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def confirm_many(cand_code, refs, match_only):
    """One candidate beside each of its problems in one child (one fork for all its pairs: the fork, not the runs,
    was most of a pair's cost once most pairs end on meta). Each pair has its own time limit; whatever the task
    does to this process (patched torch, a swallowed alarm) concerns its own pairs only."""
    max_numel = MAX_NUMEL
    out = []
    for ref_code, only in zip(refs, match_only):
        t0 = time.monotonic()
        try:
            with _alarm(TIME_S):
                rep = confirm(cand_code, ref_code, max_numel, only if only == SAME_PARAMS else bool(only))
        except _PairTimeout:
            rep = {"ok": False, "reason": "timeout"}
        except Exception as e:
            rep = {"ok": False, "reason": "exception", "error": (type(e).__name__ + ": " + str(e))[:300]}
        rep["wall_s"] = round(time.monotonic() - t0, 4)
        out.append(rep)
    return {"ok": True, "reports": out}


def _job_time(job):
    return TIME_S * (max(1, len(job[2])) if job[0] == "confirm_many" else 1)


def run_child(job):
    if job[0] == "confirm_many":
        return confirm_many(job[1], job[2], job[3])
    signal.alarm(int(TIME_S) + 1)  # a child that ignores the parent's kill still dies
    if job[0] == "trace":
        return trace(job[1])
    # job[3] == "match": only whether the outputs match matters (not a possible near_variant)
    return confirm(job[1], job[2], MAX_NUMEL, len(job) > 3 and job[3] == "match")


def _channel_fd():
    ch = getattr(emit_result, "__globals__", {}).get("_chan")  # the sandbox's result channel (bootstrap's)
    return ch.fileno() if ch is not None else None


def _guard_channel():
    # Not dumpable: a same-uid child cannot reopen this process's channel through /proc/<pid>/fd.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        pass


def _keep_freed_memory():
    """In a child (it lives for one job): freed memory stays in its heap for its next tensors instead of going back
    to the kernel. glibc serves every allocation over 32 MB with a fresh mmap and unmaps it on free, so each of a
    real run's large tensors (inputs cloned per side, outputs, temporaries, the comparison's difference) cost a page
    fault and a zeroed page per 4 KB: 1.2M faults and half the children's CPU in the kernel for the 30 real runs of a
    6,000-candidate check. With mmap off and no trimming they reuse the pages already faulted in (0.6M faults).
    Where the values come from is unchanged: the candidate and its problem run on the same inputs, through the same
    allocator, in the same child, and no kernel's arithmetic depends on where its buffers lie (torch aligns them to
    64 bytes either way). Only this child's own freed memory is reused (the worker's heap holds only trusted,
    screened data); the address-space limit still bounds it. Not glibc: nothing changes."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        # M_TRIM_THRESHOLD (-1): the heap's top given back only past 2 GB free; M_MMAP_MAX (-4): no block mmapped
        return libc.mallopt(-1, 2**31 - 1) == 1 and libc.mallopt(-4, 0) == 1
    except Exception:
        return False


def _close_channel():
    """In a child, before any task code: it can neither write results nor take jobs from the shared queue."""
    for fd in (_channel_fd(), QUEUE):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def fork_one(job):
    if job[0] != "trace":
        _keep_recorders()
    _warm_up()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _close_channel()  # before any task code: a child cannot write results for other jobs
        gc.disable()  # a child lives for one task: collections would only copy the parent's pages
        _keep_freed_memory()
        try:
            res = run_child(job)
        except BaseException as e:
            res = {"ok": False, "reason": "exception", "error": (type(e).__name__ + ": " + str(e))[:300]}
        try:
            data = json.dumps(res).encode()
        except Exception as e:
            data = json.dumps({"ok": False, "reason": "exception", "error": str(e)[:300]}).encode()
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    buf, t0 = bytearray(), time.monotonic()
    timed_out = False
    limit = _job_time(job)
    while True:
        left = limit - (time.monotonic() - t0)
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            continue
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        buf += chunk
        if len(buf) > 8 << 20:
            break
    os.close(r)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)
    if timed_out:
        return {"ok": False, "reason": "timeout"}
    try:
        res = json.loads(bytes(buf))
        return res if isinstance(res, dict) else {"ok": False, "reason": "bad_result"}
    except ValueError:
        return {"ok": False, "reason": "crashed"}


# Warm up here (lazily: _warm_up, before the first fork): make_fx's first trace initializes lazily (~2 s); every forked
# child inherits it.
_WARM = """
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)
        self.c = nn.Conv2d(2, 2, 3)
        self.n = nn.BatchNorm2d(2)
    def forward(self, x, y):
        z = self.n(self.c(y)).mean() + torch.softmax(self.l(x), 1).sum()
        return F.gelu(z) * torch.sigmoid(x).amax()
def get_inputs():
    return [torch.randn(2, 4), torch.randn(1, 2, 5, 5)]
def get_init_inputs():
    return []
"""
WARM = {"s": 0.0, "done": False}


def _warm_up():
    """Once, before the first fork (every forked child inherits it): a batch whose pairs the screen decides whole
    forks nothing and never pays it (~1.5 s)."""
    if WARM["done"]:
        return
    WARM["done"] = True
    t = time.monotonic()
    try:
        trace(_WARM)
        confirm(_WARM, _WARM, 1000)
        _natural(_load(_WARM, "task"), 1000)  # its first call imports (~0.5 s in every child otherwise)
        _canon_values(CANON_PARAMS)  # the canonical sequence every child's probe reads (inherited, not remade)
    except Exception:
        pass
    WARM["s"] = round(time.monotonic() - t, 3)
    gc.collect()
    gc.freeze()  # the warm parent's objects: never scanned by a child's collections (fewer copied pages per fork)


# The job queue this worker shares with the caller's other workers (semantic.run_jobs): whoever is free takes the
# next job, so one worker's long real runs do not hold the others' share back.
QUEUE = INHERITED_FDS[0] if PAYLOAD.get("queue") and globals().get("INHERITED_FDS") else None


def _job_order():
    """Job indexes: from the queue (4-byte records, all written before the workers start and never again: a read of
    4 bytes takes one whole record, and an empty read means the queue is drained), else every job in order. With
    PAYLOAD["groups"], a record names a group: its jobs, in order (candidates whose problems this worker then
    builds and dry-runs once for all of them: semantic._affinity)."""
    if QUEUE is None:
        yield from range(len(PAYLOAD["jobs"]))
        return
    groups = PAYLOAD.get("groups")
    while True:
        rec = os.read(QUEUE, 4)
        if len(rec) < 4:
            return
        i = int.from_bytes(rec, "little")
        mine = [i] if groups is None else groups[i] if i < len(groups) else []
        yield from (j for j in mine if j < len(PAYLOAD["jobs"]))


def _named_codes():
    """The confirmation jobs' problems from the payload's table of distinct codes (semantic._shared_codes): each job
    gets the codes themselves (one string per code, shared by its jobs)."""
    codes = PAYLOAD.get("codes")
    if not isinstance(codes, list):
        return
    for job in PAYLOAD["jobs"]:
        if job and job[0] == "confirm_many":
            job[2] = [codes[k] for k in job[2]]


t_start = time.monotonic()
_named_codes()
_guard_channel()
emit_result({"start": True})
# torch's objects as imported: never scanned again by this process's collections (the screens allocate many small
# objects, and collections walked the whole torch heap: in-process, half of the 6,000-candidate check's screens took
# 1.8 s of CPU so against 2.9 s; _warm_up froze it only at the first fork)
gc.collect()
gc.freeze()
# One message per job as it starts and one as soon as it is done: a task that kills this process costs only itself
# (the caller keeps the other results, gives it a worker_died row and runs the jobs nobody took in a new process).
for i in _job_order():
    t0 = time.monotonic()
    emit_result({"c": i})
    try:
        res = run_job(PAYLOAD["jobs"][i])
    except PermissionError:  # a jail without fork: the caller runs one jailed process per job instead
        emit_result({"nofork": True})
        raise SystemExit(0)
    res["wall_s"] = round(time.monotonic() - t0, 4)
    emit_result({"i": i, "r": res})
emit_result({"done": len(PAYLOAD["jobs"]), "wall_s": round(time.monotonic() - t_start, 3), "warm_s": WARM["s"],
             "cpu_s": round(sum(os.times()[:4]), 3)})  # this process and its children (for benchmarks)
'''
)

# The same jobs, one per jailed process (a jail that forbids fork): no fork, no isolation needed.
SINGLE = WORKER.replace("        res = run_job(PAYLOAD", "        res = run_child(PAYLOAD")
assert SINGLE != WORKER
