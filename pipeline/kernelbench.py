"""KernelBench as a reference set: from a directory, a Parquet file or the HF dataset. Never copied into the
project."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

HF_DATASET = "ScalingIntelligence/KernelBench"
# Where a checkout beside the project puts it (this machine's ../shared/kernelbench).
DEFAULT_CANDIDATES = (Path("../shared/kernelbench"), Path(__file__).resolve().parents[2] / "shared" / "kernelbench")


class KernelBenchNotFound(RuntimeError):
    pass


@dataclass(frozen=True)
class RefProblem:
    """One reference problem. `ref_id` is "levelN/<file stem>", e.g. "level1/19_ReLU"."""

    ref_id: str
    level: int
    name: str
    code: str


def _from_dir(root: Path) -> list[RefProblem]:
    # Accept level folders directly, a parent holding KernelBench/, or a repo checkout (KernelBench/level1 ...).
    for cand in (root, root / "KernelBench"):
        levels = sorted(p for p in cand.glob("level*") if p.is_dir() and re.fullmatch(r"level\d+", p.name))
        if levels:
            out = []
            for lvl in levels:
                for f in sorted(lvl.glob("*.py")):
                    out.append(RefProblem(f"{lvl.name}/{f.stem}", int(lvl.name[5:]), f.stem, f.read_text()))
            return out
    raise KernelBenchNotFound(f"{root}: no level1/ .. level4/ folders (nor KernelBench/level*/) found")


def _from_rows(rows: list[dict]) -> list[RefProblem]:
    out = []
    for r in rows:
        level = int(str(r.get("level", "0")).replace("level_", "").replace("level", "") or 0)
        name = str(r.get("name") or r.get("problem_name") or r.get("problem_id"))
        name = name[:-3] if name.endswith(".py") else name
        out.append(RefProblem(f"level{level}/{name}", level, name, r["code"]))
    return sorted(out, key=lambda p: p.ref_id)


def _from_parquet(path: Path) -> list[RefProblem]:
    import pyarrow.parquet as pq

    return _from_rows(pq.read_table(path).to_pylist())


def _from_hf(dataset_id: str) -> list[RefProblem]:
    import datasets

    ds = datasets.load_dataset(dataset_id)
    rows = []
    for split in ds.values():
        rows.extend(split.to_list())
    return _from_rows(rows)


def choose_source(source: str | os.PathLike | None = None) -> tuple[str, str]:
    """(source, why): the explicit source (config `kernelbench`, --reference) first, then $KERNELBENCH_PATH, then
    discovery (../shared/kernelbench beside the project, then the HF dataset). An explicit or environment choice
    is never overridden by a folder that happens to exist."""
    if source:
        return str(source), "explicit (config kernelbench / --reference)"
    if os.environ.get("KERNELBENCH_PATH"):
        return os.environ["KERNELBENCH_PATH"], "environment (KERNELBENCH_PATH)"
    for cand in DEFAULT_CANDIDATES:
        if cand.is_dir():
            return str(cand.resolve()), f"discovered ({cand})"
    return HF_DATASET, "discovered (HF dataset; no local copy found)"


def resolve_source(source: str | os.PathLike | None = None) -> str:
    """Explicit source, else $KERNELBENCH_PATH, else ../shared/kernelbench (if present), else the HF dataset."""
    return choose_source(source)[0]


@dataclass(frozen=True)
class ReferencePin:
    """What pins a contamination check to its reference: where it came from, why that one, and its checksum."""

    source: str
    chosen_by: str
    fingerprint: str
    problems: int

    def describe(self) -> str:
        return f"sha256:{self.fingerprint} ({self.problems} problems, {self.source}; {self.chosen_by})"


def pin(problems: list[RefProblem], source: str | os.PathLike | None = None) -> ReferencePin:
    src, why = choose_source(source)
    return ReferencePin(src, why, fingerprint(problems), len(problems))


def load_reference(source: str | os.PathLike | None = None) -> list[RefProblem]:
    """Load KernelBench problems from a directory, a Parquet file or an HF dataset id."""
    src = resolve_source(source)
    p = Path(src)
    if p.is_dir():
        return _from_dir(p)
    if p.suffix == ".parquet" and p.exists():
        return _from_parquet(p)
    if p.exists():
        raise KernelBenchNotFound(f"{src}: neither a directory of levels nor a .parquet file")
    if "/" in src and not src.startswith((".", "/")):
        try:
            return _from_hf(src)
        except Exception as e:  # network or dataset errors: say what to do instead
            raise KernelBenchNotFound(
                f"could not load the HF dataset {src!r} ({type(e).__name__}: {e}). Point --reference / "
                "KERNELBENCH_PATH at a KernelBench checkout (folders level1..level4) or a Parquet file."
            ) from e
    raise KernelBenchNotFound(
        f"KernelBench not found at {src!r}. Clone https://github.com/ScalingIntelligence/KernelBench and set "
        "KERNELBENCH_PATH to it, or pass a Parquet file, or the HF id ScalingIntelligence/KernelBench."
    )


def fingerprint(problems: list[RefProblem]) -> str:
    """A checksum over every problem's id and code: the reference version an auditor can compare."""
    h = hashlib.sha256()
    for p in sorted(problems, key=lambda p: p.ref_id):
        h.update(p.ref_id.encode() + b"\0" + p.code.encode() + b"\0")
    return h.hexdigest()
