"""`opforge publish` (local Hub-layout folder, then the Hub) and `opforge lineage ROW_ID`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def latest_curation_run(cat) -> str | None:
    t = cat.sql("SELECT run_id FROM stages WHERE stage = 'curate' AND status = 'completed' "
                "ORDER BY finished_at DESC LIMIT 1")
    return t.column("run_id")[0].as_py() if t.num_rows else None


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

    @app.command("publish")
    def publish_cmd(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        run_id: Optional[str] = typer.Option(None, "--run-id", help="Curation run to publish (default: the latest)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Local folder (default <data_root>/published/<run>)."),
        repo: Optional[str] = typer.Option(None, "--repo", help="Hub dataset repo org/name (default publish.repo_id "
                                                                "or publish.repo_prefix); none: local folder only."),
        tag: Optional[str] = typer.Option(None, "--tag", help="Release tag (default: the curation run id)."),
        public: bool = typer.Option(False, "--public", help="Create the Hub repo public (default private)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Write the local folder, print the Hub plan, upload "
                                                              "nothing."),
    ) -> None:
        """Write the curated datasets as a Hub-layout folder with a data card, then (with a repo) upload it to the
        Hugging Face Hub in one commit and tag it. The token comes from HF_TOKEN; HF_ENDPOINT picks the Hub."""
        from pipeline.catalog import Catalog
        from pipeline.curate.stage import load_result
        from pipeline.publish.hub import ReleaseConflict
        from pipeline.publish.stage import publish_hub, publish_local

        cfg = load_cli_config(config, set_)
        ps = cfg.publish
        cat = Catalog(cfg.catalog_path, cfg.data_root)
        try:
            run = cat.resolve_run_id(run_id) if run_id else latest_curation_run(cat)
        except ValueError as e:  # --run-id latest without a completed run
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        if not run:
            console.print("[red]no curation run found:[/red] run `opforge curate` first")
            raise typer.Exit(1)
        result = load_result(cfg.data_root, run)
        repo_id = repo or ps.repo_id or ps.repo_prefix
        folder = out or (Path(ps.out_dir) if ps.out_dir else cfg.data_root / "published" / run)
        from pipeline.publish.lineage import card_provenance

        ctx = {"repo_id": repo_id or "ORG/NAME", "revision": tag or run, "license": ps.license,
               "pretty_name": ps.pretty_name, "tags": ps.tags, "provenance": card_provenance(cat, run)}
        try:  # the KernelBench version the card names; publishing does not depend on it
            from pipeline.kernelbench import fingerprint, load_reference, resolve_source

            ref = load_reference(resolve_source(cfg.kernelbench))
            ctx["kernelbench"] = f"sha256:{fingerprint(ref)} ({len(ref)} problems)"
        except Exception:  # not found: the card falls back to the fingerprints the decisions recorded
            pass
        path = publish_local(result, folder, ctx, max_shard_rows=ps.max_shard_rows)
        console.print(f"local release: {path}  (datasets.load_dataset({str(path)!r}, 'warmup'))")
        if not repo_id:
            console.print("no Hub repo configured (--repo or publish.repo_id): local folder only")
            return
        try:
            report = publish_hub(path, repo_id, private=ps.private and not public, tag=tag or run,
                                 dry_run=dry_run or ps.dry_run)
        except (PermissionError, ReleaseConflict) as e:
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        typer.echo(report.plan())
        if not report.dry_run:
            cat.record_release(run, repo_id, report.tag or "", report.commit_oid or "", report.endpoint,
                               len(report.files))
            cat.record_stage(run, "publish", rows_in=sum(result.summary.get("rows", {}).values()),
                             rows_out=len(report.files), detail=json.dumps({"repo_id": repo_id, "tag": report.tag,
                                                                             "commit": report.commit_oid}))

    @app.command("lineage")
    def lineage_cmd(
        row_id: str = typer.Argument(..., help="A published row's row_id, e.g. sft:<traj_id> or warmup:<task_id>."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        fmt: str = typer.Option("text", "--format", help="text | json"),
    ) -> None:
        """Which trajectory, task, seed operators, contamination decision and runs produced a published row."""
        from pipeline.catalog import Catalog
        from pipeline.publish.lineage import lineage

        cfg = load_cli_config(config, set_)
        try:
            info = lineage(Catalog(cfg.catalog_path, cfg.data_root), row_id)
        except KeyError as e:
            console.print(f"[red]{e.args[0]}[/red]")
            raise typer.Exit(1) from None
        if fmt == "json":
            typer.echo(json.dumps(info, default=str, indent=1))
            return
        r, tr, task = info["row"], info["trajectory"], info["task"]
        console.print(f"[bold]{r['row_id']}[/bold] in {r['dataset']} (curation run {r['run_id']})")
        if tr:
            console.print(f"  trajectory {tr['traj_id']}: model {tr['model']}, sample {tr['sample_idx']}, seed "
                          f"{tr['seed']}, reward {tr['final_reward']}, rollout run {tr['run_id']}, contamination "
                          f"at rollout {tr['contaminated_at_rollout']} (run {tr['contamination_run_id']})")
        if task:
            console.print(f"  task {task['task_id']}: {task['data_source']}, composer {task['composer']} seed "
                          f"{task['seed']}, run {task['run_id']}")
        console.print(f"  seed operators: {', '.join(o['name'] for o in info['seed_operators']) or 'none recorded'}")
        for v in info["validation"]:
            console.print(f"  validation (run {v.get('run_id')}): valid={v.get('valid')} {v.get('reason') or ''}")
        for c in info["contamination"]:
            console.print(f"  contamination (run {c.get('run_id')}): contaminated={c.get('contaminated')} nearest "
                          f"{c.get('nearest_ref')} score {c.get('score')} {c.get('reason') or ''}")
        for run in info["runs"]:
            console.print(f"  run {run['run_id']}: {run['status']} (opforge {run['pipeline_version']})")
