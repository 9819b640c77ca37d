from pydantic import Field

from pipeline.llm.settings import LLMSettings


class RolloutSettings(LLMSettings):
    """Agent rollouts (issue 3). The LLM fields (model, backend, base_url, replicas, ...) come from LLMSettings, so
    `make_backend(settings.rollout)` works directly."""

    max_turns: int = Field(200, description="Assistant turns before the trajectory ends with max_turns.")
    max_context_tokens: int = Field(
        131072,
        description="Context budget; each request gets max_tokens = budget - "
        "prompt length (capped by max_tokens_per_turn).",
    )
    max_tokens_per_turn: int = Field(8192, description="Cap on one assistant turn's tokens.")
    min_response_tokens: int = Field(16, description="Fewer tokens left than this ends with context_exhausted.")
    samples_per_task: int = Field(1, description="Trajectories per task (sample_idx 0..n-1), each with its own seed.")
    seed: int = Field(0, description="Base seed; a trajectory's seed derives from (task_id, sample_idx, seed).")
    temperature: float = Field(1.0)
    top_p: float = Field(1.0)
    concurrency: int = Field(8, description="Trajectories driven at once (threads; the work itself runs on Ray).")
    tool_output_chars: int = Field(8000, description="Tool answers are trimmed to this many characters.")
    max_consecutive_malformed: int = Field(
        3, description="Turns in a row without a valid tool call before malformed_output."
    )
    max_consecutive_tool_errors: int = Field(
        8, description="Turns in a row whose every call failed before tool_error."
    )
    trajectory_timeout_s: float = Field(4 * 3600, description="Wall-clock limit of one trajectory.")
    max_attempts: int = Field(3, description="Starts of one trajectory when its LLM replica dies.")
    final_eval: bool = Field(True, description="Evaluate the final solution when its last state was not profiled.")
    compile_cache_dir: str | None = Field(None, description="Build cache shared by compiles (None: harness default).")
    use_ray_tools: bool | None = Field(
        None, description="Run compiles/evaluations as Ray tasks (None: when Ray is initialised)."
    )
    single_turn_samples: int = Field(
        0,
        ge=0,
        description="Single-turn answers sampled per task on the warm-up "
        "prompt (0: none); curation keeps the rewarded ones as the rejection_sampled "
        "dataset.",
    )
