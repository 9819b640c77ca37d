"""Warm-up rows in verl's RL dataset format: one single-turn prompt per clean task."""

from __future__ import annotations

from typing import Any

from pipeline.curate.prompts import warmup_prompt
from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of

ABILITY = "cuda_kernel"


def warmup_rows(
    clean_tasks: list[dict[str, Any]], contamination: dict[str, dict], settings: CurateSettings, run_id: str
) -> list[dict[str, Any]]:
    """Rows for the `warmup` table, ordered by task id; `extra_info.index` counts within each split."""
    rows = []
    counters = {"train": 0, "validation": 0}
    for t in sorted(clean_tasks, key=lambda t: t["task_id"]):
        split = split_of(t["task_id"], settings.validation_fraction, settings.split_salt)
        c = contamination.get(t["task_id"]) or {}
        score = c.get("score")
        rows.append(
            {
                "row_id": f"warmup:{t['task_id']}",
                "data_source": t.get("data_source") or "",
                "prompt": warmup_prompt(t["code"], list(t.get("ops") or []), settings.warmup_system_prompt),
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": t["code"]},
                "extra_info": {
                    "task_id": t["task_id"],
                    "split": split,
                    "index": counters[split],
                    "ops": list(t.get("ops") or []),
                    "composer": t.get("composer") or "",
                    "seed": t.get("seed"),
                    "task_run_id": t.get("run_id") or "",
                    "contamination_score": float(score) if score is not None else None,
                    "nearest_ref": c.get("nearest_ref"),
                },
                "split": split,
                "run_id": run_id,
            }
        )
        counters[split] += 1
    return rows
