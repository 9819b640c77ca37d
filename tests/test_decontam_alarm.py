"""The confirmation worker's alarm (jailed WORKER: `_alarm`) never interrupts an import: a module half made by an
alarm stays broken for every later pair of the process ("partially initialized module"), and those failures were
cached as the problems' own. The alarm waits for the import to end, then ends what runs."""

from __future__ import annotations

import sys

import pytest

from pipeline.decontam.jailed import WORKER


def _alarm_namespace() -> dict:
    start, end = WORKER.index("class _PairTimeout"), WORKER.index("def confirm_many")
    ns: dict = {}
    exec("import contextlib\nimport signal\n" + WORKER[start:end], ns)
    return ns


def test_an_alarm_during_an_import_waits_for_its_end(tmp_path, monkeypatch):
    ns = _alarm_namespace()
    # a module whose body the alarm reaches (sent from inside it: no race with a clock), and that says when it got
    # to its end
    (tmp_path / "slow_to_import.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGALRM)\ntotal = sum(range(100_000))\nfinished = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reached = []
    with pytest.raises(ns["_PairTimeout"]):
        with ns["_alarm"](600):  # only the alarm sent from the import, and the one it defers to, can come
            import slow_to_import

            reached.append(slow_to_import.finished)
            while True:  # the deferred alarm ends this
                pass
    assert reached == [True] and sys.modules["slow_to_import"].finished
    assert ns["_DEFER"]["n"] >= 1  # it was deferred, not simply late


def test_an_alarm_outside_an_import_ends_the_work_at_once():
    ns = _alarm_namespace()
    with pytest.raises(ns["_PairTimeout"]):
        with ns["_alarm"](0.001):
            while True:
                pass
    assert ns["_DEFER"]["n"] == 0
