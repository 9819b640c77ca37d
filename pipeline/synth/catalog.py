"""Seed operator catalog, mined by introspection: every candidate operator is found by walking torch's namespaces,
its arguments are filled from its signature, and it is kept only if it runs on at least one trial input.

Sources: `torch.nn` module classes, `torch.nn.functional`, the torch / torch.linalg / torch.special / torch.fft
functions listed by `torch.overrides.get_testing_overrides()` (which also gives each builtin a Python signature),
and, when transformers is installed, `transformers.activations.ACT2CLS` (an optional extra, skipped when absent).

What is written by hand is only how to fill an argument *by its name* (`_ARG_RULES`: e.g. `in_channels` is the
input's channel count, `dim` is an axis); the operators themselves all come from introspection. Argument values
that depend on the input are stored as symbols resolved by the composer at the real shape:
  $C (input.shape[1]), $LAST (input.shape[-1]), $COUT / $FOUT (a new channel / feature count), $G (a divisor of $C).
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

# Trial input shapes by rank (distinct sizes so that a wrong axis shows). Square ones serve linear algebra.
TRIAL_SHAPES: dict[int, tuple[int, ...]] = {1: (16,), 2: (4, 16), 3: (2, 8, 16), 4: (2, 8, 12, 12), 5: (2, 8, 6, 6, 6)}
SQUARE_SHAPES: dict[int, tuple[int, ...]] = {2: (8, 8), 3: (2, 8, 8)}
TRIAL_SYMBOLS = {"$COUT": 12, "$FOUT": 12, "$G": 4, "$HEADS": 2}

# How to fill a required argument, by parameter name: a list of alternatives tried in order.
_ARG_RULES: dict[str, list[Any]] = {
    "in_channels": ["$C"],
    "out_channels": ["$COUT"],
    "in_features": ["$LAST"],
    "out_features": ["$FOUT"],
    "in1_features": ["$LAST"],
    "in2_features": ["$LAST"],
    "num_features": ["$C"],
    "num_channels": ["$C"],
    "normalized_shape": [["$LAST"]],
    "num_groups": ["$G"],
    "embed_dim": ["$LAST"],
    "num_heads": ["$HEADS"],
    "d_model": ["$LAST"],
    "nhead": ["$HEADS"],
    "kernel_size": [3, 2],
    "output_size": [4, [4, 4], [2, 2, 2]],
    "scale_factor": [2],
    "upscale_factor": [2],
    "downscale_factor": [2],
    "size": [None],
    "dim": [1, -1, 0],
    "dims": [[-1], [0]],
    "shifts": [1],
    "p": [2],
    "min": [-0.5],
    "max": [0.5],
    "lambd": [0.5],
    "threshold": [0.5],
    "value": [0.0],
    "diagonal": [0],
    "k": [2],
    "exponent": [2.0],
    "padding": [1],
    "pad": [[1, 1]],
    "groups": [1],
    "start_dim": [1],
    "end_dim": [-1],
    "repeats": [2],
    "chunks": [2],
    "q": [0.5],
    "ord": [2],
    "alpha": [1.0],
    "beta": [1.0],
    "eps": [1e-5],
    "negative_slope": [0.01],
    "input_size": ["$LAST"],
    "hidden_size": ["$LAST"],
    "n": [2],
    "decimals": [2],
    "beta1": [0.5],
    "weight": ["$PARAM_C"],
}
# Names under which a function takes a second tensor (arity 2).
_OTHER_NAMES = {"other", "input2", "x2", "tensor2", "mat2", "target", "end", "y", "b", "B", "vec2", "tensor1"}
# Torch names that are not operators on a tensor (creation, distributed, utilities) or not composable by design.
_SKIP_PREFIXES = (
    "_",
    "is_",
    "can_",
    "set_",
    "get_",
    "use_",
    "empty",
    "zeros",
    "ones",
    "full",
    "rand",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "tensor",
    "from_",
    "as_",
    "save",
    "load",
    "manual_seed",
    "seed",
    "sparse",
    "quantize",
    "fake_quantize",
    "q_",
    "fbgemm",
    "mkldnn",
    "miopen",
    "cudnn",
    "native_",
    "result_type",
    "promote_types",
    "numel",
    "broadcast_",
    "align_",
    "detach",
    "resize",
    "split",
    "unbind",
    "chunk",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "meshgrid",
    "block_diag",
    "cartesian_prod",
    "combinations",
    "nonzero",
    "unique",
    "where",
    "masked",
    "index_put",
    "scatter",
    "bincount",
    "histc",
    "histogram",
    "bucketize",
    "searchsorted",
    "stft",
    "istft",
    "allclose",
    "equal",
    "nested",
    "sym_",
    "segment",
    "embedding",
    "ctc",
    "lstm",
    "gru",
    "rnn",
    "quantized",
    "choose_qparams",
    "dequantize",
    "constant_pad",
    "conv_tbc",
    "affine_grid",
    "grid_sampler",
    "batch_norm_",
    "cdist",
    "pdist",
    "tril_indices",
    "triu_indices",
    "clone",
    "complex",
    "polar",
    "view_as_",
    "frombuffer",
    "asarray",
    "typename",
    "hamming",
    "hann",
    "bartlett",
    "blackman",
    "kaiser",
    "normal",
    "poisson",
    "bernoulli",
    "multinomial",
    "cov",
    "corrcoef",
    "cat",
    "stack",
    "concat",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "row_stack",
    "einsum",
    "tensordot",
    "chain_matmul",
    "multi_dot",
    "broadcast",
    "atleast_",
    "promote",
)
_NN_SKIP_CLASSES = {
    "Module",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
    "Container",
    "Identity",
}


@dataclass
class SeedOp:
    """One runnable seed operator (a row of the `seed_operators` table)."""

    name: str  # dotted call path, e.g. torch.nn.Conv2d, torch.nn.functional.gelu, torch.cumsum
    source: str  # torch.nn | torch.nn.functional | torch | torch.linalg | torch.special | torch.fft | transformers
    kind: str  # module category or behaviour class (pointwise, reduction, scan, normalization, linalg, ...)
    is_module: bool  # constructed once in __init__ and called in forward
    arity: int  # tensor inputs: 1, or 2 (second tensor: see other_shape)
    other_shape: str  # "" | same | matmul: shape rule for the second tensor
    ctor_args: dict[str, Any]  # constructor keyword arguments (symbols like $C resolved at composition)
    call_args: dict[str, Any]  # call keyword arguments (symbols likewise)
    input_ranks: list[int]  # input ranks it ran on
    square: bool  # needs square trailing matrices
    dtypes: list[str]  # input dtypes it ran on
    output_index: int  # -1: returns a tensor; else index into the returned tuple
    domain: str  # any | positive | unit: input values it is finite on
    out_range: str  # any | positive | unit: observed output values (for chaining domain-restricted ops)
    pointwise: bool  # each output element depends on one input element only
    stochastic: bool  # consumes the RNG or differs between two runs
    mode_dependent: bool  # output differs between train() and eval()
    composable: bool  # float output, deterministic, mode independent: the composer may use it
    signature: str  # the signature it was mined from
    note: str = ""  # why not composable, if not

    def to_row(self) -> dict[str, Any]:
        d = asdict(self)
        d["ctor_args"] = json.dumps(self.ctor_args, sort_keys=True)
        d["call_args"] = json.dumps(self.call_args, sort_keys=True)
        return d

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "SeedOp":
        d = dict(row)
        d["ctor_args"] = json.loads(d["ctor_args"])
        d["call_args"] = json.loads(d["call_args"])
        d["input_ranks"] = list(d["input_ranks"])
        d["dtypes"] = list(d["dtypes"])
        return cls(**{k: d[k] for k in cls.__dataclass_fields__})


@dataclass
class MiningReport:
    tried: int = 0
    runnable: int = 0
    failures: dict[str, str] = field(default_factory=dict)  # name -> why it did not run


# ---------------------------------------------------------------------------------------------------------------
# Symbol resolution (shared with the composer)


def resolve(value: Any, shape: tuple[int, ...], symbols: dict[str, int]) -> Any:
    """Replace $-symbols in a (nested) argument value by integers for an input of `shape`."""
    import torch

    if isinstance(value, list):
        return [resolve(v, shape, symbols) for v in value]
    if isinstance(value, str) and value.startswith("$"):
        if value == "$C":
            return shape[1] if len(shape) > 1 else shape[0]
        if value == "$LAST":
            return shape[-1]
        if value == "$PARAM_C":
            return torch.rand(shape[1] if len(shape) > 1 else shape[0]) + 0.5
        return symbols[value]
    return value


def _trial_symbols(shape: tuple[int, ...]) -> dict[str, int]:
    return dict(TRIAL_SYMBOLS)


# ---------------------------------------------------------------------------------------------------------------
# Candidate discovery


def _nn_module_candidates() -> list[tuple[str, Any]]:
    import torch.nn as nn

    out = []
    for name in sorted(dir(nn)):
        obj = getattr(nn, name)
        if not (inspect.isclass(obj) and issubclass(obj, nn.Module)) or name in _NN_SKIP_CLASSES:
            continue
        if name.startswith(("Lazy", "_")) or "Container" in name:
            continue
        out.append((f"torch.nn.{name}", obj))
    return out


def _functional_candidates() -> list[tuple[str, Any]]:
    import torch.nn.functional as F

    out = []
    for name in sorted(dir(F)):
        obj = getattr(F, name)
        if name.startswith("_") or not callable(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
            continue
        if getattr(obj, "__module__", "") not in ("torch.nn.functional", "torch._C._nn", None) and not type(
            obj
        ).__name__.startswith("builtin"):
            continue
        out.append((f"torch.nn.functional.{name}", obj))
    return out


def _torch_function_candidates() -> list[tuple[str, Any, Callable]]:
    """(dotted name, function, signature lambda) for torch / linalg / special / fft functions."""
    import torch
    from torch.overrides import get_testing_overrides

    namespaces = {"torch": torch, "torch.linalg": torch.linalg, "torch.special": torch.special, "torch.fft": torch.fft}
    overrides = get_testing_overrides()
    out = []
    seen: set[int] = set()
    for ns_name, ns in namespaces.items():
        for name in sorted(dir(ns)):
            if name.startswith("_") or name.endswith("_"):
                continue
            if ns_name == "torch" and name.startswith(_SKIP_PREFIXES):
                continue
            obj = getattr(ns, name, None)
            if obj is None or not callable(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
                continue
            sig_fn = overrides.get(obj)
            if sig_fn is None or id(obj) in seen and ns_name == "torch":
                continue
            seen.add(id(obj))
            out.append((f"{ns_name}.{name}", obj, sig_fn))
    return out


def _transformers_candidates() -> list[tuple[str, Any]]:
    try:
        from transformers.activations import ACT2CLS
    except Exception:  # optional extra: absent or broken install
        return []
    out = []
    for key in sorted(ACT2CLS):
        cls = ACT2CLS[key]
        if isinstance(cls, tuple):
            cls = cls[0]
        out.append((f"transformers.activations.{cls.__name__}", cls))
    # Deduplicate classes reachable under several keys.
    seen, uniq = set(), []
    for n, c in out:
        if n not in seen:
            seen.add(n)
            uniq.append((n, c))
    return uniq


# ---------------------------------------------------------------------------------------------------------------
# Probing


def _params(sig: inspect.Signature, skip_first: int) -> list[inspect.Parameter]:
    ps = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return ps[skip_first:]


def _arg_options(params: list[inspect.Parameter]) -> tuple[list[dict[str, Any]], str | None, str | None]:
    """Alternatives for the required arguments; (options, name of a second tensor arg, a missing arg's name)."""
    required = [p for p in params if p.default is inspect.Parameter.empty]
    other = None
    combos: list[dict[str, Any]] = [{}]
    for p in required:
        if p.name in _OTHER_NAMES and other is None:
            other = p.name
            continue
        rule = _ARG_RULES.get(p.name)
        if rule is None:
            return [], other, p.name
        combos = [dict(c, **{p.name: v}) for c in combos for v in rule][:12]
    return combos, other, None


def _tensor_out(y: Any) -> tuple[Any, int]:
    import torch

    if isinstance(y, torch.Tensor):
        return y, -1
    if isinstance(y, (tuple, list)) and y and isinstance(y[0], torch.Tensor):
        return y[0], 0
    return None, -2


def _inputs_for(rank: int, square: bool, domain: str, gen) -> Any:
    import torch

    shape = (SQUARE_SHAPES if square else TRIAL_SHAPES)[rank]
    x = torch.randn(shape, generator=gen)
    if domain == "positive":
        x = x.abs() + 0.1
    elif domain == "unit":
        x = torch.rand(shape, generator=gen) * 0.8 + 0.1
    return x


def _other_for(x, rule: str, gen):
    import torch

    if rule == "same":
        return torch.randn(x.shape, generator=gen)
    if rule == "matmul":
        return torch.randn(
            tuple(x.shape[:-2]) + (x.shape[-1], TRIAL_SYMBOLS["$FOUT"])
            if x.dim() >= 2
            else (x.shape[-1], TRIAL_SYMBOLS["$FOUT"]),
            generator=gen,
        )
    raise ValueError(rule)


def _probe(
    make_call: Callable[[dict, dict], Callable],
    options: list[dict],
    ctor_options: list[dict],
    arity_rules: list[str],
    is_module: bool,
) -> dict[str, Any] | None:
    """Find argument choices and input ranks on which the op runs; None if it never does."""
    import torch

    gen = torch.Generator().manual_seed(0)
    best = None
    for ctor in ctor_options:
        for call in options:
            for other_rule in arity_rules:
                for square in (False, True):
                    for domain in ("any", "positive", "unit"):
                        ranks, out_idx, last_fn, last_x = [], None, None, None
                        for rank in SQUARE_SHAPES if square else TRIAL_SHAPES:
                            x = _inputs_for(rank, square, domain, gen)
                            try:
                                fn = make_call(_resolved(ctor, x), _resolved(call, x))
                                args = (x,) if other_rule == "" else (x, _other_for(x, other_rule, gen))
                                y, idx = _tensor_out(fn(*args))
                            except Exception:
                                continue
                            if (
                                y is None
                                or not torch.is_floating_point(y)
                                and y.dtype != torch.bool
                                and y.dtype not in (torch.int64, torch.int32)
                                and not y.is_complex()
                            ):
                                continue
                            if y.is_floating_point() and y.numel() and not torch.isfinite(y).all():
                                continue
                            ranks.append(rank)
                            out_idx, last_fn, last_x = idx, fn, args
                        if ranks:
                            cand = {
                                "ctor": ctor,
                                "call": call,
                                "other": other_rule,
                                "square": square,
                                "domain": domain,
                                "ranks": ranks,
                                "out_idx": out_idx,
                                "fn": last_fn,
                                "args": last_x,
                                "make": make_call,
                            }
                            if best is None or len(ranks) > len(best["ranks"]):
                                best = cand
                            if len(ranks) >= 3 or best is not None:
                                return best
    return best


def _resolved(args: dict[str, Any], x) -> dict[str, Any]:
    return {k: resolve(v, tuple(x.shape), _trial_symbols(tuple(x.shape))) for k, v in args.items()}


def _characterise(name: str, source: str, found: dict, is_module: bool, sig: str, kind_hint: str) -> SeedOp:
    """Run the found call again to measure behaviour: dtype, range, pointwise, scan, stochastic, mode."""
    import torch

    fn, args = found["fn"], found["args"]
    torch.manual_seed(1)
    state = torch.get_rng_state()
    y1, _ = _tensor_out(fn(*args))
    consumed = not torch.equal(state, torch.get_rng_state())
    torch.manual_seed(2)
    y2, _ = _tensor_out(fn(*args))
    stochastic = consumed or not _same(y1, y2)
    mode_dependent = False
    if is_module and isinstance(fn, torch.nn.Module):
        fn.train()
        torch.manual_seed(3)
        a, _ = _tensor_out(fn(*args))
        fn.eval()
        torch.manual_seed(3)
        b, _ = _tensor_out(fn(*args))
        fn.train()
        mode_dependent = not _same(a, b)
    x = args[0]
    float_out = y1.is_floating_point()
    pointwise = False
    scan = False
    if float_out and y1.shape == x.shape and x.numel() > 1:
        # Perturb one element: pointwise ops change that element only; scans change it and those after it.
        x2 = x.clone()
        flat = x2.view(-1)
        j = flat.numel() // 2
        flat[j] = flat[j] * 0.5 + 0.3
        try:
            y3, _ = _tensor_out(fn(x2, *args[1:]))
            diff = (y3 != y1).view(-1)
            changed = diff.nonzero().view(-1).tolist()
            pointwise = changed == [j] or changed == []
            scan = not pointwise and bool(changed) and min(changed) == j and "dim" in found["call"]
        except Exception:
            pass
    finite = y1[torch.isfinite(y1)] if float_out else y1
    out_range = "any"
    if float_out and finite.numel():
        if bool((finite > 0).all()):
            out_range = "unit" if bool((finite < 1).all()) else "positive"
    kind = kind_hint
    if not is_module:
        if source == "torch.linalg" or name.split(".")[-1] in (
            "mm",
            "bmm",
            "matmul",
            "mv",
            "inner",
            "outer",
            "addmm",
            "baddbmm",
            "addbmm",
            "kron",
            "det",
        ):
            kind = "linalg"
        elif pointwise:
            kind = "binary_pointwise" if found["other"] else "pointwise"
        elif scan:
            kind = "scan"
        elif float_out and y1.shape == x.shape and "dim" in found["call"]:
            kind = "normalization"
        elif y1.numel() < x.numel() and ("dim" in found["call"] or y1.dim() < x.dim()):
            kind = "reduction"
        elif y1.numel() == x.numel():
            kind = "indexing" if any(k in found["call"] for k in ("dims", "shifts", "diagonal", "k")) else "shape"
        else:
            kind = "other"
    note = ""
    if not float_out:
        note = f"{y1.dtype} output"
    elif y1.is_complex():
        note = "complex output"
    elif stochastic:
        note = "stochastic"
    elif mode_dependent:
        note = "differs between train and eval"
    elif y1.numel() <= 1:
        note = "scalar output"
    composable = not note
    dtypes = ["float32"]
    try:
        _tensor_out(found["fn"](*[a.double() for a in args]))
        dtypes.append("float64")
    except Exception:
        pass
    return SeedOp(
        name=name,
        source=source,
        kind=kind,
        is_module=is_module,
        arity=1 if not found["other"] else 2,
        other_shape=found["other"],
        ctor_args=found["ctor"],
        call_args=found["call"],
        input_ranks=found["ranks"],
        square=found["square"],
        dtypes=dtypes,
        output_index=found["out_idx"],
        domain=found["domain"],
        out_range=out_range,
        pointwise=pointwise,
        stochastic=stochastic,
        mode_dependent=mode_dependent,
        composable=composable,
        signature=sig[:300],
        note=note,
    )


def _same(a, b) -> bool:
    import torch

    return a.shape == b.shape and bool(
        torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    )


def _module_kind(cls) -> str:
    mod = getattr(cls, "__module__", "")
    last = mod.rsplit(".", 1)[-1]
    return {
        "conv": "convolution",
        "pooling": "pooling",
        "batchnorm": "normalization",
        "instancenorm": "normalization",
        "normalization": "normalization",
        "activation": "activation",
        "linear": "linear",
        "loss": "loss",
        "padding": "padding",
        "pixelshuffle": "shape",
        "upsampling": "upsampling",
        "distance": "distance",
        "dropout": "dropout",
        "flatten": "shape",
        "channelshuffle": "shape",
        "fold": "shape",
        "sparse": "embedding",
        "rnn": "recurrent",
        "transformer": "attention",
        "activations": "activation",
    }.get(last, last or "module")


def _mine_module(name: str, cls, source: str) -> SeedOp | None:

    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return None
    ctor_options, _, missing = _arg_options(_params(sig, 1))
    if missing:
        raise LookupError(f"no rule for constructor argument {missing!r}")
    # Mode-dependent norms get a second chance without running statistics.
    if "track_running_stats" in sig.parameters:
        ctor_options = ctor_options + [dict(c, track_running_stats=False) for c in ctor_options]
    try:
        fsig = inspect.signature(cls.forward)
        fparams = _params(fsig, 2)  # self, input
    except (TypeError, ValueError):
        fparams = []
    req_f = [p for p in fparams if p.default is inspect.Parameter.empty]
    arity_rules = [""] if not req_f else ["same", "matmul"] if len(req_f) == 1 else []
    if not arity_rules:
        raise LookupError(f"forward takes {len(req_f) + 1} tensors")

    def make(ctor: dict, call: dict):
        m = cls(**ctor)
        return m

    best = None
    for ctor in ctor_options:
        found = _probe(make, [{}], [ctor], arity_rules, True)
        if found is None:
            continue
        op = _characterise(name, source, found, True, f"{cls.__name__}{sig}", _module_kind(cls))
        if op.composable:
            return op
        best = best or op
    if best is None:
        raise RuntimeError("did not run on any trial input")
    return best


def _mine_function(name: str, fn, sig_fn: Callable | None, source: str) -> SeedOp | None:
    try:
        sig = inspect.signature(sig_fn or fn)
    except (TypeError, ValueError):
        raise LookupError("no signature") from None
    params = _params(sig, 0)
    if not params:
        raise LookupError("takes no arguments")
    first = params[0].name
    if first in ("size", "shape", "n", "tensors", "start", "window_length", "sequence", "indices", "seed"):
        raise LookupError(f"first argument {first!r} is not a tensor")
    options, other, missing = _arg_options(params[1:])
    if missing:
        raise LookupError(f"no rule for argument {missing!r}")
    arity_rules = [""] if other is None else (["matmul", "same"] if other in ("mat2", "vec2") else ["same", "matmul"])

    def make(ctor: dict, call: dict):
        return lambda *a: fn(*a, **call)

    found = _probe(make, options, [{}], arity_rules, False)
    if found is None:
        raise RuntimeError("did not run on any trial input")
    return _characterise(name, source, found, False, f"{name.rsplit('.', 1)[-1]}{sig}", "function")


def build_catalog(
    sources: Iterable[str] = ("torch.nn", "torch.nn.functional", "torch", "transformers"),
    limit: int | None = None,
    report: MiningReport | None = None,
) -> list[SeedOp]:
    """Mine runnable seed operators. `sources` picks namespaces ("torch" covers torch/linalg/special/fft);
    `limit` caps the candidates tried per source (for quick tests). Every returned op ran at least once."""
    import torch

    report = report if report is not None else MiningReport()
    sources = list(sources)
    jobs: list[tuple[str, str, Callable[[], SeedOp | None]]] = []
    if "torch.nn" in sources:
        for n, c in _nn_module_candidates()[:limit]:
            jobs.append((n, "torch.nn", lambda n=n, c=c: _mine_module(n, c, "torch.nn")))
    if "torch.nn.functional" in sources:
        for n, f in _functional_candidates()[:limit]:
            jobs.append((n, "torch.nn.functional", lambda n=n, f=f: _mine_function(n, f, None, "torch.nn.functional")))
    if "torch" in sources:
        from torch.overrides import get_testing_overrides

        ov = get_testing_overrides()
        for n, f, s in _torch_function_candidates()[:limit]:
            src = n.rsplit(".", 1)[0]
            jobs.append((n, src, lambda n=n, f=f, s=s, src=src: _mine_function(n, f, s, src)))
        del ov
    if "transformers" in sources:
        for n, c in _transformers_candidates()[:limit]:
            jobs.append((n, "transformers", lambda n=n, c=c: _mine_module(n, c, "transformers")))
    ops: list[SeedOp] = []
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, _src, job in jobs:
                report.tried += 1
                try:
                    op = job()
                except Exception as e:  # every failure is recorded, never fatal
                    report.failures[name] = f"{type(e).__name__}: {str(e)[:160]}"
                    continue
                if op is not None:
                    ops.append(op)
    finally:
        torch.set_num_threads(prev_threads)
    report.runnable = len(ops)
    return ops


# ---------------------------------------------------------------------------------------------------------------
# Cache


def default_cache_path() -> Path:
    import torch

    base = Path(os.environ.get("OPFORGE_CACHE_DIR", Path.home() / ".cache" / "opforge"))
    return base / f"seed_operators-torch{torch.__version__.split('+')[0]}.parquet"


def write_catalog(ops: list[SeedOp], path: Path) -> Path:
    from pipeline.storage import write_table

    write_table("seed_operators", [o.to_row() for o in ops], Path(path))
    return Path(path)


def read_catalog(path: Path) -> list[SeedOp]:
    import pyarrow.parquet as pq

    return [SeedOp.from_row(r) for r in pq.read_table(path).to_pylist()]


def packaged_catalog_path() -> Path:
    """The catalog mined at release time, shipped with the package (valid for the torch version in its name)."""
    import torch

    return Path(__file__).parent / "data" / f"seed_operators-torch{torch.__version__.split('+')[0]}.parquet"


def load_catalog(path: Path | None = None, rebuild: bool = False) -> list[SeedOp]:
    """The catalog from `path`, else the user cache, else the packaged file for this torch version; mined (and
    cached) when none exists or `rebuild`."""
    if path is not None and Path(path).exists() and not rebuild:
        return read_catalog(Path(path))
    if path is None and not rebuild:
        for p in (default_cache_path(), packaged_catalog_path()):
            if p.exists():
                return read_catalog(p)
    ops = build_catalog()
    write_catalog(ops, Path(path) if path else default_cache_path())
    return ops
