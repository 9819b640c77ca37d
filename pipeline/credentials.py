"""Secrets (LLM API keys, tokens): recognised by their key, given by reference, never stored.

- A key is a secret when its last word is `api_key`, `token`, `secret`, `password`, `authorization`,
  `credential(s)`, `access_key`, `private_key` (`rollout.api_key`, `HF_TOKEN`, `--hf-token`; not `max_tokens`).
  Its value is redacted wherever a config, an override or a command line is recorded (`redact`).
- A secret's value may be a reference, `env:NAME`: the environment variable NAME, read when the config is loaded,
  in the process that uses it. Config files and flow parameters then carry the name, never the value.
- In a loaded config a secret is a pydantic `SecretStr` (`Secret`): every dump of it (catalog, shard keys,
  reports, reprs, logs) shows `**********`; only the code that sends it calls `get_secret_value()`.
- `hide_overrides` turns a literal secret in `--set key=value` into such a reference, moving the value into this
  process's environment, before the overrides become Prefect flow parameters or deployment defaults (Prefect
  stores both in its database). Flow runs of this process, and the ones `opforge serve` starts (subprocesses),
  inherit the environment.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, MutableMapping

from pydantic import BeforeValidator, SecretStr, ValidationInfo

_SECRET_KEY = re.compile(
    r"(?:^|[^a-z0-9])(?:api_?key|token|secret|password|passwd|authorization|credentials?|"
    r"(?:access|private|secret)_?key)$",
    re.I,
)
REDACTED = "<redacted>"
ENV_PREFIX = "env:"
ENV_VAR_PREFIX = "OPFORGE_SECRET_"  # holds a `--set` secret for this process's flow runs (the jail drops it)


def is_secret_key(key: str) -> bool:
    """True for a (dotted) key or a command-line flag whose value is a secret."""
    return bool(_SECRET_KEY.search(str(key).strip()))


def redact(value: Any) -> Any:
    """A copy of a config (dicts, lists) with the value of every secret key replaced by "<redacted>"."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if is_secret_key(k) and v not in (None, "", [], {}) else redact(v)) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


def redact_override(item: str) -> str:
    """`rollout.api_key=sk-...` -> `rollout.api_key=<redacted>` (a reference `env:NAME` is kept: it is no secret)."""
    key, eq, raw = str(item).partition("=")
    if eq and is_secret_key(key) and not raw.startswith(ENV_PREFIX):
        return f"{key}={REDACTED}"
    return item


def resolve(value: Any) -> Any:
    """The value of a reference `env:NAME` (a ValueError naming NAME when it is not set); anything else as is."""
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX) :].strip()
        if not name or name not in os.environ:
            raise ValueError(f"the secret reference {value!r} names an environment variable that is not set")
        return os.environ[name]
    return value


def _resolve_field(value: Any, info: ValidationInfo) -> Any:
    # A flow's crash hook loads the config only for its data root: it may run where the variable is not set.
    if isinstance(info.context, dict) and info.context.get("resolve_secrets") is False:
        return value
    return resolve(value)


# The type of every secret field of the settings: a SecretStr whose value may be given as `env:NAME`.
Secret = Annotated[SecretStr, BeforeValidator(_resolve_field)]


def reveal(value: Any) -> Any:
    """The plain value of a SecretStr (for the one call that sends it), anything else unchanged."""
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _env_name(key: str, value: str, environ: MutableMapping[str, str]) -> str:
    base = ENV_VAR_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", key.strip()).upper()
    name, n = base, 1
    while environ.get(name) not in (None, value):  # another value of the same key (another flow call) keeps its own
        n += 1
        name = f"{base}_{n}"
    return name


def hide_overrides(overrides: list[str] | None, environ: MutableMapping[str, str] | None = None) -> list[str] | None:
    """Overrides with every literal secret moved into `environ` (this process's environment by default) and
    replaced by a reference to it: `rollout.api_key=sk-...` -> `rollout.api_key=env:OPFORGE_SECRET_ROLLOUT_API_KEY`.
    Loading the returned overrides here (or in a child process) gives the same config."""
    if overrides is None:
        return None
    env = os.environ if environ is None else environ
    out = []
    for item in overrides:
        key, eq, raw = str(item).partition("=")
        if not eq or not is_secret_key(key) or raw.startswith(ENV_PREFIX) or raw.strip() == "":
            out.append(item)
            continue
        import yaml

        try:  # the value a plain override would give (YAML scalar: quotes removed); a secret is text
            parsed = yaml.safe_load(raw)
        except yaml.YAMLError:
            parsed = raw
        text = parsed if isinstance(parsed, str) else raw
        name = _env_name(key, text, env)
        env[name] = text
        out.append(f"{key}={ENV_PREFIX}{name}")
    return out
