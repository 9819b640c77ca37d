"""Hostile tasks beyond `tests/test_validate.py`'s set, through `validate()` on the CPU: prints each one's outcome.

    .venv/bin/python benchmarks/probe_hostile_tasks.py

Each must end with a reason code (or stay valid when it is legitimate: a `__del__` that never returns, a changed
default dtype, a complex output); the run must complete with one row per task.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import pyarrow as pa  # noqa: E402
from test_validate import task  # noqa: E402  (the task template the tests use)

from pipeline.validate.settings import ValidateSettings  # noqa: E402
from pipeline.validate.stage import validate  # noqa: E402

HOSTILE = {
    "keyboard_interrupt": task("raise KeyboardInterrupt"),
    "os_exit_dynamic": task("__import__('o' + 's')._exit(0)"),
    "recursion": task("def f(n):\n    return f(n + 1)\nreturn f(0)"),
    "generator_inputs": task("return x * 2", inputs="(torch.randn(4, 8) for _ in range(1))"),
    "int_in_output": task("return x * 2, 3"),
    "del_hang": task(
        "return x * 2",
        header="import torch\nimport torch.nn as nn\nclass H:\n    def __del__(self):\n"
        "        while True:\n            pass\n_h = H()",
    ),
    "default_dtype": task(
        "return x * 2", header="import torch\nimport torch.nn as nn\ntorch.set_default_dtype(torch.float64)"
    ),
    "base_exception": task("class E(BaseException):\n    pass\nraise E()"),
    "stdin_read": task("__builtins__['input']()\nreturn x"),
    "huge_init_inputs": task("return x", init_inputs="[0] * 10**8"),
    "output_is_input": task("return x"),
    "inplace_input": task("x.mul_(2)\nreturn x"),
    "empty_output": task("return x[:0]"),
    "complex_output": task("return torch.view_as_complex(torch.stack([x, x], -1))"),
    "sleep": task("__import__('time').sleep(100)\nreturn x"),
}


def main() -> None:
    out = validate(
        pa.table({"code": list(HOSTILE.values())}),
        ValidateSettings(timeout_s=20, memory_mb=3072, check_compile=False),
        "cpu",
    )
    assert out.num_rows == len(HOSTILE)
    for name, r in zip(HOSTILE, out.to_pylist()):
        print(f"{name:20s} valid={r['valid']!s:5s} reason={r['reason']!r} {str(r.get('detail') or '')[:90]!r}")


if __name__ == "__main__":
    main()
