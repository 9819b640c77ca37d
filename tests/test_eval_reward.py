"""Reward logic and the settings mirror (pydantic section <-> the worker's plain dict)."""

from __future__ import annotations

import math

import pytest

from pipeline.evaluate import options
from pipeline.evaluate.reward import reward
from pipeline.evaluate.settings import EvalSettings


@pytest.mark.parametrize(
    "correct,se,sc,want",
    [
        (False, 5.0, 5.0, -1),  # fast but wrong: -1
        (True, None, None, 1),  # correct, not timed
        (True, 1.0, 3.0, 1),  # as fast as eager
        (True, 1.05, 3.0, 1),  # exactly the margin is not "more than 5%"
        (True, 1.06, 0.9, 2),  # faster than eager only
        (True, 1.2, 1.04, 2),  # within the margin of torch.compile
        (True, 1.2, 1.2, 3),
        (True, math.nan, 2.0, 1),
        (True, math.inf, math.inf, 1),  # non-finite speedups never earn a bonus
    ],
)
def test_reward_table(correct, se, sc, want):
    assert reward(correct, se, sc) == want


def test_margin_is_configurable():
    assert reward(True, 1.08, 1.08, margin=0.1) == 1
    assert reward(True, 1.2, 1.08, margin=0.1) == 2


def test_settings_mirror_worker_defaults():
    assert EvalSettings().as_worker_dict() == options.DEFAULTS
    assert set(EvalSettings.model_fields) == set(options.DEFAULTS)


def test_unknown_setting_is_an_error():
    with pytest.raises(ValueError, match="unknown evaluation setting"):
        options.resolve({"atoll": 1e-3})
    assert options.resolve({"atol": 1e-4})["atol"] == 1e-4


def test_gpu_side_modules_import_without_cpu_only_dependencies():
    """The GPU image has torch + numpy only: the worker-side modules must not pull pydantic, ray, prefect, duckdb."""
    import subprocess
    import sys

    code = (
        "import sys\nimport pipeline.evaluate.harness, pipeline.evaluate.worker, pipeline.evaluate.build, "
        "pipeline.evaluate.runner, pipeline.evaluate.workspace, pipeline.evaluate.static_check, "
        "pipeline.evaluate.reward, pipeline.evaluate.records\n"
        "bad = [m for m in ('pydantic', 'ray', 'prefect', 'duckdb', 'datasets', 'typer') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
