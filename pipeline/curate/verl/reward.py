"""verl reward function for the single-turn warm-up dataset (CUDA Agent's stage 1: PPO on the synthesized tasks).

verl calls `compute_score(data_source, solution_str, ground_truth, extra_info)` for every sampled response
(`custom_reward_function: {path: <this file>, name: compute_score}`). Here `solution_str` is the model's answer to
the warm-up prompt, `ground_truth` the task's reference PyTorch code (`reward_model.ground_truth` of the warmup
rows). The answer's last ```python block is the candidate `ModelNew`; the evaluation harness
(`pipeline.evaluate.harness.evaluate`: static checks, build, correctness trials, timing against eager and
torch.compile) scores it with CUDA Agent's reward: -1 incorrect, 1 correct, 2 faster than eager, 3 faster than
eager and torch.compile.

Where it runs: with Ray initialised and GPUs in the cluster, each evaluation is a Ray task holding one GPU (so
evaluations never share a GPU with each other, nor with anything else Ray placed); otherwise in this process on
this host's GPU. Without a GPU the harness reports reason "no_gpu" and the score is -1 (documented: a CPU-only
reward worker gives every answer -1, so PPO must run its reward on GPU hosts).

Imports stdlib only at module level (verl loads the file by path in its reward workers); the harness brings torch.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

NO_ANSWER = -1.0
_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(solution_str: str) -> str | None:
    """The last fenced code block that defines ModelNew (else the last python block), or None."""
    blocks = [b for b in _BLOCK.findall(solution_str or "") if b.strip()]
    with_model = [b for b in blocks if "ModelNew" in b]
    return (with_model or blocks or [None])[-1]


def evaluate_answer(task_code: str, code: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The harness's result (EvalResult.to_dict()) for one single-file answer, evaluated in this process."""
    from pipeline.evaluate.harness import evaluate

    tmp = Path(tempfile.mkdtemp(prefix="opforge-verl-"))
    try:
        path = tmp / "model_new.py"
        path.write_text(code)
        return evaluate(task_code, str(path), mode="full", settings=settings or {}).to_dict()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _gpu_cluster() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized() and ray.cluster_resources().get("GPU", 0) > 0


def score_answer(
    task_code: str, solution_str: str, settings: dict[str, Any] | None = None, use_ray: bool | None = None
) -> dict[str, Any]:
    """Score one answer: {"score", "reward", "correct", "compiled", "format_ok", "speedup_vs_eager",
    "speedup_vs_compile", "no_gpu"}, every value a number (verl aggregates the extra keys as metrics)."""
    code = extract_code(solution_str)
    if code is None:
        return {
            "score": NO_ANSWER,
            "reward": -1,
            "correct": 0,
            "compiled": 0,
            "format_ok": 0,
            "speedup_vs_eager": 0.0,
            "speedup_vs_compile": 0.0,
            "no_gpu": 0,
        }
    if use_ray if use_ray is not None else _gpu_cluster():
        import ray

        res = ray.get(ray.remote(evaluate_answer).options(num_gpus=1, max_retries=1).remote(task_code, code, settings))
    else:
        res = evaluate_answer(task_code, code, settings)
    r = int(res.get("reward", -1))
    return {
        "score": float(r),
        "reward": r,
        "correct": int(bool(res.get("correct"))),
        "compiled": int(bool(res.get("compiled"))),
        "format_ok": 1,
        "speedup_vs_eager": float(res.get("speedup_vs_eager") or 0.0),
        "speedup_vs_compile": float(res.get("speedup_vs_compile") or 0.0),
        "no_gpu": int(res.get("reason") == "no_gpu"),
    }


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **reward_kwargs: Any
) -> dict[str, Any]:
    """verl's entry point. `reward_kwargs` (verl's custom_reward_function.reward_kwargs): `eval_settings`, the
    harness options (e.g. {"n_trials": 5}), and `use_ray` (None: when Ray is up with GPUs)."""
    return score_answer(ground_truth, solution_str, reward_kwargs.get("eval_settings"), reward_kwargs.get("use_ray"))
