"""`opforge eval --task model.py --solution PATH [--json]`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def eval_cmd(
        task: Path = typer.Option(..., "--task", help="KernelBench-format task file (class Model, get_inputs, ...)."),
        solution: Path = typer.Option(
            ...,
            "--solution",
            help="Single-file solution (.py with ModelNew) or a CUDA-Agent-style workspace directory.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
        mode: str = typer.Option("full", "--mode", help="verify | profile | full"),
        config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config file."),
        set_: Optional[list[str]] = typer.Option(None, "--set", "-s", help="Override, e.g. --set eval.trials=10"),
    ) -> None:
        """Compile, verify and profile a kernel solution against its task; print the reward."""
        from pipeline.cli import console, load_cli_config
        from pipeline.evaluate.harness import evaluate

        cfg = load_cli_config(config, set_)
        if not task.is_file():
            console.print(f"[red]no task file {task}[/red]")
            raise typer.Exit(2)
        try:
            task_code = task.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as e:  # a bad input file: one line and exit 2, not a traceback
            console.print(f"[red]cannot read task file {task}:[/red] {e.__class__.__name__}: {str(e)[:200]}")
            raise typer.Exit(2) from None
        res = evaluate(task_code, str(solution), mode=mode, settings=cfg.eval.as_worker_dict())
        d = res.to_dict()
        if as_json:
            typer.echo(json.dumps(d, default=str))
            return
        from pipeline.evaluate.rules import rules_text

        console.print(rules_text(cfg.eval.as_worker_dict()), markup=False, highlight=False)
        console.print("")
        console.print(
            f"[bold]reward {res.reward}[/bold]  compiled={res.compiled} correct={res.correct} "
            f"device={res.device or '-'}"
        )
        if res.reason:
            console.print(f"reason: {res.reason}", markup=False)
        for k in (
            "eager_ms",
            "compile_ms",
            "solution_ms",
            "speedup_vs_eager",
            "speedup_vs_compile",
            "max_abs_err",
            "max_rel_err",
        ):
            v = d[k]
            if v is not None:
                console.print(f"  {k}: {v:.4g}")
        if res.violations:
            console.print(f"[red]violations:[/red] {', '.join(res.violations)}")
            for line in res.details.get("violation_details", [])[:10]:
                console.print(f"  {line}")
            for f in res.details.get("static", [])[:10]:
                console.print(f"  {f['file']}:{f['line']}: {f['name']}: {f['detail']}")
        if res.warnings:
            console.print(f"[yellow]warnings:[/yellow] {', '.join(res.warnings)}")
        if res.error:
            console.print(res.error[-3000:], markup=False)
