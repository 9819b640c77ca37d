"""`opforge curate`: build the warm-up, SFT and critic datasets from the catalog's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config, one_writer

    @app.command("curate")
    def curate_cmd(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        run_id: Optional[str] = typer.Option(
            None, "--run-id", help="Curation run id (default: config run_id or new)."
        ),
    ) -> None:
        """Filter trajectories and build the warm-up, SFT, critic and rejection-sampled datasets (tables warmup, sft,
        critic, rejection_sampled and curation_drops in the catalog) from the task pool of every run
        (curate.scope=run: this run only). With no trajectories, only the warm-up dataset is built."""
        from rich.table import Table

        from pipeline import registry, runner
        from pipeline.curate.stage import load_result

        cfg = load_cli_config(config, set_)
        cfg = runner.load(config, set_, run_id or cfg.run_id)
        run = cfg.run_id
        with one_writer():
            runner.run_steps(cfg, runner.steps([registry.get("curate")]), note="opforge curate")
        result = load_result(cfg.data_root, run)
        t = Table(title=f"curation run {run}")
        for col in ("dataset", "rows", "splits", "dropped"):
            t.add_column(col)
        drops: dict[str, int] = {}
        for d in result.drops.column("dataset").to_pylist():
            drops[d] = drops.get(d, 0) + 1
        for name in ("warmup", "sft", "critic", "rejection_sampled"):
            counts = result.summary["counts"][name]
            t.add_row(
                name,
                str(result.summary["rows"][name]),
                ", ".join(f"{k} {v}" for k, v in counts.items()),
                str(drops.get(name, 0)),
            )
        console.print(t)
        for note in result.summary["skipped"]:
            console.print(f"[yellow]note:[/yellow] {note}")
        console.print(f"tables under {Path(cfg.data_root) / 'tables'}; next: opforge publish --run-id {run}")

    @app.command("verl-args")
    def verl_args_cmd(
        release: Optional[Path] = typer.Option(
            None, "--release", help="A published folder (Hub layout): its warm-up shards become the train/val files."
        ),
        set_: Optional[list[str]] = typer.Option(None, "--set", help="Extra verl overrides KEY=VALUE."),
    ) -> None:
        """Print the packaged verl PPO config (pipeline/curate/verl/ppo_warmup.yaml) as Hydra overrides for
        `python -m verl.trainer.main_ppo`, with the reward function's path filled in."""
        import shlex

        from pipeline.curate.verl.config import verl_overrides

        extra = dict(kv.split("=", 1) for kv in set_ or [])
        print(" ".join(shlex.quote(a) for a in verl_overrides(release, extra=extra)))
