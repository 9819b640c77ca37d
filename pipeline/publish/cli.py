"""`opforge publish` (local Hub-layout folder, then the Hub) and `opforge lineage ROW_ID`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def latest_curation_run(cat) -> str | None:
    t = cat.sql(
        "SELECT run_id FROM stages WHERE stage = 'curate' AND status = 'completed' ORDER BY finished_at DESC LIMIT 1"
    )
    return t.column("run_id")[0].as_py() if t.num_rows else None


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

    @app.command("publish")
    def publish_cmd(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        run_id: Optional[str] = typer.Option(None, "--run-id", help="Curation run to publish (default: the latest)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Local folder (default <data_root>/published/<run>)."),
        repo: Optional[str] = typer.Option(
            None,
            "--repo",
            help="Hub dataset repo org/name (default publish.repo_id "
            "or publish.repo_prefix); none: local folder only.",
        ),
        tag: Optional[str] = typer.Option(None, "--tag", help="Release tag (default: the curation run id)."),
        public: bool = typer.Option(False, "--public", help="Create the Hub repo public (default private)."),
        dry_run: bool = typer.Option(
            False, "--dry-run", help="Write the local folder, print the Hub plan, upload nothing."
        ),
    ) -> None:
        """Write the curated datasets as a Hub-layout folder with a data card, then (with a repo) upload it to the
        Hugging Face Hub in one commit and tag it. The token comes from HF_TOKEN; HF_ENDPOINT picks the Hub."""
        from pipeline import registry, runner

        cfg = load_cli_config(config, set_)
        cat = runner.catalog(cfg)
        try:
            run = cat.resolve_run_id(run_id) if run_id else latest_curation_run(cat)
        except ValueError as e:  # --run-id latest without a completed run
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        if not run:
            console.print("[red]no curation run found:[/red] run `opforge curate` first")
            raise typer.Exit(1)
        ps = cfg.publish.model_copy(
            update={
                k: v
                for k, v in {
                    "out_dir": str(out) if out else None,
                    "repo_id": repo,
                    "tag": tag,
                    "dry_run": dry_run or None,
                    "private": False if public else None,
                }.items()
                if v is not None
            }
        )
        cfg = runner.load(config, set_, run).model_copy(update={"publish": ps})
        try:
            result = runner.run_steps(cfg, runner.steps([registry.get("publish")]), note="opforge publish")
        except RuntimeError as e:  # the run records the failure; the user gets one line
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        st = result["stages"][0]
        if st["status"] != "completed":
            console.print(f"[red]publish {st['status']}:[/red] {st.get('detail', '')}")
            raise typer.Exit(1)
        console.print(f"local release: {st['out_dir']}  (datasets.load_dataset({st['out_dir']!r}, 'warmup'))")
        if not st["hub_plan"]:
            console.print("no Hub repo configured (--repo or publish.repo_id): local folder only")
            return
        typer.echo(st["hub_plan"])

    @app.command("lineage")
    def lineage_cmd(
        row_id: str = typer.Argument(..., help="A published row's row_id, e.g. sft:<traj_id> or warmup:<task_id>."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        fmt: str = typer.Option("text", "--format", help="text | json"),
    ) -> None:
        """Which trajectory, task, seed operators, contamination decision and runs produced a published row."""
        from pipeline.publish.lineage import lineage
        from pipeline.runner import catalog

        cfg = load_cli_config(config, set_)
        try:
            info = lineage(catalog(cfg), row_id)
        except KeyError as e:
            console.print(f"[red]{e.args[0]}[/red]")
            raise typer.Exit(1) from None
        if fmt == "json":
            typer.echo(json.dumps(info, default=str, indent=1))
            return
        r, tr, task = info["row"], info["trajectory"], info["task"]
        console.print(f"[bold]{r['row_id']}[/bold] in {r['dataset']} (curation run {r['run_id']})")
        if tr:
            console.print(
                f"  trajectory {tr['traj_id']}: model {tr['model']}, sample {tr['sample_idx']}, seed "
                f"{tr['seed']}, reward {tr['final_reward']}, rollout run {tr['run_id']}, contamination "
                f"at rollout {tr['contaminated_at_rollout']} (run {tr['contamination_run_id']})"
            )
        if task:
            console.print(
                f"  task {task['task_id']}: {task['data_source']}, composer {task['composer']} seed "
                f"{task['seed']}, run {task['run_id']}"
            )
        console.print(f"  seed operators: {', '.join(o['name'] for o in info['seed_operators']) or 'none recorded'}")
        for v in info["validation"]:
            console.print(f"  validation (run {v.get('run_id')}): valid={v.get('valid')} {v.get('reason') or ''}")
        for c in info["contamination"]:
            console.print(
                f"  contamination (run {c.get('run_id')}): contaminated={c.get('contaminated')} nearest "
                f"{c.get('nearest_ref')} score {c.get('score')} {c.get('reason') or ''}"
            )
        for run in info["runs"]:
            console.print(f"  run {run['run_id']}: {run['status']} (opforge {run['pipeline_version']})")
