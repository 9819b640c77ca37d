"""The data card (README.md): the Hub's YAML header and a body rendered from the template in data_cards/."""

from __future__ import annotations

import datetime as _dt
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.curate.filters import TASK_REASONS, TRAJECTORY_REASONS, rules
from pipeline.curate.settings import CurateSettings

TEMPLATE = Path(__file__).with_name("dataset_card.md")  # package data (in a checkout: data_cards/dataset_card.md)
WHAT = {
    "warmup": "single-turn prompts, one per clean task (verl RL format)",
    "sft": "agent trajectories kept by rejection sampling (TRL conversational format with tools)",
    "critic": "one row per assistant turn with returns and GAE targets (critic pretraining)",
    "rejection_sampled": "single-turn answers to the warm-up prompts kept by reward, k sampled per task (TRL "
    "prompt-completion format)",
}


@dataclass
class CardContext:
    """What the card says beyond the curation summary. Every field is optional."""

    repo_id: str = "ORG/NAME"
    revision: str | None = None
    pretty_name: str = "opforge CUDA kernel agent datasets"
    license: str = "apache-2.0"
    tags: list[str] = field(
        default_factory=lambda: [
            "cuda",
            "gpu-kernels",
            "code",
            "agent",
            "tool-use",
            "reinforcement-learning",
            "synthetic",
        ]
    )
    pipeline_version: str | None = None
    gpus: list[str] = field(default_factory=list)
    kernelbench: str | None = None  # e.g. "sha256:<fingerprint> (270 problems)"
    extra_run_ids: list[str] = field(default_factory=list)
    # From the catalog (pipeline.publish.lineage.card_provenance): runs, drop funnel, reference pin, unchecked.
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: "CardContext | dict[str, Any] | None") -> "CardContext":
        if value is None:
            return cls()
        if isinstance(value, CardContext):
            return value
        known = {k: v for k, v in value.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def pipeline_version() -> str:
    """The version with its commit (git describe) when running from a checkout, else the package version."""
    from pipeline.provenance import version

    return version()


def _unchecked(summary: dict[str, Any]) -> list[str]:
    """What the curation summary says was not checked (when the catalog's provenance is not at hand)."""
    n = summary.get("runtime_window_unchecked") or 0
    return (
        [
            f"{n} valid tasks were validated without a GPU: small shapes, and the 1-100 ms eager runtime window was "
            "never checked"
        ]
        if n
        else []
    )


def _created() -> _dt.datetime:
    """Now, or $SOURCE_DATE_EPOCH (the reproducible-builds convention), so that a rerun can give identical bytes."""
    import os

    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit():
        return _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc)
    return _dt.datetime.now(_dt.timezone.utc)


def schema_docs(names: list[str]) -> list[dict[str, Any]]:
    from schemas import get_schema, schema_version

    out = []
    for n in names:
        s = get_schema(n)
        out.append(
            {
                "name": n,
                "version": schema_version(n),
                "doc": s.metadata[b"opforge.doc"].decode(),
                "fields": [
                    {
                        "name": f.name,
                        "type": str(f.type).replace("|", "/"),
                        "nullable": f.nullable,
                        "doc": (f.metadata or {}).get(b"doc", b"").decode().replace("|", "/"),
                    }
                    for f in s
                ],
            }
        )
    return out


def _fmt_list(xs: list[str]) -> str:
    return ", ".join(f"`{x}`" for x in xs) if xs else "none"


def render_card(
    summary: dict[str, Any],
    run_id: str,
    configs: list[dict[str, Any]],
    total_rows: int,
    ctx: CardContext,
    plot: str | None,
    template: Path | None = None,
) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    from pipeline.publish.layout import size_category

    settings = CurateSettings.model_validate(summary.get("settings") or {})
    rule = rules(settings)
    present = [c["config_name"] for c in configs]
    datasets = []
    for name in present:
        counts = (summary.get("counts") or {}).get(name, {})
        datasets.append(
            {
                "name": name,
                "what": WHAT[name],
                "rows": sum(counts.values()),
                "splits": ", ".join(f"{k} {v}" for k, v in counts.items()),
            }
        )
    filters = []
    for name in ("warmup", "sft", "critic"):
        rows = (summary.get("filters") or {}).get(name)
        if not rows or (name != "warmup" and not summary.get("inputs", {}).get("trajectories")):
            continue
        if name == "critic" and settings.critic_source == "sft":
            continue  # the same trajectories as sft, so the same drops: the template says so
        order = [r for r in TASK_REASONS if r != "unknown_task"] if name == "warmup" else TRAJECTORY_REASONS
        by = {r["reason"]: r for r in rows}
        filters.append(
            {
                "name": name,
                "rows": [
                    {
                        "reason": r,
                        "rule": rule.get(r, ""),
                        "dropped": by.get(r, {}).get("dropped", 0),
                        "failing": by.get(r, {}).get("failing", 0),
                    }
                    for r in order
                ],
            }
        )
    sp = summary.get("speedups_vs_compile") or {}
    med = lambda xs: f"{statistics.median(xs):.2f}x" if xs else "n/a"  # noqa: E731
    prov = summary.get("provenance") or {}
    con = summary.get("contamination") or {}
    pv = ctx.provenance or {}
    kb = (
        pv.get("reference")
        or ctx.kernelbench
        or (", ".join(f"fingerprint `{f}`" for f in con.get("reference_fingerprints", [])) or "not recorded")
    )
    decision_runs = sorted(set(con.get("decision_runs", [])) | set(pv.get("decision_runs", [])))
    made_by = sorted({r["pipeline_version"] for r in pv.get("runs", []) if r.get("pipeline_version")})
    card_data = DatasetCardData(
        license=ctx.license,
        task_categories=["text-generation"],
        size_categories=[size_category(total_rows)],
        pretty_name=ctx.pretty_name,
        tags=list(ctx.tags),
        configs=configs,
        language=["en"],
    )
    tpl = Path(template) if template else TEMPLATE
    card = DatasetCard.from_template(
        card_data,
        template_path=str(tpl),
        datasets=datasets,
        skipped=summary.get("skipped") or [],
        repo_id=ctx.repo_id,
        revision=ctx.revision,
        pipeline_version=ctx.pipeline_version or pipeline_version(),
        run_id=run_id,
        run_versions=", ".join(made_by) or "not recorded",
        funnel=pv.get("funnel", []),
        unchecked=pv.get("unchecked") or _unchecked(summary),
        run_status=", ".join(
            f"{r['status']}" if r["status"] != "running" else "publishing is its last stage"
            for r in pv.get("runs", [])
        )
        or "not in the catalog",
        task_runs=_fmt_list(prov.get("task_runs", [])),
        rollout_runs=_fmt_list(prov.get("rollout_runs", [])),
        decision_runs=_fmt_list(decision_runs),
        models=_fmt_list(prov.get("models", [])),
        gpus=", ".join(ctx.gpus or prov.get("gpus") or []) or "none recorded (no GPU stage in this run)",
        kernelbench=kb,
        created=_created().strftime("%Y-%m-%d %H:%M UTC"),
        inputs=summary.get("inputs") or {},
        filters=filters,
        contamination=con,
        require_decontamination=settings.require_decontamination,
        plot=plot,
        speedup={
            "n_all": len(sp.get("all", [])),
            "n_kept": len(sp.get("kept", [])),
            "median_all": med(sp.get("all", [])),
            "median_kept": med(sp.get("kept", [])),
        },
        min_speedup=settings.min_speedup_vs_compile,
        critic_source=settings.critic_source,
        turn_reward=settings.turn_reward,
        gamma=settings.gamma,
        lam=settings.gae_lambda,
        schemas=schema_docs(present),
        license=ctx.license,
    )
    return str(card)
