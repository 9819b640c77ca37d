"""MinHash signatures of many sets at once, and MinHashLSH queries for many signatures at once.

`signatures(sets)` returns exactly what `datasketch.MinHash(num_perm, seed, hashfunc=identity, scheme)
.update_batch(s).hashvalues` returns for every set (the same permutations, taken from datasketch, and the same
MurmurHash3 pre-mix and affine maps; tests/test_decontam_stage.py checks the equality), in one numpy pass over
all sets: datasketch hashes each element through a Python call and builds one MinHash object per set, which cost
more than the arithmetic for the 20,000-odd small sets of a decontamination run. `query_many` asks
`MinHashLSH.query` for each signature. The `legacy` scheme falls
back to datasketch's per-object calls.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from pipeline.decontam.settings import DecontamSettings

_FMIX = {  # MurmurHash3 finalizer constants (shifts and multipliers), as datasketch's affine schemes use them
    32: (np.uint32, 16, 0x85EBCA6B, 13, 0xC2B2AE35, 16),
    64: (np.uint64, 33, 0xFF51AFD7ED558CCD, 33, 0xC4CEB9FE1A85EC53, 33),
}
_WIDTH = {"affine32": 32, "affine64": 64}
_BLOCK = 1 << 16  # elements x permutations per numpy block: 256 kB of uint32 stays in cache (2x faster than 8 MB)


def _identity(x):  # shingles are already 32-bit hashes; datasketch applies its permutations on top
    return x


def minhashes(sets: list[np.ndarray], settings: DecontamSettings) -> list:
    """datasketch MinHash objects of many shingle sets (MinHash.bulk: one initialised state, update_batch each)."""
    from datasketch import MinHash

    return MinHash.bulk(
        sets, num_perm=settings.num_perm, seed=settings.seed, hashfunc=_identity, scheme=settings.scheme
    )


@lru_cache(maxsize=32)
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """The (bands, rows) MinHashLSH(threshold, num_perm) chooses: read from an empty index (public attributes b, r;
    the optimisation costs ~12 ms, hence the cache)."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return lsh.b, lsh.r


def as_minhashes(sigs: np.ndarray, settings: DecontamSettings) -> list:
    """datasketch MinHash objects holding the given signatures (one permutation table shared by all)."""
    from datasketch import MinHash

    perms = MinHash(num_perm=settings.num_perm, seed=settings.seed, scheme=settings.scheme).permutations
    return [
        MinHash(
            num_perm=settings.num_perm, seed=settings.seed, hashvalues=s, permutations=perms, scheme=settings.scheme
        )
        for s in sigs
    ]


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    from datasketch import MinHash

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme=scheme).permutations
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def _fmix(hv: np.ndarray, width: int) -> np.ndarray:
    dtype, s1, m1, s2, m2, s3 = _FMIX[width]
    with np.errstate(over="ignore"):
        hv = hv ^ (hv >> dtype(s1))
        hv = hv * dtype(m1)
        hv = hv ^ (hv >> dtype(s2))
        hv = hv * dtype(m2)
        return hv ^ (hv >> dtype(s3))


def signatures(sets: list[np.ndarray], settings: DecontamSettings) -> np.ndarray:
    """(len(sets), num_perm) MinHash hash values; an empty set's row is datasketch's empty value (all max)."""
    scheme = settings.scheme
    if scheme not in _WIDTH:
        hms = minhashes(sets, settings)
        return np.stack([m.hashvalues for m in hms]) if hms else np.zeros((0, settings.num_perm), np.uint64)
    width = _WIDTH[scheme]
    dtype = _FMIX[width][0]
    a, b = _permutations(settings.num_perm, settings.seed, scheme)
    out = np.full((len(sets), settings.num_perm), np.iinfo(dtype).max, dtype=dtype)
    sizes = np.fromiter((len(s) for s in sets), dtype=np.int64, count=len(sets))
    rows = np.flatnonzero(sizes)
    if not len(rows):
        return out
    flat = np.concatenate([sets[i] for i in rows]).astype(dtype, copy=False)
    hv = _fmix(flat, width)
    ends = np.cumsum(sizes[rows])
    starts = ends - sizes[rows]
    per_block = max(1, _BLOCK // settings.num_perm)
    r0 = 0
    while r0 < len(rows):  # blocks of whole sets, so that each reduceat sees complete sets
        r1 = int(np.searchsorted(ends, starts[r0] + per_block, side="right"))
        r1 = max(r1, r0 + 1)
        lo, hi = int(starts[r0]), int(ends[r1 - 1])
        with np.errstate(over="ignore"):
            phv = hv[lo:hi, None] * a + b  # wraps mod 2**width, as datasketch's affine permutation
        out[rows[r0:r1]] = np.minimum.reduceat(phv, starts[r0:r1] - lo, axis=0)
        r0 = r1
    return out


def query_many(lsh, sigs: np.ndarray, mask: np.ndarray, settings: DecontamSettings) -> list[set]:
    """MinHashLSH.query (datasketch's public API) for every row of `sigs` (hash values of the index's scheme) where
    `mask` is true (else an empty set)."""
    out: list[set] = [set() for _ in range(len(sigs))]
    rows = np.flatnonzero(mask)
    for i, m in zip(rows.tolist(), as_minhashes(sigs[rows], settings)):
        out[i] = set(lsh.query(m))
    return out
