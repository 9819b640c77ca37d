"""`opforge decontam` and `opforge dedup`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _read_candidates(path: Path):
    """task_id and code from a Parquet file (a file or a directory of Parquet files)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tbl = pq.read_table(path)
    missing = [c for c in ("task_id", "code") if c not in tbl.column_names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; need string columns task_id and code")
    tbl = tbl.select(["task_id", "code"])
    from pipeline.storage import as_code_column

    # An integer or binary code column gives rows with a reason (empty_code), not a crash on the cast.
    return pa.table({"task_id": tbl.column("task_id").cast(pa.string()), "code": as_code_column(tbl.column("code"))})


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config

    @app.command()
    def decontam(
        candidates: Path = typer.Argument(..., help="Parquet file with string columns task_id and code."),
        reference: Optional[str] = typer.Option(
            None,
            "--reference",
            help="KernelBench: a directory (level1/ .. "
            "level4/, or their parent holding KernelBench/), a Parquet file, "
            "or the HF dataset id. Default: the configured/auto source.",
        ),
        out: Path = typer.Option(..., "--out", help="Output directory: contamination.parquet, report.html."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
    ) -> None:
        """Flag candidate tasks that copy (or disguise) a KernelBench problem; write the auditor's report."""
        from pipeline.decontam.report import write_report
        from pipeline.decontam.stage import decontaminate
        from pipeline.kernelbench import KernelBenchNotFound, load_reference, resolve_source
        from pipeline.storage import atomic_write_parquet

        cfg = load_cli_config(config, set_)
        settings = cfg.decontam
        try:
            cands = _read_candidates(candidates)
        except (OSError, ValueError) as e:
            console.print(f"[red]cannot read candidates:[/red] {e}")
            raise typer.Exit(2) from None
        source = resolve_source(reference or cfg.kernelbench)
        try:
            refs = load_reference(source)
        except KernelBenchNotFound as e:
            console.print(f"[red]{e}[/red]")
            raise typer.Exit(2) from None
        result = decontaminate(cands, refs, settings)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(result, out / "contamination.parquet")
        html = write_report(result, cands, refs, settings, out, reference_source=source)
        n = result.num_rows
        bad = sum(result.column("contaminated").to_pylist())
        console.print(
            f"{n} candidates, {bad} contaminated, {n - bad} clean -> {out / 'contamination.parquet'}, {html}"
        )

    @app.command()
    def dedup(
        candidates: Path = typer.Argument(..., help="Parquet file with string columns task_id and code."),
        out: Path = typer.Option(..., "--out", help="Output directory: dedup.parquet."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
    ) -> None:
        """Near-duplicate removal within a corpus (MinHash LSH, verified by exact Jaccard, union-find clusters)."""
        from pipeline.decontam.stage import dedup as run_dedup
        from pipeline.storage import atomic_write_parquet

        cfg = load_cli_config(config, set_)
        try:
            cands = _read_candidates(candidates)
        except (OSError, ValueError) as e:
            console.print(f"[red]cannot read candidates:[/red] {e}")
            raise typer.Exit(2) from None
        result = run_dedup(cands, cfg.decontam)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_parquet(result, out / "dedup.parquet")
        removed = sum(result.column("removed").to_pylist())
        console.print(f"{result.num_rows} tasks, {removed} removed as duplicates -> {out / 'dedup.parquet'}")
