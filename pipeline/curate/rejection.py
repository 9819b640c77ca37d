"""The rejection-sampled single-turn dataset: of the k answers sampled per warm-up prompt (`single_turn` rows),
keep those the harness rewarded (reward >= rs_min_reward), one per distinct answer."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of

RS_REASONS = ["task_not_clean", "sample_error", "no_answer", "nonpositive_reward", "duplicate_answer"]


def rejection_rows(
    samples: list[dict[str, Any]],
    tasks: dict[str, dict[str, Any]],
    problems: dict[str, list[str]],
    settings: CurateSettings,
    run_id: str,
) -> tuple[list[dict[str, Any]], list[tuple[dict, list, str]]]:
    """(rejection_sampled rows, [(sample, reasons, detail)] for every sample left out)."""
    drops: list[tuple[dict, list, str]] = []
    candidates: list[dict[str, Any]] = []
    k_of = Counter(str(s.get("task_id")) for s in samples)
    for s in samples:
        tid = str(s.get("task_id") or "")
        reasons, detail = [], ""
        if tid not in tasks or problems.get(tid):
            reasons.append("task_not_clean")
            detail = ",".join(problems.get(tid) or ["unknown_task"])
        if s.get("error"):
            reasons.append("sample_error")
            detail = detail or str(s["error"])[:300]
        if not s.get("format_ok"):
            reasons.append("no_answer")
        reward = s.get("reward")
        if not isinstance(reward, int) or reward < settings.rs_min_reward:
            reasons.append("nonpositive_reward")
            detail = detail or f"reward {reward}" + (f" ({s['eval_reason']})" if s.get("eval_reason") else "")
        if reasons:
            drops.append((s, reasons, detail))
        else:
            candidates.append(s)
    best: dict[tuple[str, str], dict[str, Any]] = {}
    rank = lambda s: (-(s["reward"]), -(s.get("speedup_vs_compile") or 0.0), s["sample_idx"])  # noqa: E731
    for s in candidates:
        key = (s["task_id"], " ".join(str(s.get("completion") or "").split()))
        if key not in best or rank(s) < rank(best[key]):
            best[key] = s
    kept = sorted(best.values(), key=lambda s: (s["task_id"], s["sample_idx"]))
    for s in candidates:
        b = best[(s["task_id"], " ".join(str(s.get("completion") or "").split()))]
        if b is not s:
            drops.append((s, ["duplicate_answer"], f"the same answer as sample {b['sample_idx']}"))
    n_kept = Counter(s["task_id"] for s in kept)
    rows = []
    for s in kept:
        t = tasks[s["task_id"]]
        rows.append(
            {
                "row_id": f"rs:{s['sample_id']}",
                "prompt": [
                    {"role": "system", "content": s.get("system") or ""},
                    {"role": "user", "content": s.get("user") or ""},
                ],
                "completion": [{"role": "assistant", "content": s.get("completion") or ""}],
                "task_id": s["task_id"],
                "split": split_of(s["task_id"], settings.validation_fraction, settings.split_salt),
                "sample_idx": int(s["sample_idx"]),
                "k": k_of[s["task_id"]],
                "kept": n_kept[s["task_id"]],
                "reward": int(s["reward"]),
                "speedup_vs_eager": s.get("speedup_vs_eager"),
                "speedup_vs_compile": s.get("speedup_vs_compile"),
                "data_source": t.get("data_source") or "",
                "model": s.get("model") or "",
                "rollout_run_id": s.get("run_id") or "",
                "run_id": run_id,
            }
        )
    return rows, drops


def rules(s: CurateSettings) -> dict[str, str]:
    return {
        "task_not_clean": "the task is not in the warm-up set (unknown, invalid, contaminated or a near duplicate)",
        "sample_error": "the engine or the harness failed on this sample",
        "no_answer": "the answer has no ```python block",
        "nonpositive_reward": f"the harness's reward is below {s.rs_min_reward}",
        "duplicate_answer": "the same answer (whitespace aside) to the same task was kept from a better sample",
    }
