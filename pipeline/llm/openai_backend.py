"""Any OpenAI-compatible chat endpoint (`vllm serve`, or vLLM's api_server module), over httpx.

Asks for token ids (`return_token_ids`, a vLLM extension other servers ignore) and counts prompt tokens with vLLM's
`/tokenize` endpoint when the server has one. Connection errors and 5xx answers are retried with backoff.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.llm.backend import (
    BackendError,
    ChatResponse,
    ContextLengthError,
    Message,
    ReplicaDiedError,
    SamplingParams,
    response_from_text,
)
from pipeline.llm.hermes import normalize_tool_calls

_CONTEXT_MARKERS = ("maximum context length", "context length", "max_model_len", "too long")


class OpenAIBackend:
    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str = "EMPTY",
        timeout_s: float = 600.0,
        retries: int = 3,
    ):
        import httpx

        self.base_url = base_url.rstrip("/")
        self._root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        self.client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {api_key}"})
        self.retries = retries
        self._tokenize_ok: bool | None = None
        # "auto" needs a server-side tool parser; a server without one gets "none" (tools still reach the template)
        # and the calls are parsed from the Hermes text here.
        self.tool_choice = "auto"
        self.model_name = model or self._first_model()

    def _first_model(self) -> str:
        data = self._request("GET", f"{self.base_url}/models").json()
        return data["data"][0]["id"]

    def _request(self, method: str, url: str, **kw: Any):
        import httpx

        delay = 0.5
        for attempt in range(self.retries + 1):
            try:
                r = self.client.request(method, url, **kw)
            except httpx.TransportError as e:
                if attempt == self.retries:
                    raise ReplicaDiedError(f"{url}: {type(e).__name__}: {e}") from None
            else:
                if r.status_code < 500:
                    return r
                if attempt == self.retries:
                    raise BackendError(f"{url}: HTTP {r.status_code}: {r.text[:300]}")
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        if self._tokenize_ok is False:
            return None
        body: dict[str, Any] = {"model": self.model_name, "messages": messages, "add_generation_prompt": True}
        if tools:
            body["tools"] = tools
        r = self._request("POST", f"{self._root}/tokenize", json=body)
        if r.status_code != 200:
            self._tokenize_ok = False  # not a vLLM server: the agent estimates instead
            return None
        self._tokenize_ok = True
        return int(r.json()["count"])

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse:
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "n": sampling.n,
            "return_token_ids": True,
        }
        if sampling.max_tokens is not None:
            body["max_tokens"] = sampling.max_tokens
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.stop:
            body["stop"] = sampling.stop
        if tools:
            body["tools"] = tools
            body["tool_choice"] = self.tool_choice
        r = self._request("POST", f"{self.base_url}/chat/completions", json=body)
        if tools and r.status_code == 400 and "tool-call-parser" in r.text:
            self.tool_choice = body["tool_choice"] = "none"
            r = self._request("POST", f"{self.base_url}/chat/completions", json=body)
        if r.status_code != 200:
            text = r.text[:500]
            if r.status_code == 400 and any(m in text.lower() for m in _CONTEXT_MARKERS):
                raise ContextLengthError(text)
            raise BackendError(f"HTTP {r.status_code}: {text}")
        data = r.json()
        usage = data.get("usage") or {}
        prompt_ids = data.get("prompt_token_ids")
        choices = []
        for ch in data["choices"]:
            msg = ch.get("message") or {}
            calls = normalize_tool_calls(msg.get("tool_calls"))
            text = msg.get("content") or ""
            kw = dict(
                finish_reason=ch.get("finish_reason"),
                prompt_token_ids=prompt_ids,
                completion_token_ids=ch.get("token_ids"),
                usage=usage,
            )
            if calls:  # the server parsed the calls itself
                choices.append(ChatResponse(text=text, tool_calls=calls, raw_text=text, **kw))
            else:
                choices.append(response_from_text(text, **kw))
        first = choices[0]
        first.choices = choices if len(choices) > 1 else []
        return first

    def end_session(self, session_id: str) -> None:
        pass

    def close(self) -> None:
        self.client.close()
