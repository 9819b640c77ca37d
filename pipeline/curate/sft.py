"""SFT rows in TRL's conversational format: the whole conversation, tool calls and results, and the tool schemas."""

from __future__ import annotations

import json
from typing import Any

from pipeline.curate.filters import assistant_messages, final_speedups
from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of


def clean_messages(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Messages with exactly the published fields (role, content, tool_calls, tool_call_id, name), as strings."""
    def text(v: Any) -> str | None:
        if v is None or isinstance(v, str):
            return v
        try:
            return json.dumps(v, default=str)
        except (TypeError, ValueError):
            return repr(v)

    out = []
    for m in messages or []:
        m = m or {}
        calls = m.get("tool_calls") or None
        out.append({
            "role": text(m.get("role")),
            "content": text(m.get("content")),
            "tool_calls": None if calls is None else [
                {"id": text(c.get("id")), "type": text(c.get("type") or "function"),
                 "function": {"name": text((c.get("function") or {}).get("name")),
                              "arguments": text((c.get("function") or {}).get("arguments"))}}
                for c in calls if isinstance(c, dict)],
            "tool_call_id": text(m.get("tool_call_id")),
            "name": text(m.get("name")),
        })
    return out


def sft_row(traj: dict[str, Any], task: dict[str, Any], settings: CurateSettings, run_id: str) -> dict[str, Any]:
    """Every `sft` column but `messages` (the stage takes those straight from the trajectories' Arrow column)."""
    eager, comp = final_speedups(traj)
    return {
        "row_id": f"sft:{traj['traj_id']}",
        "tools": traj.get("tools") or "[]",
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
