from schemas._base import I64, STR, STR_LIST, field, table_schema

SCHEMA = table_schema(
    "tasks",
    1,
    "Candidate operator tasks in KernelBench format, compatible with CUDA-Agent-Ops-6K (code, ops, data_source).",
    [
        field("task_id", STR, "sha256 of the canonical code (pipeline.identity.task_id), 16 hex digits"),
        field("code", STR, "KernelBench-format source: class Model, get_inputs(), get_init_inputs()"),
        field("ops", STR_LIST, "seed operators fused in this task, in call order"),
        field("data_source", STR, "origin and operator count, e.g. torch#2"),
        field("composer", STR, "programmatic | llm | external"),
        field("seed", I64, "composer seed that reproduces this task", nullable=True),
        field("run_id", STR, "run that produced the row"),
    ],
)
