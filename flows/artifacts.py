"""Prefect artifacts per stage: a markdown summary, a table of drop reasons, and (decontamination) a summary of
what matched which KernelBench problem. Visible in the Prefect UI under the flow run."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pyarrow as pa


def _key(*parts: str) -> str:
    # Artifact keys: lowercase letters, digits and dashes only.
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")[:100]


def stage_summary_markdown(
    stage: str,
    run_id: str,
    rows_in: int,
    rows_out: int,
    reasons: dict[str, int],
    status: str = "completed",
    detail: str = "",
    shards: tuple[int, int] | None = None,
    seconds: float | None = None,
    paths: list[str] | None = None,
) -> str:
    lines = [f"# {stage}: {status}", "", f"- run: `{run_id}`", f"- rows in: **{rows_in}**, rows out: **{rows_out}**"]
    if shards:
        lines.append(f"- shards: {shards[0]} computed, {shards[1]} reused from an earlier attempt")
    if seconds is not None:
        lines.append(f"- time: {seconds:.1f} s")
    if detail:
        lines.append(f"- {detail}")
    if reasons:
        lines += ["", "| drop reason | rows |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in reasons.items()]
    if paths:
        lines += ["", "Files:", *[f"- `{p}`" for p in paths[:20]]]
        if len(paths) > 20:
            lines.append(f"- ... {len(paths) - 20} more")
    return "\n".join(lines)


def contamination_summary(tbl: pa.Table) -> list[dict[str, Any]]:
    """Counts per (reason, matched reference) for contaminated rows; the columns are looked up by name so the
    summary follows the contamination table's schema."""
    cols = set(tbl.column_names)
    ref_col = next((c for c in ("nearest_ref", "matched_ref_id", "ref_id") if c in cols), None)
    reason_col = "reason" if "reason" in cols else None
    if reason_col is None:
        return []
    refs = tbl.column(ref_col).to_pylist() if ref_col else [None] * tbl.num_rows
    from pipeline.selection import kept_mask

    reasons = tbl.column(reason_col).to_pylist()
    c = Counter((r or "unspecified", ref) for r, ref, kept in zip(reasons, refs, kept_mask(tbl)) if not kept)
    return [{"reason": r, "matched_ref_id": ref or "", "rows": n} for (r, ref), n in c.most_common(200)]


def publish_stage_artifacts(
    stage: str,
    run_id: str,
    rows_in: int,
    rows_out: int,
    reasons: dict[str, int],
    data: pa.Table | None = None,
    **kw: Any,
) -> None:
    """Create the artifacts inside the current flow run (no-op outside one)."""
    from prefect.artifacts import create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext

    if FlowRunContext.get() is None:
        return
    md = stage_summary_markdown(stage, run_id, rows_in, rows_out, reasons, **kw)
    create_markdown_artifact(md, key=_key(stage, "summary"), description=f"{stage} summary for run {run_id}")
    create_table_artifact(
        [{"reason": k, "rows": v} for k, v in reasons.items()] or [{"reason": "(none)", "rows": 0}],
        key=_key(stage, "drop-reasons"),
        description=f"{stage}: rows dropped, by reason code",
    )
    if stage == "decontaminate" and data is not None:
        rows = contamination_summary(data)
        create_table_artifact(
            rows or [{"reason": "(no contamination found)", "matched_ref_id": "", "rows": 0}],
            key=_key("contamination-summary"),
            description="Contaminated candidates by reason and matched KernelBench problem",
        )
