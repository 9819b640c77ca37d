"""Project modules pasted into source that runs without this project on its path (the validation harness runs as
source in the jail): each such module marks the part to paste, and `inline` puts it in place of the import line."""

from __future__ import annotations

import importlib
from pathlib import Path

FROM, TO = "# ---- inlined: from here", "# ---- inlined: to here"


def inline(source: str, *modules: str) -> str:
    """`source` with the one `from <module> import ...` line of each of `modules` replaced by its marked part."""
    for name in modules:
        lines = [ln for ln in source.splitlines(keepends=True) if ln.startswith(f"from {name} import ")]
        if len(lines) != 1:
            raise ValueError(f"source must import {name} on exactly one line")
        text = Path(importlib.import_module(name).__file__).read_text()
        source = source.replace(lines[0], text[text.index(FROM) : text.index(TO)], 1)
    return source
