from typing import Literal

from pydantic import BaseModel, Field


class CurateSettings(BaseModel):
    """Trajectory filters and dataset building (issue 4). Every filter drops with its own reason code."""

    min_final_reward: int = Field(1, description="Keep trajectories whose final reward is at least this (> 0).")
    min_speedup_vs_compile: float = Field(
        1.05, description="Keep trajectories whose final kernel is at least this much faster than torch.compile."
    )
    reward3_min_speedup: float = Field(
        1.05,
        description="The harness's bar for reward 3 over torch.compile: a final kernel no turn timed passes "
        "the speedup filter with reward 3 when min_speedup_vs_compile is at most this.",
    )
    loop_consecutive: int = Field(
        3,
        ge=2,
        description="The same step (tool calls and arguments on unchanged "
        "sources, answered with the same result) this many times "
        "in a row is a loop.",
    )
    max_identical_actions: int = Field(
        3, ge=1, description="The same step (as above) more often than this anywhere in a trajectory is a loop."
    )
    max_turns: int = Field(150, description="Drop trajectories with more assistant turns.")
    max_tokens: int = Field(
        131072, description="Drop trajectories with more prompt+response tokens (when token ids were recorded)."
    )
    max_chars: int = Field(
        600_000,
        description="Drop trajectories with more characters of message text and tool "
        "arguments (the length limit when no token ids were recorded).",
    )
    dedup_scope: Literal["task", "global"] = Field(
        "task", description="Deduplicate identical final kernels per task, or across all tasks."
    )
    require_validation: bool = Field(True, description="Tasks with no validation verdict are left out.")
    require_decontamination: bool = Field(True, description="Tasks with no contamination decision are left out.")
    validation_fraction: float = Field(0.1, ge=0.0, le=1.0, description="Share of tasks in the validation split.")
    split_salt: str = Field("opforge-split-v1", description="Salt of the task hash that assigns splits.")
    critic_source: Literal["sft", "integrity"] = Field(
        "sft",
        description="Trajectories the critic rows come from: the SFT set ('sft'), or every trajectory that "
        "passes the integrity filters whatever its reward ('integrity').",
    )
    turn_reward: Literal["terminal", "per_turn"] = Field(
        "terminal",
        description="'terminal': the final reward on the last turn, 0 elsewhere; 'per_turn': each "
        "turn's evaluation reward.",
    )
    gamma: float = Field(1.0, description="Discount for returns and GAE.")
    gae_lambda: float = Field(0.95, description="GAE lambda (used where a value baseline is given).")
    values_path: str | None = Field(
        None,
        description="Value estimates for the critic's GAE columns: a Parquet/CSV/JSON-lines file of (traj_id, "
        "turn, value) rows or a JSON file {traj_id: [V_0, ...]} (docs/datasets.md). Without it "
        "only the Monte-Carlo returns are filled.",
    )
    warmup_system_prompt: str | None = Field(None, description="Override the warm-up system prompt.")
    rs_min_reward: int = Field(
        1,
        description="rejection_sampled: keep single-turn answers whose reward is at least "
        "this (1 correct, 2 faster than eager, 3 also than torch.compile).",
    )
    scope: Literal["pool", "run"] = Field(
        "pool",
        description="What curation reads: 'pool', every run's tasks, decisions, trajectories and samples "
        "under the data root (tasks accumulate across scheduled runs, deduplicated across "
        "runs), or 'run', only the curation run's own partitions.",
    )
