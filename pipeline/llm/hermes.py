"""Hermes-style tool calls in plain text: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

Models served without a tool parser (and the offline engine, which only returns text) write their calls this way.
Parsing never raises: broken markup comes back as an error string so the agent can count a malformed turn.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """Split `text` into (content without the calls, OpenAI-format tool calls, parse errors)."""
    if "<tool_call>" not in (text or ""):
        return text or "", [], []
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    for m in _CALL_RE.finditer(text):
        body = m.group(1).strip()
        if not m.group(0).endswith("</tool_call>"):
            errors.append("unterminated <tool_call>")
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as e:
            errors.append(f"tool call is not valid JSON: {e.msg} at char {e.pos}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            errors.append("tool call JSON must be an object with a string 'name'")
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):  # some models double-encode; keep the string as is
            arg_text = args
        else:
            arg_text = json.dumps(args)
        calls.append(
            {"id": new_call_id(), "type": "function", "function": {"name": obj["name"], "arguments": arg_text}}
        )
    content = _CALL_RE.sub("", text).strip()
    return content, calls, errors


def normalize_tool_calls(raw: list[Any] | None) -> list[dict[str, Any]]:
    """OpenAI tool calls (dicts or SDK objects) as plain dicts with string arguments."""
    out = []
    for tc in raw or []:
        d = tc if isinstance(tc, dict) else tc.model_dump()
        fn = d.get("function") or {}
        args = fn.get("arguments", "")
        out.append(
            {
                "id": d.get("id") or new_call_id(),
                "type": "function",
                "function": {
                    "name": fn.get("name", ""),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    return out


def messages_for_template(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies whose tool-call arguments are dicts, as chat templates expect (vLLM's server does the same)."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = dict(m)
            calls = []
            for tc in m["tool_calls"]:
                fn = dict(tc["function"])
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except json.JSONDecodeError:
                        pass  # templates that branch on `is string` render it verbatim
                calls.append({**tc, "function": fn})
            m["tool_calls"] = calls
        out.append({k: v for k, v in m.items() if v is not None})
    return out
