"""The one typed configuration: defaults embedded, a YAML file on top, `--set a.b=c` overrides on top of that."""

from __future__ import annotations

import datetime as _dt
import difflib
import os
import re
import secrets
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, SecretStr, ValidationError

from pipeline.credentials import ENV_PREFIX, is_secret_key, redact_override
from pipeline.curate.settings import CurateSettings
from pipeline.decontam.settings import DecontamSettings
from pipeline.evaluate.settings import EvalSettings
from pipeline.publish.settings import PublishSettings
from pipeline.rollout.settings import RolloutSettings
from pipeline.synth.settings import SynthSettings
from pipeline.validate.settings import ValidateSettings


class RaySettings(BaseModel):
    address: str | None = Field(None, description="Ray cluster address; None starts a local Ray in-process.")
    num_cpus: int | None = Field(None, description="CPUs for a local Ray (None: all of this machine's).")
    object_store_mb: int = Field(1024, description="Object store size for a local Ray.")


class SandboxSettings(BaseModel):
    mode: Literal["jail", "unsafe"] = Field(
        "jail",
        description="jail: untrusted code runs only inside the jail (docs/jail.md), else not at all; "
        "unsafe: development opt-out, unconfined, logged loudly and recorded in every row; "
        "`opforge publish` refuses such tasks unless publish.allow_unsafe.",
    )


class PrefectSettings(BaseModel):
    api_url: str | None = Field(None, description="Prefect API; None runs flows against a temporary local server.")


class OpforgeConfig(BaseModel):
    data_root: Path = Field(Path("./opforge-data"), description="Every path the pipeline writes lies under it.")
    run_id: str | None = Field(None, description="Set per run; generated when absent.")
    kernelbench: str | None = Field(None, description="KernelBench source: dir, parquet or HF id; None: auto.")
    device: str = Field("auto", description="auto | cpu | cuda")
    ray: RaySettings = Field(default_factory=RaySettings)
    prefect: PrefectSettings = Field(default_factory=PrefectSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    synth: SynthSettings = Field(default_factory=SynthSettings)
    validate_: ValidateSettings = Field(default_factory=ValidateSettings, alias="validate")
    decontam: DecontamSettings = Field(default_factory=DecontamSettings)
    rollout: RolloutSettings = Field(default_factory=RolloutSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)
    curate: CurateSettings = Field(default_factory=CurateSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)

    model_config = {"populate_by_name": True, "extra": "forbid"}

    @property
    def catalog_path(self) -> Path:
        return self.data_root / "catalog.duckdb"

    def with_run_id(self) -> "OpforgeConfig":
        """A copy that carries a run id (kept if already set)."""
        if self.run_id:
            return self
        return self.model_copy(update={"run_id": new_run_id()})

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def new_run_id() -> str:
    """Sortable and unique: UTC time plus 6 random hex digits."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


class ConfigError(ValueError):
    """A configuration that cannot be used: unknown keys (with the nearest known name), YAML syntax errors with
    file, line and column, values of the wrong type. The CLI prints it and exits with status 2."""


def _parse_value(raw: str) -> Any:
    # YAML scalars: numbers, booleans, null, lists like [1, 2]; anything else stays a string.
    return yaml.safe_load(raw)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides to a nested dict (values parsed as YAML). Unknown keys are an error."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {redact_override(item)!r} is not KEY=VALUE (e.g. synth.n=50)")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        problems = unknown_keys(_nest(parts, None), OpforgeConfig)
        if problems:
            raise ConfigError(f"--set {redact_override(item)}: " + "; ".join(problems))
        node = data
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {redact_override(item)!r}: {p!r} is not a section")
        node[parts[-1]] = _parse_value(raw)
    return data


def _nest(parts: list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for p in reversed(parts):
        out = {p: out}
    return out


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds (through Optional), or None for a plain value or a free-form dict."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [m for m in map(_section_model, typing.get_args(annotation)) if m]
        return models[0] if len(models) == 1 else None
    return None


def unknown_keys(data: Any, model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key of `data` (nested) that `model` does not define, each with the nearest known name if any."""
    if not isinstance(data, dict):
        return []
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    fields.update(
        {name: f for name, f in model.model_fields.items()} if model.model_config.get("populate_by_name") else {}
    )
    out = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        f = fields.get(key) if isinstance(key, str) else None
        if f is None:
            near = difflib.get_close_matches(str(key), [k for k in fields if not k.endswith("_")], n=1, cutoff=0.6)
            out.append(
                f"unknown key {path!r}"
                + (
                    f"; did you mean {prefix + near[0]!r}?"
                    if near
                    else f" (known in {prefix.rstrip('.') or 'the top level'}: "
                    f"{', '.join(sorted(k for k in fields if not k.endswith('_')))})"
                )
            )
            continue
        sub = _section_model(f.annotation)
        if sub is not None:
            out += unknown_keys(value, sub, path + ".")
    return out


def _yaml_error(path: Path, e: yaml.YAMLError) -> ConfigError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    what = " ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
    return ConfigError(f"{where}: invalid YAML: {what}")


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """A config file's mapping; a missing file, YAML syntax errors and non-mappings are ConfigErrors."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"{p}: cannot read the config file ({e.strerror or e})") from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _yaml_error(p, e) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"{p}: the config file must hold a mapping of sections (synth:, decontam:, ...), "
            f"not a {type(loaded).__name__}"
        )
    problems = unknown_keys(loaded, OpforgeConfig)
    if problems:
        raise ConfigError(f"{p}: " + "; ".join(problems))
    return loaded


def _shown_input(err: dict[str, Any]) -> str:
    # the value that failed validation, unless it is a secret (a reference `env:NAME` is shown: it is no secret)
    value = err.get("input")
    secret = bool(err["loc"]) and is_secret_key(str(err["loc"][-1]))
    return "<redacted>" if secret and not str(value).startswith(ENV_PREFIX) else repr(value)


def load_config(
    path: str | os.PathLike | None = None, overrides: list[str] | None = None, *, resolve_secrets: bool = True
) -> OpforgeConfig:
    """Embedded defaults, then the YAML file (if any), then overrides. Unknown keys, at any depth, are an error.

    Secret references (`api_key: env:NAME`) are read from the environment here; `resolve_secrets=False` keeps
    them as written (for a caller that needs the rest of the config where the variable may be unset)."""
    data: dict[str, Any] = read_config_file(path) if path is not None else {}
    data = apply_overrides(data, overrides or [])
    try:
        cfg = OpforgeConfig.model_validate(data, context={"resolve_secrets": resolve_secrets})
    except ValidationError as e:
        where = f"{path}: " if path is not None else ""
        lines = [
            f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']} (got {_shown_input(err)})" for err in e.errors()
        ]
        raise ConfigError(where + "; ".join(lines)) from None
    if cfg.sandbox.mode == "unsafe":
        # The jail reads its mode from the environment, which Ray workers inherit (pipeline.executor).
        from pipeline.sandbox import MODE_ENV, _warn_unsafe

        os.environ[MODE_ENV] = "unsafe"
        _warn_unsafe()
    return cfg


EXAMPLE_HEADER = """\
# opforge configuration: every key, with its embedded default and what it does.
# Every key is optional: copy only what you change. Unknown keys are an error (with the nearest known name).
# Use it with `opforge run --config FILE`; override single keys with `--set synth.n=500`;
# `opforge config show --config FILE` prints the effective configuration.
# Generated from the settings models by `opforge config example` (tests check it is current).

"""


def _comment(text: str, indent: str) -> list[str]:
    import textwrap

    return [f"{indent}# {line}" for line in textwrap.wrap(" ".join(text.split()), 116 - len(indent))]


def _yaml_value(key: str, value: Any, indent: str) -> str:
    text = yaml.safe_dump({key: value}, default_flow_style=True, sort_keys=False, width=10**6).strip()
    return indent + text[1:-1]  # flow style wraps the mapping in braces


def _example_lines(model: type[BaseModel], values: dict[str, Any], depth: int) -> list[str]:
    indent = "  " * depth
    lines: list[str] = []
    for name, f in model.model_fields.items():
        key = f.alias or name
        sub = _section_model(f.annotation)
        if sub is not None and isinstance(values.get(key), dict):
            doc = re.sub(r"\s*\(issue \d+\)", "", f.description or (sub.__doc__ or "").strip().split("\n\n")[0])
            lines += ([""] if depth == 0 else []) + _comment(doc, indent) + [f"{indent}{key}:"]
            lines += _example_lines(sub, values[key], depth + 1)
            continue
        if f.description:
            lines += _comment(f.description, indent)
        lines.append(_yaml_value(key, values.get(key), indent))
    return lines


def _plain(v: Any) -> Any:
    # YAML-safe values that keep their types (dict keys stay ints, unlike a JSON dump); a secret shows as "***"
    # unless it is a placeholder (the default "EMPTY")
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, SecretStr):
        return v.get_secret_value() if v.get_secret_value() in ("", "EMPTY") else "***"
    return str(v) if isinstance(v, Path) else v


def example_yaml() -> str:
    """The complete example configuration (every key, its default, its description), from the models."""
    values = _plain(OpforgeConfig().model_dump(by_alias=True))
    return EXAMPLE_HEADER + "\n".join(_example_lines(OpforgeConfig, values, 0)) + "\n"


def _masked(v: Any) -> Any:
    # `config show` output ends up in logs and bug reports: every secret key masked, whatever its type
    if isinstance(v, dict):
        return {k: ("***" if is_secret_key(k) and x not in (None, "", "EMPTY") else _masked(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [_masked(x) for x in v]
    return v


def show_yaml(cfg: OpforgeConfig) -> str:
    """The effective configuration as YAML (what a run would use), secrets masked."""
    return yaml.safe_dump(_masked(_plain(cfg.model_dump(by_alias=True))), sort_keys=False, width=119)
