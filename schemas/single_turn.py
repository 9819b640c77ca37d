from schemas._base import BOOL, F64, I64, STR, field, table_schema

SCHEMA = table_schema(
    "single_turn",
    1,
    "Single-turn answers to the warm-up prompts: k samples per task, each scored by the evaluation harness (the "
    "verl reward function's scoring). The rejection-sampled dataset is curated from these rows.",
    [
        field("sample_id", STR, "content hash of (task_id, sample_idx, seed)"),
        field("task_id", STR, "the task's id (tasks.task_id)"),
        field("sample_idx", I64, "which of the task's k samples"),
        field("seed", I64, "sampling seed of this answer"),
        field("model", STR, "model that answered"),
        field("run_id", STR, "run that produced the row"),
        field("system", STR, "system prompt the model was given"),
        field("user", STR, "user prompt the model was given (the warm-up prompt)"),
        field("completion", STR, "the model's answer, verbatim"),
        field("finish_reason", STR, "engine's finish reason (stop, length, ...)"),
        field("format_ok", BOOL, "the answer has a ```python block (the candidate ModelNew)"),
        field("compiled", BOOL, "the candidate built"),
        field("correct", BOOL, "the candidate matched the reference in every trial with no violation"),
        field("reward", I64, "-1 incorrect or no answer, 1 correct, 2 faster than eager, 3 also than torch.compile"),
        field("speedup_vs_eager", F64, "candidate's speedup over PyTorch eager", nullable=True),
        field("speedup_vs_compile", F64, "candidate's speedup over torch.compile", nullable=True),
        field("eval_reason", STR, "the harness's reason ('' when rewarded with full timing; no_gpu without a GPU)"),
        field("error", STR, "engine or harness error text; empty otherwise"),
    ],
)
