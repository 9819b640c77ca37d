"""The trusted side's functions on crafted data (no processes): the scale-aware comparison and the degenerate-task
test, the clock cross-check, loading files written by the candidate, sealed artifacts and locks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.evaluate import artifacts, options, tensorio
from pipeline.evaluate.clock import check_clock
from pipeline.evaluate.tolerance import compare, degenerate, spread_caps

S = options.resolve({})


def _softmax_rows(seed: int, cols: int = 32768) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(8, cols, generator=g), dim=-1)


# ---------------------------------------------------------------- tolerance


def test_small_magnitude_outputs_are_judged_at_their_own_scale():
    ref = _softmax_rows(0)  # values ~3e-5: KernelBench's atol 1e-2 accepts anything here
    honest = (ref.double() * (1 + 1e-4 * torch.randn_like(ref, dtype=torch.float64))).float()  # fp32-level error
    zeros = torch.zeros_like(ref)
    uniform = torch.full_like(ref, 1.0 / ref.shape[1])  # right mean, no dependence on the input
    c = compare(ref, honest, S)
    assert c["ok"] and c["kernelbench_ok"]
    for wrong in (zeros, uniform):
        c = compare(ref, wrong, S)
        assert not c["ok"] and c["reason"].startswith("output_mismatch")
        assert c["kernelbench_ok"]  # ... which KernelBench's fixed 1e-2 would have accepted (kept in the record)


def test_mean_reduction_matvec_and_scalar_loss():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4096, 512, generator=g)
    mean = x.mean(dim=0)  # ~1/sqrt(4096) = 0.016 magnitude
    assert compare(mean, mean + 1e-7 * torch.randn(512, generator=g), S)["ok"]
    assert not compare(mean, torch.zeros_like(mean), S)["ok"]
    w, v = torch.randn(64, 1 << 16, generator=g), torch.randn(1 << 16, generator=g)
    mv = w @ v  # long K: magnitude ~256, fp32 accumulation-order error ~1e-4 relative to the scale
    mv_other_order = (w.double() @ v.double()).float()
    assert compare(mv, mv_other_order, S)["ok"]
    loss = torch.nn.functional.mse_loss(torch.randn(128, generator=g), torch.randn(128, generator=g))  # 0-dim
    assert compare(loss, loss * (1 + 1e-6), S)["ok"]
    assert not compare(loss, torch.zeros_like(loss), S)["ok"]
    assert not compare(loss, loss.reshape(1), S)["ok"]  # shape must match


def test_structure_dtype_nan_and_integer_rules():
    a = torch.randn(16)
    assert compare((a, a), [a, a], S)["ok"]  # tuple vs list: same flattened structure
    assert compare((a, a), (a,), S)["reason"].startswith("output_structure")
    assert compare(a, a.double(), S)["reason"].startswith("output_dtype")
    n = a.clone()
    n[3] = float("nan")
    assert compare(n, n.clone(), S)["ok"]  # NaN where the reference has NaN
    assert compare(a, n, S)["reason"].startswith("output_nonfinite")
    i = torch.arange(10)
    assert compare(i, i.clone(), S)["ok"] and not compare(i, i + 1, S)["ok"]
    z = torch.zeros(8)  # an all-zero reference: atol_eff is the floor
    assert compare(z, z.clone(), S)["ok"] and not compare(z, z + 1e-3, S)["ok"]
    cplx = torch.randn(8, dtype=torch.complex64)
    assert compare(cplx, cplx.clone(), S)["ok"] and not compare(cplx, cplx.conj(), S)["ok"]
    # a task returning a dict of tensors: compared by key (it used to raise inside the judge: -1 for everyone)
    d = {"y": a, "z": a * 2}
    assert compare(d, {"z": a * 2, "y": a.clone()}, S)["ok"]
    assert not compare(d, {"y": a, "z": a * 3}, S)["ok"]
    assert not compare(d, {"y": a, "w": a * 2}, S)["ok"]
    assert degenerate([d, {"y": a + 1, "z": a}], S) == "" and "same" in degenerate([d, dict(d)], S)
    assert degenerate([(a, 1.0), (1.0, a)], S) == ""  # a tensor where the other has a number: not the same


def test_degenerate_is_across_inputs_never_within_one_output():
    softmaxes = [_softmax_rows(k) for k in range(4)]
    assert degenerate(softmaxes, S) == ""  # tiny values, but they depend on the input
    const = [torch.full((8, 16), 3.0) for _ in range(4)]
    assert "same" in degenerate(const, S)
    nearly = [torch.full((8,), 5.0) + 1e-6 * k for k in range(4)]  # 1e-6 wiggle around 5: below tolerance
    assert degenerate(nearly, S)
    loss_like = [torch.tensor(float(k + 1)) for k in range(3)]  # a scalar per input: not degenerate
    assert degenerate(loss_like, S) == ""
    same_elements = [torch.full((4,), float(k)) for k in range(3)]  # every element equal WITHIN an output
    assert degenerate(same_elements, S) == ""
    assert degenerate([const[0]], S) == ""  # one input says nothing


def test_a_small_output_is_judged_within_its_spread_across_inputs():
    """A loss moves little from one input to the next (a cross-entropy over 10 classes: ~0.6% of its value): at the
    plain rule (1% + 1%) one constant fits every draw; capped by the spread, it fits few, while an honest loss
    computed in another precision still passes. An output that does not move at all is still degenerate."""
    g = torch.Generator().manual_seed(0)
    refs = [
        torch.nn.functional.cross_entropy(
            torch.randn(4096, 10, generator=g), torch.randint(0, 10, (4096,), generator=g)
        )
        for _ in range(7)
    ]
    caps = spread_caps(refs)
    assert caps and caps[0] is not None and caps[0] < 1e-2
    const = torch.tensor(sum(float(r) for r in refs) / len(refs))
    assert all(compare(r, const, S)["ok"] for r in refs)  # the plain rule alone
    assert sum(compare(r, const, S, caps=caps)["ok"] for r in refs) <= 4
    assert all(compare(r, (r.double() * (1 + 2e-4)).float(), S, caps=caps)["ok"] for r in refs)
    assert degenerate(refs, S) == ""
    assert degenerate([torch.tensor(0.9995 + 1e-7 * k) for k in range(5)], S)  # a cosine similarity of ~1
    # large, integer or mixed outputs get no cap; fewer than three outputs say nothing of a spread
    big = [torch.randn(64, generator=g) for _ in range(3)]
    assert spread_caps(big) == [None] and spread_caps(refs[:2]) == []
    assert spread_caps([(torch.tensor(k), 1.0 * k) for k in range(1, 4)]) == [None, spread_caps([1.0, 2.0, 3.0])[0]]


# ---------------------------------------------------------------- clock cross-check


def test_clock_accepts_consistent_times_and_catches_hidden_work():
    calib = [0.30, 0.31, 0.29, 0.35, 0.30]
    times = [1.0 + 0.01 * (k % 5) for k in range(100)]
    walls = [t + 0.31 + (0.02 if k % 7 else 3.0) for k, t in enumerate(times)]  # a few host hiccups
    ok, why, fig = check_clock(walls, times, calib, slack_ms=0.2, slack_frac=0.15)
    assert ok, why
    assert fig["n"] == 100 and abs(fig["overhead_ms"] - 0.30) < 1e-9
    hidden = [w + 0.8 for w in walls]  # 0.8 ms per call done outside the timed region
    ok, why, _ = check_clock(hidden, times, calib, slack_ms=0.2, slack_frac=0.15)
    assert not ok and "exceeds" in why
    forged = [0.01] * 100  # reported 100x faster than the wall clock allows
    assert not check_clock(walls, forged, calib, slack_ms=0.2, slack_frac=0.15)[0]
    impossible = list(times)
    impossible[5] = walls[5] + 1.0  # a GPU time longer than the wall clock around it
    ok, why, _ = check_clock(walls, impossible, calib, slack_ms=0.2, slack_frac=0.15)
    assert not ok and "inside" in why
    assert not check_clock(walls, [float("nan")] * 100, calib, slack_ms=0.2, slack_frac=0.15)[0]
    assert not check_clock([], [], calib, slack_ms=0.2, slack_frac=0.15)[0]


def test_clock_with_live_calibration_follows_load_and_still_catches_hidden_work():
    """Load that arrives after the calibration made before load (overhead 0.3 -> 1.0 ms per call) fails honest
    times against that calibration; against null calls made during the timed calls (live) they pass, and 0.4 ms
    of hidden work per call is still caught (the live bound is sampling error, not the calibration's spread)."""
    import random

    rng = random.Random(7)
    pre = [0.30 + 0.02 * rng.random() for _ in range(30)]
    times = [0.1 + 0.005 * rng.random() for _ in range(1000)]
    walls = [t + 1.0 + 0.3 * rng.random() for t in times]  # a loaded host: more overhead, and noisier
    live = [1.0 + 0.3 * rng.random() for _ in range(200)]
    assert not check_clock(walls, times, pre, slack_ms=0.2, slack_frac=0.15)[0]
    ok, why, fig = check_clock(walls, times, live, slack_ms=0.2, slack_frac=0.15, live=True)
    assert ok, why
    assert fig["median_difference_se_ms"] < 0.05 and fig["slack_ms"] == 0.2
    hidden = [w + 0.4 for w in walls]
    ok, why, _ = check_clock(hidden, times, live, slack_ms=0.2, slack_frac=0.15, live=True)
    assert not ok and "exceeds" in why


# ---------------------------------------------------------------- files written by the candidate


def test_load_accepts_plain_tensors_and_refuses_crafted_files(tmp_path):
    good = tmp_path / "good.pt"
    tensorio.save([torch.ones(3), (torch.zeros(2), 1.5)], str(good))
    out = tensorio.load(str(good))
    assert torch.equal(out[0], torch.ones(3))
    fifo = tmp_path / "fifo.pt"
    os.mkfifo(fifo)  # would block a plain open() forever
    link = tmp_path / "link.pt"
    link.symlink_to(good)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x80\x04not a pickle")
    evil = tmp_path / "evil.pt"

    class Boom:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    torch.save({"x": Boom()}, evil)  # arbitrary unpickling is refused by weights_only
    big = tmp_path / "big.pt"
    torch.save(torch.zeros(1000), big)
    for bad in (fifo, link, junk, evil, tmp_path / "missing.pt"):
        with pytest.raises(tensorio.BadFile):
            tensorio.load(str(bad))
    with pytest.raises(tensorio.BadFile):
        tensorio.load(str(big), max_bytes=100)


def test_digest_binds_content_and_shape():
    a = torch.randn(100)
    assert tensorio.digest(a) == tensorio.digest(a.clone())
    b = a.clone()
    b[7] += 1.0
    assert tensorio.digest(a) != tensorio.digest(b)
    assert tensorio.digest(a) != tensorio.digest(a.reshape(10, 10))
    assert tensorio.digest(torch.ones(3, dtype=torch.bool)) != tensorio.digest(torch.ones(3, dtype=torch.uint8))
    c = a.clone()  # the same sum of int32 words: an additive checksum could not tell them apart
    w = c.view(torch.int32)
    w[0] += 1
    w[1] -= 1
    assert tensorio.digest(c) != tensorio.digest(a)


def test_digest_binds_every_part_of_an_output_as_saved(tmp_path):
    """The numbers and containers beside the tensors are committed too (a value changed between the call and its
    save is caught), and the digest of what loads from the file equals the one made before saving."""
    a = torch.randn(4)
    out = [a, 2.5, {"n": 3, "s": "x"}, (None, True)]
    path = str(tmp_path / "o.pt")
    tensorio.save(out, path)
    assert tensorio.digest(tensorio.load(path)) == tensorio.digest(out)
    for other in (
        [a, 2.25, {"n": 3, "s": "x"}, (None, True)],
        [a, 2.5, {"n": 4, "s": "x"}, (None, True)],
        [a, 2.5, {"n": 3, "s": "y"}, (None, True)],
        [a, 2.5, {"n": 3, "s": "x"}, (None, False)],
        [a, 2.5, {"n": 3, "s": "x"}, [None, True]],
        [a, 2.5, {"m": 3, "s": "x"}, (None, True)],
        [a, 2.5, {"n": 3.0, "s": "x"}, (None, True)],
    ):
        assert tensorio.digest(other) != tensorio.digest(out), other


def test_identical_is_equal_digests():
    """The determinism check compares two outputs held by the trusted side instead of hashing the second: it must
    say "same" exactly where their digests are equal, bit patterns included (NaN payloads, -0.0, lazy conjugates),
    for every structure."""
    import random

    rng = random.Random(5)
    base = torch.randn(6, 5)
    nan = torch.tensor([float("nan"), 1.0])
    other_nan = nan.clone()
    other_nan.view(torch.int32)[0] ^= 1  # another NaN payload: equal as numbers to nobody, bitwise different
    z = torch.randn(3, dtype=torch.complex64)
    variants = [
        base,
        base.clone(),
        base.reshape(5, 6),
        base.t(),  # non-contiguous: its values in order, as saved
        base.t().contiguous(),
        base.to(torch.float64),
        torch.where(base == base[0, 0], torch.tensor(-0.0), base),
        nan,
        other_nan,
        z.conj(),
        z.conj().resolve_conj(),
        z,
        (base, 1.5),
        [base, 1.5],
        (base, 1.5000001),
        {"a": base, "b": 2},
        {"b": 2, "a": base},
        (base, {"n": None, "s": "x"}),
        (base, {"n": None, "s": "y"}),
        torch.zeros(0),
        torch.zeros(0, 3),
    ]
    for _ in range(400):
        a, b = rng.choice(variants), rng.choice(variants)
        assert tensorio.identical(a, b) == (tensorio.digest(a) == tensorio.digest(b)), (a, b)
    x = base.clone()
    x.view(torch.int32)[3, 2] += 1  # one bit of one element
    assert not tensorio.identical(base, x) and tensorio.identical(base, base.clone())


def test_a_fingerprint_tells_a_repeated_output_from_another():
    """`result_caching` (a wrong output that repeats an earlier trial's) reads fingerprints: the same output gives the
    same one under a judgement's seed, another output (other values, structure, dtype or shape) another one."""
    a = torch.randn(1 << 20)
    seed = 12345
    assert tensorio.fingerprint(a, seed) == tensorio.fingerprint(a.clone(), seed)
    assert tensorio.fingerprint((a, 2), seed) == tensorio.fingerprint((a.clone(), 2), seed)
    for other in (torch.randn(1 << 20), a.reshape(1024, 1024), a.double(), (a, 3), [a, 2], a[:-1]):
        assert tensorio.fingerprint(other, seed) != tensorio.fingerprint(a, seed)
    small = torch.randn(100)  # fewer leaves than FINGERPRINT_LEAVES: every byte
    b = small.clone()
    b[57] += 1
    assert tensorio.fingerprint(small, seed) != tensorio.fingerprint(b, seed)
    for k in range(0, 1 << 20, 99_991):  # one element apart anywhere in a large output (an honest bug's output)
        c = a.clone()
        c[k] = c[k] + 1.0
        assert tensorio.fingerprint(c, seed) != tensorio.fingerprint(a, seed), k
    odd = torch.arange(37, dtype=torch.uint8)  # offsets with no 8-byte view
    assert tensorio.fingerprint(odd[3:], seed) == tensorio.fingerprint(odd.clone()[3:], seed)


def test_a_tensor_where_the_reference_has_a_number_is_judged_not_raised():
    """One element stands for the number; any other count is a mismatch (it raised inside the judge before)."""
    s = options.resolve({})
    assert compare((torch.ones(3), 1.5), (torch.ones(3), torch.tensor(1.5)), s)["ok"]
    for other in (torch.tensor([]), torch.ones(2)):
        assert not compare((torch.ones(3), 1.5), (torch.ones(3), other), s)["ok"]


def test_a_count_is_exact_whatever_type_carries_it():
    """A Python int from the reference (a count) is compared exactly: a float or a one-element float tensor off by
    0.9% passed the 1% rule for numbers before; the same count as a float (a float32 tensor's item) still passes."""
    s = options.resolve({})
    assert compare((65603,), (65603,), s)["ok"] and not compare((65603,), (65604,), s)["ok"]
    for same in (65603.0, torch.tensor(65603.0), torch.tensor(65603)):
        assert compare((65603,), (same,), s)["ok"], same
    for off in (65603.0 + 600, torch.tensor(65603.0 + 600), torch.tensor(65604), 65603.5):
        assert not compare((65603,), (off,), s)["ok"], off
    assert compare((2**30 + 1,), (float(torch.tensor(2**30 + 1, dtype=torch.float32)),), s)["ok"]  # its rounding


def test_the_scale_of_huge_float64_outputs_is_finite_and_a_constant_kernel_still_fails():
    """The root mean square of float64 values past 1e154 (whose squares overflow): an infinite scale made every finite
    output pass. Ordinary values keep their scale to rounding."""
    from pipeline.evaluate.tolerance import scale_of

    huge = torch.tensor([3e200, 4e200] * 500, dtype=torch.float64)
    assert scale_of(huge) == pytest.approx(3.5355339059327378e200, rel=1e-12)
    s = options.resolve({})
    assert compare(huge, huge.clone(), s)["ok"] and not compare(huge, torch.zeros_like(huge), s)["ok"]
    x = torch.randn(100_000, dtype=torch.float64)
    assert scale_of(x) == pytest.approx(float(x.pow(2).mean().sqrt()), rel=1e-12)
    assert scale_of(torch.tensor([float("nan"), 2.0, -2.0])) == pytest.approx(2.0) and scale_of(torch.zeros(3)) == 0.0


def _opened(out, k, path, rng_seed=0):
    """`out` committed, sampled on k leaves per tensor (as `keep` tells it), saved and loaded: (digest, the picks
    message, the picks per tensor, the record as the trusted side reads it)."""
    import random

    dg, leaves = tensorio.commitment(out)
    rng = random.Random(rng_seed)
    per = [
        tensorio.pick_leaves(tensorio.leaf_count(t.numel() * t.element_size()), k, rng) for t in tensorio.tensors(out)
    ]
    places = [i for i, x in enumerate(tensorio.flatten(out)) if isinstance(x, torch.Tensor)]
    picks = {"at": {str(i): p for i, p in zip(places, per)}, "whole_max": k}
    tensorio.save(tensorio.sampled(out, leaves, picks), path)
    return dg, picks, per, tensorio.load(path)


def test_a_sampled_record_opens_to_the_commitment_and_the_picked_elements(tmp_path):
    """Every dtype, a last leaf cut short, an empty tensor, numbers and containers beside the tensors: the record's
    leaf digests and structure give the very digest committed at the call, and its elements are the reference's at
    the same leaves."""
    out = (
        torch.randn(3001, dtype=torch.float16),  # 6,002 bytes: a last leaf of 1,906
        [torch.rand(70000) > 0.5, torch.randint(-9, 9, (5000,)), torch.randn(1500, dtype=torch.complex64)],
        torch.empty(0, 3),
        2.5,
        None,
        torch.randn(64, 1024, dtype=torch.float64),
    )
    dg, picks, per, rec = _opened(out, 4, str(tmp_path / "r.pt"))
    got, sampled, shapes = tensorio.open_sampled(rec, picks)
    assert got == dg == tensorio.digest(out)
    assert shapes == [list(t.shape) for t in tensorio.tensors(out)]
    want = tensorio.sample_of(out, per)
    for a, b in zip(tensorio.tensors(want), tensorio.tensors(sampled)):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert compare(want, sampled, options.resolve({}))["ok"]
    # at most k leaves each; the first and the last always among them where there are more
    for t, p in zip(tensorio.tensors(out), per):
        n = tensorio.leaf_count(t.numel() * t.element_size())
        assert p == sorted(set(p)) and len(p) == min(n, 4) and (n <= 4 or (p[0] == 0 and p[-1] == n - 1))


def test_named_tuples_and_numpy_scalars_are_saved_as_a_load_reads_them(tmp_path):
    """torch.max's and torch.topk's named results and numpy scalars (refused by a weights_only load) are written as
    plain tuples and Python numbers, with the digest the live output committed to."""
    import numpy as np

    x = torch.randn(4, 5)
    for out in (torch.topk(x, 2, dim=1), torch.max(x, 1), (x, np.float32(1.5)), [x, (np.int64(3), None)]):
        path = str(tmp_path / "o.pt")
        tensorio.save(out, path)
        back = tensorio.load(path)
        assert type(back) in (tuple, list) and tensorio.digest(back) == tensorio.digest(out)
        assert compare(back, tensorio.to_host(out), options.resolve({}))["ok"]


def test_a_lazily_conjugated_output_is_committed_and_saved_as_its_values(tmp_path):
    """A conjugate or negative view (a bit on the tensor, kept by torch.save) is hashed and written as the values it
    stands for: the same digest as the resolved tensor, on both sides of a file."""
    z = torch.complex(torch.randn(3000), torch.randn(3000))
    for lazy in (z.conj(), torch.randn(3000)._neg_view()):
        plain_values = lazy.resolve_conj().resolve_neg()
        assert tensorio.digest(lazy) == tensorio.digest(plain_values)
        path = str(tmp_path / "z.pt")
        tensorio.save(lazy, path)
        back = tensorio.load(path)
        assert torch.equal(back, plain_values) and tensorio.digest(back) == tensorio.digest(lazy)


def test_a_sampled_record_that_is_not_the_committed_output_does_not_open(tmp_path):
    """A changed picked byte, a changed digest of a leaf nobody looks at, another shape, another number beside the
    tensors, sizes that do not add up: each is told apart from the committed output."""
    out = (torch.randn(64, 1024), 7)  # 64 leaves
    dg, picks, per, rec = _opened(out, 8, str(tmp_path / "r.pt"))
    unpicked = next(j for j in range(64) if j not in per[0])

    def tampered(edit):
        r = {k: (list(v) if isinstance(v, list) else v) for k, v in rec.items()}
        r["bytes"] = [b.clone() for b in r["bytes"]]
        r["leaves"] = [b.clone() for b in r["leaves"]]
        edit(r)
        return r

    def byte(r):
        r["bytes"][0][5000] ^= 1

    def leaf(r):
        r["leaves"][0][32 * unpicked] ^= 1

    def shape(r):
        r["shapes"][0] = [1024, 64]

    def number(r):
        r["skeleton"] = (r["skeleton"][0], 8)

    with pytest.raises(tensorio.Forged):
        tensorio.open_sampled(tampered(byte), picks)
    for edit in (leaf, shape, number):
        assert tensorio.open_sampled(tampered(edit), picks)[0] != dg, edit.__name__
    for edit in (
        lambda r: r["bytes"].__setitem__(0, r["bytes"][0][:-4]),
        lambda r: r["leaves"].__setitem__(0, r["leaves"][0][:-32]),
        lambda r: r.__setitem__("skeleton", (torch.zeros(3), 7)),
        lambda r: r["shapes"].__setitem__(0, [-64, -1024]),
        lambda r: r.pop("leaves"),
    ):
        with pytest.raises(tensorio.BadFile):
            tensorio.open_sampled(tampered(edit), picks)


def test_the_reference_writes_only_the_leaves_a_check_compares(tmp_path):
    """A checked call's reference record: k leaves per tensor picked with its secret seed (the same seed, the same
    picks), their elements, each tensor's shape and whole-tensor scale, in KiBs for an output of MiBs; an output
    holding a dict is written whole (None)."""
    from pipeline.evaluate.tolerance import scale_of

    out = (torch.randn(512, 1024) * 3, torch.randint(0, 5, (70000,)))  # 2 MiB and 547 KiB
    rec = tensorio.reference_sample(out, 1234, 16, scale_of)
    again = tensorio.reference_sample(out, 1234, 16, scale_of)
    assert rec["picks"] == again["picks"] and rec["picks"] != tensorio.reference_sample(out, 99, 16, scale_of)["picks"]
    assert [len(p) for p in rec["picks"]] == [16, 16] and rec["shapes"] == [[512, 1024], [70000]]
    assert rec["scales"][0] == pytest.approx(scale_of(out[0])) and rec["scales"][1] == 0.0
    for a, b in zip(tensorio.tensors(rec["sample"]), tensorio.tensors(tensorio.sample_of(out, rec["picks"]))):
        assert torch.equal(a, b)
    path = str(tmp_path / "check.pt")
    tensorio.save(rec, path)
    assert Path(path).stat().st_size < 200_000
    assert tensorio.reference_sample({"y": out[0]}, 1234, 16, scale_of) is None  # written whole


# ---------------------------------------------------------------- sealed artifacts and locks


def test_sealed_artifact_copy_is_checked(tmp_path):
    cache = tmp_path / "cache"
    art = cache / "extensions" / "k1"
    (art / "ext").mkdir(parents=True)
    (art / "ext" / "ext.so").write_bytes(b"\x7fELF real")
    (art / "ext" / "lock").write_text("")  # a FileBaton: not part of the artifact
    artifacts.seal(cache, art)
    assert artifacts.private_copy(cache, art, tmp_path / "copy1") == ""
    assert (tmp_path / "copy1" / "ext" / "ext.so").read_bytes() == b"\x7fELF real"
    (art / "ext" / "ext.so").write_bytes(b"\x7fELF evil")  # rewritten after the build
    why = artifacts.private_copy(cache, art, tmp_path / "copy2")
    assert "ext/ext.so" in why
    artifacts.seal(cache, art)  # a later seal does not bless the change: the first record stays
    assert artifacts.private_copy(cache, art, tmp_path / "copy3") != ""
    assert "never sealed" in artifacts.private_copy(cache, tmp_path / "other", tmp_path / "copy4")
    so = cache / "builds" / "k2" / "cuda_extension.so"  # a workspace artifact is one file
    so.parent.mkdir(parents=True)
    so.write_bytes(b"obj")
    artifacts.seal(cache, so)
    assert artifacts.private_copy(cache, so, tmp_path / "copy5") == ""


def test_flock_is_released_when_its_holder_dies(tmp_path):
    lock = tmp_path / "gpu.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys, time\n"
                f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(600)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    with pytest.raises(BlockingIOError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    holder.kill()
    holder.wait()
    with artifacts.flocked(lock):  # blocks until free: returns because the dead holder's lock is gone
        pass
    os.close(fd)


def test_stale_torch_file_baton_of_a_dead_builder_is_removed(tmp_path):
    from pipeline.evaluate.build import _sha

    src = b"# a single-file solution\n"
    ext = tmp_path / "extensions" / _sha(src, "9.0", torch.__version__) / "my_ext"
    ext.mkdir(parents=True)
    (ext / "lock").write_text("")  # left by a builder that was killed: load_inline would wait forever
    other = tmp_path / "extensions" / "someone_else" / "my_ext"
    other.mkdir(parents=True)
    (other / "lock").write_text("")
    removed = artifacts.remove_stale_batons(tmp_path, src, "9.0")
    assert removed == [str(ext / "lock")] and not (ext / "lock").exists() and (other / "lock").exists()


def test_every_policy_knob_and_rule_is_documented():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "judge.md").read_text()
    missing = [k for k in options.DEFAULTS if f"`{k}`" not in doc]
    assert not missing, f"options missing from docs/judge.md: {missing}"
    from pipeline.evaluate.rules import RUNTIME_RULES, rules_text
    from pipeline.rollout.prompts import SYSTEM_PROMPT

    assert all(f"`{name}`" in doc for name in RUNTIME_RULES)
    assert rules_text(compact=True) in SYSTEM_PROMPT  # the agent is told the same rules the judge applies
    assert all(name in SYSTEM_PROMPT for name in RUNTIME_RULES)


def test_off_stream_check_discounts_the_hosts_return_from_a_synchronize():
    """An honest 0.01 ms kernel on a loaded host (measured on the H200: device-synchronised 0.31 ms, stream-ordered
    0.01 ms) is not work off the stream once the null calls' own gap is taken off; work that really ran on another
    stream still is, on an idle host and on a loaded one."""
    from pipeline.evaluate.clock import off_stream

    assert off_stream(0.3125, 0.0102, 0.0, 0.5, 0.05)  # the rule before: the honest kernel flagged
    assert off_stream(0.3125, 0.0102, 0.30, 0.5, 0.05) == ""
    assert off_stream(2.0, 0.5, 0.02, 0.5, 0.05)  # 1.5 ms ran beside the stream on an idle host
    assert off_stream(2.3, 0.5, 0.30, 0.5, 0.05)  # the same on a loaded host
    assert off_stream(1.0, 0.98, 0.02, 0.5, 0.05) == ""  # an ordinary kernel
    assert off_stream(0.5, 0.01, -1.0, 0.5, 0.05)  # a negative gap never helps


def test_compare_in_pieces_equals_the_whole(monkeypatch):
    """Outputs of GiBs are compared piece by piece (tolerance.CHUNK): every figure and verdict is the same as in
    one piece, NaN, inf, zeros and complex included."""
    from pipeline.evaluate import tolerance as T

    g = torch.Generator().manual_seed(7)
    cases = []
    for k in range(60):
        ref = torch.randn(97, generator=g) * 10 ** float(torch.randint(-5, 4, (1,), generator=g))
        out = ref + torch.randn(97, generator=g) * 10 ** float(torch.randint(-8, 0, (1,), generator=g))
        if k % 5 == 1:
            ref[3] = out[3] = float("nan")
        if k % 5 == 2:
            out[50] = float("inf")
        if k % 5 == 3:
            ref[:40] = 0.0
        if k % 7 == 4:
            ref, out = torch.complex(ref, ref.flip(0)), torch.complex(out, out.flip(0))
        cases.append((ref, out))
    cases.append((torch.arange(97), torch.arange(97)))
    cases.append((torch.arange(97), torch.arange(97).flip(0)))
    kw = {"rtol": 1e-2, "scale_atol": 1e-2, "atol_floor": 1e-9}
    whole = [T.compare_tensor(r, o, **kw) for r, o in cases]
    monkeypatch.setattr(T, "CHUNK", 7)
    pieces = [T.compare_tensor(r, o, **kw) for r, o in cases]
    for a, b in zip(whole, pieces):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-6, abs=0.0), (key, a, b)
            else:
                assert a[key] == b[key], (key, a, b)
    assert any(not a["ok"] for a in whole) and any(a["ok"] for a in whole)


def test_tensor_files_load_through_short_reads(tmp_path, monkeypatch):
    """read(2) moves at most ~2 GiB at a time (a 6 GiB output arrives in pieces): the capped reader loops, and never
    reads past the size it checked, even from a file that grows meanwhile."""
    x = [torch.randn(3000), (torch.arange(7), 2.5)]
    path = str(tmp_path / "x.pt")
    tensorio.save(x, path)
    real = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, off: real(fd, [bufs[0][:1000]], off))
    y = tensorio.load(path)
    assert torch.equal(x[0], y[0]) and torch.equal(x[1][0], y[1][0]) and y[1][1] == 2.5
    r = tensorio._Capped(os.open(path, os.O_RDONLY), 10)
    with open(path, "ab") as f:
        f.write(b"\0" * 5000)
    assert len(r.read()) == 10 and r.read() == b""
    os.close(r.fd)


def test_integer_outputs_are_compared_exactly_in_pieces(monkeypatch):
    """Integers are equal or not, at any size: no float copy that rounds 2^24 + 1 to 2^24."""
    from pipeline.evaluate import tolerance as T

    kw = {"rtol": 1e-2, "scale_atol": 1e-2, "atol_floor": 1e-9}
    ref = torch.tensor([2**40 + 1, 2**24 + 1, 5])
    assert not T.compare_tensor(ref, torch.tensor([2**40, 2**24, 5]), **kw)["ok"]
    assert T.compare_tensor(ref, ref.clone(), **kw)["ok"]
    monkeypatch.setattr(T, "CHUNK", 2)
    assert not T.compare_tensor(ref, torch.tensor([2**40 + 1, 2**24 + 1, 6]), **kw)["ok"]


def test_a_small_file_cannot_hold_a_huge_view(tmp_path):
    """A broadcast view (stride 0) of TiBs saved in a few KB is not a plain tensor: loading it would make the
    trusted side materialise it. Contiguous tensors, empty ones included, load as before."""
    path = str(tmp_path / "x.pt")
    torch.save(torch.zeros(1).expand(2**40), path)
    with pytest.raises(tensorio.BadFile):
        tensorio.load(path, max_bytes=2**20)
    torch.save([torch.zeros(0), torch.arange(6).reshape(2, 3)], path)
    out = tensorio.load(path)
    assert out[0].numel() == 0 and torch.equal(out[1], torch.arange(6).reshape(2, 3))
