"""Resumable sharded execution of a stage, without Prefect.

A stage's input is split into shards of items sorted by id; each shard's output is one Parquet file named by a
content key, `sha256(stage, stage settings, the shard's input ids, table schema version)`. The file is written to a
temporary name, fsynced and renamed (`pipeline.storage.atomic_write_parquet`), so a shard is finished exactly when
its final file exists. A rerun therefore skips finished shards and recomputes only the others; a writer killed by
`kill -9`, or stopped by a full disk, leaves at most a hidden temporary file that nothing reads and the next
attempt deletes. Only named transient errors are retried, with exponential backoff; anything else propagates.

Layout: `<data_root>/tables/<table>/run_id=<run_id>/shard-<key>.parquet` (the catalog's views read these).
Shards of the same run whose key is no longer planned (the settings changed) are moved to
`<data_root>/superseded/` rather than deleted, so no data is ever lost and no stale row is ever read.
"""

from __future__ import annotations

import errno
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.identity import content_hash
from pipeline.selection import drop_reasons, kept_mask  # which rows a stage kept: one rule per table
from pipeline.storage import DataStore, empty_table, partial_writes, read_parquet, write_table
from schemas import schema_version


class TransientError(RuntimeError):
    """Raise this from stage code for a failure worth retrying (a busy service, a dropped connection)."""


# OS errors that go away on their own (network filesystems, busy devices). ENOSPC is deliberately absent: a full
# disk does not fix itself in seconds, and retrying it only hides the cause.
_TRANSIENT_ERRNOS = {
    errno.EAGAIN,
    errno.EBUSY,
    errno.EINTR,
    errno.ETIMEDOUT,
    errno.ECONNRESET,
    errno.ECONNREFUSED,
    errno.ESTALE,
    errno.EPIPE,
}


def is_transient(exc: BaseException) -> bool:
    """Only named failure types are retried: TransientError, ConnectionError, TimeoutError, a few OS errnos."""
    if isinstance(exc, (TransientError, ConnectionError, TimeoutError)):
        return True
    return isinstance(exc, OSError) and exc.errno in _TRANSIENT_ERRNOS


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter for transient errors: delay = min(max_delay_s, base_delay_s * factor**n)."""

    attempts: int = 3
    base_delay_s: float = 1.0
    factor: float = 2.0
    max_delay_s: float = 30.0
    jitter: float = 0.1

    def delay(self, failed_attempts: int) -> float:
        d = min(self.max_delay_s, self.base_delay_s * self.factor ** (failed_attempts - 1))
        return d * (1 + random.uniform(-self.jitter, self.jitter))


def call_with_retries(
    fn: Callable[[], Any],
    policy: RetryPolicy = RetryPolicy(),
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> tuple[Any, int]:
    """Call `fn`, retrying transient errors per `policy`. Returns (result, attempts used)."""
    for attempt in range(1, policy.attempts + 1):
        try:
            return fn(), attempt
        except Exception as e:
            if not is_transient(e) or attempt == policy.attempts:
                raise
            if on_retry:
                on_retry(attempt, e)
            time.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")


def settings_fingerprint(settings: Any) -> str:
    """A stable JSON form of stage settings (pydantic models, dataclasses, dicts) for content keys."""
    if hasattr(settings, "model_dump"):
        settings = settings.model_dump(mode="json")
    elif hasattr(settings, "__dataclass_fields__"):
        import dataclasses

        settings = dataclasses.asdict(settings)
    return json.dumps(settings, sort_keys=True, default=str)


@dataclass(frozen=True)
class ShardSpec:
    """One unit of resumable work: which ids go in, where the output lands."""

    stage: str
    table: str
    run_id: str
    index: int
    key: str
    ids: tuple[str, ...]
    path: str

    @property
    def name(self) -> str:
        return f"{self.stage}[{self.index}]"


@dataclass
class ShardResult:
    spec: ShardSpec
    rows: int
    skipped: bool
    attempts: int
    seconds: float
    drop_reasons: dict[str, int] = field(default_factory=dict)


def shard_key(stage: str, table: str, settings: Any, ids: Sequence[str]) -> str:
    return content_hash(stage, table, str(schema_version(table)), settings_fingerprint(settings), *ids, n=20)


def plan_shards(
    stage: str, table: str, ids: Iterable[str], settings: Any, run_id: str, store: DataStore, shard_size: int
) -> list[ShardSpec]:
    """Split ids (sorted, so input order does not matter) into shards of `shard_size` with content keys."""
    if shard_size < 1:
        raise ValueError("shard_size must be >= 1")
    ordered = sorted(set(ids))  # a duplicated id must land in one shard only
    specs = []
    for i in range(0, len(ordered), shard_size):
        chunk = tuple(ordered[i : i + shard_size])
        key = shard_key(stage, table, settings, chunk)
        specs.append(
            ShardSpec(
                stage, table, run_id, i // shard_size, key, chunk, str(store.shard_path(table, run_id, f"shard-{key}"))
            )
        )
    return specs


def single_shard(
    stage: str, table: str, settings: Any, run_id: str, store: DataStore, inputs: Sequence[str] = ()
) -> ShardSpec:
    """A stage that cannot be split (synthesis from a seed, set-wide dedup): one shard keyed by all its inputs."""
    key = shard_key(stage, table, settings, sorted(inputs))
    return ShardSpec(
        stage, table, run_id, 0, key, tuple(sorted(inputs)), str(store.shard_path(table, run_id, f"shard-{key}"))
    )


def is_complete(path: Path, table: str) -> bool:
    """A shard is finished when its final file exists, carries this table's schema version and reads back whole.

    Renames are atomic, so existence alone suffices on a POSIX filesystem; the full verified read (page CRCs, row
    count, strict schema) also catches files copied in by hand, left by a filesystem without atomic rename or
    damaged on disk, which are moved aside and recomputed.
    """
    if not path.exists():
        return False
    try:
        meta = pq.read_schema(path).metadata or {}
        if meta.get(b"opforge.table", b"").decode() != table or int(
            meta.get(b"opforge.version", b"0")
        ) != schema_version(table):
            raise ValueError("other table or schema version")
        read_parquet(path, table)
        return True
    except Exception:  # unreadable for any reason: keep the bytes for inspection, recompute the shard
        path.rename(path.with_name(f".{path.name}.corrupt-{int(time.time())}"))
        return False


def _remove_partial_writes(path: Path) -> None:
    # This shard's writer is about to write it: any partial write of it is a killed writer's.
    for tmp in partial_writes(path):
        tmp.unlink(missing_ok=True)


def run_shard(
    spec: ShardSpec, compute: Callable[[], pa.Table | Iterable[Mapping[str, Any]]], policy: RetryPolicy = RetryPolicy()
) -> ShardResult:
    """Skip the shard if finished; else compute it (retrying transient errors) and write it atomically."""
    t0 = time.monotonic()
    path = Path(spec.path)
    if is_complete(path, spec.table):
        tbl = read_parquet(path, spec.table)
        return ShardResult(spec, tbl.num_rows, True, 0, time.monotonic() - t0, drop_reasons(tbl))

    def attempt() -> pa.Table:
        _remove_partial_writes(path)
        return write_table(spec.table, compute(), path)

    tbl, attempts = call_with_retries(attempt, policy)
    return ShardResult(spec, tbl.num_rows, False, attempts, time.monotonic() - t0, drop_reasons(tbl))


def read_shards(table: str, specs: Sequence[ShardSpec]) -> pa.Table:
    """The stage's output: every planned shard's rows, in shard order, in the table's schema."""
    parts = [read_parquet(Path(s.path), table) for s in specs]
    return pa.concat_tables(parts) if parts else empty_table(table)


def supersede_stale(store: DataStore, table: str, run_id: str, specs: Sequence[ShardSpec]) -> list[Path]:
    """Move shard files of this run that the current plan does not name (settings changed) out of the table."""
    keep = {Path(s.path).name for s in specs}
    moved = []
    for p in store.shards(table, run_id):
        if p.name not in keep:
            dest = Path(store.root) / "superseded" / table / f"run_id={run_id}" / p.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            p.rename(dest)
            moved.append(dest)
    return moved


@dataclass
class StageOutput:
    """What a sharded stage produced, for summaries and the catalog."""

    stage: str
    table: str
    data: pa.Table
    results: list[ShardResult]
    rows_in: int
    seconds: float
    moved: list[Path] = field(default_factory=list)  # shard files of older settings, moved to superseded/

    @property
    def rows_out(self) -> int:
        """Rows the stage kept (`pipeline.selection.kept_mask`)."""
        return sum(kept_mask(self.data))

    @property
    def drop_reasons(self) -> dict[str, int]:
        return drop_reasons(self.data)

    @property
    def shards_skipped(self) -> int:
        return sum(r.skipped for r in self.results)

    @property
    def shards_computed(self) -> int:
        return sum(not r.skipped for r in self.results)


@dataclass(frozen=True)
class ShardJob:
    """One shard to compute: picklable when `fn` is, so an executor can ship it to a process or a Ray worker."""

    spec: ShardSpec
    fn: Callable[[Any], Any]
    items: pa.Table | None
    policy: RetryPolicy

    @property
    def task_name(self) -> str:
        return f"{self.spec.stage}-shard-{self.spec.index:05d}"


def execute_shard(job: ShardJob) -> ShardResult:
    return run_shard(job.spec, lambda: job.fn(job.items), job.policy)


def run_sharded(
    stage: str,
    table: str,
    items: pa.Table | None,
    id_column: str | None,
    fn: Callable[[Any], pa.Table | Iterable[Mapping[str, Any]]],
    settings: Any,
    run_id: str,
    store: DataStore,
    shard_size: int = 1,
    *,
    policy: RetryPolicy = RetryPolicy(),
    resources: Any = None,
    executor: Any = None,
    inputs: Sequence[str] = (),
    rows_in: int | None = None,
    on_plan: Callable[[int], None] | None = None,
    on_shard: Callable[[ShardResult], None] | None = None,
) -> StageOutput:
    """Plan, run and collect a resumable stage: the one sharded execution path (pipeline/runner.py adds the
    catalog on top).

    `fn(shard_items) -> rows of table` must be a plain function of its shard alone (picklable for Ray).
    `id_column=None`: one unit of work over all of `items` (or None), keyed by `inputs`. Finished shards are
    recognised here, in the caller (their final file exists), so a rerun of a finished stage starts no worker; the
    others run on `executor` (pipeline.executor: Ray when it is up, else here) with `resources`.
    """
    from pipeline.executor import Resources, default_executor

    t0 = time.monotonic()
    if id_column is None:
        specs = [single_shard(stage, table, settings, run_id, store, list(inputs))]
        jobs = [ShardJob(specs[0], fn, items, policy)]
    else:
        specs = plan_shards(stage, table, items.column(id_column).to_pylist(), settings, run_id, store, shard_size)
        jobs = [ShardJob(s, fn, select_ids(items, id_column, s.ids), policy) for s in specs]
    if on_plan:
        on_plan(len(specs))
    done: dict[int, ShardResult] = {}
    todo = []
    for job in jobs:
        if is_complete(Path(job.spec.path), table):
            done[job.spec.index] = run_shard(job.spec, lambda: None, policy)  # reads the row count and reasons
            if on_shard:
                on_shard(done[job.spec.index])
        else:
            todo.append(job)
    if todo:
        ex = executor or default_executor(1)
        for r in ex.map(
            execute_shard, todo, resources or Resources(), on_result=(lambda _i, r: on_shard(r)) if on_shard else None
        ):
            done[r.spec.index] = r
    results = [done[s.index] for s in specs]
    moved = supersede_stale(store, table, run_id, specs)
    if rows_in is None:
        rows_in = items.num_rows if items is not None else 0
    return StageOutput(stage, table, read_shards(table, specs), results, rows_in, time.monotonic() - t0, moved)


def select_ids(items: pa.Table, id_column: str, ids: Sequence[str]) -> pa.Table:
    """Rows of `items` whose id is in `ids`, ordered as `ids` (duplicated ids keep all their rows)."""
    import pyarrow.compute as pc

    sub = items.filter(pc.is_in(items.column(id_column), value_set=pa.array(list(set(ids)), pa.string())))
    return sub.sort_by([(id_column, "ascending")])
