"""SFT rows in TRL's conversational format: the whole conversation, tool calls and results, and the tool schemas."""

from __future__ import annotations

from typing import Any

from pipeline.curate.filters import assistant_messages, final_speedups
from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of


def clean_messages(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Messages with exactly the published fields (role, content, tool_calls, tool_call_id, name)."""
    out = []
    for m in messages or []:
        calls = m.get("tool_calls")
        out.append({
            "role": m.get("role"),
            "content": m.get("content"),
            "tool_calls": None if calls is None else [
                {"id": c.get("id"), "type": c.get("type") or "function",
                 "function": {"name": (c.get("function") or {}).get("name"),
                              "arguments": (c.get("function") or {}).get("arguments")}}
                for c in calls],
            "tool_call_id": m.get("tool_call_id"),
            "name": m.get("name"),
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
