"""Single-turn sampling on the warm-up prompts: k answers per task, each scored as the verl reward function scores
it (`pipeline.curate.verl.reward.score_answer`: the harness on a GPU). Rows go to the `single_turn` table; curation
keeps the rewarded ones as the rejection-sampled dataset."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable

from pipeline.identity import content_hash
from pipeline.llm.backend import ChatBackend, SamplingParams

if TYPE_CHECKING:
    from pipeline.rollout.settings import RolloutSettings

log = logging.getLogger(__name__)
Scorer = Callable[[str, str], dict[str, Any]]


def sample_id(task_id: str, sample_idx: int, seed: int) -> str:
    return content_hash("single_turn", task_id, str(sample_idx), str(seed))


def _one(
    task: dict[str, Any], k: int, backend: ChatBackend, settings: RolloutSettings, score: Scorer, run_id: str
) -> dict[str, Any]:
    from pipeline.curate.prompts import warmup_prompt
    from pipeline.rollout.stage import sample_seed

    tid = task["task_id"]
    seed = sample_seed(tid, k, settings.seed)
    prompt = warmup_prompt(task["code"], list(task.get("ops") or []))
    row: dict[str, Any] = {
        "sample_id": sample_id(tid, k, seed),
        "task_id": tid,
        "sample_idx": k,
        "seed": seed,
        "model": backend.model_name,
        "run_id": run_id,
        "system": prompt[0]["content"],
        "user": prompt[1]["content"],
        "completion": "",
        "finish_reason": "",
        "format_ok": False,
        "compiled": False,
        "correct": False,
        "reward": -1,
        "speedup_vs_eager": None,
        "speedup_vs_compile": None,
        "eval_reason": "",
        "error": "",
    }
    try:
        resp = backend.chat(
            prompt,
            sampling=SamplingParams(
                temperature=settings.temperature,
                top_p=settings.top_p,
                max_tokens=settings.max_tokens_per_turn,
                seed=seed,
            ),
            session_id=f"{tid}/{k}/{seed}",
        )
        backend.end_session(f"{tid}/{k}/{seed}")
        row["completion"] = resp.raw_text if resp.raw_text is not None else resp.text or ""
        row["finish_reason"] = resp.finish_reason or ""
    except Exception as e:  # never lose the item: the row says why
        row["error"] = f"engine: {type(e).__name__}: {str(e)[:1000]}"
        return row
    try:
        s = score(task["code"], row["completion"])
    except Exception as e:
        row["error"] = f"harness: {type(e).__name__}: {str(e)[:1000]}"
        return row
    row.update(
        format_ok=bool(s.get("format_ok")),
        compiled=bool(s.get("compiled")),
        correct=bool(s.get("correct")),
        reward=int(s.get("reward", -1)),
        speedup_vs_eager=s.get("speedup_vs_eager") or None,
        speedup_vs_compile=s.get("speedup_vs_compile") or None,
        eval_reason="no_gpu" if s.get("no_gpu") else ("no_answer" if not s.get("format_ok") else ""),
    )
    return row


def sample_single_turn(
    tasks: list[dict[str, Any]],
    backend: ChatBackend,
    settings: RolloutSettings,
    run_id: str,
    *,
    k: int | None = None,
    score: Scorer | None = None,
    eval_settings: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """k answers (default settings.single_turn_samples) per task ({task_id, code, ops}), scored; one
    `single_turn` row each, ordered by (task_id, sample_idx)."""
    from pipeline.curate.verl.reward import score_answer

    k = k if k is not None else settings.single_turn_samples
    scorer = score or (lambda code, answer: score_answer(code, answer, eval_settings))
    jobs = [(t, i) for t in sorted(tasks, key=lambda t: t["task_id"]) for i in range(k)]
    with ThreadPoolExecutor(max_workers=max(1, settings.concurrency), thread_name_prefix="single") as pool:
        return list(pool.map(lambda j: _one(j[0], j[1], backend, settings, scorer, run_id), jobs))
