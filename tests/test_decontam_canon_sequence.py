"""The canonical probe's sequence (jailed._canon_values) is made on 32-bit words in chunks; its values must be those
of the int64 formula bit for bit, since candidates' probes carried from validation and the reference's cached ones
were made with it, and a screen compares them."""

from __future__ import annotations

import torch

from pipeline.decontam.jailed import TRACER


def _tracer() -> dict:
    g = {"PAYLOAD": {}, "__name__": "tracer"}
    exec(compile(TRACER, "<tracer>", "exec"), g)
    return g


def _int64_formula(size: int) -> torch.Tensor:
    m = 0x7FFFFFFF
    h = (torch.arange(size, dtype=torch.int64) * 2654435761 + 12345) & m
    for shift, mult in ((15, 0x2C1B3C6D), (12, 0x297A2D39), (15, 0x1B873593), (13, None)):
        h = h ^ (h >> shift)
        if mult is not None:
            h = (h * mult) & m
    return (h.to(torch.float64) / 1073741824.0 - 1.0).float()


def test_the_sequence_is_the_int64_formulas_bit_for_bit():
    g = _tracer()
    # past 2**24 (products past 2**32 wrap in 32 bits) and not a multiple of the chunk (a short last chunk)
    size = (1 << 24) + 12_345
    got = torch.from_numpy(g["_canon_sequence"](size, chunk=1 << 20))
    want = _int64_formula(size)
    assert got.dtype == torch.float32 and got.shape == want.shape
    assert torch.equal(got, want)
    assert float(got.min()) >= -1.0 and float(got.max()) < 1.0 and float(got.std()) > 0.5  # not degenerate


def test_values_grow_and_slice_as_before():
    g = _tracer()
    small = g["_canon_values"](100, offset=7)
    assert torch.equal(small, _int64_formula(1 << 16)[7:107])
    big = g["_canon_values"](300_000, offset=5)  # grows the kept sequence
    assert torch.equal(big, _int64_formula(1 << 19)[5:300_005])
    # the scaled values kept per element count are the same tensor values as computed afresh
    n = 4096
    assert torch.equal(g["_canon_scaled"](n), g["_canon_values"](n) * n**-0.25)
    assert g["_canon_scaled"](n) is g["_canon_scaled"](n)
