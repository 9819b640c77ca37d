"""Critic pretraining rows: one per assistant turn, with undiscounted returns and GAE(lambda) targets.

With rewards r_t, a value baseline V_t and V_T = 0 after the last turn:
  return_to_go_t = sum_{k >= t} gamma^(k-t) r_k                         (gamma = 1: the plain sum)
  delta_t        = r_t + gamma * V_{t+1} - V_t
  advantage_t    = sum_{k >= t} (gamma * lambda)^(k-t) delta_k
  gae_target_t   = advantage_t + V_t                                    (the lambda-return the critic regresses on)
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.curate.settings import CurateSettings
from pipeline.curate.split import split_of

VALUES_FORMAT = (
    "value estimates V(s_t) for GAE, one per assistant turn of a trajectory: a Parquet, CSV or JSON-lines file "
    "with columns traj_id (string), turn (0-based assistant-turn index, int) and value (float), or a JSON file "
    "{traj_id: [V_0, V_1, ...]}; a trajectory whose values do not cover exactly its turns gets no GAE columns "
    "(a note in the summary says why)"
)


def load_values(path: str) -> dict[str, list[float | None]]:
    """Value estimates from a file in the documented format (VALUES_FORMAT), as {traj_id: [V per turn]}."""
    import json
    from pathlib import Path

    p = Path(path)
    if p.suffix == ".json":
        data = json.loads(p.read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a JSON values file is an object {{traj_id: [values]}}")
        return {str(k): list(v) for k, v in data.items()}
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq

        rows = pq.read_table(p, columns=["traj_id", "turn", "value"]).to_pylist()
    elif p.suffix == ".csv":
        import pyarrow.csv as pcsv

        rows = pcsv.read_csv(p).select(["traj_id", "turn", "value"]).to_pylist()
    else:
        rows = [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    per: dict[str, dict[int, float]] = {}
    for r in rows:
        per.setdefault(str(r["traj_id"]), {})[int(r["turn"])] = r["value"]
    return {tid: [d.get(i) for i in range(max(d) + 1)] for tid, d in per.items()}


def returns(rewards: list[float], gamma: float) -> list[float]:
    out, g = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        g = rewards[t] + gamma * g
        out[t] = g
    return out


def gae(rewards: list[float], values: list[float], gamma: float, lam: float) -> tuple[list[float], list[float]]:
    """(advantages, targets) by generalized advantage estimation; the state after the last turn is terminal."""
    n = len(rewards)
    adv, a = [0.0] * n, 0.0
    for t in range(n - 1, -1, -1):
        nxt = values[t + 1] if t + 1 < n else 0.0
        delta = rewards[t] + gamma * nxt - values[t]
        a = delta + gamma * lam * a
        adv[t] = a
    return adv, [adv[t] + values[t] for t in range(n)]


def turn_rewards(traj: dict[str, Any], n_turns: int, mode: str) -> tuple[list[float], list[int | None]]:
    """(reward per assistant turn under `mode`, evaluation reward recorded for each turn or None)."""
    evals: list[int | None] = [None] * n_turns
    for i, t in enumerate(traj.get("turns") or []):
        if not isinstance(t, dict):
            continue
        idx = t.get("turn") if isinstance(t.get("turn"), int) else i
        if 0 <= idx < n_turns and isinstance(t.get("reward"), int) and not isinstance(t["reward"], bool):
            evals[idx] = t["reward"]
    if mode == "per_turn":
        return [float(e or 0) for e in evals], evals
    rewards = [0.0] * n_turns
    if n_turns:
        rewards[-1] = float(traj.get("final_reward") or 0)
    return rewards, evals


def critic_rows(
    traj: dict[str, Any], settings: CurateSettings, run_id: str, values: list[float] | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Rows for one trajectory, and a note ('' or why the value baseline was not used). Instead of `messages`,
    each row holds `_prefix_len`, the number of leading messages of its prefix (the stage slices them in Arrow)."""
    ends = [i for i, m in enumerate(traj.get("messages") or []) if m and m.get("role") == "assistant"]
    n = len(ends)
    rewards, evals = turn_rewards(traj, n, settings.turn_reward)
    rets = returns(rewards, settings.gamma)
    note = ""
    adv = tgt = None
    if values is not None:
        usable = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        if len(values) == n and len(usable) == n:
            adv, tgt = gae(rewards, [float(v) for v in values], settings.gamma, settings.gae_lambda)
        else:
            note = (
                f"value baseline has {len(values)} values for {n} turns"
                if len(values) != n
                else "value baseline holds values that are not finite numbers"
            ) + ": GAE left empty"
            values = None
    split = split_of(traj["task_id"], settings.validation_fraction, settings.split_salt)
    rows = []
    for t, end in enumerate(ends):
        rows.append(
            {
                "row_id": f"critic:{traj['traj_id']}:{t}",
                "_prefix_len": end + 1,
                "traj_id": traj["traj_id"],
                "task_id": traj["task_id"],
                "split": split,
                "turn": t,
                "num_turns": n,
                "is_last": t == n - 1,
                "turn_reward": rewards[t],
                "eval_reward": evals[t],
                "return_to_go": rets[t],
                "value": None if values is None else float(values[t]),
                "advantage": None if adv is None else adv[t],
                "gae_target": None if tgt is None else tgt[t],
                "gamma": float(settings.gamma),
                "lam": float(settings.gae_lambda),
                "final_reward": int(traj.get("final_reward") or 0),
                "model": traj.get("model") or "",
                "rollout_run_id": traj.get("run_id") or "",
                "run_id": run_id,
            }
        )
    return rows, note
