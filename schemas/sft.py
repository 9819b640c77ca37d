from schemas._base import F64, I64, STR, STR_LIST, field, table_schema
from schemas._chat import CHAT, TOOL_SCHEMAS

SCHEMA = table_schema(
    "sft",
    2,
    "Rejection-sampled agent trajectories in TRL's conversational format (messages with tool calls and tool "
    "results, tools as JSON schemas), one row per kept trajectory.",
    [
        field("row_id", STR, "published row id, 'sft:<traj_id>'; `opforge lineage ROW_ID` traces it"),
        field(
            "messages",
            CHAT,
            "the whole conversation, each message an object with only the keys it uses: "
            "role and content (a string) always; tool_calls on an assistant message that called "
            "tools (function.arguments an object); tool_call_id and name on a tool result",
        ),
        field(
            "tools",
            TOOL_SCHEMAS,
            "the OpenAI tool schemas the agent was given, each an object (pass as apply_chat_template(tools=...))",
        ),
        field("traj_id", STR, "trajectory id (trajectories table)"),
        field("task_id", STR, "task id (tasks table)"),
        field("split", STR, "train | validation (by a hash of task_id, so no task is in both)"),
        field("model", STR, "model that produced the trajectory"),
        field("sample_idx", I64, "sample index among the rollouts of this task"),
        field(
            "final_reward",
            I64,
            "reward of the final kernel: -1 fail, 1 correct, 2 faster than eager, "
            "3 faster than eager and torch.compile",
        ),
        field("speedup_vs_eager", F64, "final kernel's speedup over PyTorch eager", nullable=True),
        field("speedup_vs_compile", F64, "final kernel's speedup over torch.compile", nullable=True),
        field("num_turns", I64, "assistant turns in the conversation"),
        field("final_kernel_hash", STR, "content hash of the final kernel", nullable=True),
        field("data_source", STR, "the task's data_source"),
        field("ops", STR_LIST, "seed operators of the task"),
        field("rollout_run_id", STR, "run that produced the trajectory"),
        field("run_id", STR, "curation run that wrote the row"),
    ],
)
