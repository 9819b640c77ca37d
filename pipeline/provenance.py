"""What a run records about itself so that its outputs can be audited: the exact code version, the command line,
and checksums of what a stage read."""

from __future__ import annotations

import functools
import hashlib
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def version() -> str:
    """The package version with the commit: `0.1.0 (git v0.1-12-gabc1234-dirty)` in a checkout, the package
    version alone in an installed copy without git."""
    import pipeline

    v = pipeline.__version__
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return v
    described = out.stdout.strip() if out.returncode == 0 else ""
    return f"{v} (git {described})" if described else v


def command_line(argv: list[str] | None = None) -> str:
    """This process's command line, as a shell would take it back, with secrets redacted (`--set
    rollout.api_key=...`, `--set=rollout.api_key=...`, `--token ...`, `--token=...`): it is stored in the catalog."""
    from pipeline.credentials import REDACTED, is_secret_key, redact_override

    args = list(sys.argv if argv is None else argv) or ["python"]
    out = [Path(args[0]).name]
    hide_next = False
    for a in args[1:]:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        flag, eq, rest = a.partition("=")
        if eq and flag.startswith("-") and not is_secret_key(flag):  # --set=KEY=VALUE
            out.append(f"{flag}={redact_override(rest)}")
        elif eq:  # KEY=VALUE, --token=VALUE
            out.append(redact_override(a))
        else:
            out.append(a)
            hide_next = a.startswith("-") and is_secret_key(a)
    return shlex.join(out)[:2000]


def checksum(pairs: Iterable[tuple[str, str]]) -> str:
    """sha256 over (id, text) pairs in id order: e.g. the candidates a decontamination judged."""
    h = hashlib.sha256()
    for i, text in sorted((str(i), t if isinstance(t, str) else repr(t)) for i, t in pairs):
        h.update(i.encode() + b"\0" + text.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()
