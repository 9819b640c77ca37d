"""The single-turn warm-up prompt (KernelBench-style: the reference model in, a faster ModelNew out)."""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You are an expert CUDA engineer. You write custom CUDA kernels that replace PyTorch operators to make a "
    "model faster on NVIDIA GPUs, while computing the same outputs."
)

USER_TEMPLATE = """\
You are given the following PyTorch model, with `get_inputs()` giving its inputs and `get_init_inputs()` its \
constructor arguments:

```python
{code}
```

Write a new architecture named `ModelNew` that computes the same outputs as `Model` but replaces some or all of its \
operators (seed operators: {ops}) with custom CUDA kernels, for example by fusing them, compiled inline with \
`torch.utils.cpp_extension.load_inline`. It must be faster than both PyTorch eager and `torch.compile`. \
Answer with the complete Python code of `ModelNew` in one ```python block, and nothing else."""


def warmup_prompt(code: str, ops: list[str], system_prompt: str | None = None) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt or SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(code=code.strip(), ops=", ".join(ops) or "none listed")},
    ]
