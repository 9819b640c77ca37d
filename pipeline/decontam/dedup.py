"""Near-duplicate removal within our own corpus.

1. Per shard (on the caller's executor when it is distributed, i.e. Ray; else forked processes or here): the
   dedup view of every task (canonical token shingles by default), its datasketch MinHash (MinHash.bulk, i.e.
   update_batch), and the LSH band keys of the signature (datasketch's own optimal (bands, rows) for the threshold).
2. Exact duplicates (equal shingle sets) collapse first, so a thousand copies cost one LSH entry.
3. Candidate pairs: tasks sharing a band bucket. In-process with datasketch's MinHashLSH for inputs up to
   `lsh_in_memory_max` distinct sets; beyond that the same banding as a sort-based bucket join over the band keys
   of all shards (datasketch's MinHashLSH keeps one Python set per bucket: ~6 GB at a million tasks).
4. Every candidate pair is verified by exact Jaccard >= dedup_threshold before it merges two clusters
   (union-find). The clusters are the connected components of verified pairs: they do not depend on the order
   of work, the shard size or the number of workers.
5. Keep policy per cluster (first | shortest | longest | smallest_id, ties by task_id); one row per task.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from pipeline.decontam.settings import DecontamSettings
from pipeline.decontam.views import canon_set, jaccard, raw_set
from pipeline.storage import conform

LSH_IN_MEMORY_MAX = 50_000


def dedup_set(code: str | None, settings: DecontamSettings) -> np.ndarray:
    from pipeline.decontam.canon import canonicalize

    code = code if isinstance(code, str) else ""
    if settings.dedup_view == "raw":
        return raw_set(code, settings.raw_shingle)
    c = canonicalize(code, light=True)
    # code that does not parse is compared by its raw shingles (kept apart from canonical ones by a flag bit)
    return canon_set(c.tokens, settings.canon_shingle) if c.ok else raw_set(code, settings.raw_shingle) | np.uint32(1)


def lsh_params(settings: DecontamSettings) -> tuple[int, int]:
    from pipeline.decontam.signatures import lsh_params as _params

    return _params(settings.dedup_threshold, settings.num_perm)


@dataclass
class ShardResult:
    sets: list[np.ndarray]
    bands: np.ndarray  # (n, b) uint64 band keys
    sigs: np.ndarray  # (n, num_perm) signature values


def shard_views(codes: list[str | None] | pa.ChunkedArray, settings: DecontamSettings) -> ShardResult:
    """Step 1 for one shard (runs on a Ray worker or a forked pool worker)."""
    from pipeline.decontam.pool import no_gc
    from pipeline.decontam.signatures import minhashes

    if not isinstance(codes, list):  # an Arrow slice: only this shard becomes Python strings, here
        codes = codes.to_pylist()
    with no_gc():
        sets = [dedup_set(c, settings) for c in codes]
    b, r = lsh_params(settings)
    hms = minhashes(sets, settings)
    sigs = np.stack([m.hashvalues for m in hms]) if hms else np.zeros((0, settings.num_perm), np.uint32)
    bands = np.empty((len(sets), b), dtype=np.uint64)
    for j in range(b):
        chunk = np.ascontiguousarray(sigs[:, j * r : (j + 1) * r]).astype(np.uint64)
        with np.errstate(over="ignore"):
            h = np.full(len(sets), np.uint64(j + 1) * np.uint64(0x9E3779B97F4A7C15))
            for k in range(r):
                h = (h ^ chunk[:, k]) * np.uint64(0xBF58476D1CE4E5B9)
                h ^= h >> np.uint64(31)
        bands[:, j] = h
    return ShardResult(sets, bands, sigs)


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = np.arange(n)

    def find(self, x: int) -> int:
        p = self.parent
        root = x
        while p[root] != root:
            root = p[root]
        while p[x] != root:
            p[x], x = root, p[x]
        return int(root)

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:  # the smaller index is the root: the same forest whatever the order of unions
            self.parent[max(ra, rb)] = min(ra, rb)


def _bucket_pairs(bands: np.ndarray, max_bucket: int) -> Iterable[tuple[int, int]]:
    """Pairs of rows sharing a bucket of any band (sort-based join); large buckets link to their first row."""
    n, b = bands.shape
    for j in range(b):
        keys = bands[:, j]
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
        ends = np.r_[starts[1:], n]
        for s, e in zip(starts, ends):
            if e - s < 2:
                continue
            members = np.sort(order[s:e])
            if e - s > max_bucket:
                for m in members[1:]:
                    yield int(members[0]), int(m)
            else:
                for x in range(len(members)):
                    for y in range(x + 1, len(members)):
                        yield int(members[x]), int(members[y])


def _lsh_pairs(sigs: np.ndarray, settings: DecontamSettings) -> Iterable[tuple[int, int]]:
    """Candidate pairs through datasketch's MinHashLSH (in-memory inputs)."""
    from datasketch import MinHash, MinHashLSH

    b, r = lsh_params(settings)
    lsh = MinHashLSH(num_perm=settings.num_perm, params=(b, r))
    # one permutation table shared by every sketch (each would otherwise draw its own: ~1 KB and a RandomState)
    perms = MinHash(num_perm=settings.num_perm, seed=settings.seed, scheme=settings.scheme).permutations
    hms = [
        MinHash(
            num_perm=settings.num_perm, seed=settings.seed, hashvalues=s, permutations=perms, scheme=settings.scheme
        )
        for s in sigs
    ]
    with lsh.insertion_session() as session:
        for i, m in enumerate(hms):
            session.insert(i, m)
    for i, m in enumerate(hms):
        hits = sorted(h for h in lsh.query(m) if h > i)
        if len(hits) > settings.dedup_max_bucket:
            hits = hits[: settings.dedup_max_bucket]
        for h in hits:
            yield i, int(h)


def _as_rows(
    candidates: pa.Table | Iterable[tuple[str, str]],
) -> tuple[list[str], list[str | None] | pa.ChunkedArray, list[int]]:
    """Task ids, codes and code lengths. A table's codes stay in Arrow (a million codes as Python strings cost
    ~1.5 GB in the driver); each shard converts its own slice."""
    if isinstance(candidates, pa.Table):
        import pyarrow.compute as pc

        codes = candidates.column("code")
        lengths = pc.fill_null(pc.utf8_length(codes), 0).to_numpy(zero_copy_only=False).tolist() if len(codes) else []
        return [str(t) for t in candidates.column("task_id").to_pylist()], codes, lengths
    rows = list(candidates)
    codes = [c for _, c in rows]
    return [str(t) for t, _ in rows], codes, [len(c) if isinstance(c, str) else 0 for c in codes]


def compute_shards(
    codes: list[str | None] | pa.ChunkedArray, settings: DecontamSettings, executor: Any = None
) -> ShardResult:
    from pipeline.decontam.pool import fork_map
    from pipeline.stage import Resources

    size = max(1, settings.dedup_shard_size)
    bounds = [(i, min(i + size, len(codes))) for i in range(0, len(codes), size)]
    if getattr(executor, "distributed", False) and len(bounds) > 1:  # Ray, from the runner

        def job(chunk: list[str | None]) -> ShardResult:
            return shard_views(chunk, settings)

        shards = [codes[a:b] if isinstance(codes, list) else codes[a:b].to_pylist() for a, b in bounds]
        parts = executor.map(job, shards, Resources(cpus=1))
    else:  # a forked pool (settings.workers > 1) inherits the codes; only (start, end) travels
        parts = fork_map(shard_views, codes, (settings,), settings.workers, bounds)
    if not parts:
        b, _ = lsh_params(settings)
        return ShardResult([], np.zeros((0, b), np.uint64), np.zeros((0, settings.num_perm), np.uint32))
    return ShardResult(
        [s for p in parts for s in p.sets],
        np.concatenate([p.bands for p in parts]),
        np.concatenate([p.sigs for p in parts]),
    )


def dedup(
    candidates: pa.Table | Iterable[tuple[str, str]], settings: DecontamSettings | None = None, executor: Any = None
) -> pa.Table:
    """Rows of the `dedup` table, one per task, in input order; view chunks go to `executor` when it is
    distributed (Ray), else to a forked pool of `settings.workers`."""
    settings = settings or DecontamSettings()
    ids, codes, lengths = _as_rows(candidates)
    n = len(ids)
    res = compute_shards(codes, settings, executor)
    del codes
    # exact duplicates of the view collapse onto one representative (the first)
    digest = [hashlib.blake2b(s.tobytes(), digest_size=16).digest() for s in res.sets]
    first: dict[bytes, int] = {}
    rep = np.empty(n, dtype=np.int64)
    for i, d in enumerate(digest):
        rep[i] = first.setdefault(d, i)
    reps = np.flatnonzero(rep == np.arange(n))
    uf = _UnionFind(n)
    for i in range(n):
        if rep[i] != i:
            uf.union(int(rep[i]), i)
    if len(reps) <= LSH_IN_MEMORY_MAX:
        pairs = ((int(reps[a]), int(reps[b])) for a, b in _lsh_pairs(res.sigs[reps], settings))
    else:
        pairs = ((int(reps[a]), int(reps[b])) for a, b in _bucket_pairs(res.bands[reps], settings.dedup_max_bucket))
    seen: set[tuple[int, int]] = set()
    for a, b in pairs:
        # a pair already inside one cluster adds nothing: skipping it cannot change the components
        if uf.find(a) == uf.find(b) or (a, b) in seen:
            continue
        seen.add((a, b))
        if jaccard(res.sets[a], res.sets[b]) >= settings.dedup_threshold:
            uf.union(a, b)
    roots = np.array([uf.find(i) for i in range(n)])
    keep_key = {
        "first": lambda i: (i,),
        "shortest": lambda i: (lengths[i], ids[i], i),
        "longest": lambda i: (-lengths[i], ids[i], i),
        "smallest_id": lambda i: (ids[i], i),
    }[settings.dedup_keep]
    members: dict[int, list[int]] = {}
    for i, r in enumerate(roots):
        members.setdefault(int(r), []).append(i)
    kept_of: dict[int, int] = {r: min(ms, key=keep_key) for r, ms in members.items()}
    # columns, not a million dicts: the output of a large run stays a few hundred MB
    kept_idx = [kept_of[int(r)] for r in roots]
    removed = [k != i for i, k in enumerate(kept_idx)]
    same = [bool(rep[i] == rep[k]) for i, k in enumerate(kept_idx)]
    jac = [1.0 if sm else jaccard(res.sets[i], res.sets[k]) for i, (k, sm) in enumerate(zip(kept_idx, same))]
    kept_ids = [ids[k] for k in kept_idx]
    from schemas import get_schema

    rows = pa.Table.from_arrays(
        [
            pa.array(ids, pa.string()),
            pa.array(kept_ids, pa.string()),
            pa.array(kept_ids, pa.string()),
            pa.array(removed, pa.bool_()),
            pa.array(
                [("exact_duplicate" if sm else "near_duplicate") if rm else "" for rm, sm in zip(removed, same)],
                pa.string(),
            ),
            pa.array(jac, pa.float64()),
            pa.array([len(members[int(r)]) for r in roots], pa.int64()),
        ],
        schema=get_schema("dedup"),
    )
    return conform("dedup", rows)
