"""The layout holds together: every stage has a flow, a CLI command, schemas for its tables, a docs page and a
deployment; scheduled deployments run real flows; the library never imports the orchestration layer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

STAGE_PACKAGES = ["synth", "validate", "decontam", "llm", "rollout", "evaluate", "curate", "publish"]
# Stages whose flows have a schedule in prefect.yaml (the others have an unscheduled deployment each).
SCHEDULED = {"synthesize", "validate", "decontaminate", "dedup", "rollout", "curate", "publish"}


def _registry():
    from pipeline import registry

    return registry.stages()


def _commands() -> set[str]:
    import typer.main

    from flows.cli import app

    return set(typer.main.get_command(app).commands)


def _deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}


def test_the_registry_lists_every_stage_package_in_pipeline_order():
    stages = _registry()
    assert [s.name for s in stages] == [
        "synthesize",
        "validate",
        "decontaminate",
        "dedup",
        "rollout",
        "evaluate",
        "curate",
        "publish",
    ]
    declared = {s.fn.split(".")[1] for s in stages}
    assert declared == set(STAGE_PACKAGES) - {"llm"}  # llm serves models to stages; it is not a stage
    for s in stages:  # every function a stage names resolves to code of its own package
        assert s.fn.startswith(f"pipeline.{s.fn.split('.')[1]}.") and callable(s.function()), s.fn
        assert s.plan is None or callable(s.planner()), s.plan
        assert (s.shard_key is None) or s.plan, f"{s.name}: a sharded stage needs a plan (its input)"


def test_importing_the_registry_imports_no_stage_code():
    code = (
        "import sys; from pipeline import registry; registry.stages(); "
        "heavy = [m for m in ('pyarrow', 'torch', 'ray', 'prefect', 'pipeline.validate.stage', "
        "'pipeline.decontam.stage', 'pipeline.curate.stage') if m in sys.modules]; print(heavy)"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.parametrize("name", [s.name for s in _registry()])
def test_every_stage_has_a_flow_command_schema_docs_page_and_deployment(name):
    from flows import stages
    from pipeline import registry
    from schemas import table_names

    s = registry.get(name)
    assert callable(getattr(stages, s.flow, None)), f"no flow flows.stages.{s.flow}"
    assert s.command in _commands(), f"no CLI command `opforge {s.command}`"
    assert set(s.outputs) <= set(table_names()), f"tables without a schema: {set(s.outputs) - set(table_names())}"
    assert set(s.inputs) <= set(table_names()), f"inputs without a schema: {set(s.inputs) - set(table_names())}"
    doc = ROOT / "docs" / f"{s.docs}.md"
    assert doc.is_file() and doc.read_text().startswith("# "), f"no docs page {doc.relative_to(ROOT)}"
    entry = [d for d in _deployments().values() if d["entrypoint"] == f"flows/stages.py:{s.flow}"]
    assert entry, f"no prefect.yaml deployment runs {s.flow}"
    if name in SCHEDULED:
        runs_it = {f for f, names in stages.FLOW_STAGES.items() if name in names}
        assert any(d.get("schedules") for d in _deployments().values() if d["entrypoint"].split(":")[1] in runs_it), (
            f"{name}: no scheduled deployment runs it"
        )


def test_the_end_to_end_flow_runs_every_stage_and_scheduled_deployments_exist():
    from flows import stages

    assert [n for n, _ in stages.END_TO_END] == [s.name for s in _registry()]
    deps = _deployments()
    for d in deps.values():
        module, name = d["entrypoint"].split(":")
        assert module == "flows/stages.py" and callable(getattr(stages, name, None)), d["entrypoint"]
    scheduled = {n for n, d in deps.items() if d.get("schedules")}
    assert scheduled >= {"nightly-synthesize-decontaminate", "weekly-publish"}


def test_flows_hold_no_library_logic():
    """flows/ wraps the runner: no stage function, table read or catalog write of its own."""
    text = (ROOT / "flows" / "stages.py").read_text()
    for word in ("DataStore", "record_stage", "register_file", "select_tasks", "write_table", "import pyarrow"):
        assert word not in text, f"flows/stages.py uses {word}: that belongs in the library"
    assert len(text.splitlines()) < 200


def _anchor(heading: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_docs_links_and_anchors_resolve():
    pages = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken, checked = [], 0
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            checked += 1
            path = (page.parent / target) if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
            elif anchor and path.suffix == ".md":
                anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", path.read_text(), re.M)}
                if anchor not in anchors:
                    broken.append(f"{page.relative_to(ROOT)} -> {target}#{anchor}")
    assert checked > 50 and not broken, broken


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at module level?) for every import of a file; `from a import b` also yields a.b. Imports for type
    checkers only (`if TYPE_CHECKING:`) never run and are left out."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    nested = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(node)
        if n is not node
    }
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) not in nested) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            out += [(m, id(node) not in nested) for m in mods]
    return out


def test_the_library_never_imports_prefect_or_the_flows():
    offenders = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        for mod, _ in _imports(path):
            if mod.split(".")[0] in ("prefect", "prefect_ray", "flows"):
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not offenders, offenders
    for pkg in STAGE_PACKAGES:
        assert (ROOT / "pipeline" / pkg / "settings.py").is_file(), f"pipeline/{pkg} has no settings section"


# Stage code that still fans work out itself (through pipeline.executor) instead of declaring it to the runner.
# Each entry is debt with a reason; the test fails when an entry is no longer needed, so the list only shrinks.
FAN_OUT_DEBT = {
    "pipeline/llm/ray_replicas.py": "vLLM replicas as Ray actors (joins Ray itself)",
}


def test_stage_packages_do_not_know_where_they_run_nor_write_the_catalog():
    """No module of a stage package imports the executor, Prefect or the catalog, nor Ray at module level: the
    runner decides where work runs and records it."""
    offenders, debt_used = [], set()
    for pkg in STAGE_PACKAGES:
        for path in sorted((ROOT / "pipeline" / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for mod, top in _imports(path):
                root = mod.split(".")[0]
                bad = (
                    mod == "pipeline.catalog"
                    or mod.startswith("pipeline.catalog.")
                    or root in ("prefect", "prefect_ray", "flows")
                    or (root == "ray" and top)
                )
                if mod == "pipeline.executor" or mod.startswith("pipeline.executor."):
                    if rel in FAN_OUT_DEBT:
                        debt_used.add(rel)
                    else:
                        bad = True
                if bad:
                    offenders.append(f"{rel} imports {mod}")
    assert not offenders, offenders
    assert debt_used == set(FAN_OUT_DEBT), f"no longer fan out themselves: {set(FAN_OUT_DEBT) - debt_used}"
