"""The one configuration: strict at every level, typed evaluation options, the effective config and its example."""

from __future__ import annotations

import pytest

from pipeline.evaluate import options
from pipeline.evaluate.settings import EvalSettings


def test_eval_settings_are_derived_from_the_one_definition():
    # Every field of the worker-side dataclass is a config field with the same default and its description.
    assert EvalSettings().as_worker_dict() == options.DEFAULTS
    assert set(EvalSettings.model_fields) == {f.name for f in options.FIELDS}
    for f in options.FIELDS:
        assert EvalSettings.model_fields[f.name].description == f.metadata["doc"]
    with pytest.raises(ValueError):
        EvalSettings(determinism="sometimes")  # choices carried over
    with pytest.raises(ValueError):
        EvalSettings(baseline_runs=0)  # bounds carried over
    with pytest.raises(ValueError):
        EvalSettings(atoll=0.1)  # unknown keys rejected


def test_worker_side_resolve_checks_types_without_pydantic():
    assert options.resolve({"atol": 1})["atol"] == 1  # an int is a fine float
    assert options.resolve({"allow_libraries": ("cublas",)})["allow_libraries"] == ["cublas"]
    for bad, msg in [({"atoll": 0.1}, "did you mean 'atol'"), ({"trials": "5"}, "must be int"),
                     ({"l2_flush": 1}, "must be bool"), ({"determinism": "loose"}, "one of"),
                     ({"gpu_memory_fraction": 1.5}, "must lie in"), ({"allow_torch_ops": [1]}, "must be list")]:
        with pytest.raises(ValueError, match=msg):
            options.resolve(bad)
    # The worker module imports without pydantic.
    import subprocess
    import sys

    code = ("import sys; sys.modules['pydantic'] = None; import pipeline.evaluate.options as o; "
            "assert o.resolve({})['trials'] == 5")
    subprocess.run([sys.executable, "-c", code], check=True)
