"""What the red-team sets' verification scripts (set_*/verify_*.py) share: where KernelBench is, loading a file as a
module, copying a tie, perturbing 1-D parameters so that ties are exercised, and (sets e and f) the whole run: each
file beside its source under its ties, in float32 and float64, and the table of verdicts (`verify`)."""

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


def run_one(key, entry, idx, ties, neg_ties, notes, prefix, prepare=None):
    fname = os.path.basename(key)
    tag = fname[:3]
    file_mod = load(os.path.join(ROOT, key), f"{prefix}_file_{idx}")
    src_mod = load(os.path.join(KB, entry["source"] + ".py"), f"{prefix}_src_{idx}")
    init = file_mod.get_init_inputs()
    t0 = time.time()
    torch.manual_seed(0)
    P = file_mod.Model(*init)
    torch.manual_seed(0)
    S = src_mod.Model(*init)
    perturb(S, torch.Generator().manual_seed(123))
    torch.manual_seed(1)
    inputs = file_mod.get_inputs()
    best = None
    for tie in [ties[tag]] if entry["kind"] == "para" else neg_ties[tag]:
        tie(S, P)
        d64, r64, _ = run_pair(S, P, inputs, True, prepare)
        d32, r32, mx = run_pair(S, P, inputs, False, prepare)
        row = (d64, r64, d32, r32, mx, tie.__name__)
        if best is None or r64 < best[1]:
            best = row
    d64, r64, d32, r32, mx, tname = best
    win = d32 <= 100 * (1e-4 + 1e-4 * mx)
    note = notes.get(tag, "")
    if entry["kind"] == "neg":
        note = (note + "; " if note else "") + f"closest tie {tname}"
    return fname, d64, r64, r32, win, time.time() - t0, note


def verify(set_name, ties, neg_ties, notes, para_tol=1e-4, neg_min=1e-3, prepare=None):
    """Every entry of `set_name` in manifest.json run (run_one) and printed; 0 when all pass, else 1."""
    manifest = {
        k: v for k, v in json.load(open(os.path.join(ROOT, "manifest.json"))).items() if k.startswith(set_name + "/")
    }
    prefix = set_name.replace("_", "")
    rows, ok_all = [], True
    for idx, (key, entry) in enumerate(manifest.items()):
        fname, d64, r64, r32, win, tf, note = run_one(key, entry, idx, ties, neg_ties, notes, prefix, prepare)
        ok = r64 <= para_tol if entry["kind"] == "para" else r64 > neg_min
        ok_all &= ok
        rows.append((entry["kind"], fname, entry["source"], d64, r64, r32, win, tf, "PASS" if ok else "FAIL", note))
    print(f"{'kind':4} {'file':42} {'source':46} {'diff64':>10} {'rel64':>10} {'rel32':>10} {'win':>3} {'t':>6}  result")
    for kind, f, s, d, r, r32, win, tf, res, note in rows:
        w = ("yes" if win else "no") if kind == "neg" else ""
        print(f"{kind:4} {f:42} {s:46} {d:10.3e} {r:10.3e} {r32:10.3e} {w:>3} {tf:5.2f}s  {res}" + (f"  ({note})" if note else ""))
    print(f"\nparaphrase tolerance: float64 rel <= {para_tol:g}; negative threshold: float64 rel > {neg_min:g} (min over tie variants)")
    print("ALL PASS" if ok_all else "SOME FAILED")
    return 0 if ok_all else 1
