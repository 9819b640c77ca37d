"""The stage contract: what every stage declares, in one place.

A stage package (`pipeline/<pkg>/spec.py`) declares `STAGE = Stage(...)` (decontam declares two); the registry
(`pipeline/registry.py`) lists them in pipeline order, and the runner (`pipeline/runner.py`) executes any of them.
A stage never knows where it runs (this process, processes or Ray): it gives the runner a `Plan` (its input rows
and the arguments of its per-shard function) or, for a stage that is one step over whole tables, an `Outcome`.

Functions are named by import string ("module:name") and resolved only when the stage runs, so importing the
registry costs nothing and a stage whose code is missing is reported as such (`StageUnavailable`), never run.
This module imports only the standard library: GPU workers and the registry can import it anywhere.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class Resources:
    """What one unit of a stage's work holds while it runs; the executor turns this into Ray options."""

    cpus: float = 1.0
    gpus: float = 0.0
    memory_mb: int | None = None

    def __post_init__(self) -> None:
        if self.cpus < 0 or self.gpus < 0:
            raise ValueError("resources cannot be negative")


@dataclass(frozen=True)
class Needs:
    """What a stage needs beyond a CPU; a run without it records the stage as skipped with what is missing."""

    gpu: bool = False  # an NVIDIA GPU with CUDA (config `device`, or GPU workers of `ray.address`)
    model: bool = False  # a served model (the stage's settings name it)
    kernelbench: bool = False  # the KernelBench reference problems


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline.

    `fn` is the per-shard function, `fn(shard, **plan.args) -> rows of outputs[0]`, where `shard` is the plan's
    input rows for that shard (the whole input for a stage that is one unit, `shard_key=None`; None when it has
    no input rows). `plan(cfg) -> Plan` chooses the input (pipeline.selection) and the arguments. A stage with
    `plan=None` is one step over whole tables: `fn(cfg) -> Outcome` (curate, publish); it writes its own files and
    the runner records them.
    """

    name: str
    inputs: tuple[str, ...]  # tables read
    outputs: tuple[str, ...]  # tables written (publish: the datasets it releases)
    settings: str  # the config section (attribute of OpforgeConfig)
    fn: str  # "module:function", resolved when the stage runs
    plan: str | None = None  # "module:function"
    shard_key: str | None = None  # input column the shards are made of; None: one unit of work
    shard_size: int = 1  # items per shard: the unit of resume and of parallelism
    resources: Resources = Resources()
    threads: int = 1  # shards at once without Ray (>1 only when the work waits on subprocesses)
    fan_out: bool = False  # fn takes `executor=`: the runner's executor for spreading a shard's items
    needs: Needs = Needs()
    command: str = ""  # the `opforge` CLI command that runs it
    flow: str = ""  # the Prefect flow (flows/stages.py) that runs it
    docs: str = ""  # docs/<page>.md
    doc: str = ""  # one line: what the stage does

    def function(self) -> Callable[..., Any]:
        return resolve(self.fn)

    def planner(self) -> Callable[..., "Plan"] | None:
        return resolve(self.plan) if self.plan else None


@dataclass
class Plan:
    """What a sharded stage will compute for one run."""

    args: Mapping[str, Any] = field(default_factory=dict)  # keyword arguments of the per-shard function (picklable)
    items: Any = None  # input rows (an Arrow table) or None
    key: Any = None  # what the shard keys depend on besides the ids (settings, pins); default: the settings section
    ids: Sequence[str] = ()  # a one-unit stage: the input ids its key depends on
    rows_in: int | None = None  # default: the input's row count
    detail: str = ""  # a note recorded with the stage
    facts: Mapping[str, str] | None = None  # recorded in the catalog before any shard runs (what the result pins)
    finish: Callable[[Any], dict[str, Any]] | None = None  # after the output is written (reports); extra summary


@dataclass
class Outcome:
    """What a whole-table stage did; the runner records it (and its files) in the catalog."""

    rows_in: int
    rows_out: int
    drop_reasons: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    files: Sequence[tuple[str, str, int]] = ()  # (table, path, rows) written
    summary: dict[str, Any] = field(default_factory=dict)  # extra fields of the stage summary
    release: dict[str, Any] | None = None  # a tagged Hub release (publish): repo_id, tag, commit, endpoint, files
    message: str = ""  # shown to the user (progress)


class InProcess:
    """The executor a stage function uses when its caller gives none: this process, one item after another.
    Executors (pipeline/executor.py) have the same `map`; `distributed` says whether items leave this process."""

    distributed = False

    def map(
        self,
        fn: Callable[[Any], Any],
        items: Sequence[Any],
        resources: Resources = Resources(),
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        out = []
        for i, it in enumerate(items):
            r = fn(it)
            if on_result:
                on_result(i, r)
            out.append(r)
        return out


class Skip(Exception):
    """Raised by a plan: this stage cannot run here or has nothing to do; the message says why (and what it needs)."""


class StageUnavailable(RuntimeError):
    """The stage's code is not importable here (not written yet, or broken)."""


def resolve(ref: str) -> Callable[..., Any]:
    """The object a "module:name" string names; StageUnavailable when it cannot be imported."""
    module, _, name = ref.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and not e.name.startswith("pipeline"):  # a missing third-party package is the user's to install
            raise
        raise StageUnavailable(f"{module} is not available ({e})") from None
    except Exception as e:  # a broken module: name the error rather than crash the whole run
        raise StageUnavailable(f"{module} failed to import: {type(e).__name__}: {e}") from None
    if not hasattr(mod, name):
        raise StageUnavailable(f"{module}.{name} does not exist")
    return getattr(mod, name)


@dataclass(frozen=True)
class ShardCall:
    """`fn(shard, **args)` with `fn` named by import string: picklable for Ray and processes, resolved where it
    runs."""

    fn: str
    args: Mapping[str, Any]

    def __call__(self, shard: Any = None) -> Any:
        return resolve(self.fn)(shard, **self.args)


def device(cfg: Any) -> str:
    """The config's device, with "auto" resolved here: cuda when torch sees a GPU, else cpu."""
    if cfg.device != "auto":
        return cfg.device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except Exception:
        return "cpu"
