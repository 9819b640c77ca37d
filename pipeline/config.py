"""The one typed configuration: defaults embedded, a YAML file on top, `--set a.b=c` overrides on top of that."""

from __future__ import annotations

import datetime as _dt
import os
import secrets
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

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


class PrefectSettings(BaseModel):
    api_url: str | None = Field(None, description="Prefect API; None runs flows against a temporary local server.")


class OpforgeConfig(BaseModel):
    data_root: Path = Field(Path("./opforge-data"), description="Every path the pipeline writes lies under it.")
    run_id: str | None = Field(None, description="Set per run; generated when absent.")
    kernelbench: str | None = Field(None, description="KernelBench source: dir, parquet or HF id; None: auto.")
    device: str = Field("auto", description="auto | cpu | cuda")
    ray: RaySettings = Field(default_factory=RaySettings)
    prefect: PrefectSettings = Field(default_factory=PrefectSettings)
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


def _parse_value(raw: str) -> Any:
    # YAML scalars: numbers, booleans, null, lists like [1, 2]; anything else stays a string.
    return yaml.safe_load(raw)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply `a.b.c=value` overrides to a nested dict (values parsed as YAML)."""
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not KEY=VALUE (e.g. synth.n=50)")
        key, raw = item.split("=", 1)
        parts = key.strip().split(".")
        node = data
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"override {item!r}: {p!r} is not a section")
        node[parts[-1]] = _parse_value(raw)
    return data


def load_config(path: str | os.PathLike | None = None, overrides: list[str] | None = None) -> OpforgeConfig:
    """Embedded defaults, then the YAML file (if any), then overrides. Unknown keys are an error."""
    data: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: the config file must hold a mapping")
        data = loaded
    data = apply_overrides(data, overrides or [])
    return OpforgeConfig.model_validate(data)
