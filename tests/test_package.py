"""The built wheel works outside the checkout: `opforge --help`, a tiny synth + validate, curate and a local publish.

The wheel is built without build isolation and installed with --no-deps into a fresh venv whose site sees this
environment's installed dependencies through a .pth file, so nothing is downloaded. Everything runs from a
directory outside the checkout, so a file read from the source tree instead of the package would be missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[1]
# What the wheel is built from (the sdist's content); symlinks inside are kept and resolved by the build.
SOURCES = [
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "prefect.yaml",
    "opforge.example.yaml",
    "data_cards",
    "pipeline",
    "flows",
    "schemas",
]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    )
    return p.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        p = ROOT / name
        (
            shutil.copytree(p, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
            if p.is_dir()
            else shutil.copy2(p, src / name)
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        tmp,
        env,
    )
    wheel = next((tmp / "dist").glob("opforge-*.whl"))
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    py = venv / "bin" / "python"
    site = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env).strip()
    # This environment's dependencies, after the venv's own packages (a path line adds no .pth processing, so
    # the project's editable install is not seen).
    Path(site, "opforge-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)], tmp, env)
    work = tmp / "elsewhere"
    work.mkdir()
    return venv, env, work


def test_wheel_carries_license_version_and_runtime_files(installed):
    venv, env, work = installed
    out = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            """
import importlib.metadata as md, pipeline, flows.commands, pipeline.publish.card as card
from flows.deployments import build
print(pipeline.__file__)
print(md.version("opforge") == pipeline.__version__, md.metadata("opforge")["License-Expression"])
print(card.TEMPLATE.is_file(), len(build(flows.commands.PREFECT_YAML)))
""",
        ],
        work,
        env,
    )
    where, meta, files = out.splitlines()
    assert where.startswith(str(venv)) and "site-packages" in where  # the wheel's copy, not the checkout
    assert meta == "True Apache-2.0"
    assert files.split()[0] == "True" and int(files.split()[1]) >= 2
    assert list((venv / "lib").glob("python*/site-packages/opforge-*.dist-info/licenses/LICENSE"))
    example = _run([str(venv / "bin" / "opforge"), "config", "example"], work, env)
    assert example == (ROOT / "opforge.example.yaml").read_text()


def test_installed_cli_synthesizes_validates_curates_and_publishes(installed):
    venv, env, work = installed
    opforge = str(venv / "bin" / "opforge")
    assert "synth" in _run([opforge, "--help"], work, env)
    data = work / "data"
    common = ["--set", f"data_root={data}"]
    _run(
        [
            opforge,
            "synth",
            "--n",
            "2",
            "--no-ray",
            "--device",
            "cpu",
            *common,
            "--set",
            "validate.check_compile=false",
        ],
        work,
        env,
    )
    assert pq.read_table(next((data / "tables" / "validation").rglob("*.parquet"))).num_rows == 2
    # No KernelBench here: decontamination is not required for this check of the packaging.
    _run([opforge, "curate", *common, "--set", "curate.require_decontamination=false"], work, env)
    _run([opforge, "publish", *common, "--out", str(work / "release")], work, env)
    card = (work / "release" / "README.md").read_text()
    assert card.startswith("---") and "warmup" in card  # rendered from the packaged template
    assert list((work / "release" / "data" / "warmup").glob("*.parquet"))
