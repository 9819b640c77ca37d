"""The ReAct kernel agent: one trajectory as an explicit state machine.

PENDING -> GENERATING -> PROCESSING_TOOLS -> GENERATING ... -> TERMINATED. All mutable state sits in one
`AgentData`. Every exit sets a termination reason: finished, max_turns, context_exhausted, malformed_output,
tool_error, timeout or engine_error. Tool failures the model caused become tool text; a dead LLM replica raises
ReplicaDiedError so the caller restarts the trajectory elsewhere.
"""

from __future__ import annotations

import enum
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipeline.llm.backend import BackendError, ChatBackend, ContextLengthError, ReplicaDiedError, SamplingParams
from pipeline.rollout.environment import KernelEnv, eval_record
from pipeline.rollout.prompts import NO_TOOL_CALL, SYSTEM_PROMPT, task_prompt
from pipeline.rollout.tools import TOOLS

if TYPE_CHECKING:  # pydantic stays off the GPU-worker import path
    from pipeline.rollout.settings import RolloutSettings

TERMINATIONS = (
    "finished",
    "max_turns",
    "context_exhausted",
    "malformed_output",
    "tool_error",
    "timeout",
    "engine_error",
)
_CHARS_PER_TOKEN = 3.0  # estimate when the backend cannot count tokens (replay, non-vLLM servers)


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m.get("content") or "") + len(json.dumps(m.get("tool_calls") or "")) for m in messages)


class AgentState(enum.Enum):
    PENDING = "pending"
    GENERATING = "generating"
    PROCESSING_TOOLS = "processing_tools"
    TERMINATED = "terminated"


@dataclass
class AgentData:
    session_id: str
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    consecutive_malformed: int = 0
    consecutive_tool_errors: int = 0
    termination: str | None = None
    error: str = ""
    prompt_token_ids: list[list[int] | None] = field(default_factory=list)  # per turn (first kept in the record)
    t_start: float = field(default_factory=time.perf_counter)
    gen_s: float = 0.0
    tool_s: float = 0.0
    compile_s: float = 0.0
    eval_s: float = 0.0
    last_usage_tokens: int = 0  # prompt + completion tokens of the previous turn, for estimates
    chars_at_last_usage: int = 0


def empty_turn(i: int) -> dict[str, Any]:
    """A turn record with nothing measured yet (the trajectory schema's turn fields)."""
    return {
        "turn": i,
        "action": "",
        "kernel_hash": None,
        "compiled": None,
        "correct": None,
        "eager_ms": None,
        "compile_ms": None,
        "solution_ms": None,
        "speedup_vs_eager": None,
        "speedup_vs_compile": None,
        "reward": None,
        "malformed": False,
        "tool_error": False,
        "prompt_tokens": None,
        "completion_tokens": None,
        "completion_token_ids": None,
        "gen_s": 0.0,
        "tool_s": 0.0,
        "detail": "",
    }


class KernelAgent:
    """Drives one trajectory of `env` with `backend`."""

    def __init__(self, backend: ChatBackend, env: KernelEnv, settings: RolloutSettings):
        self.backend = backend
        self.env = env
        self.s = settings
        self.tools = TOOLS

    def run(self, session_id: str, seed: int) -> AgentData:
        d = AgentData(session_id=session_id, seed=seed)
        state = AgentState.PENDING
        handlers = {
            AgentState.PENDING: self._pending,
            AgentState.GENERATING: self._generating,
            AgentState.PROCESSING_TOOLS: self._processing_tools,
        }
        try:
            while state != AgentState.TERMINATED:
                state = handlers[state](d)
        finally:
            self.backend.end_session(session_id)
        return d

    # -- states -------------------------------------------------------------------------------------------------
    def _pending(self, d: AgentData) -> AgentState:
        d.messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": task_prompt(self.env.task_code, sorted(self.env.files()))},
        ]
        return AgentState.GENERATING

    def _end(self, d: AgentData, reason: str, error: str = "") -> AgentState:
        d.termination, d.error = reason, error
        return AgentState.TERMINATED

    def _prompt_tokens(self, d: AgentData) -> int:
        n = self.backend.count_prompt_tokens(d.messages, self.tools, d.session_id)
        if n is not None:
            return n
        chars = _chars(d.messages)
        if d.last_usage_tokens:  # anchor on the last exact count, estimate only what was added since
            return d.last_usage_tokens + int((chars - d.chars_at_last_usage) / _CHARS_PER_TOKEN)
        return int((chars + len(json.dumps(self.tools))) / _CHARS_PER_TOKEN)

    def _generating(self, d: AgentData) -> AgentState:
        if time.perf_counter() - d.t_start > self.s.trajectory_timeout_s:
            return self._end(d, "timeout", f"trajectory exceeded {self.s.trajectory_timeout_s:.0f} s")
        if len(d.turns) >= self.s.max_turns:
            return self._end(d, "max_turns")
        prompt_len = self._prompt_tokens(d)
        limit = min(self.s.max_context_tokens, getattr(self.backend, "max_model_len", None) or 1 << 62)
        budget = limit - prompt_len
        if budget < self.s.min_response_tokens:
            return self._end(d, "context_exhausted", f"prompt {prompt_len} tokens, context limit {limit}")
        max_tokens = min(self.s.max_tokens_per_turn, budget)
        sampling = SamplingParams(
            temperature=self.s.temperature, top_p=self.s.top_p, max_tokens=max_tokens, seed=d.seed + len(d.turns)
        )
        turn = empty_turn(len(d.turns))
        t0 = time.perf_counter()
        try:
            resp = self.backend.chat(d.messages, tools=self.tools, sampling=sampling, session_id=d.session_id)
        except ReplicaDiedError:
            raise
        except ContextLengthError as e:
            return self._end(d, "context_exhausted", str(e)[:500])
        except BackendError as e:
            return self._end(d, "engine_error", str(e)[:2000])
        turn["gen_s"] = time.perf_counter() - t0
        d.gen_s += turn["gen_s"]
        turn["prompt_tokens"] = (
            len(resp.prompt_token_ids) if resp.prompt_token_ids else resp.usage.get("prompt_tokens", prompt_len)
        )
        turn["completion_tokens"] = (
            len(resp.completion_token_ids)
            if resp.completion_token_ids is not None
            else resp.usage.get("completion_tokens")
        )
        turn["completion_token_ids"] = resp.completion_token_ids
        d.prompt_token_ids.append(resp.prompt_token_ids)
        chars_before = _chars(d.messages)
        d.messages.append(resp.message())
        d.turns.append(turn)
        if turn["completion_tokens"] is not None and (resp.prompt_token_ids or resp.usage.get("prompt_tokens")):
            # exact counts from the backend: later estimates only cover what is added after this turn
            d.last_usage_tokens = turn["prompt_tokens"] + turn["completion_tokens"]
            d.chars_at_last_usage = _chars(d.messages)
        else:
            d.last_usage_tokens, d.chars_at_last_usage = prompt_len, chars_before
        if resp.tool_calls:
            turn["malformed"] = bool(resp.parse_errors)
            turn["detail"] = "; ".join(resp.parse_errors)[:300]
            d.consecutive_malformed = 0
            d.pending_calls = list(resp.tool_calls)
            return AgentState.PROCESSING_TOOLS
        # No usable call. Cut off by the context budget is not the model's fault; anything else is malformed.
        if resp.finish_reason == "length" and max_tokens == budget:
            turn["action"] = "truncated"
            return self._end(d, "context_exhausted", "the turn ran out of context")
        turn["malformed"] = True
        turn["action"] = "malformed" if resp.parse_errors else "no_tool_call"
        turn["detail"] = ("; ".join(resp.parse_errors) or f"finish_reason={resp.finish_reason}")[:300]
        d.consecutive_malformed += 1
        if d.consecutive_malformed >= self.s.max_consecutive_malformed:
            return self._end(
                d, "malformed_output", f"{d.consecutive_malformed} turns in a row without a valid tool call"
            )
        detail = f" ({'; '.join(resp.parse_errors)[:300]})" if resp.parse_errors else ""
        d.messages.append({"role": "user", "content": NO_TOOL_CALL.format(detail=detail)})
        return AgentState.GENERATING

    def _processing_tools(self, d: AgentData) -> AgentState:
        turn = d.turns[-1]
        names, errors, finished, fatal = [], 0, False, ""
        t0 = time.perf_counter()
        for call in d.pending_calls:
            name = call["function"]["name"]
            names.append(name)
            res = self.env.call(name, call["function"]["arguments"])
            d.compile_s += res.compile_s
            d.eval_s += res.eval_s
            if res.error:
                errors += 1
            if res.fatal:
                fatal = res.text
            if res.record:
                turn.update({k: v for k, v in res.record.items() if k in turn})
                turn["kernel_hash"] = self.env.kernel_hash()
            d.messages.append({"role": "tool", "tool_call_id": call["id"], "name": name, "content": res.text})
            finished = finished or res.finished
            if res.finished or res.fatal:
                break  # calls after finish (or a broken environment) are not run
        reverted = self.env.check_protected()
        if reverted:
            d.messages.append(
                {
                    "role": "user",
                    "content": "The workspace broke the harness rules and was repaired: "
                    f"{', '.join(reverted)}. Task and harness files are read-only.",
                }
            )
            turn["detail"] = (turn["detail"] + f" protected_reverted={','.join(reverted)}").strip()
        turn["action"] = ",".join(names)
        turn["tool_error"] = errors > 0
        turn["tool_s"] = time.perf_counter() - t0
        d.tool_s += turn["tool_s"]
        d.pending_calls = []
        if fatal:
            return self._end(d, "tool_error", fatal[:2000])
        if finished:
            return self._end(d, "finished")
        d.consecutive_tool_errors = d.consecutive_tool_errors + 1 if errors == len(names) else 0
        if d.consecutive_tool_errors >= self.s.max_consecutive_tool_errors:
            return self._end(
                d, "tool_error", f"{d.consecutive_tool_errors} turns in a row whose every tool call failed"
            )
        return AgentState.GENERATING


def final_score(env: KernelEnv, d: AgentData, settings: RolloutSettings) -> dict[str, Any]:
    """The reward of the final solution: the last evaluation if it measured the current state, else a fresh full
    evaluation (when enabled). A trajectory that wrote no solution scores -1 without evaluating."""
    h = env.kernel_hash()
    res = env.last_eval if env.last_eval_hash == h else None
    if res is None and env.writes and settings.final_eval and d.termination != "engine_error":
        t0 = time.perf_counter()
        try:
            res, _ = env.evaluate("full")
        except Exception as e:  # the harness failed: score as unmeasured, keep the reason
            res = {"reward": None, "reason": f"final_eval_failed: {type(e).__name__}: {str(e)[:300]}"}
        d.eval_s += time.perf_counter() - t0
    rec = eval_record(res) if res else {}
    return {
        "final_reward": rec.get("reward") if rec.get("reward") is not None else -1,
        "final_kernel_hash": h or None,
        "final_eval": res,
    }
