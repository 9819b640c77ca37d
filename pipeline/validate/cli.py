"""`opforge validate CANDIDATES --out DIR`: sandboxed filters over any Parquet file with a `code` column."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def print_summary(table, console) -> None:
    from pipeline.validate.stage import drop_reasons, filter_yield

    n = table.num_rows
    valid = sum(table.column("valid").to_pylist())
    console.print(f"[bold]{valid}/{n}[/bold] candidates valid")
    from rich.table import Table

    t = Table(title="filters (in order)")
    for c in ("filter", "reason", "ran", "passed", "failed", "dropped_first"):
        t.add_column(c)
    for r in filter_yield(table):
        t.add_row(*[str(r[c]) for c in ("filter", "reason", "ran", "passed", "failed", "dropped_first")])
    console.print(t)
    reasons = drop_reasons(table)
    if reasons:
        console.print("drop reasons: " + ", ".join(f"{k}={v}" for k, v in reasons.items()))


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt

    @app.command("validate")
    def validate_cmd(
        candidates: Path = typer.Argument(
            ...,
            help="Parquet file with a `code` column (task_id optional); e.g. our tasks table or CUDA-Agent-Ops-6K.",
        ),
        out: Path = typer.Option(..., "--out", help="Output dir: writes DIR/validation.parquet."),
        device: Optional[str] = typer.Option(None, "--device", help="cpu | cuda | auto (default: config.device)."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Validate only the first N rows."),
        ray: bool = typer.Option(True, "--ray/--no-ray", help="Run candidates as Ray tasks (starts a local Ray)."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
    ) -> None:
        """Run every filter on each candidate in its own sandboxed process; exit 0 once the run completed."""
        import pyarrow.parquet as pq

        from pipeline.cli import console, load_cli_config
        from pipeline.storage import with_code_column, write_table
        from pipeline.validate.stage import validate

        cfg = load_cli_config(config, set_)
        try:
            schema = pq.read_schema(candidates)
        except Exception as e:
            console.print(f"[red]cannot read {candidates}:[/red] {e}")
            raise typer.Exit(2) from None
        cols = [c for c in ("code", "task_id", "compose_reason") if c in schema.names]
        if "code" not in cols:
            console.print(f"[red]{candidates} has no `code` column[/red] (columns: {', '.join(schema.names)})")
            raise typer.Exit(2)
        tbl = with_code_column(pq.read_table(candidates, columns=cols))  # int/binary code: rows with reasons
        if limit is not None:
            tbl = tbl.slice(0, limit)
        from pipeline.runner import item_executor, start_ray

        if ray:
            start_ray(cfg)
        done = [0]

        def progress(_i, row):
            done[0] += 1
            if done[0] % 10 == 0 or done[0] == tbl.num_rows:
                console.print(f"  validated {done[0]}/{tbl.num_rows}")

        result = validate(tbl, cfg.validate_, device or cfg.device, on_result=progress, executor=item_executor())
        out.mkdir(parents=True, exist_ok=True)
        write_table("validation", result, out / "validation.parquet")
        print_summary(result, console)
        console.print(f"wrote {out / 'validation.parquet'}")
