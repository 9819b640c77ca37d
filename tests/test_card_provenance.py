"""The data card's provenance comes from the catalog: runs and versions, the drop funnel with every stage's
reasons, the KernelBench pin, and what a CPU run did not check. The KernelBench source order is explicit."""

from __future__ import annotations

import re

from pipeline.catalog import Catalog
from pipeline.curate.settings import CurateSettings
from pipeline.curate.stage import curate
from pipeline.curate.synthetic import scenario
from pipeline.publish.lineage import card_provenance
from pipeline.publish.stage import publish_local
from pipeline.storage import DataStore
from tests._rows import row


def test_card_states_the_funnel_versions_pin_and_what_was_not_checked(data_root, tmp_path):
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    cat.start_run("r1", {}, "0.1.0 (git abc1234)")
    cat.record_stage("r1", "synthesize", rows_in=5, rows_out=5)
    cat.record_stage("r1", "validate", rows_in=5, rows_out=3, drop_reasons={"constant_output": 1, "nan_output": 1})
    cat.record_stage("r1", "decontaminate", rows_in=3, rows_out=2, drop_reasons={"exact_md5": 1})
    cat.record_stage("r1", "rollout", rows_in=0, rows_out=0, status="skipped", detail="needs a GPU")
    cat.record_facts(
        "r1",
        "decontaminate",
        {
            "reference_fingerprint": "f" * 64,
            "reference_problems": "270",
            "reference_source": "/somewhere/kernelbench",
            "reference_chosen_by": "environment (KERNELBENCH_PATH)",
        },
    )
    DataStore(data_root).write(
        "validation",
        [
            row(
                "validation",
                task_id=f"t{i}",
                valid=i < 3,
                reason="" if i < 3 else "constant_output",
                device="cpu",
                runtime_window_checked=False,
            )
            for i in range(5)
        ],
        "r1",
    )
    prov = card_provenance(cat, "r1")
    assert [f["stage"] for f in prov["funnel"]] == ["synthesize", "validate", "decontaminate", "rollout"]
    # An earlier attempt's publish row (killed after it was recorded) does not change what a rerun's card says.
    cat.record_stage("r1", "publish", rows_in=3, rows_out=3)
    assert card_provenance(cat, "r1")["funnel"] == prov["funnel"]
    s = scenario()
    res = curate(s["tasks"], s["validation"], s["contamination"], s["trajectories"], CurateSettings(), "r1")
    card = (publish_local(res, tmp_path / "rel", {"provenance": prov}) / "README.md").read_text()
    # Specific reasons, never collapsed into task_invalid; the decision run; the pin; the run's version.
    assert "`constant_output` 1, `nan_output` 1" in card and "`exact_md5` 1" in card
    assert re.search(r"\| decontamination runs \| [^\n]*`r1`", card)
    assert "sha256:" + "f" * 64 + " (270 problems, a local copy (kernelbench); environment" in card
    assert "/somewhere" not in card and "0.1.0 (git abc1234)" in card
    assert "3 of 3 valid tasks were validated on cpu only" in card and "runtime window was never checked" in card
    assert "no agent rollouts" in card


def test_kernelbench_source_explicit_then_environment_then_discovery(monkeypatch, tmp_path):
    from pipeline import kernelbench as kb

    monkeypatch.setenv("KERNELBENCH_PATH", str(tmp_path / "env"))
    assert kb.choose_source(str(tmp_path / "explicit")) == (
        str(tmp_path / "explicit"),
        "explicit (config kernelbench / --reference)",
    )
    # The environment wins over a discovered folder (../shared/kernelbench), whether or not one exists.
    monkeypatch.setattr(kb, "DEFAULT_CANDIDATES", (tmp_path,))
    assert kb.choose_source(None) == (str(tmp_path / "env"), "environment (KERNELBENCH_PATH)")
    monkeypatch.delenv("KERNELBENCH_PATH")
    assert kb.choose_source(None)[0] == str(tmp_path.resolve())
    monkeypatch.setattr(kb, "DEFAULT_CANDIDATES", (tmp_path / "absent",))
    assert kb.choose_source(None) == (kb.HF_DATASET, "discovered (HF dataset; no local copy found)")


def test_decontaminate_stage_pins_reference_and_candidates(prefect_harness, data_root, kernelbench_path, monkeypatch):
    """The flow records source, checksum, candidates' checksum, version and command line; empty code is never
    clean."""
    import json

    from pipeline.identity import task_id

    monkeypatch.setenv("KERNELBENCH_PATH", str(kernelbench_path))
    code = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.sin() * 2\n"
    DataStore(data_root).write(
        "tasks",
        [
            row("tasks", task_id=task_id(code), code=code, run_id="p1"),
            row("tasks", task_id="empty", code="", run_id="p1"),
        ],
        "p1",
    )
    from flows.stages import decontaminate_flow

    decontaminate_flow(overrides=[f"data_root={data_root}"], run_id="p1")
    cat = Catalog(data_root / "catalog.duckdb", data_root)
    facts = cat.facts("p1")["decontaminate"]
    from pipeline.kernelbench import fingerprint, load_reference

    assert facts["reference_fingerprint"] == fingerprint(load_reference(kernelbench_path))
    assert facts["reference_chosen_by"].startswith("environment") and len(facts["candidates_checksum"]) == 64
    assert "0.1.0" in facts["opforge_version"] and facts["command_line"]
    report = data_root / "reports" / "decontam" / "run_id=p1"
    pinned = json.loads((report / "provenance.json").read_text())
    html = (report / "report.html").read_text()
    assert facts["candidates_checksum"] in html and facts["opforge_version"] in html and "command:" in html
    assert facts["reference_fingerprint"] in html  # the report names the pin it was judged against
    assert pinned["reference_fingerprint"] == facts["reference_fingerprint"]
    con = {r["task_id"]: r for r in DataStore(data_root).read("contamination", "p1").to_pylist()}
    assert con["empty"]["contaminated"] and con["empty"]["reason"] == "empty_code"
    assert con[task_id(code)]["contaminated"] is False


def test_run_version_carries_the_commit():
    from pipeline.provenance import version

    v = version()
    assert v.startswith("0.1.0") and ("git " in v or "(" not in v)
