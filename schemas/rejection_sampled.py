import pyarrow as pa

from schemas._base import F64, I64, STR, field, table_schema
from schemas._chat import PROMPT_MESSAGE

SCHEMA = table_schema(
    "rejection_sampled",
    1,
    "Single-turn rejection-sampled answers in TRL's prompt-completion conversational format: k answers were "
    "sampled per warm-up prompt and scored by the harness; answers with reward >= curate.rs_min_reward are kept "
    "(identical answers to a task folded into one).",
    [
        field("row_id", STR, "published row id, 'rs:<sample_id>'"),
        field("prompt", pa.list_(PROMPT_MESSAGE), "the warm-up prompt (system, user)"),
        field("completion", pa.list_(PROMPT_MESSAGE), "the kept answer: one assistant message"),
        field("task_id", STR, "task id (tasks table)"),
        field("split", STR, "train | validation (by a hash of task_id, as in every config)"),
        field("sample_idx", I64, "which of the task's k samples"),
        field("k", I64, "answers sampled for this task"),
        field("kept", I64, "answers kept for this task"),
        field("reward", I64, "the answer's reward (1 correct, 2 faster than eager, 3 also than torch.compile)"),
        field("speedup_vs_eager", F64, "speedup over PyTorch eager", nullable=True),
        field("speedup_vs_compile", F64, "speedup over torch.compile", nullable=True),
        field("data_source", STR, "the task's data_source"),
        field("model", STR, "model that answered"),
        field("rollout_run_id", STR, "run that sampled the answer"),
        field("run_id", STR, "curation run that wrote the row"),
    ],
)
