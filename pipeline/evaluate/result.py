"""The record of one evaluation (stdlib only: built on CPU hosts and GPU workers alike)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class EvalResult:
    """What `harness.evaluate` returns; `to_dict()` is the `opforge eval --json` object and an `evaluations` row."""

    compiled: bool = False  # the solution built (and, on a GPU, loaded and instantiated)
    correct: bool = False  # outputs matched in every trial AND no strict violation
    reward: int = -1  # -1 incorrect, 1 correct, 2 > margin faster than eager, 3 also than torch.compile;
    # 0: excluded, a correct kernel on a defective task, or any kernel where the task's reference failed
    # (task_defect set; neither punished nor rewarded)
    eager_ms: float | None = None  # median ms of the reference, eager
    compile_ms: float | None = None  # median ms of the reference under torch.compile
    solution_ms: float | None = None  # median ms of ModelNew
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    max_abs_err: float | None = None  # over all correctness trials
    max_rel_err: float | None = None
    max_tol_err: float | None = None  # max |out-ref|/(1+|ref|): allclose(atol=rtol=t) holds iff this <= t
    violations: list[str] = field(default_factory=list)  # strict findings (static + runtime), reward -1
    warnings: list[str] = field(default_factory=list)  # recorded, not rejected (precision casts)
    device: str = ""  # GPU name ("" when none)
    timing: dict[str, Any] = field(default_factory=dict)  # method, raw times, stats, baseline cache info
    task_defect: str = ""  # "degenerate" (output independent of the input) | "reference_failed" (a task defect)
    reason: str = ""  # why not correct / not measured ("" when rewarded > -1 with full timing)
    error: str = ""  # trimmed compiler log or traceback
    mode: str = "full"
    task_id: str = ""
    solution_kind: str = ""  # workspace | single_file
    outputs_match: bool | None = None  # the numeric checks alone (before violations)
    compile: dict[str, Any] = field(default_factory=dict)  # CompileResult.to_dict()
    details: dict[str, Any] = field(default_factory=dict)  # static findings, violation details, phase seconds
    seconds: float = 0.0  # wall time of the whole evaluation

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
