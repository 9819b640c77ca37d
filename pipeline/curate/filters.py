"""Trajectory and task filters. Each returns the reason codes it fails (empty: kept); the first is the drop reason.

Reason codes, in the order they are checked (docs/curate.md lists them with what they mean):
task level:        unknown_task, unreadable_task, near_duplicate, compose_failed, not_validated, task_invalid,
                   not_decontaminated, task_contaminated
trajectory level:  duplicate_trajectory, unreadable_trajectory, contamination_changed, empty_trajectory,
                   malformed_tool_call, loop, too_many_turns, too_long  (the "integrity" filters) then
                   nonpositive_reward, reward_inconsistent, no_speedup_measured, below_speedup_threshold,
                   duplicate_final_kernel
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from pipeline.curate.inputs import loads_json
from pipeline.curate.settings import CurateSettings
from pipeline.identity import content_hash
from pipeline.selection import decision

TASK_REASONS = [
    "unknown_task",
    "unreadable_task",
    "near_duplicate",
    "compose_failed",
    "not_validated",
    "task_invalid",
    "not_decontaminated",
    "task_contaminated",
]
INTEGRITY_REASONS = [
    "duplicate_trajectory",
    "unreadable_trajectory",
    "contamination_changed",
    *[r for r in TASK_REASONS if r != "unreadable_task"],
    "empty_trajectory",
    "malformed_tool_call",
    "loop",
    "too_many_turns",
    "too_long",
]
QUALITY_REASONS = ["nonpositive_reward", "reward_inconsistent", "no_speedup_measured", "below_speedup_threshold"]
DEDUP_REASON = "duplicate_final_kernel"
TRAJECTORY_REASONS = [*INTEGRITY_REASONS, *QUALITY_REASONS, DEDUP_REASON]
ROLES = {"system", "user", "assistant", "tool"}


# Types the curated rows are built from; a row from outside the trajectories schema may break them.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "traj_id": (str,),
    "task_id": (str,),
    "final_reward": (int,),
    "messages": (list,),
    "turns": (list, type(None)),
    "tools": (str, type(None)),
    "final_kernel_hash": (str, type(None)),
    "model": (str, type(None)),
    "run_id": (str, type(None)),
    "sample_idx": (int, type(None)),
    "best_speedup_vs_eager": (int, float, type(None)),
    "best_speedup_vs_compile": (int, float, type(None)),
}


def shape_problem(traj: dict[str, Any]) -> str | None:
    """The first field whose Python type the curated rows cannot be built from, if any."""
    for name, types in _FIELD_TYPES.items():
        v = traj.get(name)
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            return f"{name} is {type(v).__name__}"
        if isinstance(v, int) and not -(2**63) <= v < 2**63:
            return f"{name} does not fit int64"
    return None


def task_reasons(
    task_id: str,
    tasks: dict[str, dict],
    validation: dict[str, dict],
    contamination: dict[str, dict],
    settings: CurateSettings,
) -> list[str]:
    """Why a task may not be used (empty: it is clean)."""
    if task_id not in tasks:
        return ["unknown_task"]
    out = []
    if tasks[task_id].get("compose_reason"):  # the composer produced no code: `code` is its raw reply
        out.append("compose_failed")
    v = decision("validation", validation.get(task_id))  # None: no decision (pipeline.selection)
    if v is None:
        if settings.require_validation:
            out.append("not_validated")
    elif not v:
        out.append("task_invalid")
    c = decision("contamination", contamination.get(task_id))
    if c is None:
        if settings.require_decontamination:
            out.append("not_decontaminated")
    elif not c:
        out.append("task_contaminated")
    return out


def contamination_changed(traj: dict[str, Any], contamination: dict[str, dict]) -> str | None:
    """Detail when the task's current decision differs from the one the rollout was made under."""
    at_rollout = traj.get("contaminated_at_rollout")
    current = contamination.get(traj.get("task_id") or "")
    if at_rollout is None or current is None:
        return None
    now = current.get("contaminated")
    if now is None or bool(now) != bool(at_rollout):
        return (
            f"contaminated={at_rollout} at rollout (decision run {traj.get('contamination_run_id')}), "
            f"now {now} (run {current.get('run_id')})"
        )
    return None


def assistant_messages(traj: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in traj.get("messages") or [] if isinstance(m, dict) and m.get("role") == "assistant"]


def tool_names(traj: dict[str, Any]) -> frozenset[str] | None:
    """Names of the tools offered (empty: none offered); None when `tools` is not JSON of tool schemas."""
    text = traj.get("tools")
    if not text:
        return frozenset()
    return _tool_names(text) if isinstance(text, str) else None


@functools.lru_cache(maxsize=256)  # every trajectory of a run carries the same tools JSON: parse it once
def _tool_names(text: str) -> frozenset[str] | None:
    tools = loads_json(text, None)
    if not isinstance(tools, list):
        return None
    names = set()
    for t in tools:
        fn = t.get("function") if isinstance(t, dict) else None
        name = (fn or t).get("name") if isinstance(fn or t, dict) else None
        if not isinstance(name, str):
            return None
        names.add(name)
    return frozenset(names)


def malformed(traj: dict[str, Any]) -> str | None:
    """Detail of the first malformed turn, tool call or tool result; None when the conversation is well formed."""
    for i, t in enumerate(traj.get("turns") or []):
        if not isinstance(t, dict):
            return f"turn record {i} is {type(t).__name__}, not a record"
        if t.get("malformed"):
            return f"turn {t.get('turn')} was recorded as malformed"
    names = tool_names(traj)
    if names is None:
        return "tools is not a JSON list of tool schemas"
    pending: set[str] = set()
    for i, m in enumerate(traj.get("messages") or []):
        role = (m or {}).get("role")
        if role not in ROLES:
            return f"message {i}: unknown role {role!r}"
        if role == "assistant":
            if pending:
                return f"message {i}: tool call(s) {sorted(pending)} got no result"
            for tc in m.get("tool_calls") or []:
                fn = (tc or {}).get("function") or {}
                name, args = fn.get("name"), fn.get("arguments")
                if not name or not (tc or {}).get("id"):
                    return f"message {i}: tool call without a name or id"
                if names and name not in names:
                    return f"message {i}: call to unknown tool {name!r}"
                try:
                    parsed = json.loads(args) if isinstance(args, str) else None
                except ValueError:
                    parsed = None
                if not isinstance(parsed, dict):
                    return f"message {i}: arguments of {name!r} are not a JSON object"
                pending.add(tc["id"])
        elif role == "tool":
            if m.get("tool_call_id") not in pending:
                return f"message {i}: tool result answers no open tool call ({m.get('tool_call_id')!r})"
            pending.discard(m["tool_call_id"])
    return None  # calls left open at the very end (the episode stopped) are fine


def action_key(msg: dict[str, Any]) -> str:
    """What an assistant turn did: its tool calls with canonical arguments, else its text."""
    calls = msg.get("tool_calls") or []
    if not calls:
        return "text:" + " ".join(str(msg.get("content") or "").split())
    parts = []
    for tc in calls:
        fn = tc.get("function") or {}
        parts.append(f"{fn.get('name')}({_canonical_args(fn.get('arguments'))})")
    return "call:" + ";".join(parts)


def _canonical_args(args: Any) -> str:
    try:
        obj = json.loads(args) if isinstance(args, str) else args
        return json.dumps(obj, sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return str(args or "")


def _args_obj(args: Any) -> dict[str, Any]:
    try:
        obj = json.loads(args) if isinstance(args, str) else args
    except (ValueError, TypeError):
        return {}
    return obj if isinstance(obj, dict) else {}


# Argument names that carry source text: a call with one of them writes the solution (write_file's content,
# compile_and_test's code, ...). The first string argument that is not one names the file it writes.
_SOURCE_ARGS = ("content", "code", "source", "text", "patch", "new_content")
# Volatile parts of tool output that differ between identical runs: timings and temporary paths.
_VOLATILE = re.compile(r"-?\d+\.\d+(e[-+]?\d+)?|/tmp/[^\s'\",:)]+", re.IGNORECASE)


def _result_text(text: Any) -> str:
    return _VOLATILE.sub("#", " ".join(str(text or "").split()))


def steps(traj: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(action, source state after it, result) per assistant turn: what the turn did, the solution sources it left
    (a hash of every file written so far), and what the tools answered (timings and temp paths masked)."""
    files: dict[str, str] = {}
    out: list[tuple[str, str, str]] = []
    cur: list[Any] | None = None
    answers: dict[str, str] = {}
    for m in traj.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                fn = (tc or {}).get("function") or {}
                args = _args_obj(fn.get("arguments"))
                src = next((k for k in _SOURCE_ARGS if isinstance(args.get(k), str)), None)
                if src is not None:
                    where = next((str(v) for k, v in sorted(args.items()) if k != src and isinstance(v, str)), "")
                    files[f"{fn.get('name')}:{where}"] = " ".join(args[src].split())
            cur = [
                action_key(m),
                content_hash(json.dumps(files, sort_keys=True)),
                [str((tc or {}).get("id")) for tc in m.get("tool_calls") or []],
            ]
            out.append(cur)  # type: ignore[arg-type]
        elif m.get("role") == "tool" and cur is not None:
            answers[str(m.get("tool_call_id"))] = _result_text(m.get("content"))
    return [(a, s, "|".join(answers.get(i, "") for i in ids)) for a, s, ids in out]


def loop(traj: dict[str, Any], settings: CurateSettings) -> str | None:
    """Detail when the agent repeated itself without progress: the same step (the same action on the same
    sources, answered with the same result) `loop_consecutive` times in a row, or more than
    `max_identical_actions` times in all. Calling a tool often is no loop: compiling a new version is progress."""
    keys = steps(traj)
    run = 1
    for i in range(1, len(keys)):
        run = run + 1 if keys[i] == keys[i - 1] else 1
        if run >= settings.loop_consecutive:
            return (
                f"turns {i - run + 1}..{i}: the same step {run} times in a row, sources and result unchanged "
                f"({keys[i][0][:80]})"
            )
    counts: dict[tuple[str, str, str], int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
        if counts[k] > settings.max_identical_actions:
            return f"the same step {counts[k]} times on unchanged sources with the same result ({k[0][:80]})"
    return None


def token_count(traj: dict[str, Any]) -> int | None:
    """Prompt + response tokens, when the rollout recorded token ids (any list column named *token_ids)."""
    if "_token_count" in traj:  # counted in Arrow by the stage
        return traj["_token_count"]
    total, seen = 0, False
    for k, v in traj.items():
        if k.endswith("token_ids") and v is not None:
            seen = True
            total += sum(len(x) if isinstance(x, (list, tuple)) else 1 for x in v)
    return total if seen else None


def char_count(traj: dict[str, Any]) -> int:
    n = 0
    for m in traj.get("messages") or []:
        n += len((m or {}).get("content") or "")
        for tc in (m or {}).get("tool_calls") or []:
            n += len(((tc or {}).get("function") or {}).get("arguments") or "")
    return n


def final_eval(traj: dict[str, Any]) -> dict[str, Any] | None:
    """The last turn that evaluated the final kernel (its kernel_hash is final_kernel_hash), if any."""
    fh, turns, last = traj.get("final_kernel_hash"), traj.get("turns"), None
    if fh and isinstance(turns, list):
        for t in turns:
            if isinstance(t, dict) and t.get("kernel_hash") == fh and t.get("correct") is not None:
                last = t
    return last


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def final_speedups(traj: dict[str, Any]) -> tuple[float | None, float | None]:
    """(vs eager, vs torch.compile) of the final kernel, from the last turn that evaluated it. Records without
    per-turn kernel hashes (replayed or external) fall back to the trajectory's best; a final kernel that no turn
    timed (the agent edited after its last evaluation) has none, so another kernel's timing is never credited."""
    t = final_eval(traj)
    if t is not None:
        return (
            (_num(t.get("speedup_vs_eager")), _num(t.get("speedup_vs_compile"))) if t.get("correct") else (None, None)
        )
    turns = traj.get("turns") if isinstance(traj.get("turns"), list) else []
    if any(isinstance(x, dict) and x.get("kernel_hash") for x in turns):
        return None, None
    return _num(traj.get("best_speedup_vs_eager")), _num(traj.get("best_speedup_vs_compile"))


def trajectory_reasons(
    traj: dict[str, Any], task_problems: list[str], contamination: dict[str, dict], settings: CurateSettings
) -> tuple[list[str], list[str]]:
    """(reason codes, details) for one trajectory, every failing filter in order (dedup is done across rows)."""
    reasons: list[str] = []
    details: list[str] = []

    def fail(code: str, detail: str = "") -> None:
        reasons.append(code)
        if detail:
            details.append(f"{code}: {detail}")

    changed = contamination_changed(traj, contamination)
    if changed:
        fail("contamination_changed", changed)
    for r in task_problems:
        fail(r)
    asst = assistant_messages(traj)
    if not asst:
        fail("empty_trajectory", "no assistant message")
    bad = malformed(traj)
    if bad:
        fail("malformed_tool_call", bad)
    lp = loop(traj, settings)
    if lp:
        fail("loop", lp)
    if len(asst) > settings.max_turns:
        fail("too_many_turns", f"{len(asst)} > {settings.max_turns}")
    tokens = token_count(traj)
    if tokens is not None and tokens > settings.max_tokens:
        fail("too_long", f"{tokens} tokens > {settings.max_tokens}")
    elif tokens is None and char_count(traj) > settings.max_chars:
        fail("too_long", f"{char_count(traj)} chars > {settings.max_chars}")
    reward = traj.get("final_reward")
    if reward is None or reward < settings.min_final_reward:
        fail("nonpositive_reward", f"final reward {reward}")
    last = final_eval(traj)
    if isinstance(reward, int) and reward > 0 and last is not None and last.get("correct") is False:
        fail("reward_inconsistent", "positive final reward, but the last evaluation of the final kernel failed")
    _, sp = final_speedups(traj)
    if sp is None or sp != sp:  # None or NaN
        # The harness gives reward 3 only above its bar over torch.compile: that certifies an untimed final kernel.
        if not (reward == 3 and settings.min_speedup_vs_compile <= settings.reward3_min_speedup):
            fail("no_speedup_measured")
    elif sp < settings.min_speedup_vs_compile:
        fail("below_speedup_threshold", f"{sp:.3f}x < {settings.min_speedup_vs_compile}x vs torch.compile")
    return reasons, details


def rules(s: CurateSettings) -> dict[str, str]:
    """What each reason code means, with this run's thresholds (for the data card and docs)."""
    return {
        "unknown_task": "the trajectory's task is not in the tasks table",
        "unreadable_task": "the task row has no string task_id or code",
        "near_duplicate": "the dedup stage removed the task as a (near) duplicate of a kept task",
        "compose_failed": "the composer produced no code (tasks.compose_reason is set)",
        "not_validated": "the task has no validation verdict",
        "task_invalid": "the task failed sandbox validation",
        "not_decontaminated": "the task has no contamination decision",
        "task_contaminated": "the task copies a KernelBench problem",
        "duplicate_trajectory": "a trajectory with the same traj_id came first",
        "unreadable_trajectory": "a field has a shape no filter can read (the error is in the drop's detail)",
        "contamination_changed": "the task's contamination decision differs from the one at rollout time",
        "empty_trajectory": "no assistant turn",
        "malformed_tool_call": "a turn was malformed, a tool call had bad JSON arguments or an unknown tool, or a "
        "tool result answered no open call",
        "loop": f"repetition without progress: the same step (the same tool calls with the same arguments, on "
        f"unchanged sources, answered with the same result, timings aside) {s.loop_consecutive} times in "
        f"a row, or more than {s.max_identical_actions} times in all",
        "too_many_turns": f"more than {s.max_turns} assistant turns",
        "too_long": f"more than {s.max_tokens} tokens (or {s.max_chars} characters without token ids)",
        "nonpositive_reward": f"final reward below {s.min_final_reward}",
        "reward_inconsistent": "a positive final reward, but the last evaluation of the final kernel was incorrect",
        "no_speedup_measured": f"the final kernel was never timed correct (an untimed final kernel passes only with "
        f"reward 3, which the harness gives above {s.reward3_min_speedup}x over torch.compile)",
        "below_speedup_threshold": f"final kernel less than {s.min_speedup_vs_compile}x faster than torch.compile",
        "duplicate_final_kernel": f"a better trajectory ended with the identical kernel (per {s.dedup_scope})",
    }
