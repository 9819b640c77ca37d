"""Progress reporting from flows to whoever runs them: a no-op by default, rich bars under `opforge run`.

Flows run in the driver process, so a module-level reporter is enough; Prefect parameters stay plain data.
"""

from __future__ import annotations

from typing import Protocol


class Reporter(Protocol):
    def start(self, stage: str, total: int, unit: str = "shards") -> None: ...

    def advance(self, stage: str, n: int = 1) -> None: ...

    def message(self, text: str) -> None: ...


class _Silent:
    def start(self, stage: str, total: int, unit: str = "shards") -> None:
        pass

    def advance(self, stage: str, n: int = 1) -> None:
        pass

    def message(self, text: str) -> None:
        pass


_reporter: Reporter = _Silent()


def get() -> Reporter:
    return _reporter


def install(reporter: Reporter | None) -> None:
    global _reporter
    _reporter = reporter or _Silent()


class RichReporter:
    """One rich progress bar per stage (shards done / planned), plus messages printed above the bars."""

    def __init__(self, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description:<14}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> "RichReporter":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def start(self, stage: str, total: int, unit: str = "shards") -> None:
        if stage in self._tasks:
            self.progress.reset(self._tasks[stage], total=total)
        else:
            self._tasks[stage] = self.progress.add_task(stage, total=total, unit=unit)

    def advance(self, stage: str, n: int = 1) -> None:
        if stage in self._tasks:
            self.progress.advance(self._tasks[stage], n)

    def message(self, text: str) -> None:
        self.progress.console.print(text)
