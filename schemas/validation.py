from schemas._base import BOOL, F64, I64, STR, STR_LIST, field, table_schema

# Filters in the order their reason codes take precedence (static, then the sandbox, then runtime).
FILTERS = (
    ("syntax", "syntax_error: the code parses"),
    ("structure", "missing_definitions: defines class Model, get_inputs, get_init_inputs"),
    ("imports", "disallowed_import: only allowlisted imports, no open/exec/eval/__import__"),
    (
        "patching",
        "monkey_patching: no assignment to attributes of imported modules (static), none of the torch "
        "functions the filters use replaced after the module body ran (runtime)",
    ),
    ("static_stochastic", "stochastic_op_static: no random sampling or stochastic layer in Model"),
    (
        "sandbox",
        "the candidate process finished within its limits in the jail (reason: timeout, memory_limit, "
        "segfault, seccomp_violation, exec_blocked, sandbox_unavailable, ...); forged_report: the report "
        "disagrees with the output samples the parent re-checks",
    ),
    ("init", "init_error: the module body, get_init_inputs() and Model(*init) run"),
    ("inputs", "bad_inputs: get_inputs() returns a non-empty list holding tensors"),
    ("forward", "forward_error: forward runs"),
    ("inputs_unchanged", "mutates_inputs: forward leaves its input tensors unchanged"),
    ("output_type", "bad_output: forward returns floating tensors"),
    ("finite", "nan_or_inf: no NaN/Inf in the output"),
    ("output_size", "output_too_large: output bytes within the limit"),
    ("fresh_inputs", "fixed_inputs: get_inputs() gives different tensors under different seeds"),
    ("runtime_stochastic", "stochastic_op: forward does not consume the random number generator"),
    ("deterministic", "nondeterministic: same seed, same output"),
    (
        "non_constant",
        "constant_output: the output changes when the inputs or the weights change (judged at the "
        "output's own scale, across inputs, never element against element)",
    ),
    ("not_identity", "identity_output: some output is not just an input's values (an identity, reshape or view)"),
    ("input_dependent", "input_independent: different inputs change the output (at the output's own scale)"),
    ("weight_dependent", "weight_independent: re-initialised weights change the output (null: no weights)"),
    ("unused_parameters", "unused_parameters: perturbing each parameter changes the output"),
    ("unused_modules", "unused_modules: every leaf submodule is called in forward"),
    ("train_eval", "train_eval_mismatch: same output in train() and eval()"),
    ("compile_runs", "compile_error: torch.compile runs"),
    ("compile_agree", "compile_mismatch: compiled output matches eager within atol/rtol"),
    ("memory", "memory_too_large: peak memory within the limit"),
    ("runtime_window", "runtime_out_of_window: eager time within the window (null: not checked, e.g. on CPU)"),
)

SCHEMA = table_schema(
    "validation",
    7,
    "Sandboxed validation of candidate tasks: one row per candidate, the first failing filter's reason, every "
    "filter's result (null: not run) and the measured values.",
    [
        field("task_id", STR, "pipeline.identity.task_id(code)"),
        field("valid", BOOL, "every filter that ran passed"),
        field("reason", STR, "first failing filter's reason code; empty when valid"),
        field("detail", STR, "what the first failing filter saw (trimmed)"),
        field("device", STR, "cpu | cuda: where the runtime filters ran"),
        field("device_name", STR, "cpu, or the GPU's name"),
        field("runtime_window_checked", BOOL, "the eager-runtime window was checked (on a GPU); false on CPU"),
        field(
            "gpu_alone",
            BOOL,
            "ran out of GPU memory at its share beside other candidates, so ran again, finally with the GPU to "
            "itself; this row is that run",
        ),
        field(
            "gpu_memory_share",
            F64,
            "share of the GPU's memory this row's run held (1/jobs_per_gpu first; out of memory there, what it "
            "needed, up to the whole GPU); null on CPU",
            nullable=True,
        ),
        field("eager_ms", F64, "median eager forward time, ms (on `device`)", nullable=True),
        field("compile_ms", F64, "median torch.compile forward time, ms", nullable=True),
        field("compile_s", F64, "first compiled call (compilation) seconds", nullable=True),
        field("max_abs_err", F64, "max |compiled - eager|", nullable=True),
        field("max_rel_err", F64, "max |compiled - eager| / (|eager| + 1e-8)", nullable=True),
        field("det_max_abs_err", F64, "max abs difference between two same-seed runs", nullable=True),
        field("train_eval_max_abs_err", F64, "max abs difference between train() and eval() outputs", nullable=True),
        field("output_bytes", I64, "bytes of the output tensors", nullable=True),
        field("output_shape", STR, "JSON list of output shapes", nullable=True),
        field("peak_memory_mb", F64, "peak GPU memory (cuda) or process max RSS (cpu), MiB", nullable=True),
        field("n_params", I64, "number of parameter elements", nullable=True),
        field(
            "phase_s",
            STR,
            "JSON: seconds per phase of the candidate's run (start: jail and interpreter; import, build, forward, "
            "window_probe, checks, eager_timing, compile, compiled_timing, trace; gpu_lock_wait: waiting for the "
            "GPU's lock) and, "
            "on a GPU, memory_wait (for its memory share) and earlier_runs (runs out of memory at a smaller share)",
            nullable=True,
        ),
        field("unused", STR_LIST, "unused parameters / submodules (module:NAME) found"),
    ]
    + [field(f"check_{name}", BOOL, doc, nullable=True) for name, doc in FILTERS]
    + [
        field("sandbox_reason", STR, "the sandbox's own reason code (empty when the process delivered a result)"),
        field("sandbox_returncode", I64, "exit status of the candidate process (negative: signal)", nullable=True),
        field("sandbox_signal", STR, "signal that ended it, if any", nullable=True),
        field("sandbox_wall_s", F64, "wall seconds of the candidate process", nullable=True),
        field("sandbox_max_rss_mb", F64, "peak resident memory of the candidate process, MiB", nullable=True),
        field("stdout_bytes", I64, "bytes the candidate printed to stdout (kept: the first 20 kB in logs only)"),
        field("netns", BOOL, "the network namespace layer was active"),
        field(
            "jail",
            STR,
            "bwrap: every jail layer was up; unsafe: the development opt-out (sandbox.mode=unsafe); "
            "empty: the candidate never ran (static rejection, or sandbox_unavailable)",
        ),
        field(
            "semantic_trace",
            STR,
            "a valid task's semantic trace for decontamination, JSON: decontamination's tracer "
            "(pipeline.decontam.jailed.TRACER) run by the harness after the checks on meta tensors, with its key "
            "sha256(tracer version, torch version, code) computed by the parent; null: not traced (invalid task, "
            "trace_s 0). Written where the task ran: as untrusted as decontamination's own jailed trace",
            nullable=True,
        ),
    ],
)
