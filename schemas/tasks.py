from schemas._base import F64, I64, STR, STR_LIST, field, table_schema

SCHEMA = table_schema(
    "tasks",
    2,
    "Candidate operator tasks in KernelBench format, compatible with CUDA-Agent-Ops-6K (code, ops, data_source).",
    [
        field("task_id", STR, "sha256 of the canonical code (pipeline.identity.task_id), 16 hex digits"),
        field(
            "code",
            STR,
            "KernelBench-format source: class Model, get_inputs(), get_init_inputs() "
            "(llm composer: the raw reply when no code block could be parsed)",
        ),
        field("ops", STR_LIST, "seed operators fused in this task, in call order (llm: the operators prompted)"),
        field("data_source", STR, "origin and operator count, e.g. torch#2"),
        field("composer", STR, "programmatic | llm | external"),
        field("seed", I64, "composer seed that reproduces this task", nullable=True),
        field("run_id", STR, "run that produced the row"),
        field(
            "compose_reason",
            STR,
            "empty when the composer produced code; else why not (llm: no_code_block, empty_response, llm_error)",
        ),
        field("size_profile", STR, "sizes chosen for: gpu (eager time estimated on the target GPU) | small (CPU)"),
        field(
            "est_ms", F64, "estimated eager time on the target GPU, ms (gpu profile; null otherwise)", nullable=True
        ),
    ],
)
