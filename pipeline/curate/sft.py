"""SFT rows in TRL's conversational format: the whole conversation, tool calls and results, and the tool schemas."""

from __future__ import annotations

import json
from typing import Any

from pipeline.curate.filters import assistant_messages, final_speedups
from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, default=str)
    except (TypeError, ValueError):
        return repr(v)


def _arguments(v: Any) -> dict[str, Any]:
    """A tool call's arguments as an object. The filters drop calls whose arguments are not a JSON object; a value
    that still is not one (a row built outside the filters) is kept under `_raw` rather than lost."""
    if isinstance(v, dict):
        return v
    try:
        obj = json.loads(v) if isinstance(v, str) else v
    except ValueError:
        obj = None
    return obj if isinstance(obj, dict) else {"_raw": _text(v)}


def chat_messages(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The conversation as chat templates and trainers take it: every message has `role` and `content` (a
    string); an assistant message has `tool_calls` only when it called tools, each with `arguments` an object;
    a tool result has `tool_call_id` and `name`. No key is present with a null value."""
    out = []
    for m in messages or []:
        m = m if isinstance(m, dict) else {}
        msg: dict[str, Any] = {"role": _text(m.get("role")), "content": _text(m.get("content"))}
        calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
        if calls:
            msg["tool_calls"] = [
                {
                    "id": _text(c.get("id")),
                    "type": _text(c.get("type") or "function"),
                    "function": {
                        "name": _text((c.get("function") or {}).get("name")),
                        "arguments": _arguments((c.get("function") or {}).get("arguments")),
                    },
                }
                for c in calls
            ]
        for key in ("tool_call_id", "name"):
            if m.get(key) is not None:
                msg[key] = _text(m[key])
        out.append(msg)
    return out


def tool_schemas(tools: Any) -> list[dict[str, Any]]:
    """The offered tools as a list of OpenAI tool schemas (objects), from the trajectories' JSON text."""
    try:
        parsed = json.loads(tools) if isinstance(tools, str) else tools
    except ValueError:
        parsed = None
    return [t for t in parsed if isinstance(t, dict)] if isinstance(parsed, list) else []


def sft_row(traj: dict[str, Any], task: dict[str, Any], settings: CurateSettings, run_id: str) -> dict[str, Any]:
    """Every `sft` column but `messages` and `tools` (the stage builds those JSON columns in Arrow)."""
    eager, comp = final_speedups(traj)
    return {
        "row_id": f"sft:{traj['traj_id']}",
        "traj_id": traj["traj_id"],
        "task_id": traj["task_id"],
        "split": split_of(traj["task_id"], settings.validation_fraction, settings.split_salt),
        "model": traj.get("model") or "",
        "sample_idx": int(traj.get("sample_idx") or 0),
        "final_reward": int(traj["final_reward"]),
        "speedup_vs_eager": None if eager is None else float(eager),
        "speedup_vs_compile": None if comp is None else float(comp),
        "num_turns": len(assistant_messages(traj)),
        "final_kernel_hash": traj.get("final_kernel_hash"),
        "data_source": task.get("data_source") or "",
        "ops": list(task.get("ops") or []),
        "rollout_run_id": traj.get("run_id") or "",
        "run_id": run_id,
    }
