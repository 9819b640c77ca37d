"""Scale-aware output comparison and the degenerate-task test (torch + stdlib only; runs on the trusted side).

The rule, per output tensor (float or complex; complex as (real, imaginary) pairs):

    ok  iff  |out - ref| <= atol_eff + rtol * |ref|  elementwise,  atol_eff = max(atol_floor, scale_atol * scale)

where `scale` is the root mean square of the reference's finite values (magnitude and spread together:
rms^2 = mean^2 + variance). A row softmax over 32,768 columns (outputs ~3e-5) is judged at its own scale, so a
constant-zero kernel fails there; an output of magnitude 1e3 gets an absolute slack in proportion. NaN must match NaN
and inf the same inf. Integer and bool outputs must be equal. KernelBench's fixed verdict (allclose with
atol = rtol = 1e-2) is computed too and kept in the record (`kernelbench_ok`), for comparison only.

`degenerate(ref_outputs)` compares reference outputs ACROSS inputs (never elements within one output), with the same
rule: a task whose every output is within tolerance of the first input's output does not depend on its input.

Small outputs (at most SPREAD_NUMEL elements: a loss, a norm) have no spread of their own, so the tolerances above are
also capped by their spread ACROSS the inputs drawn (`spread_caps`): rtol and scale_atol at most SPREAD_K times the
relative standard deviation of each element over the reference outputs, never below SPREAD_FLOOR: an output within
half a standard deviation of the reference. A cross-entropy over 10 classes moves by ~0.6% of its value from one
input to the next; at 1% + 1% one constant fitted every draw, at its spread's cap about 4 in 10.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pipeline.evaluate.tensorio import (
    CHUNK,  # elements compared at a time: bounded temporaries for GiB outputs
    flatten,
)

KB_ATOL = KB_RTOL = 1e-2  # KernelBench's verdict (settings `atol`, `rtol`), recorded beside ours
SPREAD_NUMEL = 16  # outputs this small are judged within their spread across inputs too
SPREAD_K = 0.25  # rtol and scale_atol (which add) each at most this share of the relative spread: half a sigma
SPREAD_FLOOR = 5e-4  # so never under 1e-3 of the value (float32 sums in other orders, TF32 products: ~1e-4 of a loss)


def spread_caps(ref_outputs: list[Any]) -> list[float | None]:
    """Per output (flatten order), the cap on rtol and scale_atol from its spread across the reference outputs of
    the inputs drawn (module doc); None for an output that is larger, not float, not the same shape in every
    output, or not finite. [] with fewer than three outputs (no spread to read)."""
    items = [flatten(r) for r in ref_outputs]
    if len(items) < 3 or any(len(x) != len(items[0]) for x in items):
        return []
    caps: list[float | None] = []
    for col in zip(*items):
        rows = []
        for v in col:
            if type(v) is float:
                v = torch.tensor(v)
            if not (isinstance(v, torch.Tensor) and v.is_floating_point() and 0 < v.numel() <= SPREAD_NUMEL):
                break
            if v.shape != (col[0].shape if isinstance(col[0], torch.Tensor) else ()):
                break
            rows.append(v.detach().to("cpu", torch.float64).reshape(-1))
        if len(rows) != len(col) or not all(bool(torch.isfinite(r).all()) for r in rows):
            caps.append(None)
            continue
        st = torch.stack(rows)
        rel = st.std(dim=0) / st.abs().mean(dim=0).clamp_min(1e-30)
        caps.append(max(SPREAD_FLOOR, SPREAD_K * float(rel.min())))
    return caps


def _capped(tol: dict[str, float], cap: float | None) -> dict[str, float]:
    if cap is None:
        return tol
    return {**tol, "rtol": min(tol["rtol"], cap), "scale_atol": min(tol["scale_atol"], cap)}


def _real(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    return t.double() if t.dtype == torch.float64 else t.float()


def _pieces(t: torch.Tensor, device: str | None, real: bool = True):
    """`t` flattened, in pieces of CHUNK elements, each on `device` (None: where it is); `real`: as float (complex
    as real pairs), else as stored (integers are compared exactly: a float copy would round them past 2^24)."""
    r = t.reshape(-1)
    for i in range(0, r.numel(), CHUNK):
        piece = r[i : i + CHUNK]
        piece = piece.to(device) if device else piece
        yield _real(piece).reshape(-1) if real else piece


def scale_of(ref: torch.Tensor, device: str | None = None) -> float:
    """Root mean square of the finite reference values (0.0 when there are none). Each piece's norm is taken of the
    piece divided by its largest magnitude, and the pieces are summed relative to the largest of all: the squares
    of float64 values past 1e154 overflow, and an infinite scale would let any finite output pass."""
    parts, n = [], 0
    for r in _pieces(ref, device):
        fin = torch.isfinite(r)
        if not bool(fin.all()):
            r = r[fin]
        top = float(r.abs().max()) if r.numel() else 0.0
        if top > 0.0:
            # in float64 without a float64 copy of the piece
            parts.append((top, float(torch.linalg.vector_norm(r / top, dtype=torch.float64))))
        n += r.numel()
    if not parts:
        return 0.0
    big = max(t for t, _ in parts)
    return big * math.sqrt(sum((t / big * v) ** 2 for t, v in parts) / n)


def compare_tensor(
    ref: torch.Tensor,
    out: torch.Tensor,
    *,
    rtol: float,
    scale_atol: float,
    atol_floor: float,
    kb_atol: float = KB_ATOL,
    kb_rtol: float = KB_RTOL,
    scale: float | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """The rule above for one pair of same-shape, same-dtype tensors; `scale` defaults to the reference's own.
    `device`: where the arithmetic runs, piece by piece (the trusted side's GPU for large outputs)."""
    res: dict[str, Any] = {
        "ok": True,
        "reason": "",
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "max_tol_err": 0.0,
        "kernelbench_ok": True,
        "scale": 0.0,
        "atol_eff": atol_floor,
    }
    if ref.numel() == 0:
        return res
    if not (ref.is_floating_point() or ref.is_complex()):
        same = all(bool(torch.equal(a, b)) for a, b in zip(_pieces(ref, device, False), _pieces(out, device, False)))
        res.update(ok=same, kernelbench_ok=same, reason="" if same else "output_mismatch: integer outputs differ")
        return res
    sc = scale_of(ref, device) if scale is None else float(scale)
    atol_eff = max(float(atol_floor), float(scale_atol) * sc)
    mabs = mrel = mtol = 0.0
    top = -math.inf
    kb = True
    bad_nonfinite = False
    for rf, of in zip(_pieces(ref, device), _pieces(out, device)):
        p = _compare_piece(rf, of, float(rtol), kb_atol, kb_rtol)
        mabs, mrel, mtol, top = max(mabs, p[0]), max(mrel, p[1]), max(mtol, p[2]), max(top, p[3])
        kb = kb and p[4]
        bad_nonfinite = bad_nonfinite or p[5]
    if device is not None and torch.device(device).type == "cuda":
        torch.cuda.empty_cache()  # the evaluator lives on beside the candidates: it keeps no GPU memory reserved
    within = top <= atol_eff
    kb = kb and not bad_nonfinite
    res.update(max_abs_err=mabs, max_rel_err=mrel, max_tol_err=mtol, kernelbench_ok=kb, scale=sc, atol_eff=atol_eff)
    if bad_nonfinite:
        res.update(ok=False, reason="output_nonfinite: NaN/inf where the reference has none")
    elif not within:
        res.update(
            ok=False,
            reason=f"output_mismatch: max_abs_err={mabs:.3g} max_rel_err={mrel:.3g} "
            f"(scale {sc:.3g}, atol_eff {atol_eff:.3g})",
        )
    return res


def _compare_piece(
    rf: torch.Tensor, of: torch.Tensor, rtol: float, kb_atol: float, kb_rtol: float
) -> tuple[float, float, float, float, bool, bool]:
    """One piece's (max |d|, max |d|/|ref|, max |d|/(1+|ref|), max(|d| - rtol*|ref|), KernelBench's verdict,
    unmatched NaN/inf)."""
    d = of - rf
    d.abs_()
    finite = torch.isfinite(d)
    if bool(finite.all()):  # the common case: both sides finite everywhere (a finite difference implies it)
        bad_nonfinite = False
        denom = rf.abs()
    else:
        both_nan = torch.isnan(rf) & torch.isnan(of)
        same_inf = torch.isinf(rf) & (rf == of)
        bad_nonfinite = bool((~finite & ~both_nan & ~same_inf).any())
        d = torch.where(finite, d, torch.zeros_like(d))
        denom = torch.where(torch.isfinite(rf), rf.abs(), torch.zeros_like(rf))  # matched NaN/inf: their d is 0
    del finite
    mabs = float(d.max())
    mrel = 0.0
    if mabs > 0:  # a reference element of 0 gives no ratio
        ratio = d / denom.clamp_min(1e-30)
        mrel = float(ratio.masked_fill_(denom == 0, 0.0).max())
        del ratio
    # excess = d - rtol * |ref|: within iff max(excess) <= atol_eff; KernelBench's verdict likewise with its own.
    excess = torch.add(d, denom, alpha=-rtol)
    top = float(excess.max())
    if kb_rtol == rtol:
        kb = top <= kb_atol
    else:
        kb = bool((d <= kb_atol + kb_rtol * denom).all())
    del excess
    mtol = float(d.div_(denom.add_(1.0)).max())  # allclose(atol=rtol=t) <=> mtol <= t (d, denom used up here)
    return mabs, mrel, mtol, top, kb, bad_nonfinite


def tolerances(s: dict[str, Any]) -> dict[str, float]:
    return {
        "rtol": float(s["rtol"]),
        "scale_atol": float(s["scale_atol"]),
        "atol_floor": float(s["atol_floor"]),
        "kb_atol": float(s["atol"]),
        "kb_rtol": float(s["rtol"]),
    }


def compare_device(s: dict[str, Any], numel: int) -> str | None:
    """Where the trusted side compares an output of `numel` elements: its GPU for large ones when the evaluation
    runs on a GPU (seconds of CPU per GiB otherwise), else the host."""
    if numel < CHUNK or s.get("device") != "cuda" or not torch.cuda.is_available():
        return None
    return "cuda"


def _on_device_or_host(fn, *args, device: str | None, **kw):
    """`fn` on the trusted side's GPU, and on the host when that GPU has no memory left (other evaluations use
    it): the verdict never depends on where it was computed."""
    if device is not None:
        try:
            return fn(*args, device=device, **kw)
        except torch.OutOfMemoryError:
            torch.cuda.empty_cache()
    return fn(*args, device=None, **kw)


def compare(
    ref: Any, out: Any, s: dict[str, Any], scales: list[float] | None = None, caps: list[float | None] | None = None
) -> dict[str, Any]:
    """Structure, type, shape, dtype, then the scale-aware rule; max errors over all tensors. Both sides are
    host tensors loaded by the trusted side. `scales`: each reference tensor's scale where `ref` holds only some of
    its elements (a sampled check), else each tensor's own. `caps`: `spread_caps` of the task's reference outputs
    (per output, flatten order)."""
    base = tolerances(s)
    ti = 0  # the tensor's index, for `scales`
    r_items, o_items = flatten(ref), flatten(out)
    res: dict[str, Any] = {
        "ok": True,
        "reason": "",
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "max_tol_err": 0.0,
        "kernelbench_ok": True,
        "scales": [],
    }
    if len(r_items) != len(o_items):
        return {
            **res,
            "ok": False,
            "kernelbench_ok": False,
            "reason": f"output_structure: expected {len(r_items)} outputs, got {len(o_items)}",
        }
    for i, (r, o) in enumerate(zip(r_items, o_items)):
        tol = _capped(base, caps[i] if caps and i < len(caps) else None)
        if isinstance(r, torch.Tensor):
            if not isinstance(o, torch.Tensor):
                return {
                    **res,
                    "ok": False,
                    "kernelbench_ok": False,
                    "reason": f"output_type: output {i} is {type(o).__name__}, not a tensor",
                }
            if type(o) is not torch.Tensor:
                return {
                    **res,
                    "ok": False,
                    "kernelbench_ok": False,
                    "violation": "lazy_tensor",
                    "reason": f"tensor_subclass_output: {type(o).__name__}",
                }
            if o.shape != r.shape:
                return {
                    **res,
                    "ok": False,
                    "kernelbench_ok": False,
                    "reason": f"output_shape: output {i}: {tuple(o.shape)} != {tuple(r.shape)}",
                }
            if o.dtype != r.dtype:
                return {
                    **res,
                    "ok": False,
                    "kernelbench_ok": False,
                    "reason": f"output_dtype: output {i}: {o.dtype} != {r.dtype}",
                }
            sc = scales[ti] if scales is not None else None
            ti += 1
            c = _on_device_or_host(compare_tensor, r, o, **tol, scale=sc, device=compare_device(s, r.numel()))
            res["scales"].append(c["scale"])
            for k in ("max_abs_err", "max_rel_err", "max_tol_err"):
                res[k] = max(res[k], c[k])
            res["kernelbench_ok"] = res["kernelbench_ok"] and c["kernelbench_ok"]
            if not c["ok"] and res["ok"]:
                res.update(ok=False, reason=f"{c['reason']} [output {i}]")
        else:
            if isinstance(o, torch.Tensor) and o.numel() == 1:
                o = o.item()
            number = (int, float)
            if type(r) is int:
                # a count, an index: exact, as integer tensors are, whatever type carries it (a float within its
                # own rounding: a count off by 600 in 65,603 is 0.9%, inside a float rule's 1%)
                ok = (type(o) is int and o == r) or (type(o) is float and abs(o - r) <= abs(r) * 2.0**-24)
            elif isinstance(r, number) and isinstance(o, number) and not isinstance(r, bool):
                sc = abs(float(r))
                ok = (math.isnan(r) and math.isnan(o)) or math.isclose(  # NaN where the reference has NaN, as tensors
                    float(o),
                    float(r),
                    rel_tol=tol["rtol"],  # a number's scale is itself
                    abs_tol=max(tol["atol_floor"], tol["scale_atol"] * sc),
                )
            else:
                ok = not isinstance(o, torch.Tensor) and r == o  # a tensor of other than one element: never a value
            if not ok:
                res["kernelbench_ok"] = False
                if res["ok"]:  # the first failure names the verdict, as for tensors
                    res.update(ok=False, reason=f"output_mismatch: output {i}: {o!r} != {r!r}")
    return res


def degenerate(ref_outputs: list[Any], s: dict[str, Any]) -> str:
    """Why the task's output does not depend on its input ('' when it does): every reference output, across the
    inputs drawn, is within the scale-aware tolerance of the first one (scale: the largest of the two outputs'
    RMS, so an output near zero is not judged at its own tiny scale against a larger one)."""
    if len(ref_outputs) < 2:
        return ""
    base, caps = tolerances(s), spread_caps(ref_outputs)
    first = flatten(ref_outputs[0])
    for other in ref_outputs[1:]:
        items = flatten(other)
        if len(items) != len(first):
            return ""
        for i, (a, b) in enumerate(zip(first, items)):
            tol = _capped(base, caps[i] if caps else None)
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
                if a.shape != b.shape or a.dtype != b.dtype:
                    return ""
                dev = compare_device(s, a.numel())
                sc = None
                if a.is_floating_point() or a.is_complex():
                    sc = max(_on_device_or_host(scale_of, a, device=dev), _on_device_or_host(scale_of, b, device=dev))
                if not _on_device_or_host(compare_tensor, a, b, scale=sc, device=dev, **tol)["ok"]:
                    return ""
            elif isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor) or a != b:
                return ""
    return (
        f"the reference output is the same (within the scale-aware tolerance) for all {len(ref_outputs)} inputs drawn"
    )
