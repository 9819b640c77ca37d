"""The publish stage: the curated datasets and their data card as a Hub-layout folder, then the Hub when
configured. One step over whole tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.stage import Outcome, Skip, Stage

STAGE = Stage(
    name="publish",
    inputs=("warmup", "sft", "critic", "rejection_sampled", "curation_drops"),
    outputs=("warmup", "sft", "critic"),
    settings="publish",
    fn="pipeline.publish.spec:run",
    command="publish",
    flow="publish_flow",
    docs="publish",
    doc="Write the curated datasets and their data card to a Hub-layout folder (and the Hub when configured).",
)


def card_context(cfg: Any, catalog: Any, repo_id: str | None, revision: str) -> dict[str, Any]:
    """What the data card says about this release: repo, revision, license, provenance, the KernelBench pin."""
    from pipeline.publish.lineage import card_provenance

    ps = cfg.publish
    ctx = {
        "repo_id": repo_id or "ORG/NAME",
        "revision": revision,
        "license": ps.license,
        "pretty_name": ps.pretty_name,
        "tags": ps.tags,
        "provenance": card_provenance(catalog, cfg.run_id),
    }
    try:  # the KernelBench version the card names; publishing does not depend on it
        from pipeline.kernelbench import fingerprint, load_reference, resolve_source

        ref = load_reference(resolve_source(cfg.kernelbench))
        ctx["kernelbench"] = f"sha256:{fingerprint(ref)} ({len(ref)} problems)"
    except Exception:  # not found: the card falls back to the fingerprints the decisions recorded
        pass
    return ctx


def run(cfg: Any, catalog: Any) -> Outcome:
    from pipeline.curate.stage import load_result, summary_path
    from pipeline.publish.jail_check import unsafe_tasks
    from pipeline.publish.stage import publish_hub, publish_local

    if not summary_path(cfg.data_root, cfg.run_id).exists():
        raise Skip("nothing curated in this run (run curate first)")
    result = load_result(cfg.data_root, cfg.run_id)
    ps = cfg.publish
    unsafe = unsafe_tasks(cfg.data_root, result)
    if unsafe and not ps.allow_unsafe:
        raise ValueError(
            f"{len(unsafe)} task(s) of this release were validated outside the jail "
            f"(sandbox.mode=unsafe), e.g. {unsafe[0]}; refusing to publish "
            "(set publish.allow_unsafe=true to force)"
        )
    folder = Path(ps.out_dir) if ps.out_dir else Path(cfg.data_root) / "published" / cfg.run_id
    repo_id = ps.repo_id or ps.repo_prefix
    tag = ps.tag or cfg.run_id
    path = publish_local(result, folder, card_context(cfg, catalog, repo_id, tag), max_shard_rows=ps.max_shard_rows)
    rows_in = sum(result.summary.get("rows", {}).values())
    n_files = sum(1 for _ in Path(path).rglob("*.parquet"))
    detail = f"local Hub-layout folder {path}"
    release = None
    if repo_id:
        report = publish_hub(path, repo_id, private=ps.private, tag=tag, dry_run=ps.dry_run)
        detail += f"; Hub {repo_id}@{report.tag}" + (" (dry run)" if report.dry_run else "")
        if not report.dry_run:  # only a tagged commit is a release
            release = {
                "repo_id": repo_id,
                "tag": report.tag or "",
                "commit": report.commit_oid or "",
                "endpoint": report.endpoint,
                "files": len(report.files),
            }
        hub_plan = report.plan()
    else:
        detail += "; no Hub repo configured (publish.repo_id)"
        hub_plan = ""
    return Outcome(
        rows_in=rows_in,
        rows_out=rows_in,
        detail=detail,
        release=release,
        summary={
            "out_dir": str(path),
            "card": str(Path(path) / "README.md"),
            "parquet_files": n_files,
            "hub_plan": hub_plan,
        },
    )
