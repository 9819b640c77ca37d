"""`opforge run` (the whole pipeline on embedded defaults) and `opforge serve` (the scheduled deployments)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Optional

import typer

from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

PREFECT_YAML = Path(__file__).with_name("prefect.yaml")  # package data (in a checkout: the top-level prefect.yaml)

# What each stage needs when it is skipped here, in words a user can act on.
STAGE_ORDER = ["synthesize", "validate", "decontaminate", "dedup", "rollout", "evaluate", "curate", "publish"]


def _summary_table(cfg, run_id: str, wall_s: float):
    from rich.table import Table

    from pipeline.catalog import Catalog

    cat = Catalog(cfg.catalog_path, cfg.data_root)
    rows = {r["stage"]: r for r in cat.sql(
        "SELECT stage, status, rows_in, rows_out, drop_reasons, detail, "
        "epoch(finished_at) - epoch(started_at) AS seconds FROM stages WHERE run_id = ?", [run_id]).to_pylist()}
    t = Table(title=f"opforge run {run_id}  ({wall_s:.0f} s)")
    for col in ("stage", "status", "rows in", "rows out", "drop reasons", "time"):
        t.add_column(col, overflow="fold", justify="right" if col in ("rows in", "rows out", "time") else "left")
    for stage in STAGE_ORDER + sorted(set(rows) - set(STAGE_ORDER)):
        r = rows.get(stage)
        if r is None:
            t.add_row(stage, "[dim]not run[/dim]", "", "", "", "")
            continue
        reasons = json.loads(r["drop_reasons"] or "{}")
        style = {"completed": "green", "skipped": "yellow", "failed": "red"}.get(r["status"], "white")
        t.add_row(stage, f"[{style}]{r['status']}[/{style}]", str(r["rows_in"]), str(r["rows_out"]),
                  "\n".join(f"{k}: {v}" for k, v in reasons.items()) or "-",
                  f"{r['seconds']:.1f} s" if r["seconds"] is not None else "")
    return t, rows


def _where(cfg, run_id: str, result: dict[str, Any] | None) -> list[str]:
    from pipeline.catalog import Catalog

    w = 22
    lines = [f"{'data root':<{w}} {cfg.data_root}", f"{'catalog':<{w}} {cfg.catalog_path}  (opforge sql \"SELECT * "
             f"FROM stages WHERE run_id = '{run_id}'\")"]
    files = Catalog(cfg.catalog_path, cfg.data_root).sql(
        "SELECT table_name, count(*) AS files, sum(row_count) AS rows FROM table_files WHERE run_id = ? "
        "GROUP BY table_name ORDER BY table_name", [run_id]).to_pylist()
    for f in files:
        d = Path(cfg.data_root) / "tables" / f["table_name"] / f"run_id={run_id}"
        lines.append(f"{'table ' + f['table_name']:<{w}} {d}  ({f['rows']} rows, {f['files']} files)")
    labels = {"report": "decontamination report", "out_dir": "release (Hub layout)", "card": "data card"}
    for st in (result or {}).get("stages", []):
        for k, label in labels.items():
            if st.get(k):
                lines.append(f"{label:<{w}} {st[k]}")
    return lines


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
        from flows import progress, runtime
        from flows.stages import load
        base = load_cli_config(config, set_)  # validates the config and overrides before anything starts
        cfg = load(str(config) if config else None, set_, base.run_id)
        from pipeline.kernelbench import resolve_source

        console.print(f"[bold]opforge run[/bold] {cfg.run_id}  data root: {cfg.data_root}  "
                      f"KernelBench: {resolve_source(cfg.kernelbench)}")
        runtime.set_env_defaults()
        api = runtime.plan_prefect_api(cfg)
        result, error = None, None
        try:
            # The temporary Prefect server and Ray start side by side (each takes 10-20 s here); Ray's workers get
            # the server's URL up front.
            import concurrent.futures as cf

            with cf.ThreadPoolExecutor(1) as pool, console.status(
                    "starting Prefect" + (" (temporary local server)" if api.server else "")
                    + ("" if no_ray else " and Ray" + (f" at {cfg.ray.address}" if cfg.ray.address else " (local)"))):
                started = pool.submit(api.start)
                if not no_ray:
                    runtime.start_ray(cfg)
                started.result()
            console.print(f"Prefect API: {api.url}" + ("  (temporary, stops with this command)" if api.server else ""))
            from flows.stages import pipeline_flow

            with progress.RichReporter(console) as rep, api.settings():
                progress.install(rep)
                try:
                    result = pipeline_flow(config=str(Path(config).resolve()) if config else None,
                                           overrides=list(set_ or []), run_id=cfg.run_id)
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
        for status, title in (("completed", "Notes"), ("failed", "[red]Failed stages[/red]"),
                              ("skipped", "[yellow]Skipped stages and what they need[/yellow]")):
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
            console.print("[red]opforge serve needs a Prefect server[/red]: start one with "
                          "`prefect server start --host 127.0.0.1 --port 4200` and set "
                          "PREFECT_API_URL=http://127.0.0.1:4200/api (or prefect.api_url in the config).")
            raise typer.Exit(2)
        os.environ["PREFECT_API_URL"] = url
        with runtime.PrefectAPI(url).settings():
            serve_deployments(prefect_yaml, config=str(Path(config).resolve()) if config else None,
                              overrides=list(set_ or []), only=only, console=console)
