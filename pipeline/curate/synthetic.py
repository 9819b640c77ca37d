"""Synthetic agent trajectories, built through the real `trajectories` schema: for tests, demos and benchmarks.

They follow what the rollout stage records (OpenAI tool calls, tool results, one `turns` entry per assistant turn),
with knobs for every case curation must handle: failures, slow kernels, loops, malformed calls, duplicates.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.identity import content_hash
from pipeline.rollout.agent import empty_turn

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "compile_and_test",
            "description": "Compile the CUDA kernel, check it against the reference, time it.",
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string", "description": "ModelNew source"}},
                "required": ["code"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit",
            "description": "Submit the current kernel as the final answer.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
TOOLS_JSON = json.dumps(TOOLS, sort_keys=True)


def kernel_source(variant: str) -> str:
    return (
        "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
        f"src = r'''__global__ void k_{variant}(const float* x, float* y, int n) {{\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(x[i], 0.f); }'''\n"
        "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    )


def fill_schema(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """The row with every column of `table`'s schema (nullable: None; others: a neutral value) and no others."""
    from schemas import neutral_row

    return {k: row.get(k, v) for k, v in neutral_row(table).items()}


def trajectory(
    task_id: str,
    sample_idx: int = 0,
    *,
    steps: list[dict[str, Any]] | None = None,
    final_reward: int = 3,
    model: str = "tiny-llama",
    run_id: str = "rollout-1",
    seed: int = 0,
    task_code: str = "",
    contaminated_at_rollout: bool | None = False,
    contamination_run_id: str | None = "decon-1",
    final_text: str = "The kernel is done.",
    malformed_turn: int | None = None,
    tools: str = TOOLS_JSON,
    token_ids: bool = False,
    pad: int = 0,
) -> dict[str, Any]:
    """One trajectory row (as a dict with every `trajectories` column).

    `steps`: one dict per compile_and_test turn: {"kernel": variant, "correct": bool, "speedup": float|None,
    "eager_speedup": float|None, "reward": int|None}; a final text-only assistant turn follows. `pad` adds that many
    characters to the first reply (for length tests and benchmarks).
    """
    steps = steps if steps is not None else [{"kernel": "a", "correct": True, "speedup": 1.3, "reward": 3}]
    traj_id = content_hash(task_id, str(sample_idx), str(seed))
    msgs: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You write fast CUDA kernels.",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
        },
        {
            "role": "user",
            "content": f"Make this faster:\n{task_code or task_id}",
            "tool_calls": None,
            "tool_call_id": None,
            "name": None,
        },
    ]
    turns = []
    final_hash = None
    best_c = best_e = None
    for i, s in enumerate(steps):
        code = kernel_source(s["kernel"])
        khash = content_hash(code)
        args = json.dumps({"code": code})
        if malformed_turn == i:
            args = args[:-2]  # truncated JSON, as a model that ran out of tokens writes it
        call_id = f"call_{i}"
        msgs.append(
            {
                "role": "assistant",
                "content": ("Trying a fused kernel. " + "x" * pad) if i == 0 else f"Attempt {i + 1}.",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "compile_and_test", "arguments": args}}
                ],
                "tool_call_id": None,
                "name": None,
            }
        )
        sp, ok = s.get("speedup"), s.get("correct", True)
        eager = s.get("eager_speedup", sp * 1.5 if sp else None)
        result = json.dumps({"compiled": True, "correct": ok, "speedup_vs_compile": sp})
        msgs.append(
            {
                "role": "tool",
                "content": result,
                "tool_calls": None,
                "tool_call_id": call_id,
                "name": "compile_and_test",
            }
        )
        turns.append(
            {
                **empty_turn(i),
                "action": "malformed" if malformed_turn == i else "compile_and_test",
                "kernel_hash": khash,
                "compiled": True,
                "correct": ok,
                "eager_ms": 3.0,
                "compile_ms": 2.0,
                "solution_ms": 2.0 / sp if sp else None,
                "speedup_vs_eager": eager if ok else None,
                "speedup_vs_compile": sp if ok else None,
                "reward": s.get("reward"),
                "malformed": malformed_turn == i,
                "prompt_tokens": 100,
                "completion_tokens": 50,
                "gen_s": 0.1,
                "tool_s": 1.0,
            }
        )
        if ok and sp is not None:
            final_hash = khash
            best_c = max(best_c or 0.0, sp)
            best_e = max(best_e or 0.0, eager or 0.0)
    msgs.append({"role": "assistant", "content": final_text, "tool_calls": None, "tool_call_id": None, "name": None})
    turns.append(
        {
            **empty_turn(len(steps)),
            "action": "no_tool_call",
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "gen_s": 0.1,
        }
    )
    row = {
        "traj_id": traj_id,
        "task_id": task_id,
        "sample_idx": sample_idx,
        "seed": seed,
        "model": model,
        "run_id": run_id,
        "messages": msgs,
        "tools": tools,
        "turns": turns,
        "final_reward": final_reward,
        "best_speedup_vs_eager": best_e,
        "best_speedup_vs_compile": best_c,
        "num_turns": len(steps) + 1,
        "termination": "finished",
        "sampling": json.dumps({"temperature": 0.7, "seed": seed}),
        "prompt_token_ids": list(range(50)) if token_ids else None,
        "response_token_ids": list(range(40 * (len(steps) + 1))) if token_ids else None,
        "final_kernel_hash": final_hash,
        "timings": json.dumps({"total_s": 1.0, "gpu": "NVIDIA H200"}),
        "attempts": 1,
        "contamination_run_id": contamination_run_id,
        "contaminated_at_rollout": contaminated_at_rollout,
        "error": "",
    }
    return fill_schema("trajectories", row)


def task_rows(codes: list[str], run_id: str = "synth") -> list[dict[str, Any]]:
    """`tasks` rows of these codes, as the programmatic composer writes them."""
    from pipeline.identity import task_id

    return [
        fill_schema(
            "tasks",
            {
                "task_id": task_id(c),
                "code": c,
                "ops": ["torch.relu", "torch.mul"],
                "data_source": "torch#2",
                "composer": "programmatic",
                "seed": i,
                "run_id": run_id,
            },
        )
        for i, c in enumerate(codes)
    ]


# Values of the wrong shape for any field or message (fuzzing: bad input never crashes a run or loses a row).
JUNK = [
    None,
    "",
    "x",
    5,
    -1.5,
    True,
    [],
    {},
    [None],
    [5],
    [{"role": 5}],
    [{"tool_calls": "no"}],
    [{"role": "assistant", "tool_calls": [None, 3, {"function": 7}]}],
    {"a": [1]},
    float("nan"),
    [{"role": "assistant", "content": {"x": 1}}],
    [{"role": "tool", "tool_call_id": [1]}],
    10**30,
    -7,
    float("inf"),
]


def task_code(i: int) -> str:
    return (
        f"import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
        f"        return torch.relu(x) * {i + 2}\n\n"
        f"def get_inputs():\n    return [torch.randn(16, {64 + i})]\n\ndef get_init_inputs():\n    return []\n"
    )


def scenario(
    run_synth: str = "synth-1", run_val: str = "val-1", run_decon: str = "decon-1", run_roll: str = "rollout-1"
) -> dict[str, list[dict[str, Any]]]:
    """Tasks, verdicts and trajectories that exercise every curation filter at least once (rows in the real
    schemas where one exists). Returns {"tasks", "validation", "contamination", "trajectories"}; ids are in
    `["ids"]` as {name: task_id}."""
    from pipeline.identity import task_id as make_task_id
    from schemas import table_names

    names = [
        "good",
        "slow",
        "fails",
        "malformed",
        "invalid",
        "contaminated",
        "changed",
        "loops",
        "unvalidated",
        "long",
    ]
    codes = {n: task_code(i) for i, n in enumerate(names)}
    ids = {n: make_task_id(c) for n, c in codes.items()}
    tasks = task_rows([codes[n] for n in names], run_synth)

    def verdict(n: str) -> dict[str, Any]:
        row = {
            "task_id": ids[n],
            "valid": n != "invalid",
            "reason": "nan_output" if n == "invalid" else "",
            "run_id": run_val,
        }
        return fill_schema("validation", row) if "validation" in table_names() else row

    validation = [verdict(n) for n in names if n != "unvalidated"]
    contamination = [
        fill_schema(
            "contamination",
            {
                "task_id": ids[n],
                "contaminated": n == "contaminated",
                "nearest_ref": "level1/19_ReLU",
                "score": 1.0 if n == "contaminated" else 0.12,
                "reason": "exact_md5" if n == "contaminated" else "",
                "reference_fingerprint": "kbfp-test",
                "method": "exact",
                "parse_ok": True,
            },
        )
        for n in names
    ]
    for c in contamination:
        c["run_id"] = run_decon  # the partition's run id, as the catalog view shows it
    T = lambda n, k=0, **kw: trajectory(ids[n], k, run_id=run_roll, task_code=codes[n], **kw)  # noqa: E731
    good_steps = [
        {"kernel": "slow", "correct": True, "speedup": 0.9, "reward": 1},
        {"kernel": "fast", "correct": True, "speedup": 1.4, "reward": 3},
    ]
    trajs = [
        T("good", 0, steps=good_steps),
        T("good", 1, steps=good_steps[1:]),  # same final kernel as sample 0: folded into the better one
        T("good", 2, steps=[{"kernel": "other", "correct": True, "speedup": 1.2, "reward": 3}]),
        T("slow", 0, steps=[{"kernel": "s", "correct": True, "speedup": 1.01, "reward": 3}]),
        T("fails", 0, final_reward=-1, steps=[{"kernel": "f", "correct": False, "speedup": None, "reward": -1}]),
        T("malformed", 0, malformed_turn=0),
        T("malformed", 1, tools="not json"),
        T("invalid", 0),
        T("contaminated", 0),
        T("changed", 0, contaminated_at_rollout=True),
        T("loops", 0, steps=[{"kernel": "l", "correct": True, "speedup": 1.3, "reward": 3}] * 3),
        T("unvalidated", 0),
        T("long", 0, pad=700_000),
        trajectory("0000deadbeef0000", 0, run_id=run_roll),  # a task nobody made
    ]
    trajs.append(dict(trajs[2]))  # the same trajectory twice (a replayed shard)
    return {
        "tasks": tasks,
        "validation": validation,
        "contamination": contamination,
        "trajectories": trajs,
        "ids": ids,
    }
