"""Decontamination of N candidates against KernelBench, side by side with a naive datasketch baseline.

    .venv/bin/python benchmarks/bench_decontam.py [--n 6000] [--workers 2] [--baseline-tree /work/main]
        [--semantic [--cache REF_CACHE] [--traces-from CACHE] [--set KEY=VALUE ...]] [--unjailed]

Candidates (labelled, built at run time): a third disguised KernelBench copies (random subsets of the
transforms), two thirds new compositions. Printed: wall time of our stage (reference index built once, then
`decontaminate`), of the LSH-only path (no exhaustive scoring), and of the naive baseline (MinHash.update per
shingle with SHA-1, raw whitespace-token shingles, MinHashLSH hits taken as contamination without verification);
recall / false-positive rate of each on the same candidates.
`--baseline-tree DIR`: first runs DIR's own copy of this script (another checkout, e.g. the code before a change)
in a subprocess on the same machine, with the same options, so that both timings come from one run. `--semantic`:
then the stage with the semantic view and functional confirmation on: cold (every candidate traced and confirmed),
with the traces carried as validation makes them (only the confirmations run) and warm (a re-check); `--unjailed`
runs the tracing worker in a plain subprocess (fork per task) instead of the jail, and says so; `--set KEY=VALUE`
runs the semantic passes with that setting (which pairs are confirmed: docs/contamination.md's speed and recall).
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import argparse  # noqa: E402
import collections  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

from pipeline.decontam.calibration.disguise import TRANSFORMS, disguise  # noqa: E402
from pipeline.decontam.calibration.negatives import random_composition  # noqa: E402
from pipeline.decontam.index import ReferenceIndex  # noqa: E402
from pipeline.decontam.settings import DecontamSettings  # noqa: E402
from pipeline.decontam.stage import decontaminate  # noqa: E402
from pipeline.kernelbench import load_reference  # noqa: E402

_T_IMPORTS = time.perf_counter() - _T0  # numpy, pyarrow, datasketch (+ the scipy it loads), our modules


def make_candidates(refs, n: int, seed: int = 0) -> tuple[list[tuple[str, str]], np.ndarray, list[str]]:
    from pipeline.decontam.canon import canonicalize

    rng = random.Random(seed)
    rows, labels, sources = [], [], []
    names = list(TRANSFORMS)
    # a composition with the same ordered ops as a KernelBench problem is that problem (calibration's policy)
    ref_sigs = {tuple(canonicalize(r.code).ops) for r in refs}
    i = 0
    while len(rows) < n:
        i += 1
        if i % 3 == 0:
            r = rng.choice(refs)
            picked = rng.sample(names, rng.randint(1, len(names)))
            # in the order a copier applies them (constants before no-op lines, which must stay no-ops)
            code = disguise(r.code, sorted(picked, key=names.index), rng)
            rows.append((f"pos{i}", code))
            labels.append(True)
            sources.append(r.ref_id)
        else:
            code = random_composition(rng)
            if tuple(canonicalize(code).ops) in ref_sigs:
                continue
            rows.append((f"neg{i}", code))
            labels.append(False)
            sources.append("")
    return rows, np.array(labels), sources


def naive_baseline(refs, rows, settings: DecontamSettings) -> np.ndarray:
    """What a first attempt looks like: per-token MinHash.update with SHA-1, unverified LSH hits."""
    from datasketch import MinHash, MinHashLSH

    def shingles(code: str) -> set[bytes]:
        toks = code.split()
        return {" ".join(toks[i : i + 5]).encode() for i in range(max(1, len(toks) - 4))}

    lsh = MinHashLSH(threshold=0.5, num_perm=settings.num_perm)
    for r in refs:
        m = MinHash(num_perm=settings.num_perm)
        for s in shingles(r.code):
            m.update(s)
        lsh.insert(r.ref_id, m)
    flagged = []
    for _, code in rows:
        m = MinHash(num_perm=settings.num_perm)
        for s in shingles(code):
            m.update(s)
        flagged.append(bool(lsh.query(m)))
    return np.array(flagged)


def rates(flagged: np.ndarray, labels: np.ndarray) -> str:
    rec = (flagged & labels).sum() / max(labels.sum(), 1)
    fpr = (flagged & ~labels).sum() / max((~labels).sum(), 1)
    return f"recall={rec:.4f} fpr={fpr:.4f}"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children: the machine is shared, wall time alone misleads."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def load() -> str:
    import os

    return "load average %.1f %.1f %.1f on %d cores" % (*os.getloadavg(), os.cpu_count())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reference", default=None)
    ap.add_argument("--baseline-tree", default=None)
    ap.add_argument("--semantic", action="store_true")
    ap.add_argument("--unjailed", action="store_true")
    ap.add_argument(
        "--cache",
        default=None,
        help="semantic cache holding the reference's traces (the candidates' are traced into a fresh copy: cold)",
    )
    ap.add_argument(
        "--traces-from",
        default=None,
        help="with --semantic: the candidates' traces from this cache (an earlier run's); the cold pass is skipped",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --semantic: a decontamination setting of the semantic passes, e.g. rebuilt_max=1",
    )
    args = ap.parse_args()
    if args.baseline_tree:
        import subprocess

        print(f"=== baseline: {args.baseline_tree}/benchmarks/bench_decontam.py (same machine, same run) ===")
        # the same passes there (the semantic ones too, on the same reference and candidate traces)
        more = ["--semantic"] * args.semantic + ["--unjailed"] * args.unjailed
        more += ["--reference", args.reference] if args.reference else []
        for flag, value in (("--cache", args.cache), ("--traces-from", args.traces_from)):
            more += [flag, str(Path(value).resolve())] if value else []  # paths from this tree's directory
        subprocess.run(
            [sys.executable, "benchmarks/bench_decontam.py", "--n", str(args.n), "--workers", str(args.workers)]
            + more,
            cwd=args.baseline_tree,
            check=False,
        )
        print("=== this tree ===")
    refs = load_reference(args.reference)
    t = time.perf_counter()
    rows, labels, sources = make_candidates(refs, args.n)
    print(
        f"built {len(rows)} labelled candidates ({labels.sum()} disguised copies) in "
        f"{time.perf_counter() - t:.1f} s (not timed below)"
    )
    settings = DecontamSettings(workers=args.workers, semantic=False)  # the views of the original stage

    print(f"imports (numpy, pyarrow, datasketch + scipy, pipeline.decontam): {_T_IMPORTS:.2f} s (not timed below)")
    print(load())
    t, c = time.perf_counter(), cpu_seconds()
    index = ReferenceIndex(refs, settings)
    t_index, c_index = time.perf_counter() - t, cpu_seconds() - c
    t, c = time.perf_counter(), cpu_seconds()
    ours = decontaminate(rows, index, settings)
    t_ours, c_ours = time.perf_counter() - t, cpu_seconds() - c
    flagged = np.array(ours.column("contaminated").to_pylist())
    nearest = ours.column("nearest_ref").to_pylist()
    near_ok = np.mean([n == s for n, s, lab in zip(nearest, sources, labels) if lab])
    print(
        f"ours (exact + LSH, workers={args.workers}): index {t_index:.2f} s wall / {c_index:.2f} s CPU, "
        f"decontaminate {t_ours:.2f} s wall / {c_ours:.2f} s CPU ({len(rows) / t_ours:.0f} candidates/s wall); "
        f"{rates(flagged, labels)} nearest_right={near_ok:.4f}"
    )
    print(
        f"ours total (index + decontaminate): {t_index + t_ours:.2f} s wall / {c_index + c_ours:.2f} s CPU "
        f"(target < 5 s wall: {'met' if t_index + t_ours < 5 else 'NOT met'})"
    )

    lsh_settings = settings.model_copy(update={"exact_max_refs": 0})
    t = time.perf_counter()
    lsh_index = ReferenceIndex(refs, lsh_settings)
    lsh_out = decontaminate(rows, lsh_index, lsh_settings)
    t_lsh = time.perf_counter() - t
    lsh_flagged = np.array(lsh_out.column("contaminated").to_pylist())
    lost = int((flagged & ~lsh_flagged).sum())
    recalled = np.array(ours.column("lsh_recalled").to_pylist())
    print(
        f"LSH only (hits verified by exact Jaccard): {t_lsh:.2f} s incl. index; {rates(lsh_flagged, labels)}; "
        f"contaminated found by exact scoring but missed by LSH: {lost}; "
        f"nearest_ref among LSH hits for {recalled[flagged].mean():.4f} of flagged"
    )

    t, c = time.perf_counter(), cpu_seconds()
    base = naive_baseline(refs, rows, settings)
    t_base, c_base = time.perf_counter() - t, cpu_seconds() - c
    print(
        f"naive baseline (per-token update, SHA-1, unverified LSH): {t_base:.2f} s wall / {c_base:.2f} s CPU; "
        f"{rates(base, labels)}"
    )
    print(
        f"ours / baseline: wall {(t_ours + t_index) / t_base:.2f}x, CPU {(c_ours + c_index) / c_base:.2f}x "
        f"(ours incl. index build)"
    )
    print(load())
    if args.semantic:
        semantic_section(refs, rows, labels, settings, args)


class _Meter:
    """Wall time, CPU time (this process and its children: the jailed workers) and job counts of the semantic
    view's two kinds of jailed work, measured around pipeline.decontam.semantic's functions."""

    def __init__(self, sem) -> None:
        self.sem, self.calls, self.child_s = sem, {}, []
        for name in ("semantic_views", "confirm_pairs"):
            self.wrap(name)

    def wrap(self, name: str) -> None:
        fn = getattr(self.sem, name)

        def timed(items, settings, *more):
            t, c = time.perf_counter(), self.sem.STATS["worker_cpu_s"]
            out = fn(items, settings, *more)
            rec = self.calls.setdefault(name, [0, 0.0, 0.0, 0])
            rec[0] += len(items)
            rec[1] += time.perf_counter() - t
            rec[2] += self.sem.STATS["worker_cpu_s"] - c
            if name == "semantic_views":
                rec[3] += sum(not v.cached for v in out)
                self.child_s += [v.trace_s for v in out if not v.cached]
            else:
                rec[3] += sum(bool(r.get("screened")) for r in out)
            return out

        setattr(self.sem, name, timed)

    def line(self) -> str:
        """Wall time of each kind of work; CPU time of the jailed workers as they report it (they are not this
        process's children), including their start-up (torch import, warm-up)."""
        tr = self.calls.get("semantic_views", [0, 0.0, 0.0, 0])
        cf = self.calls.get("confirm_pairs", [0, 0.0, 0.0, 0])
        self.calls = {}
        starts = self.sem.STATS["worker_starts"]
        self.sem.STATS.update(worker_starts=0)
        kids, self.child_s = np.array(self.child_s or [0.0]), []
        per = (
            f"{1000 * tr[1] / tr[3]:.1f} ms wall, {1000 * tr[2] / tr[3]:.1f} ms worker CPU per traced task; "
            f"per task in the worker (fork, trace, answer) median {1000 * np.median(kids):.1f} ms, p90 "
            f"{1000 * np.percentile(kids, 90):.1f} ms, {np.sum(kids > 5)} over 5 s ({kids[kids > 5].sum():.0f} s)"
            if tr[3]
            else "all from the cache"
        )
        return (
            f"tracing: {tr[0]} views asked, {tr[3]} traced now, {tr[1]:.2f} s wall / {tr[2]:.2f} s worker CPU "
            f"({per}); confirmation: {cf[0]} pairs ({cf[3]} decided by the screen, without the candidate's code), "
            f"{cf[1]:.2f} s wall / {cf[2]:.2f} s worker CPU; "
            f"{starts} jailed workers started"
        )


def with_settings(settings: DecontamSettings, pairs: list[str], **more) -> DecontamSettings:
    """`settings` with `KEY=VALUE` decontamination settings applied as `opforge --set decontam.KEY=VALUE` applies
    them (pipeline.config: values read as YAML, unknown keys an error), then `more`; the settings given are printed."""
    from pipeline.config import apply_overrides

    data = apply_overrides({"decontam": settings.model_dump()}, [f"decontam.{p}" for p in pairs])
    if pairs:  # said in the output, beside the figures they give
        print(f"settings: {', '.join(pairs)} (the rest as configured by default)")
    return DecontamSettings.model_validate({**data["decontam"], **more})


def carried_traces(rows, cache: str) -> list[str | None]:
    """The `semantic_trace` each candidate would arrive with from validation (pipeline.validate runs the same
    tracer and stores whatever it gave for a valid task, a failure too: pipeline.validate.stage): its trace record
    in `cache` (where an earlier pass traced it), keyed like the validation stage's. Which of them decontamination
    takes as final is its own rule (pipeline.decontam.jailed.carried), not the benchmark's."""
    from pipeline.decontam.jailed import carry, code_key

    out = []
    for _, code in rows:
        k = code_key(code)
        p = Path(cache) / k[:2] / f"{k}.json"
        out.append(carry(p.read_text(), code) if p.exists() else None)
    return out


def semantic_section(refs, rows, labels, settings, args) -> None:
    """The check with the semantic view on, side by side with the views alone, alternating in this run (a views-alone
    run just before each): (1) cold: every candidate traced and confirmed in the jail; (2) traces carried: each
    candidate arrives with its trace in a `semantic_trace` column, as from validation, and only the functional
    confirmations run in the jail; (3) warm: traces carried and confirmation reports in the cache (a re-check).
    The process's in-memory copy of the cache is dropped before each pass: every pass reads what a new process
    would. `--traces-from DIR`: the candidates' traces from DIR (an earlier run's cache); pass (1) is skipped."""
    import json
    import shutil
    import tempfile

    import pyarrow as pa

    import pipeline.decontam.semantic as sem

    if args.unjailed:
        from bench_semantic import run_unjailed

        sem._RUN[0] = run_unjailed
    where = "UNJAILED worker (plain subprocess, fork per task)" if args.unjailed else "jailed worker"

    def fresh() -> str:
        d = tempfile.mkdtemp(prefix="sem-bench-")
        if args.cache:  # the reference's traces only (they are made once per reference version)
            shutil.copytree(args.cache, d, dirs_exist_ok=True)
        return d

    meter = _Meter(sem)
    cold = fresh()
    on = with_settings(settings, args.set, semantic=True, semantic_cache_dir=cold)
    index = ReferenceIndex(refs, on)
    t = time.perf_counter()
    index.semantic()
    t_ref = time.perf_counter() - t
    print(
        f"semantic on ({where}): reference views in {t_ref:.1f} s (traced once per reference version, cached; "
        f"{'from --cache' if args.cache else 'cold'}); {meter.line()}"
    )
    off_index = ReferenceIndex(refs, settings)
    ids = [t for t, _ in rows]
    codes = [c for _, c in rows]
    carried_cache = fresh()
    passes = [] if args.traces_from else [("cold (every candidate traced and confirmed)", cold, None)]
    passes += [
        ("traces carried (as from validation), confirmations run", carried_cache, "carry"),
        ("warm (traces carried, confirmations cached)", carried_cache, "carry"),
    ]
    for label, cache, carried in passes:
        if carried:
            traces = carried_traces(rows, args.traces_from or cold)
            cands = pa.table({"task_id": ids, "code": codes, "semantic_trace": pa.array(traces, pa.string())})
        else:
            cands = rows
        run = on.model_copy(update={"semantic_cache_dir": cache})
        t, c = time.perf_counter(), cpu_seconds()
        decontaminate(rows, off_index, settings)
        t_off, c_off = time.perf_counter() - t, cpu_seconds() - c
        sem._MEM.clear()  # what a new process reads: the cache on disk
        t, c, w = time.perf_counter(), cpu_seconds(), sem.STATS["worker_cpu_s"]
        out = decontaminate(cands, index, run)
        t_sem, c_sem = time.perf_counter() - t, cpu_seconds() - c + sem.STATS["worker_cpu_s"] - w
        flagged = np.array(out.column("contaminated").to_pylist())
        near = np.array(out.column("near_variant").to_pylist(), dtype=bool)
        status = out.column("semantic_status").to_pylist()
        print(
            f"semantic on, {label}: decontaminate {t_sem:.2f} s wall / {c_sem:.2f} s CPU (incl. workers) against "
            f"{t_off:.2f} s wall / {c_off:.2f} s CPU for the views alone just before: {t_sem / t_off:.2f}x wall, "
            f"{c_sem / max(c_off, 1e-9):.2f}x CPU; {rates(flagged, labels)} (near-variants kept as "
            f"near_variant_policy=keep does: {rates(flagged & ~near, labels)}); "
            + (
                f"{sum(x is not None for x in traces)} traces carried "
                f"({sum(x is not None and not json.loads(x).get('ok') for x in traces)} of them failed); "
                if carried
                else ""
            )
            + f"statuses {dict(collections.Counter(status))}; reasons "
            f"{dict(sorted(collections.Counter(out.column('reason').to_pylist()).items()))}"
        )
        print(f"  {meter.line()}")
        print(f"  {load()}")
        wrong = [(r, lab) for r, lab, f in zip(out.to_pylist(), labels, flagged) if f != lab]
        for r, lab in wrong[:5]:
            print(
                f"  {'MISSED' if lab else 'FALSE POSITIVE'} {r['task_id']}: reason={r['reason']} "
                f"ref={r['nearest_ref']} sem={r['semantic_score']:.3f} {r['evidence'][:300]}"
            )


if __name__ == "__main__":
    main()
