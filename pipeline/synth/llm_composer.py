"""LLM composer: asks a model (through the one LLM-backend layer, pipeline.llm) to fuse sampled seed operators into
a KernelBench-format task. The prompt holds the sampled operators with their signatures, the format specification
and examples produced by the programmatic composer (never KernelBench problems). The reply's code block is parsed and
checked (it parses, defines Model / get_inputs / get_init_inputs, uses at least one seed operator); a failed check
is fed back to the model and it answers again, at most `llm_retries` times. A reply still without usable code
becomes a row with a reason code (`compose_reason`). `ops` are the operators the code uses (read from its AST),
not the ones the prompt asked for.
"""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pipeline.identity import task_id as compute_task_id
from pipeline.synth.catalog import SeedOp
from pipeline.synth.ops_used import ops_in_code

FORMAT_SPEC = """Write one self-contained Python file in KernelBench format:
- `import torch`, `import torch.nn as nn` (and `import torch.nn.functional as F` if needed); no other imports.
- `class Model(nn.Module)` with `__init__` (create every submodule and parameter it uses) and `forward`, which
  applies ALL the listed operators, in a sensible order, and returns one tensor.
- Module-level size constants, `def get_inputs()` returning a list of freshly random input tensors
  (torch.randn / torch.rand with those sizes), and `def get_init_inputs()` returning the constructor arguments.
- No randomness in forward (no dropout, no torch.rand*), no printing, no file or network access.
- Every parameter and submodule must influence the output; the output must not be constant.
Answer with the code in a single ```python block and nothing else."""

SYSTEM = "You are an expert PyTorch engineer who writes small, correct operator benchmarks."

_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def parse_reply(text: str | None) -> tuple[str, str]:
    """(code, reason): reason is "" when a code block (or bare KernelBench code) was found."""
    if text is None or not text.strip():
        return "", "empty_response"
    blocks = _CODE_BLOCK.findall(text)
    if blocks:
        best = max(blocks, key=lambda b: ("class Model" in b, len(b)))
        return best.strip() + "\n", ""
    m = re.search(r"```(?:python|py)?[ \t]*\n(.*)$", text, re.S)  # unterminated block (hit max_tokens)
    if m and "class Model" in m.group(1):
        return m.group(1).strip() + "\n", ""
    if "class Model" in text and "def get_inputs" in text:
        return text.strip() + "\n", ""
    return "", "no_code_block"


RETRY = "Your answer could not be used: {problem}. Answer again with the complete file in one ```python block."
FEEDBACK = {"empty_response": "the answer was empty", "no_code_block": "it has no ```python code block with the file"}


def check_code(code: str, asked: list[str], known: frozenset[str]) -> str:
    """'' when the code is usable as a task file, else `reason: what is wrong` (the reason is a row's code)."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        return f"syntax_error: line {e.lineno}: {e.msg}"
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in defined]
    if missing:
        return f"missing_definitions: the file must define {', '.join(missing)}"
    used = ops_in_code(code, known)
    if not used:
        return f"no_seed_op: Model uses none of the operators {', '.join(asked)}"
    return ""


def describe(op: SeedOp) -> str:
    how = "module (construct in __init__)" if op.is_module else "function (call in forward)"
    extra = []
    if op.call_args:
        extra.append(f"e.g. call kwargs {op.call_args}")
    if op.ctor_args:
        extra.append(f"e.g. constructor kwargs {op.ctor_args} ($C: channels, $LAST: last dim)")
    return f"- `{op.name}` [{op.kind}, {how}; inputs of rank {op.input_ranks}] {op.signature[:160]} " + "; ".join(
        extra
    )


def build_messages(ops: list[SeedOp], examples: list[str]) -> list[dict[str, str]]:
    ex = "\n\n".join(f"Example {i + 1}:\n```python\n{e.strip()}\n```" for i, e in enumerate(examples))
    user = f"{FORMAT_SPEC}\n\n{ex}\n\nNow fuse these {len(ops)} operators into one Model:\n" + "\n".join(
        describe(o) for o in ops
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def compose_with_llm(
    settings, run_id: str, catalog: list[SeedOp], backend, prof_name: str, max_workers: int = 8
) -> list[dict[str, Any]]:
    """`settings.n` rows of `tasks`; one chat per task, concurrent (the engine batches them)."""
    from pipeline.llm.backend import SamplingParams
    from pipeline.synth.composer import CompositionError, _by_kind, compose_task, profile, sample_n_ops, usable_pool
    from pipeline.synth.stage import task_seed

    prof = profile(prof_name, tuple(settings.target_ms), settings.max_tensor_mb)
    pool = usable_pool(catalog)
    examples: list[str] = []
    for j in range(50):
        if len(examples) >= settings.llm_examples:
            break
        try:
            examples.append(compose_task(catalog, task_seed(settings.seed + 99_991, j), settings.op_mix, prof).code)
        except CompositionError:
            continue
    jobs = []
    for i in range(settings.n):
        seed = task_seed(settings.seed, i)
        rng = random.Random(seed)
        k = sample_n_ops(rng, settings.op_mix)
        ops = _by_kind(pool, rng, k)
        jobs.append((i, seed, ops))

    known = frozenset(o.name for o in catalog)

    def one(job) -> dict[str, Any]:
        i, seed, ops = job
        msgs = build_messages(ops, examples)
        code, reason, raw, used = "", "llm_error", "", []
        for attempt in range(1 + max(0, settings.llm_retries)):
            sp = SamplingParams(
                temperature=settings.llm_temperature,
                max_tokens=settings.llm_max_tokens,
                seed=(seed + attempt) % (2**31),
            )
            try:
                resp = backend.chat(msgs, sampling=sp, session_id=f"synth-{run_id}-{i}-{attempt}")
            except Exception as e:  # backend failures are rows, not crashes (and not retried: the engine is down)
                code, reason, raw = "", "llm_error", f"{type(e).__name__}: {e}"
                break
            raw = resp.text or ""
            code, reason = parse_reply(raw)
            problem = check_code(code, [o.name for o in ops], known) if not reason else reason
            if not reason and not problem:
                used = ops_in_code(code, known)
                break
            reason = reason or problem.split(":")[0]
            # Feed the error back and ask again (bounded by llm_retries).
            msgs = [
                *msgs,
                {"role": "assistant", "content": raw[:4000]},
                {"role": "user", "content": RETRY.format(problem=FEEDBACK.get(problem, problem))},
            ]
        body = code if not reason else raw
        tid = compute_task_id(code) if not reason else compute_task_id(f"{raw}\n# llm compose failure {seed}")
        return {
            "task_id": tid,
            "code": body,
            "ops": used,
            "data_source": f"torch#{len(used)}",
            "composer": "llm",
            "seed": seed,
            "run_id": run_id,
            "compose_reason": reason,
            "size_profile": prof.name,
            "est_ms": None,
        }

    with ThreadPoolExecutor(max_workers=max_workers) as ex:
        return list(ex.map(one, jobs))
