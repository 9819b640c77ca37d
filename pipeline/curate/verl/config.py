"""The packaged verl config as Hydra overrides, with a release's warm-up files and the reward path filled in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG = Path(__file__).with_name("ppo_warmup.yaml")
REWARD = Path(__file__).with_name("reward.py")


def load_config(path: str | Path = CONFIG) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(Path(path).read_text())


def _flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out += _flatten(v, key + ".")
        else:
            out.append((key, v))
    return out


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":")).replace('"', "'")
    return str(v)


def verl_overrides(
    release: str | Path | None = None, config: str | Path = CONFIG, extra: dict[str, Any] | None = None
) -> list[str]:
    """`key=value` overrides for `python -m verl.trainer.main_ppo`. With `release` (a published folder in the
    Hub layout), train/val files are its warm-up shards; the reward path is always this package's file."""
    cfg = load_config(config)
    cfg["custom_reward_function"]["path"] = str(REWARD.resolve())
    if release is not None:
        root = Path(release)
        for key, split in (("train_files", "train"), ("val_files", "validation")):
            files = sorted(str(p.resolve()) for p in (root / "data" / "warmup").glob(f"{split}-*.parquet"))
            cfg["data"][key] = files
    pairs = _flatten(cfg)
    pairs += list((extra or {}).items())
    return [f"{k}={_value(v)}" for k, v in pairs]
