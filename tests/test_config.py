"""The one configuration: strict at every level, typed evaluation options, the effective config and its example."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.config import ConfigError, OpforgeConfig, example_yaml, load_config
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
    for bad, msg in [
        ({"atoll": 0.1}, "did you mean 'atol'"),
        ({"trials": "5"}, "must be int"),
        ({"l2_flush": 1}, "must be bool"),
        ({"determinism": "loose"}, "one of"),
        ({"gpu_memory_fraction": 1.5}, "must lie in"),
        ({"allow_torch_ops": [1]}, "must be list"),
    ]:
        with pytest.raises(ValueError, match=msg):
            options.resolve(bad)
    # The worker module imports without pydantic.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pydantic'] = None; import pipeline.evaluate.options as o; "
        "assert o.resolve({})['trials'] == 5"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- strict config ------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "override, suggestion",
    [
        ("synth.compser=llm", "synth.composer"),
        ("decontam.treshold=0.5", "decontam.threshold"),
        ("ray.adress=auto", "ray.address"),
        ("synth.nn=3", "synth.n"),
        ("synth.llm.modle=x", "synth.llm.model"),
        ("eval.atoll=0.1", "eval.atol"),
        ("rollout.max_turn=3", "rollout.max_turns"),
    ],
)
def test_unknown_nested_keys_are_errors_with_a_suggestion(override, suggestion, tmp_path):
    with pytest.raises(ConfigError, match=f"did you mean '{suggestion}'"):
        load_config(None, [override])
    key, value = override.split("=")
    f = tmp_path / "c.yaml"
    *sections, leaf = key.split(".")
    f.write_text(
        "".join(f"{'  ' * i}{s}:\n" for i, s in enumerate(sections)) + f"{'  ' * len(sections)}{leaf}: {value}\n"
    )
    with pytest.raises(ConfigError, match=f"{f}: unknown key '{key}'; did you mean '{suggestion}'"):
        load_config(f)


def test_known_keys_and_free_form_mappings_still_load(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "synth:\n  n: 3\n  op_mix: {2: 1.0}\n  llm: {engine_kwargs: {enforce_eager: true}}\n"
        "validate: {timeout_s: 9}\neval: {allow_libraries: [cublas]}\n"
    )
    cfg = load_config(f, ["rollout.temperature=0.5", "synth.llm.engine_kwargs.any_key=1"])
    assert (cfg.synth.n, cfg.synth.op_mix, cfg.validate_.timeout_s, cfg.eval.allow_libraries) == (
        3,
        {2: 1.0},
        9,
        ["cublas"],
    )
    assert cfg.synth.llm.engine_kwargs == {"enforce_eager": True, "any_key": 1}
    assert cfg.rollout.temperature == 0.5


@pytest.mark.parametrize(
    "text, where",
    [("synth:\n  n: [1\n", ":3:1:"), ("synth:\n n: 3\n  x: 1\n", ":3:4:"), ("synth:\n\tn: 3\n", ":2:1:")],
)
def test_yaml_errors_name_file_line_and_column_and_exit_2(text, where, tmp_path):
    from pipeline.cli import app

    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=f"{f}{where} invalid YAML"):
        load_config(f)
    res = CliRunner().invoke(app, ["config", "show", "--config", str(f)])
    assert res.exit_code == 2
    out = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert f"{f}{where}" in out and "Traceback" not in out


def test_config_show_prints_the_effective_config(tmp_path):
    import yaml

    from pipeline.cli import app

    f = tmp_path / "c.yaml"
    f.write_text("synth: {n: 7}\n")
    res = CliRunner().invoke(app, ["config", "show", "-c", str(f), "--set", "decontam.threshold=0.6"])
    assert res.exit_code == 0, res.output
    shown = yaml.safe_load(res.stdout)
    assert shown["synth"]["n"] == 7 and shown["decontam"]["threshold"] == 0.6
    assert OpforgeConfig.model_validate(shown).dump() == load_config(f, ["decontam.threshold=0.6"]).dump()
    secret = CliRunner().invoke(app, ["config", "show", "--set", "rollout.api_key=sk-123"])
    assert "sk-123" not in secret.stdout and yaml.safe_load(secret.stdout)["rollout"]["api_key"] == "***"
    bad = CliRunner().invoke(app, ["config", "show", "--set", "synth.nn=3"])
    assert bad.exit_code == 2 and "did you mean 'synth.n'" in bad.output + (bad.stderr or "")


def test_example_config_is_generated_complete_and_current():
    committed = (ROOT / "opforge.example.yaml").read_text()
    assert committed == example_yaml(), "regenerate it: opforge config example --out opforge.example.yaml"
    import yaml

    def keys(d, prefix=""):
        return {prefix + k for k in d} | {
            x
            for k, v in d.items()
            if isinstance(v, dict) and k not in ("op_mix", "engine_kwargs")
            for x in keys(v, f"{prefix}{k}.")
        }

    assert keys(yaml.safe_load(committed)) == keys(OpforgeConfig().dump())  # every key, nothing else
    assert load_config(ROOT / "opforge.example.yaml").dump() == OpforgeConfig().dump()
