"""`publish_local`: a curation result as a folder in the Hub's layout (`datasets.load_dataset(folder)` works);
`publish_hub`: that folder to the Hugging Face Hub in one tagged commit."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from pipeline.curate.stage import DATASETS, CurationResult
from pipeline.publish.card import CardContext, render_card
from pipeline.publish.hub import PublishReport, publish_hub
from pipeline.publish.layout import configs_yaml, write_config
from pipeline.publish.plot import speedup_plot

__all__ = ["publish_local", "publish_hub", "PublishReport"]
PLOT = "assets/speedup_vs_compile.png"


def publish_local(
    result: CurationResult,
    out_dir: Path | str,
    card_context: CardContext | dict[str, Any] | None = None,
    max_shard_rows: int = 50_000,
) -> Path:
    """Write data/<config>/<split>-NNNNN-of-NNNNN.parquet for each non-empty dataset, the speedup plot, the card
    and the curation summary. The folder is built beside `out_dir` and swapped in at the end, so a failed write
    never leaves a half-made release behind."""
    out = Path(out_dir)
    ctx = CardContext.of(card_context)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(3)}"
    tmp.mkdir(parents=True)
    try:
        data_files: dict[str, list[dict[str, str]]] = {}
        for name in DATASETS:
            tbl = getattr(result, name)
            if tbl.num_rows:
                data_files[name] = write_config(name, tbl, tmp, max_shard_rows)
        default = next(iter(data_files), None)
        configs = configs_yaml(data_files, default) if default else []
        sp = result.summary.get("speedups_vs_compile") or {}
        threshold = (result.summary.get("settings") or {}).get("min_speedup_vs_compile", 1.05)
        plot = speedup_plot(sp.get("all", []), sp.get("kept", []), threshold, tmp / PLOT)
        total = sum(getattr(result, n).num_rows for n in data_files)
        card = render_card(result.summary, result.run_id, configs, total, ctx, PLOT if plot else None)
        (tmp / "README.md").write_text(card)
        (tmp / "assets").mkdir(exist_ok=True)
        (tmp / "assets" / "curation_summary.json").write_text(
            json.dumps({"run_id": result.run_id, **result.summary}, indent=1, sort_keys=True, default=str)
        )
        if out.exists():
            old = out.parent / f".{out.name}.old-{secrets.token_hex(3)}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out
