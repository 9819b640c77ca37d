"""`opforge rollout`: run the kernel agent over a tasks table and write the `trajectories` table."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    from pipeline.cli import ConfigOpt, SetOpt, console, load_cli_config, one_writer

    @app.command("rollout")
    def rollout_cmd(
        tasks: Path = typer.Option(..., "--tasks", help="Parquet file with columns task_id (optional) and code."),
        model: Optional[str] = typer.Option(None, "--model", help="Model dir/name (vllm), served name (openai)."),
        backend: Optional[str] = typer.Option(None, "--backend", help="vllm | openai | replay"),
        out: Optional[Path] = typer.Option(None, "--out", help="Data root to write to (default: config data_root)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai backend: http://HOST:PORT/v1"),
        replay: Optional[Path] = typer.Option(None, "--replay", help="replay backend: trajectories Parquet or JSON."),
        samples: Optional[int] = typer.Option(None, "--samples", help="Trajectories per task."),
        max_turns: Optional[int] = typer.Option(None, "--max-turns"),
        concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Trajectories driven at once."),
        ray: bool = typer.Option(False, "--ray", help="Start/join Ray: engines in actors, tools as Ray tasks."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N tasks."),
        run_id: Optional[str] = typer.Option(None, "--run-id"),
        config: Optional[Path] = ConfigOpt,
        set_: Optional[list[str]] = SetOpt,
    ) -> None:
        """Roll out the ReAct kernel agent on every task (samples per task with recorded seeds), as the rollout
        stage of a run with the same runner as `opforge run`. Trajectories already written under the output root
        are skipped, so a rerun resumes."""
        import collections

        import pyarrow.parquet as pq

        from pipeline import registry, runner
        from pipeline.storage import DataStore, atomic_write_parquet, with_code_column

        cfg = load_cli_config(config, set_)
        updates = {
            k: v
            for k, v in {
                "model": model,
                "backend": backend,
                "base_url": base_url,
                "replay_path": str(replay) if replay else None,
                "samples_per_task": samples,
                "max_turns": max_turns,
                "concurrency": concurrency,
            }.items()
            if v is not None
        }
        rs = cfg.rollout.model_copy(update=updates)
        if rs.backend == "vllm" and not rs.model:
            console.print("[red]--model is required for the vllm backend[/red]")
            raise typer.Exit(2)
        root = Path(out) if out else cfg.data_root
        cfg = runner.load(config, set_, run_id or cfg.run_id).model_copy(update={"rollout": rs, "data_root": root})
        run = cfg.run_id
        table = with_code_column(pq.read_table(tasks))  # int/binary code: rows with reasons, not a crash
        if "code" not in table.column_names:
            console.print(f"[red]{tasks}: no 'code' column[/red]")
            raise typer.Exit(2)
        if limit:
            table = table.slice(0, limit)
        if ray:
            runner.start_ray(cfg)
        counts: collections.Counter = collections.Counter()

        def progress(row: dict) -> None:
            counts[row["termination"]] += 1
            console.print(
                f"{row['traj_id']} task={row['task_id']} sample={row['sample_idx']} "
                f"turns={row['num_turns']} {row['termination']} reward={row['final_reward']}"
            )

        # The agent runs in this process (its tools go to Ray with --ray); the runner resumes and records it.
        stage = registry.get("rollout")
        with one_writer():
            runner.run_steps(
                cfg,
                [
                    (
                        "rollout",
                        lambda c: runner.run_stage(
                            stage,
                            c,
                            executor=runner.in_this_process,
                            items=table,
                            check_needs=False,
                            extra_args={"on_row": progress},
                        ),
                    )
                ],
                note="opforge rollout",
            )
        result = DataStore(root).read("trajectories", run)
        merged = atomic_write_parquet(result, root / "trajectories.parquet")
        terms = collections.Counter(result.column("termination").to_pylist())
        rewards = collections.Counter(result.column("final_reward").to_pylist())
        console.print(f"{result.num_rows} trajectories ({sum(counts.values())} new) -> {merged}")
        console.print(f"termination: {dict(terms)}  final_reward: {dict(sorted(rewards.items()))}")
