import pyarrow as pa

from schemas._base import F64, I64, STR, STR_LIST, field, table_schema
from schemas._chat import PROMPT_MESSAGE

SCHEMA = table_schema(
    "warmup",
    1,
    "Single-turn warm-up prompts in verl's RL dataset format, one row per clean task (valid, not contaminated).",
    [
        field("row_id", STR, "published row id, 'warmup:<task_id>'; `opforge lineage ROW_ID` traces it"),
        field(
            "data_source",
            STR,
            "the task's data_source (origin and operator count, e.g. torch#2); verl picks the reward function by it",
        ),
        field("prompt", pa.list_(PROMPT_MESSAGE), "chat messages (system, user) asking for a faster CUDA kernel"),
        field("ability", STR, "verl task family: always 'cuda_kernel'"),
        field(
            "reward_model",
            pa.struct([pa.field("style", STR), pa.field("ground_truth", STR)]),
            "style 'rule' (the kernel evaluation harness scores it); ground_truth is the reference PyTorch code",
        ),
        field(
            "extra_info",
            pa.struct(
                [
                    pa.field("task_id", STR),
                    pa.field("split", STR),
                    pa.field("index", I64),
                    pa.field("ops", STR_LIST),
                    pa.field("composer", STR),
                    pa.field("seed", I64),
                    pa.field("task_run_id", STR),
                    pa.field("contamination_score", F64),
                    pa.field("nearest_ref", STR),
                ]
            ),
            "task_id, split, index within the split, seed operators (ops), composer and its seed, the run that "
            "made the task, and the decontamination decision's score and nearest KernelBench problem",
        ),
        field("split", STR, "train | validation (by a hash of task_id, so no task is in both)"),
        field("run_id", STR, "curation run that wrote the row"),
    ],
)
