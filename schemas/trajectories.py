import pyarrow as pa

from schemas._base import BOOL, F64, I64, STR, field, table_schema
from schemas._chat import MESSAGE  # the chat layout shared with the sft/critic tables

TURN = pa.struct(
    [
        pa.field("turn", I64),
        pa.field("action", STR),
        pa.field("kernel_hash", STR),
        pa.field("compiled", BOOL),
        pa.field("correct", BOOL),
        pa.field("eager_ms", F64),
        pa.field("compile_ms", F64),
        pa.field("solution_ms", F64),
        pa.field("speedup_vs_eager", F64),
        pa.field("speedup_vs_compile", F64),
        pa.field("reward", I64),
        pa.field("malformed", BOOL),
        pa.field("tool_error", BOOL),
        pa.field("prompt_tokens", I64),
        pa.field("completion_tokens", I64),
        pa.field("completion_token_ids", pa.list_(I64)),
        pa.field("gen_s", F64),
        pa.field("tool_s", F64),
        pa.field("detail", STR),
    ]
)
I64_LIST = pa.list_(I64)

SCHEMA = table_schema(
    "trajectories",
    1,
    "Agent rollouts: one row per (task_id, sample_idx, seed) with the full conversation, per-turn evaluation "
    "records, the token view when the backend returned token ids, and how the trajectory ended.",
    [
        field("traj_id", STR, "content hash of (task_id, sample_idx, seed): a retried rollout keeps its id"),
        field("task_id", STR, "the task's id (tasks.task_id)"),
        field("sample_idx", I64, "which of the task's n samples"),
        field("seed", I64, "sampling seed of this trajectory (every turn's request uses seed + turn)"),
        field("model", STR, "model name or path that generated the turns"),
        field("run_id", STR, "run that produced the row"),
        field(
            "messages",
            pa.list_(MESSAGE),
            "OpenAI-format conversation: system, user, assistant (content, tool_calls), tool results "
            "(tool_call_id, name); content is null where empty",
        ),
        field("tools", STR, "JSON: the OpenAI tools schemas offered to the model"),
        field(
            "turns",
            pa.list_(TURN),
            "one entry per assistant turn: turn index, action (tool names, or 'malformed'/'no_tool_call'), "
            "kernel_hash (sha of the kernel sources when the turn compiled/verified/profiled), compiled, correct, "
            "eager/compile/solution ms, speedups, reward (null unless measured), malformed, tool_error, prompt "
            "and completion token counts, completion_token_ids (exact sampled ids; null when the backend gives "
            "none), gen_s and tool_s seconds, detail (short reason text)",
        ),
        field("final_reward", I64, "reward of the last evaluated solution state (-1 when never correct)"),
        field("best_speedup_vs_eager", F64, "best measured speedup over eager among correct solutions", nullable=True),
        field(
            "best_speedup_vs_compile",
            F64,
            "best measured speedup over torch.compile among correct solutions",
            nullable=True,
        ),
        field("num_turns", I64, "assistant turns taken"),
        field(
            "termination",
            STR,
            "finished | max_turns | context_exhausted | malformed_output | tool_error | timeout | engine_error",
        ),
        field("sampling", STR, "JSON: temperature, top_p, max_tokens, seed, n of the requests"),
        field(
            "prompt_token_ids",
            I64_LIST,
            "token ids of the first prompt as the engine saw it; null when the backend gives no ids",
            nullable=True,
        ),
        field(
            "response_token_ids",
            I64_LIST,
            "every token after the first prompt, in order: sampled tokens and "
            "the template tokens of tool results; null without ids or when not prefix-consistent",
            nullable=True,
        ),
        field(
            "response_mask",
            I64_LIST,
            "1 for a sampled token, 0 for a tool/template token, aligned with response_token_ids",
            nullable=True,
        ),
        field(
            "token_view_exact",
            BOOL,
            "true when each turn's prompt extended the previous prompt and sample "
            "exactly, so prompt_token_ids + response_token_ids is what the engine saw",
            nullable=True,
        ),
        field("final_kernel_hash", STR, "kernel_hash of the state that earned final_reward", nullable=True),
        field("final_kernel", STR, "JSON {file: source} of the kernel files at the end", nullable=True),
        field("timings", STR, "JSON: total_s, gen_s, tool_s, compile_s, eval_s, driver_s (everything else)"),
        field("attempts", I64, "how many times this trajectory was started (a dead worker's trajectory restarts)"),
        field(
            "contamination_run_id",
            STR,
            "decontamination run whose verdict applied when this rollout ran",
            nullable=True,
        ),
        field("contaminated_at_rollout", BOOL, "the task's contamination verdict at rollout time", nullable=True),
        field("error", STR, "engine or driver error text for termination engine_error/timeout; empty otherwise"),
    ],
)
