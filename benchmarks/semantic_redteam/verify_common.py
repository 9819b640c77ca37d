"""What the red-team sets' verification scripts (set_*/verify_*.py) share: where KernelBench is, loading a file as a
module, copying a tie, perturbing 1-D parameters so that ties are exercised, and the whole run: each file beside its
source under its ties, in float32 and float64, and the table of verdicts (`verify`: sets e, f, h, i; `verify_tied`:
sets j and k, both models at the same constructor values, each tie made after the cast, a signed input too)."""

import copy
import importlib.util
import json
import os
import sys
import time

import torch

sys.dont_write_bytecode = True  # never write caches next to the KernelBench sources

ROOT = os.path.dirname(os.path.abspath(__file__))  # manifest keys are relative to this (".../semantic_redteam")
KB = os.environ.get("KERNELBENCH_PATH") or os.path.join(
    os.path.dirname(os.path.dirname(ROOT)), "..", "shared", "kernelbench"
)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cp(dst, src):
    with torch.no_grad():
        assert dst.shape == src.shape, (tuple(dst.shape), tuple(src.shape))
        dst.copy_(src)


def perturb(model, gen):
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() <= 1:
                p.add_(0.3 * torch.randn(p.shape, generator=gen))


def lin(dst, w, b=None):
    cp(dst.weight, w)
    if b is not None:
        cp(dst.bias, b)


def to64(xs):
    return [x.double() if torch.is_tensor(x) and x.is_floating_point() else x for x in xs]


def run_pair(S, P, inputs, dtype64, prepare=None):
    """max|diff|, its relative value and max|ref| of the file P against its source S on `inputs` (copies of both;
    `prepare`: applied to the source's copy first)."""
    S, P = copy.deepcopy(S), copy.deepcopy(P)
    if prepare is not None:
        S = prepare(S)
    ins = to64(inputs) if dtype64 else inputs
    if dtype64:
        S, P = S.double(), P.double()
    with torch.no_grad():
        out = P(*[x.clone() if torch.is_tensor(x) else x for x in ins])
        ref = S(*[x.clone() if torch.is_tensor(x) else x for x in ins])
    if out.shape != ref.shape:
        return float("inf"), float("inf"), float("inf")
    diff = (ref.double() - out.double()).abs().max().item()
    mx = ref.abs().max().item()
    return diff, diff / max(1.0, mx), mx


def same(init):
    return list(init)


def check(key, entry, idx, ties, neg_ties, prefix, src_init=None, small=None, prepare=None, perturb_more=None):
    """One entry: the file's model and its source's (built at `src_init[tag](file's init)`, else the file's own
    values), the source's 1-D parameters perturbed (and by `perturb_more(S, gen)`), run on the file's get_inputs()
    (or `small[tag] = (make, why)`'s seeded small inputs) under the file's tie (every tie listed for a negative: the
    closest kept). Returns a dict of the figures, the models and the inputs (for a set's own extra checks)."""
    fname = os.path.basename(key)
    tag = fname[:3]
    file_mod = load(os.path.join(ROOT, key), f"{prefix}_file_{idx}")
    src_mod = load(os.path.join(KB, entry["source"] + ".py"), f"{prefix}_src_{idx}")
    init = file_mod.get_init_inputs()
    t0 = time.time()
    torch.manual_seed(0)
    P = file_mod.Model(*init)
    torch.manual_seed(0)
    S = src_mod.Model(*(src_init or {}).get(tag, same)(init))
    gen = torch.Generator().manual_seed(123)
    perturb(S, gen)
    if perturb_more is not None:
        perturb_more(S, gen)
    torch.manual_seed(1)
    notes = []
    if small and tag in small:
        make, why = small[tag]
        inputs = make()
        notes.append("small input: " + why)
    else:
        inputs = file_mod.get_inputs()
    best = None
    for tie in [ties[tag]] if entry["kind"] == "para" else neg_ties[tag]:
        tie(S, P)
        d64, r64, _ = run_pair(S, P, inputs, True, prepare)
        d32, r32, mx = run_pair(S, P, inputs, False, prepare)
        if best is None or r64 < best[1]:
            best = (d64, r64, d32, r32, mx, tie.__name__)
    d64, r64, d32, r32, mx, tname = best
    return {"fname": fname, "tag": tag, "kind": entry["kind"], "source": entry["source"], "d64": d64, "r64": r64,
            "d32": d32, "r32": r32, "mx": mx, "tie": tname, "t0": t0, "notes": notes, "S": S, "P": P,
            "inputs": inputs, "file_mod": file_mod}


def verify(set_name, ties, neg_ties, notes, para_tol=1e-4, neg_min=1e-3, prepare=None, src_init=None, small=None,
           perturb_more=None, both_precisions=False, extra=None, expect=None):
    """Every entry of `set_name` in manifest.json checked (check) and printed; 0 when all pass, else 1. A paraphrase
    passes at float64 relative difference <= para_tol (and float32 too with `both_precisions`), a negative at > neg_min
    under its closest tie. `extra(row) -> (ok, note)`: a set's own further check of a row; `expect`: the entry count."""
    manifest = {
        k: v for k, v in json.load(open(os.path.join(ROOT, "manifest.json"))).items() if k.startswith(set_name + "/")
    }
    assert expect is None or len(manifest) == expect, len(manifest)
    prefix = set_name.replace("_", "")
    rows, ok_all = [], True
    for idx, (key, entry) in enumerate(manifest.items()):
        row = check(key, entry, idx, ties, neg_ties, prefix, src_init, small, prepare, perturb_more)
        if row["kind"] == "para":
            ok = row["r64"] <= para_tol and (not both_precisions or row["r32"] <= para_tol)
        else:
            ok = row["r64"] > neg_min
        note = notes.get(row["tag"], "")
        if row["kind"] == "neg":
            note = (note + "; " if note else "") + f"closest tie {row['tie']}"
        if extra is not None:
            more_ok, more = extra(row)
            ok &= more_ok
            note = "; ".join(x for x in [note] + row["notes"] + [more] if x)
        else:
            note = "; ".join(x for x in [note] + row["notes"] if x)
        ok_all &= ok
        win = row["d32"] <= 100 * (1e-4 + 1e-4 * row["mx"])
        rows.append((row["kind"], row["fname"], row["source"], row["d64"], row["r64"], row["r32"], win,
                     time.time() - row["t0"], "PASS" if ok else "FAIL", note))
    print(f"{'kind':4} {'file':42} {'source':46} {'diff64':>10} {'rel64':>10} {'rel32':>10} {'win':>3} {'t':>6}  result")
    for kind, f, s, d, r, r32, win, tf, res, note in rows:
        w = ("yes" if win else "no") if kind == "neg" else ""
        print(f"{kind:4} {f:42} {s:46} {d:10.3e} {r:10.3e} {r32:10.3e} {w:>3} {tf:5.2f}s  {res}" + (f"  ({note})" if note else ""))
    precisions = "float64 and float32" if both_precisions else "float64"
    print(f"\nparaphrase tolerance: rel <= {para_tol:g} in {precisions}; negative threshold: float64 rel > {neg_min:g} (min over tie variants)")
    print("ALL PASS" if ok_all else "SOME FAILED")
    return 0 if ok_all else 1


def run_tied(S, P, tie, inputs, dtype):
    """max|diff|, its relative value (to max(1, max|ref|)) of P against S on `inputs`, both cast to `dtype` BEFORE the
    tie, so that folded / fused parameters are formed at the comparison's precision (copies of both)."""
    S, P = copy.deepcopy(S).to(dtype), copy.deepcopy(P).to(dtype)
    tie(S, P)
    ins = [x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        out = P(*[x.clone() if torch.is_tensor(x) else x for x in ins])
        ref = S(*[x.clone() if torch.is_tensor(x) else x for x in ins])
    if out.shape != ref.shape:
        return float("inf"), float("inf")
    diff = (ref.double() - out.double()).abs().max().item()
    return diff, diff / max(1.0, ref.abs().max().item())


def signed_like(inputs):
    return [2.0 * torch.randn(x.shape) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs]


def check_tied(key, entry, idx, prefix, ties, neg_ties, neg_notes, small, notes, tol64, tol32, neg_min):
    """One entry (sets j and k): both models built at the same constructor values (the file's, or a paraphrase's
    reduced `small[tag] = (init, make_inputs, why)`), the source's 1-D parameters perturbed, each tie made after both
    are cast; a paraphrase's worst over its input and a signed one, a negative's closest tie."""
    fname = os.path.basename(key)
    tag = fname[:3]
    kind = entry["kind"]
    file_mod = load(os.path.join(ROOT, key), f"{prefix}_file_{idx}")
    src_mod = load(os.path.join(KB, entry["source"] + ".py"), f"{prefix}_src_{idx}")
    out_notes = []
    if tag in small and kind == "para":
        init, make, why = small[tag]
        out_notes.append("reduced: " + why)
    else:
        init, make = file_mod.get_init_inputs(), file_mod.get_inputs
        out_notes.append("own sizes")
    t0 = time.time()
    torch.manual_seed(0)
    P = file_mod.Model(*copy.deepcopy(init))
    torch.manual_seed(0)
    S = src_mod.Model(*copy.deepcopy(init))
    perturb(S, torch.Generator().manual_seed(123))
    torch.manual_seed(1)
    inputs = make()
    if kind == "para":
        if tag in notes:
            out_notes.append(notes[tag])
        torch.manual_seed(2)
        worst = (0.0, 0.0, 0.0)
        for ins in (inputs, signed_like(inputs)):
            d64, r64 = run_tied(S, P, ties[tag], ins, torch.float64)
            _, r32 = run_tied(S, P, ties[tag], ins, torch.float32)
            worst = tuple(max(a, b) for a, b in zip(worst, (d64, r64, r32)))
        d64, r64, r32 = worst
        ok = r64 <= tol64 and r32 <= tol32
    else:
        best = None
        for tie in neg_ties[tag]:
            d64, r64 = run_tied(S, P, tie, inputs, torch.float64)
            _, r32 = run_tied(S, P, tie, inputs, torch.float32)
            if best is None or r64 < best[1]:
                best = (d64, r64, r32, tie.__name__)
        d64, r64, r32, tname = best
        ok = r64 > neg_min
        out_notes.append(f"{neg_notes[tag]}, closest tie {tname}")
    return fname, entry["source"], kind, d64, r64, r32, time.time() - t0, ok, "; ".join(out_notes)


def verify_tied(set_name, ties, neg_ties, neg_notes, small, expect, notes=None, tol64=1e-9, tol32=1e-4, neg_min=1e-3):
    """Every entry of `set_name` in manifest.json checked as check_tied checks it and printed; 0 when all pass, else
    1. A paraphrase passes on every input at float64 relative difference <= tol64 and float32 <= tol32, a negative at
    float64 > neg_min under its closest tie; `expect`: the entry count."""
    manifest = {
        k: v for k, v in json.load(open(os.path.join(ROOT, "manifest.json"))).items() if k.startswith(set_name + "/")
    }
    assert len(manifest) == expect, len(manifest)
    prefix = set_name.replace("_", "")
    ok_all = True
    print(f"{'kind':4} {'file':50} {'source':48} {'diff64':>10} {'rel64':>10} {'rel32':>10} {'t':>6}  result")
    for idx, (key, entry) in enumerate(manifest.items()):
        fname, src, kind, d64, r64, r32, tf, ok, note = check_tied(
            key, entry, idx, prefix, ties, neg_ties, neg_notes, small, notes or {}, tol64, tol32, neg_min
        )
        ok_all &= ok
        print(
            f"{kind:4} {fname:50} {src[:48]:48} {d64:10.3e} {r64:10.3e} {r32:10.3e} {tf:5.2f}s  "
            f"{'PASS' if ok else 'FAIL'}  ({note})",
            flush=True,
        )
    print(
        f"\nparaphrase tolerance: rel <= {tol64:g} in float64 and <= {tol32:g} in float32 (file's input and a signed "
        f"input); negative threshold: float64 rel > {neg_min:g} (min over tie variants)"
    )
    print("ALL PASS" if ok_all else "SOME FAILED")
    return 0 if ok_all else 1
