"""The layout holds together: every stage has a flow, a CLI command, schemas for its tables, a docs page and a
deployment; scheduled deployments run real flows; the library never imports the orchestration layer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

# stage: (flow in flows/stages.py, CLI command, tables it writes (publish: the datasets it releases), docs page)
STAGES = {
    "synthesize": ("synthesize_flow", "synth", ["tasks"], "synthesize"),
    "validate": ("validate_flow", "validate", ["validation"], "validate"),
    "decontaminate": ("decontaminate_flow", "decontam", ["contamination", "dedup"], "decontaminate"),
    "rollout": ("rollout_flow", "rollout", ["trajectories"], "rollout"),
    "evaluate": ("evaluate_flow", "eval", ["evaluations"], "evaluate"),
    "curate": ("curate_flow", "curate", ["warmup", "sft", "critic", "curation_drops"], "curate"),
    "publish": ("publish_flow", "publish", ["warmup", "sft", "critic"], "publish"),
}
STAGE_PACKAGES = ["synth", "validate", "decontam", "llm", "rollout", "evaluate", "curate", "publish"]


def _commands() -> set[str]:
    import typer.main

    from flows.cli import app

    return set(typer.main.get_command(app).commands)


def _deployments() -> dict[str, dict]:
    return {d["name"]: d for d in yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]}


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_has_a_flow_command_schema_docs_page_and_deployment(stage):
    from flows import stages
    from schemas import table_names

    flow, command, tables, page = STAGES[stage]
    assert callable(getattr(stages, flow, None)), f"no flow flows.stages.{flow}"
    assert command in _commands(), f"no CLI command `opforge {command}`"
    assert set(tables) <= set(table_names()), f"tables without a schema: {set(tables) - set(table_names())}"
    doc = ROOT / "docs" / f"{page}.md"
    assert doc.is_file() and doc.read_text().startswith("# "), f"no docs page {doc.relative_to(ROOT)}"
    entry = [d for d in _deployments().values() if d["entrypoint"] == f"flows/stages.py:{flow}"]
    assert entry, f"no prefect.yaml deployment runs {flow}"


def test_the_end_to_end_flow_runs_every_stage_and_scheduled_deployments_exist():
    from flows import stages

    assert [n for n, _ in stages.END_TO_END if n != "dedup"] == list(STAGES)
    deps = _deployments()
    for d in deps.values():
        module, name = d["entrypoint"].split(":")
        assert module == "flows/stages.py" and callable(getattr(stages, name, None)), d["entrypoint"]
    scheduled = {n for n, d in deps.items() if d.get("schedules")}
    assert scheduled >= {"nightly-synthesize-decontaminate", "weekly-publish"}


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


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_the_library_never_imports_prefect_or_the_flows():
    offenders = []
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        for mod in _imports(path):
            if mod.split(".")[0] in ("prefect", "prefect_ray", "flows"):
                offenders.append(f"{path.relative_to(ROOT)} imports {mod}")
    assert not offenders, offenders
    for pkg in STAGE_PACKAGES:
        assert (ROOT / "pipeline" / pkg / "settings.py").is_file(), f"pipeline/{pkg} has no settings section"
