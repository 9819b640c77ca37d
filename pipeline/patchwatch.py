"""Run-time monkey-patch detection, shared by the task validator's harness and the kernel evaluator's guard.

Standard library only, and torch passed in: the validator runs its harness as source inside a sandbox without this
project on the path, so `pipeline.inlining` pastes the marked part into that source in place of its import line.

The rule: a watched name is patched when it is bound to another object than at the snapshot, unless the new object's
code lives in torch's own package. Importing parts of torch (dynamo, as `transformers` does) wraps e.g.
`torch.manual_seed` with such a function. A candidate's replacement is compiled from its own file (or
"<candidate>"), and a builtin has no Python code at all; `functools.wraps` copies `__module__` and `__wrapped__`
but not the code's file name, so it does not pass. Forging a code object's file name takes exec/compile or writing
`__code__`, which both static checkers reject.
"""

# ---- inlined: from here
import os
from typing import Any


def watched(torch: Any, funcs: tuple, classes: tuple) -> dict:
    """name -> object for `torch.<f>` of each f in `funcs` and every callable attribute defined by each class in
    `classes` (pairs of label and class, e.g. ("torch.Tensor", torch.Tensor))."""
    out = {f"torch.{k}": getattr(torch, k, None) for k in funcs}
    for label, cls in classes:
        out.update({f"{label}.{k}": v for k, v in vars(cls).items() if callable(v)})
    return out


def from_torch(obj: Any, torch: Any) -> bool:
    """True when `obj` is a Python function whose code was compiled from a file inside torch's package."""
    code = getattr(obj, "__code__", None)
    if code is None:
        return False
    home = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return os.path.abspath(code.co_filename).startswith(home)


def replaced(torch: Any, before: dict, now: dict) -> list:
    """Names bound to other objects in `now` than in `before`, and names new in `now` (e.g. `Tensor.__le__`
    defined over the C base class), except torch's own wrappers."""
    out = [k for k, v in before.items() if now.get(k) is not v and not from_torch(now.get(k), torch)]
    out += [k for k, v in now.items() if k not in before and not from_torch(v, torch)]
    return sorted(out)


# ---- inlined: to here
