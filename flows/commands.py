"""`opforge run` (the whole pipeline on embedded defaults) and `opforge serve` (the scheduled deployments)."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

PREFECT_YAML = Path(__file__).with_name("prefect.yaml")  # package data (in a checkout: the top-level prefect.yaml)


def _summary_table(cfg, run_id: str, wall_s: float):
    from rich.table import Table

    from pipeline.catalog import Catalog

    cat = Catalog(cfg.catalog_path, cfg.data_root)
    rows = {
        r["stage"]: r
        for r in cat.sql(
            "SELECT stage, status, rows_in, rows_out, drop_reasons, detail, "
            "epoch(finished_at) - epoch(started_at) AS seconds FROM stages WHERE run_id = ?",
            [run_id],
        ).to_pylist()
    }
    t = Table(title=f"opforge run {run_id}  ({wall_s:.0f} s)")
    for col in ("stage", "status", "rows in", "rows out", "drop reasons", "time"):
        t.add_column(col, overflow="fold", justify="right" if col in ("rows in", "rows out", "time") else "left")
    from pipeline.registry import names

    order = names()
    for stage in order + sorted(set(rows) - set(order)):
        r = rows.get(stage)
        if r is None:
            t.add_row(stage, "[dim]not run[/dim]", "", "", "", "")
            continue
        reasons = json.loads(r["drop_reasons"] or "{}")
        style = {"completed": "green", "skipped": "yellow", "failed": "red"}.get(r["status"], "white")
        t.add_row(
            stage,
            f"[{style}]{r['status']}[/{style}]",
            str(r["rows_in"]),
            str(r["rows_out"]),
            "\n".join(f"{k}: {v}" for k, v in reasons.items()) or "-",
            f"{r['seconds']:.1f} s" if r["seconds"] is not None else "",
        )
    return t, rows


def _where(cfg, run_id: str, result: dict[str, Any] | None) -> list[str]:
    from pipeline.catalog import Catalog

    w = 22
    lines = [
        f"{'data root':<{w}} {cfg.data_root}",
        f"{'catalog':<{w}} {cfg.catalog_path}  (opforge sql \"SELECT * FROM stages WHERE run_id = '{run_id}'\")",
    ]
    files = (
        Catalog(cfg.catalog_path, cfg.data_root)
        .sql(
            "SELECT table_name, count(*) AS files, sum(row_count) AS rows FROM table_files WHERE run_id = ? "
            "GROUP BY table_name ORDER BY table_name",
            [run_id],
        )
        .to_pylist()
    )
    for f in files:
        d = Path(cfg.data_root) / "tables" / f["table_name"] / f"run_id={run_id}"
        lines.append(f"{'table ' + f['table_name']:<{w}} {d}  ({f['rows']} rows, {f['files']} files)")
    labels = {"report": "decontamination report", "out_dir": "release (Hub layout)", "card": "data card"}
    for st in (result or {}).get("stages", []):
        for k, label in labels.items():
            if st.get(k):
                lines.append(f"{label:<{w}} {st[k]}")
    return lines


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the run is, so that it unwinds like Ctrl-C: the run is marked interrupted,
    its lock released, Ray and the temporary Prefect server stopped."""


@contextmanager
def interrupt_on_signals(signals=(signal.SIGTERM, signal.SIGHUP)):
    def handler(signum, _frame):
        raise Interrupted(f"signal {signal.Signals(signum).name}")

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        no_ray: bool = typer.Option(False, "--no-ray", help="Run tasks in threads instead of a local Ray."),
    ) -> None:
        """Run the whole pipeline once (synthesize -> validate -> decontaminate -> ... -> publish) and summarize.

        Embedded defaults: a local Ray, a temporary Prefect server, the DuckDB catalog under the data root, CPU.
        Stages that need a GPU or a model are skipped with what they need."""
        t0 = time.monotonic()
        # Progress bars and the summary tell the story; Prefect's per-task log lines would scroll them away.
        # (Prefect reads its settings at import: this must come first.)
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        from flows.stages import load

        base = load_cli_config(config, set_)  # validates the config and overrides before anything starts
        try:
            cfg = load(str(config) if config else None, set_, base.run_id)
        except ValueError as e:  # run_id latest with no completed run
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        from pipeline import runlock
        from pipeline.executor import RayUnreachable
        from pipeline.kernelbench import resolve_source

        held = runlock.holder(cfg.data_root, cfg.run_id)
        if held is not None:  # checked again, under the lock, by the flow itself
            console.print(f"[red]run {cfg.run_id} is being written by {runlock.describe(held)}[/red]")
            raise typer.Exit(2)
        console.print(
            f"[bold]opforge run[/bold] {cfg.run_id}  data root: {cfg.data_root}  "
            f"KernelBench: {resolve_source(cfg.kernelbench)}"
        )
        try:
            with interrupt_on_signals():
                _run_pipeline(cfg, config, set_, no_ray, t0)
        except RayUnreachable as e:
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        except KeyboardInterrupt as e:
            from pipeline.catalog import Catalog

            status = (
                Catalog(cfg.catalog_path, cfg.data_root)
                .query_readonly("SELECT status FROM runs WHERE run_id = ?", [cfg.run_id])
                .to_pylist()
            )
            if status == [{"status": "completed"}]:  # the signal came after the last stage: say what is true
                console.print(f"run {cfg.run_id} completed; the command was stopped afterwards ({e or 'Ctrl-C'})")
            else:
                console.print(
                    f"[red]run {cfg.run_id} interrupted[/red] ({e or 'Ctrl-C'}); finished shards are "
                    f"kept: rerun with --set run_id={cfg.run_id} to resume"
                )
            raise typer.Exit(130) from None

    def _run_pipeline(cfg, config, set_, no_ray: bool, t0: float) -> None:
        from flows import progress, runtime

        runtime.set_env_defaults()
        api = runtime.plan_prefect_api(cfg)
        result, error = None, None
        try:
            # The temporary Prefect server and Ray start side by side (each takes 10-20 s here); Ray's workers get
            # the server's URL up front.
            import concurrent.futures as cf

            with (
                cf.ThreadPoolExecutor(1) as pool,
                console.status(
                    "starting Prefect"
                    + (" (temporary local server)" if api.server else "")
                    + ("" if no_ray else " and Ray" + (f" at {cfg.ray.address}" if cfg.ray.address else " (local)"))
                ),
            ):
                started = pool.submit(api.start)
                if not no_ray:
                    runtime.start_ray(cfg)
                started.result()
            console.print(f"Prefect API: {api.url}" + ("  (temporary, stops with this command)" if api.server else ""))
            from flows.stages import pipeline_flow

            with progress.RichReporter(console) as rep, api.settings():
                progress.install(rep)
                try:
                    result = pipeline_flow(
                        config=str(Path(config).resolve()) if config else None,
                        overrides=list(set_ or []),
                        run_id=cfg.run_id,
                    )
                except Exception as e:  # the summary below still shows what finished and what failed
                    error = e
                finally:
                    progress.install(None)
        finally:
            if not no_ray:
                try:
                    import ray

                    if ray.is_initialized():
                        ray.shutdown()
                except ImportError:
                    pass
            api.close()
        table, rows = _summary_table(cfg, cfg.run_id, time.monotonic() - t0)
        console.print(table)
        for status, title in (
            ("completed", "Notes"),
            ("failed", "[red]Failed stages[/red]"),
            ("skipped", "[yellow]Skipped stages and what they need[/yellow]"),
        ):
            items = [(s, r["detail"]) for s, r in rows.items() if r["status"] == status and r["detail"]]
            if items:
                console.print(f"[bold]{title}[/bold]")
                for s, why in items:
                    console.print(f"  {s}: {why}")
        console.print("[bold]Where everything is[/bold]")
        for line in _where(cfg, cfg.run_id, result):
            console.print("  " + line)
        if error is not None:
            console.print(f"[red]run failed:[/red] {error}")
            raise typer.Exit(1)

    @app.command()
    def serve(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        prefect_yaml: Path = typer.Option(PREFECT_YAML, "--prefect-yaml", help="Deployments and their schedules."),
        only: Optional[list[str]] = typer.Option(None, "--only", help="Serve only these deployment names."),
    ) -> None:
        """Serve the scheduled deployments of prefect.yaml from this process (needs a Prefect server:
        PREFECT_API_URL or prefect.api_url). Runs start here when their schedule fires or when triggered."""
        from flows import runtime
        from flows.deployments import serve_deployments

        cfg = load_cli_config(config, set_)
        runtime.set_env_defaults()
        url = cfg.prefect.api_url or os.environ.get("PREFECT_API_URL")
        if not url:
            console.print(
                "[red]opforge serve needs a Prefect server[/red]: start one with "
                "`prefect server start --host 127.0.0.1 --port 4200` and set "
                "PREFECT_API_URL=http://127.0.0.1:4200/api (or prefect.api_url in the config)."
            )
            raise typer.Exit(2)
        os.environ["PREFECT_API_URL"] = url
        with runtime.PrefectAPI(url).settings():
            serve_deployments(
                prefect_yaml,
                config=str(Path(config).resolve()) if config else None,
                overrides=list(set_ or []),
                only=only,
                console=console,
            )
