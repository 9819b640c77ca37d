"""Recorded assistant turns played back as a backend: deterministic trajectories for tests, and re-scoring of
recorded trajectories through today's tools and harness.

A script is a list of turns; a turn is either raw text (Hermes tool-call markup is parsed, as from a model served
without a tool parser) or an assistant message dict (`content`, `tool_calls`, optionally `completion_token_ids`).
A session takes the script keyed by its full session id, else by its task id (the part before the first "/"),
else the "*" script. A session whose script ran out gets an empty answer (the agent counts it as malformed).
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any

from pipeline.llm.backend import ChatResponse, Message, SamplingParams, response_from_text
from pipeline.llm.hermes import new_call_id, normalize_tool_calls

Turn = str | dict[str, Any]


class ReplayBackend:
    def __init__(self, scripts: dict[str, list[Turn]] | list[Turn], *, model_name: str = "replay"):
        self.scripts = {"*": list(scripts)} if isinstance(scripts, list) else {k: list(v) for k, v in scripts.items()}
        self.model_name = model_name
        self._cursor: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_path(cls, path: str | Path, *, model_name: str = "replay") -> "ReplayBackend":
        p = Path(path)
        if p.suffix == ".parquet":
            import pyarrow.parquet as pq

            return cls.from_trajectories(pq.read_table(p), model_name=model_name)
        return cls(json.loads(p.read_text()), model_name=model_name)

    @classmethod
    def from_trajectories(cls, table: Any, *, model_name: str = "replay") -> "ReplayBackend":
        """Scripts from a `trajectories` table: each row's assistant turns, keyed by task id and by
        `task_id/sample_idx/seed` (the session id the agent uses), so every sample replays its own turns."""
        scripts: dict[str, list[Turn]] = {}
        for row in table.to_pylist():
            turns = [
                {"content": m.get("content"), "tool_calls": m.get("tool_calls") or []}
                for m in row["messages"]
                if m["role"] == "assistant"
            ]
            scripts[f"{row['task_id']}/{row['sample_idx']}/{row['seed']}"] = turns
            scripts.setdefault(row["task_id"], turns)
        return cls(scripts, model_name=model_name)

    def _script(self, session_id: str | None) -> list[Turn]:
        sid = session_id or "*"
        for key in (sid, sid.split("/")[0], "*"):
            if key in self.scripts:
                return self.scripts[key]
        return []

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse:
        script = self._script(session_id)
        with self._lock:
            i = self._cursor.get(session_id or "*", 0)
            self._cursor[session_id or "*"] = i + 1
        if i >= len(script):
            return ChatResponse(text="", finish_reason="replay_exhausted")
        turn = copy.deepcopy(script[i])
        if isinstance(turn, str):
            return response_from_text(turn, finish_reason="stop")
        calls = normalize_tool_calls(turn.get("tool_calls"))
        for c in calls:  # fresh ids: a replayed call must not collide with the recorded one's results
            c["id"] = new_call_id()
        return ChatResponse(
            text=turn.get("content") or "",
            tool_calls=calls,
            finish_reason="stop",
            completion_token_ids=turn.get("completion_token_ids"),
            raw_text=turn.get("content"),
        )

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        return None

    def end_session(self, session_id: str) -> None:
        with self._lock:
            self._cursor.pop(session_id, None)

    def close(self) -> None:
        pass
