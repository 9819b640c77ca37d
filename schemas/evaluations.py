from schemas._base import BOOL, F64, I64, STR, STR_LIST, field, table_schema

SCHEMA = table_schema(
    "evaluations",
    1,
    "One kernel evaluation (pipeline.evaluate.harness.evaluate): build, correctness, timing, violations, reward.",
    [
        field("eval_id", STR, "sha256 of (task_id, solution content hash, mode, settings), 16 hex digits"),
        field("task_id", STR, "pipeline.identity.task_id of the task code"),
        field("solution_sha256", STR, "sha256 of the solution's sources (model_new.py + kernels, or the file)"),
        field("solution_kind", STR, "workspace | single_file"),
        field("mode", STR, "verify | profile | full"),
        field("compiled", BOOL, "the solution built and its module loaded"),
        field("correct", BOOL, "outputs matched in every trial and no strict violation"),
        field("reward", I64, "-1 incorrect, 1 correct, 2 >5% faster than eager, 3 also >5% faster than torch.compile"),
        field("eager_ms", F64, "median ms of the reference in eager mode (cached baseline)", nullable=True),
        field("compile_ms", F64, "median ms of the reference under torch.compile (cached baseline)", nullable=True),
        field("solution_ms", F64, "median ms of ModelNew", nullable=True),
        field("speedup_vs_eager", F64, "eager_ms / solution_ms", nullable=True),
        field("speedup_vs_compile", F64, "compile_ms / solution_ms", nullable=True),
        field("max_abs_err", F64, "max |out - ref| over the correctness trials", nullable=True),
        field("max_rel_err", F64, "max |out - ref| / |ref| over elements with ref != 0", nullable=True),
        field(
            "max_tol_err", F64, "max |out - ref| / (1 + |ref|): allclose(atol=rtol=t) holds iff <= t", nullable=True
        ),
        field("violations", STR_LIST, "strict violation names (static and runtime); any one gives reward -1"),
        field("warnings", STR_LIST, "recorded, not rejected (e.g. precision_cast)"),
        field("device", STR, "GPU name; empty when evaluated without a GPU"),
        field("timing_json", STR, "JSON: timing method, raw times of solution and baselines, stats"),
        field("compile_seconds", F64, "wall seconds of the build (0 when cached)"),
        field("compile_cached", BOOL, "the build was a cache hit"),
        field("reason", STR, "why not correct / not measured: no_gpu, compile_error, output_mismatch..., '' if none"),
        field("error", STR, "trimmed compiler log or traceback"),
        field("run_id", STR, "run that produced the row"),
    ],
)
