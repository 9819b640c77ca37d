"""The `opforge` command line (typer + rich). Stage commands live beside their stages (`pipeline/<stage>/cli.py`,
each with `register(app)`) and import heavy dependencies inside the command, so `opforge --help` stays fast.
Commands that need Prefect (`run`, `serve`) are added by `flows/cli.py`; the library itself never imports Prefect.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.table import Table

console = Console()
app = typer.Typer(
    name="opforge",
    help="Data generation and curation for LLMs that write fast CUDA kernels.\n\n"
    "Stages, in data-flow order: synth -> validate -> decontam -> rollout -> eval -> curate -> publish.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

# Stage command modules, in data-flow order; a missing module is skipped.
STAGE_COMMAND_MODULES = [
    "pipeline.synth.cli",
    "pipeline.validate.cli",
    "pipeline.decontam.cli",
    "pipeline.rollout.cli",
    "pipeline.evaluate.cli",
    "pipeline.curate.cli",
    "pipeline.publish.cli",
]

ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (`opforge config example` lists every key).")
SetOpt = typer.Option(None, "--set", "-s", help="Override a config key, e.g. --set synth.n=50 (repeatable).")


def load_cli_config(config: Optional[Path], overrides: Optional[list[str]]):
    """The typed config from a file and --set overrides; exits with a clear message when invalid."""
    from pydantic import ValidationError

    from pipeline.config import load_config

    try:
        return load_config(config, overrides or [])
    except (ValidationError, ValueError, FileNotFoundError) as e:
        err = Console(stderr=True)
        err.print("[red]invalid configuration:[/red]", end=" ")
        err.print(str(e), markup=False, highlight=False, soft_wrap=True)  # file names and values are not rich markup
        raise typer.Exit(2) from None


@contextmanager
def one_writer() -> Iterator[None]:
    """Around a stage command that writes into a run (`opforge synth/rollout/curate/publish --run-id`): the runner
    holds the run's lock; when another writer holds it, the command names it in one line and exits with code 2,
    before anything is written."""
    from pipeline.runlock import RunLocked

    try:
        yield
    except RunLocked as e:
        Console(stderr=True).print(f"[red]{e}[/red]", highlight=False)
        raise typer.Exit(2) from None


def print_table(tbl, title: str | None = None, max_rows: int = 50) -> None:
    """Render an Arrow table with rich."""
    t = Table(title=title, show_lines=False)
    for name in tbl.column_names:
        t.add_column(name, overflow="fold")
    for row in tbl.slice(0, max_rows).to_pylist():
        t.add_row(
            *["" if v is None else (json.dumps(v) if isinstance(v, (list, dict)) else str(v)) for v in row.values()]
        )
    console.print(t)
    if tbl.num_rows > max_rows:
        console.print(f"... {tbl.num_rows - max_rows} more rows")


@app.command()
def sql(
    query: str = typer.Argument(..., help='SQL over the catalog, e.g. "SELECT * FROM stages".'),
    config: Optional[Path] = ConfigOpt,
    set_: Optional[list[str]] = SetOpt,
    fmt: str = typer.Option("table", "--format", help="table | json | csv"),
) -> None:
    """Query every stage's tables (DuckDB views over the Parquet files) and the run registry, read-only.

    The query runs on a read-only snapshot (the catalog is never opened for writing, so it works while a run
    writes, and DELETE/DROP fail); every table has a view, empty until it has files."""
    from pipeline.catalog import Catalog

    cfg = load_cli_config(config, set_)
    cat = Catalog(cfg.catalog_path, cfg.data_root)
    try:
        tbl = cat.query_readonly(query)
    except Exception as e:  # duckdb raises many error types; show the message, not a traceback
        console.print(f"[red]query failed:[/red] {e}")
        raise typer.Exit(1) from None
    if fmt == "json":
        typer.echo(json.dumps(tbl.to_pylist(), default=str, indent=1))
    elif fmt == "csv":
        import sys

        import pyarrow.csv as pacsv

        pacsv.write_csv(tbl, sys.stdout.buffer)
    else:
        print_table(tbl)


@app.command()
def schemas(name: Optional[str] = typer.Argument(None, help="A table name; all tables when omitted.")) -> None:
    """Show the versioned Arrow schema of each table."""
    from schemas import get_schema, schema_version, table_names

    for t in [name] if name else table_names():
        s = get_schema(t)
        console.print(f"[bold]{t}[/bold] v{schema_version(t)}: {s.metadata[b'opforge.doc'].decode()}")
        for f in s:
            doc = (f.metadata or {}).get(b"doc", b"").decode()
            console.print(f"  {f.name}: {f.type}{'' if f.nullable else ' not null'}  [dim]{doc}[/dim]")


config_app = typer.Typer(help="The configuration: the effective one, and the complete example.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def config_show(config: Optional[Path] = ConfigOpt, set_: Optional[list[str]] = SetOpt) -> None:
    """Print the effective configuration (defaults, then the file, then --set overrides) as YAML."""
    from pipeline.config import show_yaml

    typer.echo(show_yaml(load_cli_config(config, set_)), nl=False)


@config_app.command("example")
def config_example(
    out: Optional[Path] = typer.Option(None, "--out", help="Write to this file (default: print)."),
) -> None:
    """Print every key with its default and description (the source of opforge.example.yaml)."""
    from pipeline.config import example_yaml

    if out:
        out.write_text(example_yaml())
    else:
        typer.echo(example_yaml(), nl=False)


def _register_stage_commands() -> None:
    for mod in STAGE_COMMAND_MODULES:
        if importlib.util.find_spec(mod) is not None:
            importlib.import_module(mod).register(app)


_register_stage_commands()
