"""The one LLM-backend layer: a chat interface over vLLM's offline engine, any OpenAI-compatible endpoint, or
recorded turns; a sticky router over replicas; and `make_backend(settings)`.

Every backend returns a `ChatResponse` with OpenAI-format tool calls (Hermes `<tool_call>` text is parsed when the
server gave none) and, where the backend has them, the exact prompt and completion token ids.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    n: int = 1
    stop: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChatResponse:
    """One assistant turn (the first choice; `choices` holds all n when n > 1)."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    parse_errors: list[str] = field(default_factory=list)  # broken <tool_call> markup, one entry each
    raw_text: str | None = None  # the text as generated, tool-call markup included
    replica: int | None = None  # which replica served it (set by the router)
    choices: list["ChatResponse"] = field(default_factory=list)

    def message(self) -> Message:
        """The assistant message to append to the conversation (OpenAI format)."""
        msg: Message = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


class BackendError(RuntimeError):
    """The engine failed to answer (after the backend's own retries)."""


class ContextLengthError(BackendError):
    """The prompt does not fit the engine's context."""


class ReplicaDiedError(BackendError):
    """The replica serving a session is gone; the session's trajectory must be restarted elsewhere."""


@runtime_checkable
class ChatBackend(Protocol):
    model_name: str

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse: ...

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        """Prompt length in tokens of the next request of `session_id`, or None when the backend cannot tell."""
        ...

    def end_session(self, session_id: str) -> None: ...

    def close(self) -> None: ...


def response_from_text(raw: str, **kw: Any) -> ChatResponse:
    """A response whose tool calls are parsed from Hermes markup in `raw`."""
    from pipeline.llm.hermes import parse_tool_calls

    content, calls, errors = parse_tool_calls(raw)
    return ChatResponse(text=content, tool_calls=calls, parse_errors=errors, raw_text=raw, **kw)


class StickyRouter:
    """Sends every turn of a session to one replica (its prefix cache then hits); new sessions go to the replica
    with the fewest open sessions. A replica that raises ReplicaDiedError is taken out of rotation.

    A session never moves to another replica mid-way (its state, e.g. its token record, died with the replica):
    every session of a dead replica gets ReplicaDiedError on its next call, also when another session found the
    replica dead first, and is forgotten; the caller restarts it (the same id then starts afresh on a live one)."""

    def __init__(self, replicas: list[Any]):
        if not replicas:
            raise ValueError("StickyRouter needs at least one replica")
        self.replicas = list(replicas)
        self.model_name = getattr(replicas[0], "model_name", "unknown")
        self._alive = [True] * len(replicas)
        self._sessions: dict[str, int] = {}
        self._open = [0] * len(replicas)
        self._lock = threading.Lock()

    def _forget(self, session_id: str | None) -> int | None:
        # under self._lock
        i = self._sessions.pop(session_id, None) if session_id is not None else None
        if i is not None:
            self._open[i] -= 1
        return i

    def pick(self, session_id: str | None) -> int:
        with self._lock:
            if session_id is not None and session_id in self._sessions:
                i = self._sessions[session_id]
                if self._alive[i]:
                    return i
                self._forget(session_id)
                raise ReplicaDiedError(f"LLM replica {i} of session {session_id} died; the session must restart")
            alive = [i for i, a in enumerate(self._alive) if a]
            if not alive:
                raise BackendError("no live replica left")
            i = min(alive, key=lambda j: (self._open[j], j))
            if session_id is not None:
                self._sessions[session_id] = i
                self._open[i] += 1
            return i

    def _died(self, i: int, session_id: str | None) -> None:
        with self._lock:
            self._alive[i] = False
            self._forget(session_id)

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse:
        i = self.pick(session_id)
        try:
            resp = self.replicas[i].chat(messages, tools=tools, sampling=sampling, session_id=session_id)
        except ReplicaDiedError:
            self._died(i, session_id)
            raise
        resp.replica = i
        return resp

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        # The session's own replica counts (it holds the session's token record).
        i = self.pick(session_id)
        try:
            return self.replicas[i].count_prompt_tokens(messages, tools, session_id)
        except ReplicaDiedError:
            self._died(i, session_id)
            raise

    def end_session(self, session_id: str) -> None:
        with self._lock:
            i = self._forget(session_id)
            alive = i is not None and self._alive[i]
        if alive:
            self.replicas[i].end_session(session_id)

    @property
    def live_replicas(self) -> int:
        return sum(self._alive)

    def close(self) -> None:
        for r in self.replicas:
            r.close()


def _ray_has_gpus() -> bool:
    try:
        import ray
    except ImportError:
        return False
    return ray.is_initialized() and ray.cluster_resources().get("GPU", 0) > 0


def make_backend(settings: Any) -> ChatBackend:
    """Build the backend named by `settings.backend` (any object or dict with LLMSettings' field names)."""
    from pipeline.llm.settings import LLMSettings

    s = LLMSettings.from_any(settings)
    if s.backend == "replay":
        from pipeline.llm.replay import ReplayBackend

        if not s.replay_path:
            raise ValueError("the replay backend needs replay_path (a trajectories Parquet or a JSON script file)")
        return ReplayBackend.from_path(s.replay_path, model_name=s.model or "replay")
    if s.backend == "openai":
        from pipeline.credentials import reveal
        from pipeline.llm.openai_backend import OpenAIBackend

        if not s.base_url:
            raise ValueError("the openai backend needs base_url, e.g. http://127.0.0.1:8000/v1")
        urls = [u.strip() for u in s.base_url.split(",") if u.strip()]
        eps = [
            OpenAIBackend(
                u, model=s.model, api_key=reveal(s.api_key), timeout_s=s.request_timeout_s, retries=s.request_retries
            )
            for u in urls
        ]
        return eps[0] if len(eps) == 1 else StickyRouter(eps)  # several servers: sticky sessions across them
    if s.backend == "vllm":
        if not s.model:
            raise ValueError("the vllm backend needs a model (a local model dir or a name the workers can load)")
        if s.replicas > 1 or s.use_ray or _ray_has_gpus():  # on a GPU cluster, Ray accounts for the engine's GPUs
            from pipeline.llm.ray_replicas import start_replicas

            return StickyRouter(start_replicas(s))
        from pipeline.llm.vllm_engine import VLLMEngineBackend

        return VLLMEngineBackend.from_settings(s)
    raise ValueError(f"unknown LLM backend {s.backend!r}; known: vllm, openai, replay")


def __getattr__(name: str) -> Any:
    # The backends live in their own modules (heavy imports stay lazy) but are reachable from here.
    if name == "VLLMEngineBackend":
        from pipeline.llm.vllm_engine import VLLMEngineBackend

        return VLLMEngineBackend
    if name == "OpenAIBackend":
        from pipeline.llm.openai_backend import OpenAIBackend

        return OpenAIBackend
    if name == "ReplayBackend":
        from pipeline.llm.replay import ReplayBackend

        return ReplayBackend
    raise AttributeError(name)
