"""`opforge curate`: build the warm-up, SFT and critic datasets from the catalog's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def read_all_runs(data_root: Path, table: str) -> list[dict]:
    """Every run's rows of a table (any schema version); a missing table is empty. Rows get the run id of their
    partition when the table has no run_id column, so the latest decision per task can be told apart."""
    import pyarrow.parquet as pq

    base = Path(data_root) / "tables" / table
    rows: list[dict] = []
    for f in sorted(base.glob("run_id=*/*.parquet")) if base.exists() else []:
        run = f.parent.name.split("=", 1)[1]
        for r in pq.read_table(f).to_pylist():
            r.setdefault("run_id", run)
            rows.append(r)
    return rows


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

    @app.command("curate")
    def curate_cmd(
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
        run_id: Optional[str] = typer.Option(None, "--run-id",
                                             help="Curation run id (default: config run_id or new)."),
    ) -> None:
        """Filter trajectories and build the warm-up, SFT and critic datasets (tables warmup, sft, critic and
        curation_drops in the catalog). With no trajectories, only the warm-up dataset is built."""
        from rich.table import Table

        import pipeline
        from pipeline.catalog import Catalog
        from pipeline.curate.stage import curate, save_result

        cfg = load_cli_config(config, set_)
        run = run_id or cfg.with_run_id().run_id
        cat = Catalog(cfg.catalog_path, cfg.data_root)
        own_run = cat.sql("SELECT count(*) AS n FROM runs WHERE run_id = ?", [run]).column("n")[0].as_py() == 0
        if own_run:
            cat.start_run(run, cfg.dump(), pipeline.__version__, note="opforge curate")
        ins = {t: read_all_runs(cfg.data_root, t) for t in ("tasks", "validation", "contamination", "trajectories",
                                                             "dedup")}
        result = curate(ins["tasks"], ins["validation"], ins["contamination"], ins["trajectories"], cfg.curate, run,
                        dedup=ins["dedup"])
        paths = save_result(result, cfg.data_root, cat)
        if own_run:
            cat.finish_run(run)
        t = Table(title=f"curation run {run}")
        for col in ("dataset", "rows", "splits", "dropped"):
            t.add_column(col)
        drops: dict[str, int] = {}
        for d in result.drops.column("dataset").to_pylist():
            drops[d] = drops.get(d, 0) + 1
        for name in ("warmup", "sft", "critic"):
            counts = result.summary["counts"][name]
            t.add_row(name, str(result.summary["rows"][name]), ", ".join(f"{k} {v}" for k, v in counts.items()),
                      str(drops.get(name, 0)))
        console.print(t)
        for note in result.summary["skipped"]:
            console.print(f"[yellow]note:[/yellow] {note}")
        console.print(f"tables under {paths['warmup'].parent.parent.parent}; next: opforge publish --run-id {run}")
