"""The rollout stage: tasks in, `trajectories` rows out.

Trajectories are driven by a pool of threads (the driver is light: the engine generates on its replicas, compiles
and evaluations run on Ray workers or in harness subprocesses), so an engine replica always has requests from other
trajectories while one waits for its compile. Each trajectory's id is a content hash of (task_id, sample_idx, seed):
a rerun or a retry after a dead replica produces the same id, rows already written are skipped, and a shard per
trajectory (named by its id) is overwritten, never duplicated.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pyarrow as pa

from pipeline.identity import content_hash
from pipeline.llm.backend import ChatBackend, ReplicaDiedError
from pipeline.rollout.agent import AgentData, KernelAgent, final_score
from pipeline.rollout.environment import KernelEnv
from pipeline.rollout.tools import TOOLS, LocalRunner, ToolRunner

if TYPE_CHECKING:  # pydantic stays off the GPU-worker import path
    from pipeline.rollout.settings import RolloutSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    task_id: str
    code: str
    sample_idx: int
    seed: int
    contamination_run_id: str | None = None
    contaminated: bool | None = None

    @property
    def traj_id(self) -> str:
        return traj_id(self.task_id, self.sample_idx, self.seed)

    @property
    def session_id(self) -> str:
        return f"{self.task_id}/{self.sample_idx}/{self.seed}"


def traj_id(task_id: str, sample_idx: int, seed: int) -> str:
    return content_hash("trajectory", task_id, str(sample_idx), str(seed))


def sample_seed(task_id: str, sample_idx: int, base_seed: int) -> int:
    """A reproducible per-sample seed (31 bits, as every engine accepts)."""
    return int(content_hash("seed", task_id, str(sample_idx), str(base_seed)), 16) % (2**31 - 1)


def contamination_decisions(data_root: str | Path) -> dict[str, tuple[str, bool | None]]:
    """task_id -> (run id, contaminated) of the latest decontamination run under `data_root` (run ids sort by
    time), so each trajectory records the decision it was made under."""
    import pyarrow.parquet as pq

    base = Path(data_root) / "tables" / "contamination"
    out: dict[str, tuple[str, bool | None]] = {}
    for f in sorted(base.glob("run_id=*/*.parquet")) if base.exists() else []:
        run = f.parent.name.split("=", 1)[1]
        try:
            t = pq.read_table(f, columns=["task_id", "contaminated"])
        except Exception:  # an unreadable or older shard: no decision from it
            continue
        for tid, c in zip(t.column("task_id").to_pylist(), t.column("contaminated").to_pylist()):
            out[tid] = (run, c)
    return out


def make_jobs(
    tasks: pa.Table, settings: RolloutSettings, decisions: dict[str, tuple[str, bool | None]] | None = None
) -> list[Job]:
    from pipeline.identity import task_id as compute_task_id

    cols = set(tasks.column_names)
    jobs = []
    for row in tasks.to_pylist():
        tid = row.get("task_id") or compute_task_id(row["code"])
        if "contaminated" in cols:
            c_run, c = row.get("contamination_run_id"), row.get("contaminated")
        else:
            c_run, c = (decisions or {}).get(tid, (None, None))
        for i in range(settings.samples_per_task):
            jobs.append(Job(tid, row["code"], i, sample_seed(tid, i, settings.seed), c_run, c))
    return jobs


def token_view(prompts: list[list[int] | None], turns: list[dict[str, Any]]) -> tuple[Any, Any, Any, Any]:
    """(prompt ids, response ids, response mask, exact) from per-turn prompt and sampled ids.

    The response is exact only when every turn's prompt begins with the previous prompt plus the previous sample
    (the template re-applied to the messages can tokenize a sample differently); otherwise it is left null and the
    exact sampled ids stay in each turn's completion_token_ids.
    """
    if not prompts or prompts[0] is None or any(t["completion_token_ids"] is None for t in turns):
        return None, None, None, None
    resp: list[int] = []
    mask: list[int] = []
    seen = list(prompts[0])
    for k, t in enumerate(turns):
        comp = list(t["completion_token_ids"])
        if k > 0:
            p = prompts[k]
            if p is None or p[: len(seen)] != seen:
                return list(prompts[0]), None, None, False
            delta = p[len(seen) :]
            resp += delta
            mask += [0] * len(delta)
            seen = list(p)
        resp += comp
        mask += [1] * len(comp)
        seen += comp
    return list(prompts[0]), resp, mask, True


def _message_row(m: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {
            "id": c.get("id"),
            "type": c.get("type", "function"),
            "function": {"name": c["function"].get("name"), "arguments": c["function"].get("arguments")},
        }
        for c in (m.get("tool_calls") or [])
    ]
    return {
        "role": m["role"],
        "content": m.get("content") or None,
        "tool_calls": calls or None,
        "tool_call_id": m.get("tool_call_id"),
        "name": m.get("name"),
    }


def trajectory_row(
    job: Job,
    d: AgentData,
    score: dict[str, Any],
    env: KernelEnv | None,
    backend: ChatBackend,
    settings: RolloutSettings,
    run_id: str,
    attempts: int,
    total_s: float,
) -> dict[str, Any]:
    correct = [t for t in d.turns if t["correct"]]

    def best(key: str) -> float | None:
        vals = [t[key] for t in correct if t[key] is not None]
        return max(vals) if vals else None

    prompt_ids, resp_ids, mask, exact = token_view(d.prompt_token_ids, d.turns)
    sampling = {
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "max_tokens_per_turn": settings.max_tokens_per_turn,
        "seed": job.seed,
        "seed_per_turn": "seed+turn",
        "n": 1,
        "max_context_tokens": settings.max_context_tokens,
        "max_turns": settings.max_turns,
    }
    driver_s = max(0.0, total_s - d.gen_s - d.compile_s - d.eval_s)
    timings = {
        "total_s": total_s,
        "gen_s": d.gen_s,
        "tool_s": d.tool_s,
        "compile_s": d.compile_s,
        "eval_s": d.eval_s,
        "driver_s": driver_s,
    }
    final_kernel = json.dumps(env.solution_files()) if env is not None else None
    return {
        "traj_id": job.traj_id,
        "task_id": job.task_id,
        "sample_idx": job.sample_idx,
        "seed": job.seed,
        "model": backend.model_name,
        "run_id": run_id,
        "messages": [_message_row(m) for m in d.messages],
        "tools": json.dumps(TOOLS),
        "turns": d.turns,
        "final_reward": int(score["final_reward"]),
        "best_speedup_vs_eager": best("speedup_vs_eager"),
        "best_speedup_vs_compile": best("speedup_vs_compile"),
        "num_turns": len(d.turns),
        "termination": d.termination or "engine_error",
        "sampling": json.dumps(sampling),
        "prompt_token_ids": prompt_ids,
        "response_token_ids": resp_ids,
        "response_mask": mask,
        "token_view_exact": exact,
        "final_kernel_hash": score.get("final_kernel_hash"),
        "final_kernel": final_kernel,
        "timings": json.dumps(timings),
        "attempts": attempts,
        "contamination_run_id": job.contamination_run_id,
        "contaminated_at_rollout": job.contaminated,
        "error": d.error or "",
    }


def run_job(
    job: Job,
    backend: ChatBackend,
    runner: ToolRunner,
    settings: RolloutSettings,
    eval_settings: dict[str, Any],
    run_id: str,
    workroot: Path,
) -> dict[str, Any]:
    """One trajectory, restarted from scratch (same seed) when its replica dies, up to max_attempts."""
    t0 = time.perf_counter()
    last_error = ""
    for attempt in range(1, settings.max_attempts + 1):
        wd = workroot / f"{job.traj_id}-{attempt}"
        env = None
        try:
            env = KernelEnv(
                job.code,
                wd,
                runner,
                eval_settings,
                max_output_chars=settings.tool_output_chars,
                compile_cache_dir=settings.compile_cache_dir,
            )
            d = KernelAgent(backend, env, settings).run(job.session_id, job.seed)
            score = final_score(env, d, settings)
            return trajectory_row(job, d, score, env, backend, settings, run_id, attempt, time.perf_counter() - t0)
        except ReplicaDiedError as e:
            last_error = f"attempt {attempt}: {e}"
            log.warning("trajectory %s: replica died, restarting (%s)", job.traj_id, e)
        except Exception as e:  # never lose the item: it gets a row with the reason
            d = AgentData(
                session_id=job.session_id,
                seed=job.seed,
                termination="engine_error",
                error=f"{type(e).__name__}: {str(e)[:2000]}",
            )
            return trajectory_row(
                job, d, {"final_reward": -1}, None, backend, settings, run_id, attempt, time.perf_counter() - t0
            )
        finally:
            shutil.rmtree(wd, ignore_errors=True)
    d = AgentData(
        session_id=job.session_id,
        seed=job.seed,
        termination="engine_error",
        error=f"replica died on every attempt: {last_error}",
    )
    return trajectory_row(
        job, d, {"final_reward": -1}, None, backend, settings, run_id, settings.max_attempts, time.perf_counter() - t0
    )


def harness_settings(eval_settings: dict[str, Any] | None) -> dict[str, Any]:
    """The options the harness knows (it rejects unknown keys; a config section may carry more)."""
    from pipeline.evaluate.options import DEFAULTS

    es = dict(eval_settings or {})
    unknown = sorted(set(es) - set(DEFAULTS))
    if unknown:
        log.warning("evaluation settings not known to the harness are ignored: %s", ", ".join(unknown))
    return {k: v for k, v in es.items() if k in DEFAULTS}


def _default_runner(settings: RolloutSettings, eval_settings: dict[str, Any], distributed: bool) -> ToolRunner:
    use_ray = settings.use_ray_tools if settings.use_ray_tools is not None else distributed
    if use_ray:
        from pipeline.llm.ray_replicas import rollout_plan
        from pipeline.rollout.tools import RayRunner

        return RayRunner(eval_settings=eval_settings, plan=rollout_plan(settings))
    return LocalRunner()


def rollout(
    tasks: pa.Table,
    settings: RolloutSettings,
    backend: ChatBackend,
    eval_settings: dict[str, Any] | None,
    run_id: str,
    *,
    out_dir: str | Path | None = None,
    runner: ToolRunner | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    executor: Any = None,
) -> pa.Table:
    """Roll out `settings.samples_per_task` trajectories per task; returns the rows as a `trajectories` table.

    With `out_dir` (a data root), each trajectory is written as its own shard as soon as it ends, trajectories
    already present under `out_dir` (any run) are not run again, and the latest contamination decision found there
    is recorded with each trajectory (unless the tasks table carries `contaminated` itself). Tools (compiles,
    evaluations) run as Ray tasks when `executor` (the runner's) is distributed, unless `settings.use_ray_tools`
    says otherwise; `runner` replaces the tool runner altogether.
    """
    from pipeline.storage import DataStore, conform

    jobs = make_jobs(tasks, settings, contamination_decisions(out_dir) if out_dir else None)
    eval_settings = harness_settings(eval_settings)
    store = DataStore(Path(out_dir)) if out_dir else None
    done: dict[str, dict[str, Any]] = {}
    if store is not None:
        for row in store.read("trajectories").to_pylist():
            done[row["traj_id"]] = row
    todo = [j for j in jobs if j.traj_id not in done]
    own_runner = runner is None
    runner = runner or _default_runner(settings, eval_settings, bool(getattr(executor, "distributed", False)))
    rows: dict[str, dict[str, Any]] = {j.traj_id: done[j.traj_id] for j in jobs if j.traj_id in done}
    lock = threading.Lock()
    workroot = Path(tempfile.mkdtemp(prefix="opforge-rollout-"))
    try:
        with ThreadPoolExecutor(max_workers=max(1, settings.concurrency), thread_name_prefix="traj") as pool:
            futs = {
                pool.submit(run_job, j, backend, runner, settings, eval_settings, run_id, workroot): j for j in todo
            }
            for fut in as_completed(futs):
                row = fut.result()
                if store is not None:
                    store.write("trajectories", [row], run_id, shard=row["traj_id"])
                with lock:
                    rows[row["traj_id"]] = row
                if on_row:
                    on_row(row)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
        if own_runner and hasattr(runner, "close"):
            runner.close()
    if settings.single_turn_samples > 0:
        single_turn(tasks, settings, backend, eval_settings, run_id, store)
    ordered = [rows[j.traj_id] for j in jobs if j.traj_id in rows]
    return conform("trajectories", ordered)


def single_turn(
    tasks: pa.Table,
    settings: RolloutSettings,
    backend: ChatBackend,
    eval_settings: dict[str, Any],
    run_id: str,
    store: Any | None,
) -> list[dict[str, Any]]:
    """k scored single-turn answers per task on the warm-up prompt (the rejection-sampled dataset's input); with a
    store, written as the run's `single_turn` table, and tasks already sampled (any run) are not sampled again."""
    from pipeline.rollout.single_turn import sample_single_turn

    done = set()
    if store is not None:
        done = set(store.read("single_turn").column("task_id").to_pylist())
    todo = [
        r
        for r in tasks.select([c for c in ("task_id", "code", "ops") if c in tasks.column_names]).to_pylist()
        if r["task_id"] not in done
    ]
    rows = sample_single_turn(todo, backend, settings, run_id, eval_settings=eval_settings) if todo else []
    if store is not None and rows:
        store.write(
            "single_turn", rows, run_id, shard=content_hash("single_turn", run_id, *sorted(r["task_id"] for r in todo))
        )
    return rows
