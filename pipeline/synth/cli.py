"""`opforge synth` (compose and validate candidate tasks) and `opforge ops list|show|mine` (the seed catalog)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

ops_app = typer.Typer(help="The seed operator catalog (mined from torch by introspection).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt

    @app.command("synth")
    def synth_cmd(
        n: Optional[int] = typer.Option(None, "--n", help="Candidates to compose (default: synth.n)."),
        composer: Optional[str] = typer.Option(None, "--composer", help="programmatic | llm"),
        seed: Optional[int] = typer.Option(None, "--seed", help="Composer seed."),
        profile: Optional[str] = typer.Option(None, "--profile", help="Sizes: gpu | small | auto."),
        device: Optional[str] = typer.Option(None, "--device", help="Where to validate: cpu | cuda | auto."),
        model: Optional[str] = typer.Option(None, "--model", help="llm composer: model dir or served name."),
        backend: Optional[str] = typer.Option(None, "--backend", help="llm composer: vllm | openai | replay."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="llm composer: OpenAI-compatible URL."),
        validate_: bool = typer.Option(True, "--validate/--no-validate", help="Run the filters on the candidates."),
        ray: bool = typer.Option(True, "--ray/--no-ray", help="Validate as Ray tasks (starts a local Ray)."),
        run_id: Optional[str] = typer.Option(None, "--run-id", help="Run id (default: a new one)."),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
    ) -> None:
        """Compose N candidate tasks, validate them in the sandbox, write `tasks` and `validation` (the
        synthesize and validate stages of a run, with the same runner as `opforge run`: a rerun with the same
        --run-id resumes)."""
        from pipeline import registry, runner
        from pipeline.cli import console, load_cli_config, one_writer
        from pipeline.storage import DataStore

        cfg = load_cli_config(config, set_)
        s = cfg.synth.model_copy(
            update={
                k: v
                for k, v in {"n": n, "composer": composer, "seed": seed, "size_profile": profile}.items()
                if v is not None
            }
        )
        llm = s.llm.model_copy(
            update={
                k: v for k, v in {"model": model, "backend": backend, "base_url": base_url}.items() if v is not None
            }
        )
        s = s.model_copy(update={"llm": llm})
        dev = device or cfg.device
        if s.size_profile == "auto":
            from pipeline.validate.stage import resolve_device

            s = s.model_copy(update={"size_profile": "gpu" if resolve_device(dev).startswith("cuda") else "small"})
        cfg = runner.load(config, set_, run_id or cfg.run_id).model_copy(update={"synth": s, "device": dev})
        if ray and validate_:
            runner.start_ray(cfg)
        t0 = time.time()
        stages = [registry.get("synthesize")] + ([registry.get("validate")] if validate_ else [])
        with one_writer():
            result = runner.run_steps(
                cfg,
                runner.steps(stages, observer=runner.ConsoleObserver(console)),
                note=f"synth --n {s.n} --composer {s.composer}",
            )
        by = {r["stage"]: r for r in result["stages"]}
        syn = by["synthesize"]
        store = DataStore(cfg.data_root)
        console.print(
            f"composed {syn['rows_in']} candidates ({syn['rows_in'] - syn['rows_out']} failed) in "
            f"{time.time() - t0:.1f}s -> {store.table_dir('tasks', cfg.run_id)}"
        )
        if validate_:
            from pipeline.validate.cli import print_summary

            val = by["validate"]
            if val["status"] == "completed":
                v = store.read("validation", cfg.run_id)
                print_summary(v, console)
                where = store.table_dir("validation", cfg.run_id)
                console.print(
                    f"validated {v.num_rows} in {val['seconds'] / 60:.1f} min "
                    f"({val['shards_skipped']} shards reused) -> {where}"
                )
            else:
                console.print(f"validate {val['status']}: {val.get('detail', '')}")
        console.print(f"run {cfg.run_id}")

    app.add_typer(ops_app, name="ops")


@ops_app.command("list")
def ops_list(
    kind: Optional[str] = typer.Option(None, "--kind", help="Only this kind (pointwise, reduction, ...)."),
    source: Optional[str] = typer.Option(None, "--source", help="Only this source (torch.nn, torch, ...)."),
    all_: bool = typer.Option(False, "--all", help="Include operators the composer does not use."),
    catalog: Optional[Path] = typer.Option(None, "--catalog", help="Catalog Parquet (default: the cache)."),
) -> None:
    """List seed operators (mined and cached on first use, ~2 min)."""
    from pipeline.cli import print_table
    from pipeline.synth.catalog import load_catalog

    ops = load_catalog(catalog)
    sel = [
        o
        for o in ops
        if (all_ or o.composable) and (not kind or o.kind == kind) and (not source or o.source == source)
    ]
    import pyarrow as pa

    tbl = pa.table(
        {
            "name": [o.name for o in sel],
            "kind": [o.kind for o in sel],
            "arity": [o.arity for o in sel],
            "ranks": [",".join(map(str, o.input_ranks)) for o in sel],
            "composable": [o.composable for o in sel],
            "note": [o.note for o in sel],
        }
    )
    print_table(tbl, title=f"{len(sel)} of {len(ops)} seed operators", max_rows=10_000)


@ops_app.command("show")
def ops_show(
    name: str = typer.Argument(..., help="Operator name, e.g. torch.nn.Conv2d or cumsum."),
    catalog: Optional[Path] = typer.Option(None, "--catalog"),
) -> None:
    """Every field of one seed operator."""
    import json

    from pipeline.cli import console
    from pipeline.synth.catalog import load_catalog

    ops = load_catalog(catalog)
    hits = [o for o in ops if o.name == name] or [o for o in ops if o.name.rsplit(".", 1)[-1] == name]
    if not hits:
        console.print(f"[red]no seed operator named {name!r}[/red]")
        raise typer.Exit(1)
    for o in hits:
        console.print_json(json.dumps(o.to_row(), default=str))


@ops_app.command("mine")
def ops_mine(
    out: Optional[Path] = typer.Option(None, "--out", help="Parquet path (default: the cache)."),
    source: Optional[list[str]] = typer.Option(None, "--source", help="Sources to mine (repeatable)."),
) -> None:
    """Re-mine the catalog from the installed torch (and transformers) and write it."""
    from pipeline.cli import console
    from pipeline.synth.catalog import MiningReport, build_catalog, default_cache_path, write_catalog

    rep = MiningReport()
    t = time.time()
    ops = build_catalog(sources=source or ("torch.nn", "torch.nn.functional", "torch", "transformers"), report=rep)
    path = write_catalog(ops, out or default_cache_path())
    console.print(
        f"tried {rep.tried}, runnable {rep.runnable}, composable {sum(o.composable for o in ops)} "
        f"in {time.time() - t:.0f}s -> {path}"
    )
