"""Programmatic composer: chains 1-5 seed operators into a KernelBench-format task, reproducibly from a seed.

Shapes are inferred by running the chain on the meta device (no memory, no compute), so every emitted composition
type-checks at its real size. Sizes come from a profile: `gpu` scales the batch dimension so that the estimated
eager time on the target GPU (FLOPs and bytes counted on meta tensors against peak rates) falls inside the target
window; `small` keeps tensors tiny for CPU tests. Code style varies by seed: module attributes or hyperparameters
passed through get_init_inputs, tensor methods or torch functions, learned parameters or extra inputs for binary
operators, and several naming schemes.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

from pipeline.synth.catalog import SeedOp, resolve

# Kinds the composer leaves out: losses reduce to scalars, recurrent/attention return structures,
# embeddings need integer inputs.
EXCLUDED_KINDS = {"loss", "recurrent", "attention", "embedding", "dropout", "other"}


@dataclass
class SizeProfile:
    name: str = "small"
    dims: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)  # non-batch dims per rank
    batch: tuple[int, int] = (2, 8)
    new_features: tuple[int, ...] = (8, 16)
    max_elements: int = 2**15  # any tensor in the chain
    target_ms: tuple[float, float] | None = None  # estimated eager time window (gpu)
    peak_flops: float = 5.0e13  # fp32 FLOP/s of the target GPU (H200 ~67 TF fp32; a practical 50)
    peak_bytes_s: float = 3.5e12  # practical HBM bandwidth (H200 measured ~4.2 TB/s copy)
    launch_ms: float = 0.006


def profile(
    name: str, target_ms: tuple[float, float] = (2.0, 40.0), max_tensor_mb: float | None = None
) -> SizeProfile:
    """The sizes tasks are composed at. gpu: every tensor of the chain at most `max_tensor_mb` (float32; None: the
    validator's default largest output), so that no composed task is made only to be dropped for its size."""
    if max_tensor_mb is None:
        from pipeline.validate.settings import ValidateSettings

        max_tensor_mb = float(ValidateSettings.model_fields["max_output_mb"].default)
    if name == "small":
        return SizeProfile(
            name="small",
            dims={
                1: [()],
                2: [(16,), (24,), (32,)],
                3: [(8, 16), (4, 32), (6, 20)],
                4: [(4, 8, 8), (3, 10, 12), (8, 6, 6)],
                5: [(4, 4, 6, 6), (2, 6, 4, 8)],
            },
            batch=(2, 8),
            new_features=(8, 12, 16),
            max_elements=2**15,
        )
    if name == "gpu":
        return SizeProfile(
            name="gpu",
            dims={
                1: [()],
                2: [(1024,), (2048,), (4096,), (8192,), (16384,)],
                3: [(64, 4096), (128, 2048), (256, 1024), (32, 8192), (512, 512)],
                4: [(16, 128, 128), (32, 64, 64), (64, 64, 64), (3, 256, 256), (128, 32, 32), (8, 512, 512)],
                5: [(16, 16, 64, 64), (8, 32, 32, 32), (32, 8, 32, 32)],
            },
            batch=(1, 1 << 20),
            new_features=(64, 128, 256, 512, 1024),
            max_elements=max(2, int(max_tensor_mb * 2**20) // 4),
            target_ms=target_ms,
        )
    raise ValueError(f"unknown size profile {name!r}: small | gpu")


@dataclass
class Step:
    op: SeedOp
    ctor: dict[str, Any]
    call: dict[str, Any]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    other_shape: tuple[int, ...] | None
    other_as_param: bool


@dataclass
class Composed:
    code: str
    ops: list[str]
    data_source: str
    seed: int
    est_ms: float | None
    input_shape: tuple[int, ...]


class CompositionError(RuntimeError):
    pass


def sample_n_ops(rng: random.Random, mix: dict[int, float]) -> int:
    ks = sorted(int(k) for k in mix)
    return rng.choices(ks, weights=[mix[k] if k in mix else mix[str(k)] for k in ks])[0]


def _callable_for(op: SeedOp):
    import importlib

    mod, _, attr = op.name.rpartition(".")
    return getattr(importlib.import_module(mod), attr)


def _symbols(rng: random.Random, prof: SizeProfile, shape: tuple[int, ...]) -> dict[str, int]:
    c = shape[1] if len(shape) > 1 else shape[0]
    last = shape[-1]
    return {
        "$COUT": rng.choice(prof.new_features),
        "$FOUT": rng.choice(prof.new_features),
        "$G": next(g for g in (8, 4, 2, 1) if c % g == 0),
        "$HEADS": next(h for h in (8, 4, 2, 1) if last % h == 0),
    }


def _apply_meta(step_op: SeedOp, ctor: dict, call: dict, x, other, max_elements: int | None = None):
    """Run one op on meta tensors; returns the output (meta). A module's weight past `max_elements`: no use."""
    import torch

    fn = _callable_for(step_op)
    with torch.device("meta"):
        if step_op.is_module:
            m = fn(**ctor)
            if max_elements is not None:
                big = [t.shape for t in [*m.parameters(), *m.buffers()] if t.numel() > max_elements]
                if big:
                    raise CompositionError(f"{step_op.name}: weight {tuple(big[0])} past the size cap")
            y = m(x) if other is None else m(x, other)
        else:
            y = fn(x, **call) if other is None else fn(x, other, **call)
    if step_op.output_index >= 0:
        y = y[step_op.output_index]
    return y


def _meta_args(args: dict[str, Any], shape: tuple[int, ...], syms: dict[str, int]) -> dict[str, Any]:
    import torch

    out = {}
    for k, v in args.items():
        if v == "$PARAM_C":
            out[k] = torch.empty(shape[1] if len(shape) > 1 else shape[0], device="meta")
        else:
            out[k] = resolve(v, shape, syms)
    return out


def _other_shape(op: SeedOp, shape: tuple[int, ...], syms: dict[str, int]) -> tuple[int, ...] | None:
    if op.arity == 1:
        return None
    if op.other_shape == "matmul":
        return tuple(shape[:-2]) + (shape[-1], syms["$FOUT"]) if len(shape) >= 2 else (shape[-1], syms["$FOUT"])
    return tuple(shape)


def _domain_ok(op: SeedOp, current_range: str) -> bool:
    if op.domain == "any":
        return True
    if op.domain == "positive":
        return current_range in ("positive", "unit")
    return current_range == "unit"


def _build_chain(
    ops: list[SeedOp],
    rng: random.Random,
    prof: SizeProfile,
    shape: tuple[int, ...],
    in_range: str,
    fixed: list[tuple[SeedOp, dict, dict, dict]] | None = None,
) -> list[Step]:
    """Run the chain on meta at `shape`; `fixed` replays earlier choices (when resizing)."""
    import torch

    steps: list[Step] = []
    x = torch.empty(shape, device="meta")
    for i, op in enumerate(ops):
        cur = tuple(x.shape)
        if fixed and i < len(fixed) and fixed[i] is not None:
            syms = fixed[i][3]
        else:
            syms = _symbols(rng, prof, cur)
        ctor = _meta_args(op.ctor_args, cur, syms)
        call = _meta_args(op.call_args, cur, syms)
        oshape = _other_shape(op, cur, syms)
        other = torch.empty(oshape, device="meta") if oshape else None
        if other is not None and other.numel() > prof.max_elements:
            raise CompositionError(f"{op.name}: second operand {oshape} past the size cap")
        y = _apply_meta(op, ctor, call, x, other, prof.max_elements)
        if (
            not isinstance(y, torch.Tensor)
            or not y.is_floating_point()
            or y.numel() < 2
            or y.numel() > prof.max_elements
        ):
            raise CompositionError(f"{op.name}: output {getattr(y, 'shape', None)} unusable")
        steps.append(Step(op, ctor, call, cur, tuple(y.shape), oshape, False))
        steps[-1].syms = syms  # type: ignore[attr-defined]
        x = y
    return steps


def _estimate_ms(steps: list[Step], prof: SizeProfile) -> float:
    """Eager time estimate: every aten op pays max(FLOPs / peak, bytes moved / bandwidth) plus a launch cost."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    total = {"bytes": 0, "launches": 0}

    class _Bytes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not func.is_view:
                n = 0
                for t in torch.utils._pytree.tree_leaves((args, kwargs, out)):
                    if isinstance(t, torch.Tensor):
                        n += t.numel() * t.element_size()
                total["bytes"] += n
                total["launches"] += 1
            return out

    x = torch.empty(steps[0].in_shape, device="meta")
    with FlopCounterMode(display=False) as fc, _Bytes():
        for s in steps:
            other = torch.empty(s.other_shape, device="meta") if s.other_shape else None
            x = _apply_meta(s.op, s.ctor, s.call, x, other)
    flops = fc.get_total_flops()
    return 1e3 * (flops / prof.peak_flops + total["bytes"] / prof.peak_bytes_s) + prof.launch_ms * total["launches"]


def _by_kind(pool: list[SeedOp], rng: random.Random, k: int) -> list[SeedOp]:
    """Up to k distinct ops, kind first (uniform over kinds), so 150 pointwise ops do not drown 6 convolutions."""
    kinds: dict[str, list[SeedOp]] = {}
    for o in pool:
        kinds.setdefault(o.kind, []).append(o)
    out: list[SeedOp] = []
    names = sorted(kinds)
    for _ in range(k * 3):
        if not names:
            break
        kind = rng.choice(names)
        out.append(rng.choice(kinds[kind]))
    seen, uniq = set(), []
    for o in out:
        if o.name not in seen:
            seen.add(o.name)
            uniq.append(o)
    return uniq[:k]


_SHAPE_KINDS = {"shape", "indexing", "padding"}


def _pick_chain(pool: list[SeedOp], n_ops: int, rng: random.Random, prof: SizeProfile) -> tuple[list[Step], str]:
    """Choose ops one by one so each accepts the previous output; returns steps at a provisional size."""
    compute_pool = [o for o in pool if o.kind not in _SHAPE_KINDS]
    for _attempt in range(40):
        # Data movement alone is not a task: the first op always computes.
        first = _by_kind(compute_pool, rng, 1)[0]
        rank = rng.choice(first.input_ranks)
        dims = rng.choice(prof.dims[rank])
        if first.square and rank >= 2:
            dims = dims[:-2] + (dims[-1], dims[-1]) if len(dims) >= 2 else (dims[-1],)
        batch = rng.choice([2, 4, 8, 16]) if prof.name == "small" else rng.choice([4, 8, 16, 32])
        shape = (batch,) + tuple(dims) if rank > 1 else (rng.choice([1024, 4096]) if prof.name == "small" else 2**20,)
        if len(shape) != rank:
            continue
        in_range = "any" if first.domain == "any" else "unit"
        chosen = [first]
        try:
            steps = _build_chain(chosen, rng, prof, shape, in_range)
        except Exception:
            continue
        cur_range = first.out_range
        while len(chosen) < n_ops:
            out_shape = steps[-1].out_shape
            n_shape = sum(o.kind in _SHAPE_KINDS for o in chosen)
            cands = [
                o
                for o in pool
                if len(out_shape) in o.input_ranks
                and _domain_ok(o, cur_range)
                and (not o.square or (len(out_shape) >= 2 and out_shape[-1] == out_shape[-2]))
                and (n_shape == 0 or o.kind not in _SHAPE_KINDS)
                and o.name not in {c.name for c in chosen}
            ]
            for cand in _by_kind(cands, rng, 25):
                try:
                    steps = _build_chain(
                        chosen + [cand],
                        rng,
                        prof,
                        shape,
                        in_range,
                        fixed=[(s.op, s.ctor, s.call, s.syms) for s in steps] + [None],
                    )  # type: ignore
                except Exception:
                    continue
                chosen.append(cand)
                cur_range = cand.out_range
                break
            else:
                break
        if len(chosen) == n_ops:
            return steps, in_range
    raise CompositionError(f"no valid chain of {n_ops} ops found")


def _fixed_syms(steps: list[Step]) -> list[tuple]:
    return [(s.op, s.ctor, s.call, s.syms) for s in steps]  # type: ignore[attr-defined]


def _rescale(steps: list[Step], rng: random.Random, prof: SizeProfile, in_range: str) -> tuple[list[Step], float]:
    """Scale the batch (rank 1: the length) so the estimate lands in the target window."""
    est = _estimate_ms(steps, prof)
    if prof.target_ms is None:
        return steps, est
    lo, hi = prof.target_ms
    target = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    ops = [s.op for s in steps]
    shape = steps[0].in_shape
    for _ in range(4):
        factor = target / max(est, 1e-9)
        n = max(1, int(round(shape[0] * factor)))
        rest = math.prod(shape[1:]) if len(shape) > 1 else 1
        n = min(n, max(1, prof.max_elements // rest), 65536 if len(shape) > 1 else n)
        new_steps = None
        for _shrink in range(6):  # an intermediate (padding, unfold) may outgrow the limit: back off
            try:
                new_steps = _build_chain(ops, rng, prof, (n,) + tuple(shape[1:]), in_range, fixed=_fixed_syms(steps))
                break
            except Exception:
                n = max(1, n // 2)
        if new_steps is None:
            break
        new_shape = (n,) + tuple(shape[1:])
        steps, shape = new_steps, new_shape
        est = _estimate_ms(steps, prof)
        if lo <= est <= hi:
            break
    return steps, est


# ---------------------------------------------------------------------------------------------------------------
# Code emission

_NAME_SCHEMES = ("kind", "indexed", "descriptive")
_VAR_NAMES = (("x", "x"), ("h", "h"), ("out", "out"), ("y", "y"))


def _snake(name: str) -> str:
    s = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", name.split(".")[-1]).lower()
    return re.sub(r"[^a-z0-9_]", "_", s)


def _lit(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return (
            "[" + ", ".join(_lit(a) for a in v) + "]"
            if isinstance(v, list)
            else "(" + ", ".join(_lit(a) for a in v) + ("," if len(v) == 1 else "") + ")"
        )
    return repr(v)


def _expr_path(name: str) -> str:
    if name.startswith("torch.nn.functional."):
        return "F." + name[len("torch.nn.functional.") :]
    if name.startswith("torch.nn.") and name.count(".") == 2:
        return "nn." + name[len("torch.nn.") :]
    if name.startswith("transformers.activations."):
        return name[len("transformers.activations.") :]
    return name


def emit_code(steps: list[Step], rng: random.Random, est_ms: float | None) -> str:
    """KernelBench format: imports, class Model(nn.Module), module-level sizes, get_inputs, get_init_inputs."""
    import torch

    scheme = rng.choice(_NAME_SCHEMES)
    hyper_init = rng.random() < 0.5  # constructor sizes come through get_init_inputs (KernelBench style)
    use_methods = rng.random() < 0.4  # x.cumsum(dim=1) instead of torch.cumsum(x, dim=1)
    var = rng.choice(_VAR_NAMES)[0]
    init_lines: list[str] = []
    fwd_lines: list[str] = []
    init_params: list[tuple[str, Any]] = []  # (name, value) for get_init_inputs
    extra_inputs: list[tuple[str, tuple[int, ...]]] = []
    imports = {"import torch", "import torch.nn as nn"}
    used_attr: set[str] = set()

    def attr_name(step_i: int, op: SeedOp) -> str:
        base = {
            "kind": op.kind.split("_")[0] if op.is_module else "w",
            "indexed": f"op{step_i}",
            "descriptive": _snake(op.name),
        }[scheme]
        if scheme == "kind" and op.is_module:
            base = _snake(op.name)[:12].rstrip("_")
        n = base
        k = 1
        while n in used_attr:
            k += 1
            n = f"{base}{k}"
        used_attr.add(n)
        return n

    def hyper(key: str, value: Any) -> str:
        if hyper_init and isinstance(value, int) and not isinstance(value, bool):
            name = key
            existing = {n for n, _ in init_params}
            k = 1
            while name in existing:
                k += 1
                name = f"{key}_{k}"
            init_params.append((name, value))
            return name
        return _lit(value)

    for i, s in enumerate(steps):
        op = s.op
        if op.name.startswith("torch.nn.functional."):
            imports.add("import torch.nn.functional as F")
        if op.source == "transformers":
            imports.add(f"from transformers.activations import {op.name.rsplit('.', 1)[-1]}")
        # Tensor-valued constructor / call args ($PARAM_C) become learned parameters.
        call_parts = []
        for k, v in s.call.items():
            if isinstance(v, torch.Tensor):
                pname = attr_name(i, op) + "_" + k
                init_lines.append(f"self.{pname} = nn.Parameter(torch.rand({v.shape[0]}) + 0.5)")
                call_parts.append(f"{k}=self.{pname}")
            else:
                call_parts.append(f"{k}={_lit(v)}")
        other_expr = None
        if s.other_shape is not None:
            if rng.random() < 0.5 and not op.is_module:
                pname = attr_name(i, op) + "_operand" if scheme != "indexed" else f"operand{i}"
                init_lines.append(f"self.{pname} = nn.Parameter(torch.randn({', '.join(map(str, s.other_shape))}))")
                other_expr = f"self.{pname}"
            else:
                iname = f"{var}{len(extra_inputs) + 2}" if var != "x" else ["y", "z", "w", "v", "u"][len(extra_inputs)]
                extra_inputs.append((iname, s.other_shape))
                other_expr = iname
        if op.is_module:
            name = attr_name(i, op)
            cargs = ", ".join(f"{k}={hyper(k, v)}" for k, v in s.ctor.items())
            init_lines.append(f"self.{name} = {_expr_path(op.name)}({cargs})")
            call = f"self.{name}({var}{', ' + other_expr if other_expr else ''})"
        else:
            short = op.name.rsplit(".", 1)[-1]
            if (
                use_methods
                and op.source == "torch"
                and hasattr(torch.Tensor, short)
                and not any(isinstance(v, torch.Tensor) for v in s.call.values())
            ):
                args = ([other_expr] if other_expr else []) + call_parts
                call = f"{var}.{short}({', '.join(args)})"
            else:
                args = [var] + ([other_expr] if other_expr else []) + call_parts
                call = f"{_expr_path(op.name)}({', '.join(args)})"
        if op.output_index >= 0:
            call += f"[{op.output_index}]"
        fwd_lines.append(f"{var} = {call}")

    n = len(steps)
    names = ", ".join(s.op.name.rsplit(".", 1)[-1] for s in steps)
    doc = rng.choice(
        [f"Fused {n}-operator model: {names}.", f"Applies {names} in sequence.", f"A small model that chains {names}."]
    )
    fwd_args = ", ".join([var] + [nm for nm, _ in extra_inputs])
    lines = sorted(imports, key=lambda s: (not s.startswith("import torch\n") and s != "import torch", s))
    out = ["\n".join(lines), "", "", "class Model(nn.Module):", f'    """{doc}"""', ""]
    init_sig = ", ".join(["self"] + [nm for nm, _ in init_params])
    out.append(f"    def __init__({init_sig}):")
    out.append("        super().__init__()")
    out += [f"        {l}" for l in init_lines]
    out.append("")
    out.append(f"    def forward(self, {fwd_args}):")
    out += [f"        {l}" for l in fwd_lines]
    out.append(f"        return {var}")
    out += ["", ""]
    # Module-level sizes, as KernelBench writes them.
    in_shape = steps[0].in_shape
    dim_names = (
        ["batch_size", "channels", "dim1", "dim2", "dim3"]
        if len(in_shape) > 2
        else (["batch_size", "features"] if len(in_shape) == 2 else ["length"])
    )
    for dn, dv in zip(dim_names, in_shape):
        out.append(f"{dn} = {dv}")
    for nm, v in init_params:
        out.append(f"{nm} = {v}")
    out += ["", ""]
    gen = "torch.rand" if steps[0].op.domain != "any" else "torch.randn"
    inputs = [f"{gen}({', '.join(dim_names[: len(in_shape)])})"]
    for _nm, shp in extra_inputs:
        inputs.append(f"torch.randn({', '.join(map(str, shp))})")
    out.append("def get_inputs():")
    out.append(f"    return [{', '.join(inputs)}]")
    out += ["", ""]
    out.append("def get_init_inputs():")
    out.append(f"    return [{', '.join(nm for nm, _ in init_params)}]")
    return "\n".join(out) + "\n"


def _has_transformers() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformers") is not None


def usable_pool(catalog: list[SeedOp]) -> list[SeedOp]:
    """Composable ops of a kind the composer handles; transformers ops only where transformers is installed."""
    from pipeline.validate.static import STOCHASTIC_NAMES

    tf = _has_transformers()
    # Names the static stochastic filter rejects (e.g. torch.rrelu, deterministic only with training=False) are
    # left out, or the composer would produce tasks that cannot pass.
    return [
        o
        for o in catalog
        if o.composable
        and o.kind not in EXCLUDED_KINDS
        and (tf or o.source != "transformers")
        and o.name.rsplit(".", 1)[-1] not in STOCHASTIC_NAMES
    ]


def compose_task(
    catalog: list[SeedOp], seed: int, op_mix: dict[int, float], prof: SizeProfile, n_ops: int | None = None
) -> Composed:
    """One task from `seed` (same seed, same catalog: same code)."""
    import warnings

    warnings.filterwarnings("ignore", category=UserWarning)
    rng = random.Random(seed)
    pool = usable_pool(catalog)
    if not pool:
        raise CompositionError("no composable operators in the catalog")
    k = n_ops or sample_n_ops(rng, op_mix)
    last_err: Exception | None = None
    for _ in range(5):
        try:
            steps, in_range = _pick_chain(pool, k, rng, prof)
            steps, est = _rescale(steps, rng, prof, in_range)
            if prof.target_ms and est < prof.target_ms[0] / 2:
                # Too light to come near the window within the size cap: another chain, not a task the runtime
                # window would drop after a GPU validation.
                raise CompositionError(f"estimated {est:.2f} ms at the largest size, below the target window")
            code = emit_code(steps, rng, est)
            src = "transformers" if any(s.op.source == "transformers" for s in steps) else "torch"
            return Composed(
                code=code,
                ops=[s.op.name for s in steps],
                data_source=f"{src}#{len(steps)}",
                seed=seed,
                est_ms=est if prof.target_ms else None,
                input_shape=steps[0].in_shape,
            )
        except CompositionError as e:
            last_err = e
            k = max(1, k - 1) if _ >= 2 else k
    raise CompositionError(str(last_err))
