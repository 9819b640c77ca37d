"""The semantic view, functional confirmation and near_variant decision, through the real jail.

Paraphrases are generated from ../shared/kernelbench by the rewrite rules (one per kind) and verified numerically
equal to their source before use; the reference is a small subset of KernelBench (the sources and a few others),
so that the traces stay few. One decontamination run is shared by the tests of this module.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from pipeline.decontam.calibration.paraphrase import KINDS, Paraphrase, equivalent, paraphrase, tied_outputs
from pipeline.decontam.calibration.semantic_set import HAND_WRITTEN, mutate
from pipeline.decontam.settings import DecontamSettings
from pipeline.kernelbench import load_reference

# Small problems each rewrite kind applies to (the first that paraphrases and verifies is used).
SOURCES = {
    "functional": ["level2/76_Gemm_Add_ReLU", "level2/40_Matmul_Scaling_ResidualAdd", "level1/40_LayerNorm"],
    "formula": ["level1/23_Softmax", "level1/26_GELU_", "level1/40_LayerNorm"],
    "matmul": ["level2/76_Gemm_Add_ReLU", "level1/1_Square_matrix_multiplication_"],
    "conv_unfold": ["level2/1_Conv2D_ReLU_BiasAdd", "level2/85_Conv2d_GroupNorm_Scale_MaxPool_Clamp"],
    "reduction": ["level1/94_MSELoss", "level1/38_L1Norm_", "level1/100_HingeLoss"],
    "algebra": ["level2/40_Matmul_Scaling_ResidualAdd", "level2/76_Gemm_Add_ReLU"],
    "helpers": ["level2/76_Gemm_Add_ReLU", "level1/23_Softmax"],
}
# BatchNorm written out as a formula, and the functional rewrite whose bias would be tied to a same-size `scale` by
# registration order alone (the tensor mapping ties names first): both of level2/39.
BATCHNORM = "level2/39_Gemm_Scale_BatchNorm"
OTHERS = ["level1/19_ReLU", "level1/21_Sigmoid", "level1/2_Standard_matrix_multiplication_", "level1/38_L1Norm_"]
# Near-variants (one change of meaning) of problems in the reference: (task id, source, mutation, what changed)
VARIANTS = [
    ("variant:softmax_dim", "level1/23_Softmax", "move_dim", "_softmax"),
    ("variant:l1norm_dim", "level1/38_L1Norm_", "move_dim", "mean"),
]
HAND_SOFTMAX_DIM0 = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.max(dim=0, keepdim=True).values)
        return e / e.sum(dim=0, keepdim=True)

def get_inputs():
    return [torch.rand(4096, 393216)]

def get_init_inputs():
    return []
"""
# Outputs under the absolute tolerance: x * softmax(x) is not softmax(x) (apart by ~37% of outputs ~1e-5)
TINY_OTHER = HAND_SOFTMAX_DIM0.replace(
    "e = torch.exp(x - x.max(dim=0, keepdim=True).values)\n        return e / e.sum(dim=0, keepdim=True)",
    "return x * torch.softmax(x, dim=1)",
).replace("torch.rand(4096, 393216)", "torch.rand(256, 8192)")
# Near-variants the token views read as copies, or written out by hand: (task id, source, edits of the source's
# code, or None for HAND_SOFTMAX_DIM0; the evidence status of the run that showed another function)
SUM_AXIS = "level1/47_Sum_reduction_over_a_dimension"
BN_SOFTMAX = "level2/84_Gemm_BatchNorm_Scaling_Softmax"
NEAR_COPIES = [
    # the sum over another axis: outputs of other shapes
    ("nearcopy:sum_axis", SUM_AXIS, [("reduce_dim = 1", "reduce_dim = 2")], "output_shapes_differ; other axes"),
    # resized (the problem cannot take its inputs) with its softmax over the batch: the axes differ
    (
        "nearcopy:softmax_batch_resized",
        BN_SOFTMAX,
        [
            ("Softmax(dim=1)", "Softmax(dim=0)"),
            ("batch_size = 1024", "batch_size = 24"),
            ("features = 8192", "features = 72"),
        ],
        "not run: the problem does not take its inputs; other axes",
    ),
    # softmax written out over the batch axis: its max and its sum over another axis, one change of meaning
    ("nearcopy:hand_softmax_dim0", "level1/23_Softmax", None, "ran"),
]
# A copy with its window changed (kernel size, padding): outputs of other shapes, the same axes: scale, not meaning
MAXPOOL = "level1/41_Max_Pooling_1D"
RESIZED_COPY = (
    "copy:maxpool_window",
    MAXPOOL,
    [("kernel_size = 8", "kernel_size = 5"), ("padding     = 4", "padding = 2")],
)
# A one-op problem with its op swapped is another problem (softmax -> log-softmax is KernelBench's LogSoftmax):
# not a near-variant of the first (near_variant_min_kept).
SWAPPED = ("swapped:softmax_log", "level1/23_Softmax", "swap_op")
DIFFERENT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(torch.abs(x), dim=1) * 0.25

def get_inputs():
    return [torch.randn(8, 64)]

def get_init_inputs():
    return []
"""
# A task that tries to poison every later trace in its jailed process: it must change nothing but its own view.
HOSTILE = """
import torch
import torch.nn as nn
torch.matmul = lambda a, b: a
torch.nn.functional.linear = lambda x, w, b=None: x
torch.Tensor.__matmul__ = lambda a, b: a

class Model(nn.Module):
    def forward(self, x):
        return torch.matmul(x, x)

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def semantic_run(kernelbench_path, tmp_path_factory):
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    rng = random.Random(0)
    cands, sources = [], {}
    for kind in KINDS:
        for rid in SOURCES[kind]:
            p = paraphrase(by_id[rid].code, [kind], rng)
            got = tied_outputs(by_id[rid].code, p) if p is not None else None
            if got is not None and equivalent(*got):
                cands.append((f"para:{kind}", p.code))
                sources[f"para:{kind}"] = rid
                break
    for kind in ("formula", "functional"):
        p = paraphrase(by_id[BATCHNORM].code, [kind], rng)
        assert p is not None and equivalent(*tied_outputs(by_id[BATCHNORM].code, p)), kind
        cands.append((f"batchnorm:{kind}", p.code))
        sources[f"batchnorm:{kind}"] = BATCHNORM
        if kind == "functional":  # its tensors renamed too: tied by the order the source assigns them
            renamed = dict(zip(("gemm_weight", "gemm_bias", "bn_weight", "bn_bias"), ("w1", "b1", "gam", "bet")))
            code = p.code
            for a, b in renamed.items():
                code = re.sub(rf"\b{a}\b", b, code)
            q = Paraphrase(p.source, p.kinds, code, {k: renamed.get(v, v) for k, v in p.renames.items()})
            assert equivalent(*tied_outputs(by_id[BATCHNORM].code, q))
            cands.append(("batchnorm:renamed", code))
            sources["batchnorm:renamed"] = BATCHNORM
    cands.append(("batchnorm:hand", HAND_WRITTEN[BATCHNORM]))  # written out by hand (batch statistics)
    sources["batchnorm:hand"] = BATCHNORM
    cands.append(("hand:level1/23_Softmax", HAND_WRITTEN["level1/23_Softmax"]))
    sources["hand:level1/23_Softmax"] = "level1/23_Softmax"
    cands += [(tid, mutate(by_id[src].code, mode, 0)) for tid, src, mode, _ in VARIANTS]
    cands.append((SWAPPED[0], mutate(by_id[SWAPPED[1]].code, SWAPPED[2], 0)))
    for tid, src, edits, _ in NEAR_COPIES:
        code = by_id[src].code if edits else HAND_SOFTMAX_DIM0
        for a, b in edits or []:
            assert a in code, (src, a)
            code = code.replace(a, b)
        cands.append((tid, code))
    tid, src, edits = RESIZED_COPY
    code = by_id[src].code
    for a, b in edits:
        assert a in code, (src, a)
        code = code.replace(a, b)
    cands.append((tid, code))
    cands += [("different", DIFFERENT), ("hostile", HOSTILE), ("different:tiny_outputs", TINY_OTHER)]
    refs = sorted({*sources.values(), *OTHERS, SUM_AXIS, BN_SOFTMAX, MAXPOOL})
    reference = [by_id[r] for r in refs]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path_factory.mktemp("semcache")))
    table = decontaminate(cands, reference, settings)
    keep = decontaminate(cands, reference, settings.model_copy(update={"near_variant_policy": "keep"}))
    return {
        "rows": {r["task_id"]: r for r in table.to_pylist()},
        "table": table,
        "cands": cands,
        "reference": reference,
        "sources": sources,
        "settings": settings,
        "keep": {r["task_id"]: r for r in keep.to_pylist()},
    }


def test_every_rewrite_kind_has_a_verified_paraphrase(semantic_run):
    assert {f"para:{k}" for k in KINDS} <= set(semantic_run["sources"])


@pytest.mark.parametrize("kind", [*KINDS, "hand"])
def test_paraphrase_is_flagged_with_its_source(semantic_run, kind):
    tid = next(
        t
        for t in semantic_run["sources"]
        if t.split(":")[0] in ("para", "hand") and (t == f"para:{kind}" or (kind == "hand" and t.startswith("hand:")))
    )
    r = semantic_run["rows"][tid]
    assert r["contaminated"], (r["semantic_status"], r["semantic_score"], r["evidence"][:600])
    assert r["nearest_ref"] == semantic_run["sources"][tid], r
    assert r["view"] in ("functional", "canon+ops", "ops", "md5"), r
    if r["view"] == "functional":
        ev = json.loads(r["evidence"])
        assert ev["max_abs_diff"] <= 1e-4 * (1 + ev["ref_scale"]) and ev["graph_candidate"], ev


@pytest.mark.parametrize("kind", ["formula", "functional", "renamed", "hand"])
def test_batchnorm_rewrite_is_confirmed_with_its_source(semantic_run, kind):
    r = semantic_run["rows"][f"batchnorm:{kind}"]
    assert r["contaminated"] and r["reason"] == "functional_match", (r["reason"], r["evidence"][:600])
    assert r["nearest_ref"] == BATCHNORM and r["view"] == "functional"
    ev = json.loads(r["evidence"])
    assert ev["max_abs_diff"] <= 1e-4 * (1 + ev["ref_scale"]), ev
    if kind == "functional":  # the model's own bias tied to the module's bias, not to `scale` (same size)
        assert ["gemm_bias", "gemm.bias", "name"] in ev["mapping"], ev["mapping"]
    if kind == "renamed":  # no name in common: tied in the order the source assigns them, not to `scale`
        assert ["b1", "gemm.bias", "shape"] in ev["mapping"], ev["mapping"]


@pytest.mark.parametrize("tid,src,mode,op", VARIANTS)
def test_near_variant_is_its_own_decision_with_the_difference(semantic_run, tid, src, mode, op):
    r = semantic_run["rows"][tid]
    assert r["reason"] == "near_variant" and r["near_variant"] and r["contaminated"], r
    assert r["semantic_ref"] == src and r["nearest_ref"] == src and r["view"] == "semantic"
    ev = json.loads(r["evidence"])
    diff = ev["difference"]
    assert 1 <= diff["n_changes"] <= 1 and diff["substitution"], diff
    assert any(x.startswith(op) for x in diff["added"] + diff["removed"]), diff  # the changed op is named
    assert not any(t["equivalent"] for t in ev["tried"]) and ev["graph_candidate"] and ev["graph_reference"]


@pytest.mark.parametrize("tid,src,edits,status", NEAR_COPIES)
def test_a_near_variant_read_as_a_copy_or_written_out_is_a_near_variant(semantic_run, tid, src, edits, status):
    r, kept = semantic_run["rows"][tid], semantic_run["keep"][tid]
    assert r["reason"] == "near_variant" and r["near_variant"] and r["contaminated"], (r["reason"], r["evidence"])
    assert r["nearest_ref"] == src and r["view"] == "semantic"
    assert kept["reason"] == "near_variant" and not kept["contaminated"]  # the auditor's policy decides
    ev = json.loads(r["evidence"])
    assert ev["difference"]["n_changes"] == 1 and ev["difference"]["substitution"], ev["difference"]
    assert next(t for t in ev["tried"] if t["ref"] == src)["status"] == status, ev["tried"]
    if edits is None:  # one change of meaning: the axis of its max and of its sum
        assert {x.split("[")[0] for x in ev["difference"]["added"]} == {"amax", "sum"}, ev["difference"]


def test_a_copy_with_another_window_stays_a_copy(semantic_run):
    r = semantic_run["rows"][RESIZED_COPY[0]]
    assert r["contaminated"] and r["reason"] in ("canonical_and_ops", "same_ops_signature"), (
        r["reason"],
        r["evidence"],
    )
    assert r["nearest_ref"] == MAXPOOL and not r["near_variant"]
    assert semantic_run["keep"][RESIZED_COPY[0]]["contaminated"]  # a copy, whatever the near-variant policy


def test_an_op_swapped_in_a_one_op_problem_is_not_a_near_variant(semantic_run):
    r = semantic_run["rows"][SWAPPED[0]]
    assert r["reason"] != "near_variant" and not r["near_variant"] and not r["contaminated"], r
    assert r["semantic_status"] == "traced"


def test_near_variant_policy_keep_reports_without_removing(semantic_run):
    variants = {tid for tid, *_ in VARIANTS + NEAR_COPIES}
    for tid in variants:
        kept = semantic_run["keep"][tid]
        assert kept["reason"] == "near_variant" and kept["near_variant"] and not kept["contaminated"], kept
    # the policy changes near-variants only
    for tid, row in semantic_run["rows"].items():
        if tid not in variants:
            assert semantic_run["keep"][tid]["contaminated"] == row["contaminated"], tid


def test_outputs_under_the_absolute_tolerance_are_not_a_match(semantic_run):
    assert "x * torch.softmax" in TINY_OTHER and "8192" in TINY_OTHER
    r = semantic_run["rows"]["different:tiny_outputs"]
    assert not r["contaminated"] and r["reason"] != "functional_match", (r["reason"], r["evidence"][:400])
    tried = json.loads(r["evidence"])["tried"] if r["evidence"] else []
    assert any(t["ref"] == "level1/23_Softmax" and not t["equivalent"] for t in tried), tried  # it ran beside it


def test_different_and_hostile_tasks_are_not_flagged(semantic_run):
    r = semantic_run["rows"]["different"]
    assert not r["contaminated"] and r["semantic_status"] == "traced" and not r["near_variant"], r
    # the hostile task patches torch in its own process: it can only mislead the verdict about itself (here it made
    # the reference's matmul an identity too, and is dropped); other rows are checked by the next test
    assert semantic_run["rows"]["hostile"]["semantic_status"] == "traced"


def test_a_hostile_task_cannot_alter_other_traces(semantic_run):
    from pipeline.decontam.semantic import semantic_views

    settings = semantic_run["settings"].model_copy(
        update={"semantic_cache_dir": semantic_run["settings"].semantic_cache_dir + "-fresh"}
    )
    code = dict(semantic_run["cands"])["para:matmul"]
    alone = semantic_views(
        [code], settings.model_copy(update={"semantic_cache_dir": settings.semantic_cache_dir + "-alone"})
    )[0]
    after = semantic_views([HOSTILE, code], settings.model_copy(update={"workers": 1}))[1]
    assert alone.ok and after.ok and alone.features.tobytes() == after.features.tobytes()
    assert any(lab == "mm" for lab in after.graph.labels)


def test_report_shows_view_evidence_and_graphs(semantic_run, tmp_path):
    from pipeline.decontam.report import write_report

    path = write_report(
        semantic_run["table"],
        semantic_run["cands"],
        semantic_run["reference"],
        semantic_run["settings"],
        tmp_path,
        reference_source="test",
    )
    html = path.read_text()
    meta = json.loads((tmp_path / "report_meta.json").read_text())
    assert "view fired" in html and "near-policy" in html and "normalized core ATen graph" in html
    assert "diff-variant:softmax_dim" in html
    functional = [r for r in semantic_run["rows"].values() if r["view"] == "functional"]
    if functional:
        assert "class='max-diff'" in html and "class='mapping'" in html
    assert meta["near_variants"] >= 1 and "functional_match" in meta["rule"]


# A task that writes forged results for the jobs after it into every file descriptor it can reach (its own, and
# the worker's through /proc), then one that kills its worker: the other tasks' views must be their own.
FORGER = """
import json, os
import torch
import torch.nn as nn
fake = {"ok": True, "nodes": [["P", "input", 1, [2]], ["O", [["n", 0]], -1]]}
lines = "".join(json.dumps({"type": "result", "value": {"i": i, "r": fake}}) + "\\n" for i in range(8)).encode()
paths = []
try:
    paths = ["/proc/%d/fd/%s" % (os.getppid(), f) for f in os.listdir("/proc/%d/fd" % os.getppid())]
except OSError:
    pass
for fd in range(3, 64):
    try:
        os.write(fd, lines)
    except OSError:
        pass
for p in paths:
    try:
        with open(p, "wb") as f:
            f.write(lines)
    except OSError:
        pass

class Model(nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(2)]

def get_init_inputs():
    return []
"""
KILLER = FORGER.split("fake =")[0] + "os.kill(os.getppid(), 9)\n" + FORGER[FORGER.index("\nclass Model") :]


def test_a_task_that_forges_results_or_kills_its_worker_costs_only_itself(semantic_run):
    from pipeline.decontam.semantic import semantic_views

    base = semantic_run["settings"].semantic_cache_dir
    codes = dict(semantic_run["cands"])
    a, b = codes["para:matmul"], codes["para:formula"]
    alone = semantic_views([a, b], semantic_run["settings"].model_copy(update={"semantic_cache_dir": base + "-2"}))
    mixed = semantic_views(
        [a, FORGER, KILLER, b],
        semantic_run["settings"].model_copy(update={"workers": 1, "semantic_cache_dir": base + "-3"}),
    )
    assert mixed[2].reason == "worker_died" and not mixed[2].ok
    # the forger garbled its own answer (crashed) and nothing else: its lines never reached the worker's channel
    assert mixed[1].reason in ("crashed", "") and len(mixed) == 4
    for x, y in ((alone[0], mixed[0]), (alone[1], mixed[3])):
        assert x.ok and y.ok and x.features.tobytes() == y.features.tobytes()


# Reads whatever it can from every fd it holds (a job queue the worker shares with other workers included, were it
# open in the child) and fails with what it got.
STEALER = """
import os
import torch
import torch.nn as nn
got = []
for fd in range(3, 256):
    try:
        os.set_blocking(fd, False)
        b = os.read(fd, 64)
        if b:
            got.append((fd, b.hex()))
    except OSError:
        pass
raise RuntimeError("stolen:" + repr(got))
"""


def test_workers_share_one_queue_and_neither_a_killer_nor_a_thief_changes_other_jobs(semantic_run):
    """Two workers take jobs from one queue (semantic._round): a task that kills its worker costs only itself (the
    other worker takes the rest), and a task's child holds no fd of the queue (it reads nothing from any fd); the
    other tasks' views are those of a run with one worker and no queue."""
    from pipeline.decontam.semantic import semantic_views

    base = semantic_run["settings"].semantic_cache_dir
    codes = dict(semantic_run["cands"])
    a, b, c = codes["para:matmul"], codes["para:formula"], codes["batchnorm:hand"]
    one = semantic_views(
        [a, b, c], semantic_run["settings"].model_copy(update={"workers": 1, "semantic_cache_dir": base + "-q1"})
    )
    two = semantic_views(
        [a, STEALER, KILLER, b, c],
        semantic_run["settings"].model_copy(update={"workers": 2, "semantic_cache_dir": base + "-q2"}),
    )
    assert two[2].reason == "worker_died" and not two[2].ok
    assert not two[1].ok and "stolen:[]" in two[1].error, two[1].error
    for x, y in zip(one, (two[0], two[3], two[4])):
        assert x.ok and y.ok and x.features.tobytes() == y.features.tobytes()


def test_jobs_of_one_affinity_run_together_and_a_killer_among_them_costs_only_itself(semantic_run):
    """Jobs grouped by an affinity key (semantic.run_jobs: confirmations of candidates built at the same arguments)
    are dealt a whole group at a time: a task that kills its worker in the middle of its group costs only itself
    (the group's jobs after it run in a new worker), and every other job gives what it gives alone."""
    from pipeline.decontam.semantic import run_jobs

    settings = semantic_run["settings"]
    codes = dict(semantic_run["cands"])
    a, b, c = codes["para:matmul"], codes["para:formula"], codes["batchnorm:hand"]
    limit = settings.trace_timeout_s
    one = run_jobs([["trace", x] for x in (a, b, c)], settings.model_copy(update={"workers": 1}), limit)
    two = run_jobs([["trace", x] for x in (a, KILLER, b, c)], settings, limit, affinity=["g", "g", "g", "h"])
    assert two[1]["reason"] == "worker_died" and not two[1]["ok"]
    for x, y in zip(one, (two[0], two[2], two[3])):
        assert x["ok"] and y["ok"] and x["nodes"] == y["nodes"]


def test_a_small_problem_rewritten_past_the_similarity_floor_is_confirmed_by_its_shapes(semantic_run):
    """Sigmoid written as 0.5 * (tanh(x / 2) + 1) shares a fifth of its graph with KernelBench's Sigmoid, below
    same_inputs_floor: it is run beside every problem with its input and output shapes (same_shapes_max) and found;
    a different function of the same shapes is run beside the same problems and stays clean. Without the rule (0),
    and without its size-free twin (same_ranks_max), the rewrite passes."""
    from pipeline.decontam.stage import decontaminate

    src = next(r.code for r in semantic_run["reference"] if r.ref_id == "level1/21_Sigmoid")
    para = re.sub(r"return torch\.sigmoid\(x\)", "return 0.5 * (torch.tanh(x * 0.5) + 1)", src)
    other = re.sub(r"return torch\.sigmoid\(x\)", "return torch.sin(x) * x", src)
    assert para != src and other != src
    settings = semantic_run["settings"]
    rows = decontaminate([("para", para), ("other", other)], semantic_run["reference"], settings).to_pylist()
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    assert rows[0]["semantic_ref"] == "level1/21_Sigmoid" and rows[0]["semantic_score"] < settings.same_inputs_floor
    assert not rows[1]["contaminated"] and '"tried"' in rows[1]["evidence"], rows[1]
    off = settings.model_copy(update={"same_shapes_max": 0, "same_ranks_max": 0, "probe_max": 0, "same_init_max": 0})
    rows = decontaminate([("para", para)], semantic_run["reference"], off).to_pylist()
    assert not rows[0]["contaminated"], rows[0]


def test_a_problem_too_large_for_two_rows_is_confirmed_on_inputs_cut_to_fit(kernelbench_path, tmp_path):
    """KernelBench's RMSNorm takes 112 x 64 x 512 x 512 inputs: 2 rows are 33M elements, over confirm_max_numel.
    Both sides then run on 2 rows with their trailing dims halved until they fit (jailed._cut): a rewrite of it
    (reciprocal square root of a sum over the channels) is a functional match there, and a different normalization
    of the same shapes (by the largest magnitude) is not."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level1/36_RMSNorm_"], by_id["level1/19_ReLU"]]
    src = ref[0].code
    body = "return x * torch.rsqrt(x.square().sum(1, keepdim=True) / self.num_features + self.eps)"
    para = re.sub(r"rms = torch\.sqrt\(.*\n(.*\n)*?\s*return x / rms", body, src)
    other = re.sub(r"rms = torch\.sqrt\(.*\n(.*\n)*?\s*return x / rms", "return x / (x.abs().amax(1, True) + 1)", src)
    assert para != src and other != src and body in para
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    rows = decontaminate([("para", para), ("other", other)], ref, settings).to_pylist()
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level1/36_RMSNorm_" and ev["inputs"] == "cut" and ev["same_inputs"] is False, ev
    assert rows[1]["reason"] != "functional_match", rows[1]


def test_functions_equal_only_on_unit_inputs_are_not_a_match(kernelbench_path, tmp_path):
    """KernelBench's ReLU takes inputs too large to draw from get_inputs(): both sides run on uniform [0, 1) draws,
    where ReLU6 (or HardTanh, ELU, the identity) equals ReLU. The match is tried again on signed, wider draws
    (jailed._signed_check): ReLU written as a mask stays a functional match, ReLU6 on signed inputs is not one."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level1/19_ReLU"]]
    src = ref[0].code
    assert "torch.relu(x)" in src
    para = src.replace("torch.relu(x)", "x * (x > 0).to(x.dtype)")
    relu6 = src.replace("torch.relu(x)", "torch.clamp(x, 0.0, 6.0)").replace("torch.rand(", "4 * torch.randn(")
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    rows = decontaminate([("para", para), ("relu6", relu6)], ref, settings).to_pylist()
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    assert [t["equivalent"] for t in tried if t["ref"] == "level1/19_ReLU"] == [False], tried


GELU_SIGMOID_FEWER_ROWS = """
import math
import torch
import torch.nn as nn

_K = 2.0 * math.sqrt(2.0 / math.pi)


class Model(nn.Module):
    def __init__(self, cubic_coeff: float = 0.044715):
        super().__init__()
        self.cubic_coeff = cubic_coeff

    def forward(self, x):
        inner = torch.addcmul(x, x * x, x, value=self.cubic_coeff)
        return x * torch.sigmoid(_K * inner)


rows = 4096
cols = 8192


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
"""


def test_a_paraphrase_with_another_batch_size_is_shortlisted_and_confirmed(kernelbench_path, tmp_path):
    """KernelBench's NewGELU (tanh form, 8192 rows) as x * sigmoid(2k(x + a x^3)) on 4096 rows: its graph is far from
    the problem's, and the same-input shortlist keyed every input's shape, batch included, so the pair was never
    run. Problems whose inputs differ in their first dims alone are shortlisted too: a functional match."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level1/88_MinGPTNewGelu"], by_id["level1/25_Swish"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    row = decontaminate([("gelu", GELU_SIGMOID_FEWER_ROWS)], ref, settings).to_pylist()[0]
    assert row["contaminated"] and row["reason"] == "functional_match", row
    assert json.loads(row["evidence"])["ref"] == "level1/88_MinGPTNewGelu"


def test_a_forward_that_reads_its_data_is_traced_on_real_tensors(kernelbench_path, tmp_path):
    """A guard on the data (`if not torch.isfinite(x).all()`) or a scale read with `.item()` cannot run on meta
    tensors: the semantic view was lost (`exception`) and the rewrite went by on its text alone. Such a forward is
    traced again on small real tensors (jailed._real_build) and confirmed like any other."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level1/36_RMSNorm_"], by_id["level1/19_ReLU"]]
    src = ref[0].code
    body = (
        "if not torch.isfinite(x).all():\n            raise ValueError('non-finite input')\n"
        "        peak = float(x.abs().amax().item()) or 1.0\n        y = x / peak\n"
        "        return y * torch.rsqrt((y * y).sum(1, keepdim=True) / self.num_features + self.eps / peak**2)"
    )
    para = re.sub(r"rms = torch\.sqrt\(.*\n(.*\n)*?\s*return x / rms", body, src)
    assert body in para
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    row = decontaminate([("guarded", para)], ref, settings).to_pylist()[0]
    assert row["semantic_status"] == "traced", row
    assert row["contaminated"] and row["reason"] == "functional_match", {k: v for k, v in row.items() if k != "graph"}


AFFINE_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)
        self.scale = nn.Parameter(torch.randn(64))
        self.shift = nn.Parameter(torch.randn(64))

    def forward(self, x):
        return torch.tanh(self.fc(x) * self.scale + self.shift)

def get_inputs():
    return [torch.randn(8, 64)]

def get_init_inputs():
    return []
"""
# The same function with its tensors declared in another order, under other names, the weight stored as (in, out),
# tanh written out
AFFINE_COPY = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.beta = nn.Parameter(torch.zeros(64))
        self.gain = nn.Parameter(torch.ones(64))
        self.w = nn.Parameter(torch.randn(64, 64))
        self.b = nn.Parameter(torch.zeros(64))

    def forward(self, x):
        e = torch.exp(-2 * (torch.addmm(self.b, x, self.w) * self.gain + self.beta))
        return (1 - e) / (1 + e)

def get_inputs():
    return [torch.randn(8, 64)]

def get_init_inputs():
    return []
"""


def test_tensors_that_only_their_role_tells_apart_are_tied_again_until_the_outputs_match(tmp_path):
    """_match ties same-shape tensors in the order they are declared and a square weight as it is stored: here
    every vector lands on the wrong one and the weight is the transpose. Outputs that differ try the other ties
    (jailed._retie: same-shape tensors permuted, the square matrix transposed, and their combinations): the copy is
    found with the right mapping; a different function (a sign flipped) is not, under any tie."""
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import RefProblem

    ref = [RefProblem("level9/1_Affine", 9, "1_Affine", AFFINE_REF)]
    other = AFFINE_COPY.replace("+ self.beta))", "- self.beta))")
    assert other != AFFINE_COPY
    settings = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "cache"))
    rows = decontaminate([("copy", AFFINE_COPY), ("other", other)], ref, settings).to_pylist()
    assert rows[0]["reason"] == "functional_match", rows[0]
    tied = {c: (r, how) for c, r, how in json.loads(rows[0]["evidence"])["mapping"]}
    want = {"beta": ("shift", "shape"), "gain": ("scale", "shape"), "w": ("fc.weight", "transpose")}
    assert tied == {**want, "b": ("fc.bias", "shape")}, tied
    assert rows[1]["reason"] != "functional_match", rows[1]


def test_the_in_process_cache_is_per_cache_directory(tmp_path):
    """A record cached under one directory is not served for another: a run pointed at a fresh cache traces again,
    whatever this process read before (the in-process copy was keyed by code alone)."""
    import pipeline.decontam.semantic as sem

    a, b = tmp_path / "a", tmp_path / "b"
    sem._cache_put(a, "k" * 32, {"ok": True, "from": "a"})
    assert sem._cache_get(a, "k" * 32) == {"ok": True, "from": "a"}
    assert sem._cache_get(b, "k" * 32) is None
    sem._MEM.clear()  # what a new process reads: the file under a
    assert sem._cache_get(a, "k" * 32) == {"ok": True, "from": "a"}


def test_the_cache_makes_its_directories_when_a_write_needs_them(tmp_path):
    """_cache_put makes a subdirectory only where writing into it fails (not before each report): the first report,
    and one after the directory was removed, are written, whole, with no temporary file left."""
    import shutil

    import pipeline.decontam.semantic as sem

    root = tmp_path / "new" / "cache"
    sem._cache_put(root, "ab" + "c" * 30, {"ok": True, "n": 1})
    shutil.rmtree(root)
    sem._cache_put(root, "ab" + "d" * 30, {"ok": True, "n": 2})
    sem._cache_put(root, "ab" + "e" * 30, {"ok": True, "n": 3})
    sem._MEM.clear()
    assert sem._cache_get(root, "ab" + "c" * 30) is None  # removed with its directory
    assert [sem._cache_get(root, "ab" + x * 30)["n"] for x in "de"] == [2, 3]
    assert sorted(f.suffix for f in (root / "ab").iterdir()) == [".json", ".json"]


def test_other_ties_are_tried_at_the_configured_tolerance(tmp_path):
    """Whether a confirmation tries the other ties follows decontam.confirm_atol/_rtol (sent to the jailed worker;
    reports made under other tolerances are not reused): at a tolerance loose enough for the first tie's outputs,
    the first tie is kept; at the default, the right one is found."""
    from pipeline.decontam.stage import decontaminate
    from pipeline.kernelbench import RefProblem

    ref = [RefProblem("level9/1_Affine", 9, "1_Affine", AFFINE_REF)]
    loose = DecontamSettings(
        semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "cache"), confirm_atol=1e6, confirm_rtol=1e6
    )
    row = decontaminate([("copy", AFFINE_COPY)], ref, loose).to_pylist()[0]
    assert row["reason"] == "functional_match", row
    tied = {c: how for c, _, how in json.loads(row["evidence"])["mapping"]}
    assert "transpose" not in tied.values(), tied  # the weight as stored: no other tie was run
    default = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "cache"))
    row = decontaminate([("copy", AFFINE_COPY)], ref, default).to_pylist()[0]
    assert json.loads(row["evidence"])["mapping"] and row["reason"] == "functional_match"
    assert {c: how for c, _, how in json.loads(row["evidence"])["mapping"]}["w"] == "transpose"


GEMM_ADD_RELU_RESIZED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out, offset_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * n_in ** -0.5)
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, inp):
        return inp.mm(self.weight.t()).add(self.offset).ACT


batch_size = 512
in_features = 768
out_features = 384


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, (out_features,)]
"""


def test_a_rewrite_at_other_sizes_is_the_problems_structure_and_a_building_block_is_not(kernelbench_path, tmp_path):
    """KernelBench's BatchNorm written out at other sizes: the problem's model, built at its own sizes, cannot take
    the candidate's inputs, so no run can compare them, but the whole graph is the problem's (sizes aside):
    `semantic_structure` (with the problem not rebuilt at the candidate's arguments, `rebuilt_max` 0). Gemm + bias
    + ReLU rewritten (a raw weight, `mm`, `add`, `clamp_min`) at other sizes is a building block of three ops
    (fewer than `structure_min_ops`): an independent Linear + ReLU at other sizes is the same graph, so structure
    alone flags nothing (clean; flagged with the knob at 0); rebuilt at the candidate's arguments, a run compares
    them: `functional_match`. The same rewrite ending in a sigmoid is another function: clean."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id[k] for k in ("level2/76_Gemm_Add_ReLU", "level1/33_BatchNorm", "level1/19_ReLU", "level1/21_Sigmoid")]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    cands = [
        ("relu", GEMM_ADD_RELU_RESIZED.replace("ACT", "clamp_min(0.0)")),
        ("sigmoid", GEMM_ADD_RELU_RESIZED.replace("ACT", "sigmoid()")),
        ("batch", NORM_OVER_AXIS.replace("AXES", "(0, 2, 3)")),
    ]
    relu, sigmoid, batch = decontaminate(cands, ref, settings.model_copy(update={"rebuilt_max": 0})).to_pylist()
    assert batch["contaminated"] and batch["reason"] == "semantic_structure", batch
    ev = json.loads(batch["evidence"])
    assert ev["kind"] == "structure" and ev["ref"] == "level1/33_BatchNorm" and ev["graph_reference"]
    assert not relu["contaminated"] and relu["reason"] == "", relu
    assert not sigmoid["contaminated"] and sigmoid["reason"] == "", sigmoid
    any_size = settings.model_copy(update={"rebuilt_max": 0, "structure_min_ops": 0})
    relu = decontaminate(cands[:1], ref, any_size).to_pylist()[0]
    assert relu["reason"] == "semantic_structure" and json.loads(relu["evidence"])["ref"] == "level2/76_Gemm_Add_ReLU"
    relu, sigmoid, _ = decontaminate(cands, ref, settings).to_pylist()
    assert relu["reason"] == "functional_match" and json.loads(relu["evidence"])["rebuilt_at"], relu
    assert not sigmoid["contaminated"] and sigmoid["reason"] == "", sigmoid


NORM_OVER_AXIS = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        mu = x.mean(dim=AXES, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=AXES, keepdim=True)
        y = (x - mu) / torch.sqrt(var + 1e-5)
        return y * self.gamma[:, None, None] + self.beta[:, None, None]


def get_inputs():
    return [torch.rand(8, 24, 20, 20)]


def get_init_inputs():
    return [24]
"""


def test_the_same_ops_over_other_axes_at_other_sizes_are_not_the_problems_structure(kernelbench_path, tmp_path):
    """Batch norm written out at other sizes is KernelBench's BatchNorm (`semantic_structure`); the same formula over
    the channels of each pixel (a ConvNeXt layer norm) has the same ops over other axes: no run can compare it with
    the problem at its sizes, and it is not a copy but a near_variant (reported with the axes; removed or kept by
    `near_variant_policy`, as softmax over another axis is)."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level1/33_BatchNorm"], by_id["level1/40_LayerNorm"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    cands = [("batch", NORM_OVER_AXIS.replace("AXES", "(0, 2, 3)")), ("pixel", NORM_OVER_AXIS.replace("AXES", "1"))]
    batch, pixel = decontaminate(cands, ref, settings).to_pylist()
    assert batch["contaminated"] and batch["nearest_ref"] == "level1/33_BatchNorm", batch
    # BatchNorm rebuilt at the candidate's channels takes its inputs: the run finds the copy (without the rebuilt
    # problem, the whole graph at other sizes: semantic_structure, as test_a_rewrite_at_other_sizes_... shows)
    assert batch["reason"] in ("functional_match", "semantic_structure") and not batch["near_variant"], batch
    assert pixel["reason"] == "near_variant" and pixel["near_variant"], pixel
    diff = json.loads(pixel["evidence"])["difference"]
    assert diff["level"] == "axes" and diff["candidate_axes"] != diff["reference_axes"], diff
    keep = DecontamSettings(**{**settings.model_dump(), "near_variant_policy": "keep"})
    assert not decontaminate(cands[1:], ref, keep).to_pylist()[0]["contaminated"]


POOL_BY_UNFOLD = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        n, c, h, w = x.shape
        cols = F.unfold(x, kernel_size=self.k, stride=self.k).view(n, c, self.k * self.k, -1)
        return REDUCE.view(n, c, (h - self.k) // self.k + 1, (w - self.k) // self.k + 1)


def get_inputs():
    return [torch.rand(4, 16, 96, 96)]


def get_init_inputs():
    return [11]
"""

CONV1D_BY_UNFOLD = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.k = k
        self.w = nn.Parameter(torch.randn(cout, cin, k))

    def forward(self, x):
        return torch.einsum("bclk,ock->bol", x.unfold(2, self.k, 1), self.w)


def get_inputs():
    return [torch.rand(8, 64, 1000)]


def get_init_inputs():
    return [64, 128, 3]
"""

CONV2D_IM2COL_TRANSPOSED = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.bank = nn.Parameter(torch.randn(3 * 11 * 11, 96))  # the filters flattened, stored (C*k*k, F)
        self.shift = nn.Parameter(torch.zeros(96))

    def forward(self, img):
        n, _, h, w = img.shape
        cols = F.unfold(img, 11, padding=2, stride=4)
        out = torch.matmul(cols.transpose(1, 2), self.bank) + self.shift
        return out.transpose(1, 2).reshape(n, 96, (h + 4 - 11) // 4 + 1, (w + 4 - 11) // 4 + 1)


def get_inputs():
    return [torch.rand(4, 3, 512, 512)]


def get_init_inputs():
    return [1000]
"""


CONV2D_FILTER_HWIO = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.taps = nn.Parameter(torch.randn(11, 11, 3, 96))  # the filters as (kh, kw, in, out)
        self.shift = nn.Parameter(torch.zeros(96))

    def forward(self, img):
        n, _, h, w = img.shape
        cols = F.unfold(img, 11, padding=2, stride=4).view(n, 3, 11, 11, -1)
        out = torch.einsum("ncijl,ijco->nol", cols, self.taps) + self.shift[None, :, None]
        return out.reshape(n, 96, (h + 4 - 11) // 4 + 1, (w + 4 - 11) // 4 + 1)


def get_inputs():
    return [torch.rand(2, 3, 67, 67)]


def get_init_inputs():
    return [1000]
"""


def test_a_rewrite_through_unfold_at_other_sizes_is_confirmed_by_ranks_and_parameter_sizes(kernelbench_path, tmp_path):
    """Pooling and convolutions written through unfold, at other sizes: little of the graph and none of the shapes
    are the problem's, so neither the similarity nor the shapes shortlist the pair. Problems whose inputs and
    outputs have the same ranks and whose parameters the same element counts are run beside them
    (same_ranks_max): functional matches, the filter bank stored transposed tied as such, the large images run cut
    (jailed._cheap_first: a pair only a match can flag runs on smaller inputs first), a filter stored as (kh, kw,
    in, out) tied by an order of its dims. A window's mean of
    squares is another function of the same ranks: clean. Without the rule (0; and same_init_max: they keep their
    problems' arguments) the rewrites pass."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ids = [
        "level1/45_Average_Pooling_2D",
        "level1/42_Max_Pooling_2D",
        "level1/67_conv_standard_1D",
        "level1/50_conv_standard_2D__square_input__square_kernel",
        "level1/19_ReLU",
    ]
    ref = [by_id[i] for i in ids]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    cands = [
        ("avg", POOL_BY_UNFOLD.replace("REDUCE", "cols.mean(dim=2)")),
        ("conv1d", CONV1D_BY_UNFOLD),
        ("conv2d", CONV2D_IM2COL_TRANSPOSED),
        ("squares", POOL_BY_UNFOLD.replace("REDUCE", "(cols * cols).mean(dim=2)")),
        ("hwio", CONV2D_FILTER_HWIO),
    ]
    rows = decontaminate(cands, ref, settings).to_pylist()
    want = {"avg": ids[0], "conv1d": ids[2], "conv2d": ids[3]}
    for r in rows[:3]:
        assert r["contaminated"] and r["reason"] == "functional_match", r
        assert json.loads(r["evidence"])["ref"] == want[r["task_id"]], r
        assert r["semantic_score"] < settings.semantic_threshold
    ev = json.loads(rows[2]["evidence"])
    assert any(m[2] == "numel_t" for m in ev["mapping"]), ev
    # two rows of 512 x 512 images in and out would move ~4.7M elements: the run was made on them cut to 256 x 256
    assert ev["inputs"] == "cut" and ev["same_inputs"] is False, ev
    assert not rows[3]["contaminated"] and rows[3]["reason"] == "", rows[3]
    # the filter stored as (kh, kw, in, out): tied to the convolution's (out, in, kh, kw) by an order of its dims
    assert rows[4]["contaminated"] and rows[4]["reason"] == "functional_match", rows[4]
    ev = json.loads(rows[4]["evidence"])
    assert ev["ref"] == ids[3] and any(m[2].startswith("permute") for m in ev["mapping"]), ev
    off = settings.model_copy(update={"same_ranks_max": 0, "probe_max": 0, "rebuilt_max": 0, "same_init_max": 0})
    rows = decontaminate(cands[:2], ref, off).to_pylist()
    assert not any(r["contaminated"] for r in rows), rows


# A convolution + ReLU + bias written through im2col, built at other channels and another kernel size than its
# KernelBench problem (level2/1_Conv2D_ReLU_BiasAdd: in 64, out 128, k 3); the same arguments, in its order.
CONV_RELU_BIAS_RESIZED = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin, cout, k, offset_shape):
        super().__init__()
        self.k = k
        self.filt = nn.Parameter(torch.randn(cout, cin * k * k) * 0.1)
        self.filt_b = nn.Parameter(torch.zeros(cout))
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, x):
        n, _, h, w = x.shape
        cols = F.unfold(x, self.k)
        y = (self.filt @ cols + self.filt_b[:, None]).view(n, -1, h - self.k + 1, w - self.k + 1)
        return torch.where(y > 0, y, torch.zeros_like(y)) + self.offset


def get_inputs():
    return [torch.rand(8, 6, 40, 40)]


def get_init_inputs():
    return [6, 20, 5, (20, 1, 1)]
"""

# The same at other sizes with its filter stored (k, k, out, in), a layout none of the canonical probe's four lays
# the problem's (out, in, k, k) out as: only the probe with every weight at one value agrees (jailed._const_fill).
CONV_TAPS_KKOC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, cin, cout, k, offset_shape):
        super().__init__()
        self.k = k
        self.taps = nn.Parameter(torch.randn(k, k, cout, cin) * 0.1)
        self.shift = nn.Parameter(torch.zeros(cout))
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, x):
        n, _, h, w = x.shape
        cols = F.unfold(x, self.k)
        flat = self.taps.permute(2, 3, 0, 1).reshape(self.taps.shape[2], -1)
        y = torch.einsum("ok,nkl->nol", flat, cols) + self.shift[:, None]
        return torch.clamp_min(y.view(n, -1, h - self.k + 1, w - self.k + 1), 0) + self.offset


def get_inputs():
    return [torch.rand(8, 6, 40, 40)]


def get_init_inputs():
    return [6, 20, 5, (20, 1, 1)]
"""

# An MLP with another number of layers, other widths and its layers written as addmm on stored transposes
# (level3/1_MLP: input 16384, layers [16384, 16384], output 8192: 671M weights, too large to build as it is).
MLP_RESIZED = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, widths, n_out):
        super().__init__()
        dims = [n_in] + list(widths) + [n_out]
        self.w = nn.ParameterList(nn.Parameter(torch.randn(a, b) * a ** -0.5) for a, b in zip(dims, dims[1:]))
        self.b = nn.ParameterList(nn.Parameter(torch.zeros(b)) for b in dims[1:])

    def forward(self, x):
        last = len(self.w) - 1
        for i, (w, b) in enumerate(zip(self.w, self.b)):
            x = torch.addmm(b, x, w)
            if i < last:
                x = x.clamp(min=0)
        return x


def get_inputs():
    return [torch.rand(32, 96)]


def get_init_inputs():
    return [96, [80, 64, 48], 10]
"""

# A max pool through unfold at another window, stride, padding and dilation (level1/42_Max_Pooling_2D: 4, 1, 1, 1)
MAXPOOL_RESIZED = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, k, s, p, d):
        super().__init__()
        self.k, self.s, self.p, self.d = k, s, p, d

    def forward(self, x):
        n, c, h, w = x.shape
        x = F.pad(x, (self.p,) * 4, value=float("-inf"))
        span = self.d * (self.k - 1) + 1
        oh, ow = (h + 2 * self.p - span) // self.s + 1, (w + 2 * self.p - span) // self.s + 1
        cols = F.unfold(x, self.k, dilation=self.d, stride=self.s).view(n, c, self.k * self.k, oh, ow)
        return REDUCE


def get_inputs():
    return [torch.rand(4, 8, 50, 44)]


def get_init_inputs():
    return [3, 2, 1, 2]
"""

# The tanh approximation of GELU (level1/88_MinGPTNewGelu) as a sigmoid gate, at other sizes: a weightless task
# whose graph shares little with the problem's; its outputs on the probe's small inputs are the problem's.
GELU_AS_SIGMOID_GATE = """
import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, v):
        c = math.sqrt(2.0 / math.pi)
        return v * torch.sigmoid(2.0 * c * (v + 0.044715 * v ** 3))


def get_inputs():
    return [torch.rand(300, 700)]


def get_init_inputs():
    return []
"""


# The same gate with its constants kept as buffers: no weights, but constants the trace's model (on meta) holds
# without values; it is probed on a real build (jailed._constants_probe). With another cubic coefficient: another
# function, whose probe is not the problem's.
GELU_CONSTANTS_IN_BUFFERS = """
import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("k", torch.tensor([2.0 * math.sqrt(2.0 / math.pi), 0.044715]))

    def forward(self, v):
        return v * torch.sigmoid(self.k[0] * (v + self.k[1] * v**3))


def get_inputs():
    return [torch.rand(200, 900)]


def get_init_inputs():
    return []
"""


def test_a_copy_resized_through_its_constructor_matches_its_problem_rebuilt(kernelbench_path, tmp_path):
    """A rewrite that also changed the constructor's arguments (channels, kernel size, layer count and widths, a
    pool's window, stride, padding and dilation) shares neither shapes nor parameter sizes with its problem, and
    little of its graph. The problem rebuilt at the candidate's arguments (the same kinds of arguments in the same
    places, as KernelBench's get_init_inputs passes them) has its parameter count and runs beside it: functional
    matches, the arguments used named in the evidence. A max pool's window written as a mean, at the same arguments,
    is another function: clean. A weightless activation written through another formula at other sizes is found by
    its outputs on the probe's small inputs (jailed._probe), also with its constants kept as buffers (probed on a
    real build), and not with another constant. Without rebuilt_max, probe_max and same_init_max they all pass (and
    same_ranks_max: this small reference leaves one weightless problem of rank 2 for it to reach)."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ids = [
        "level2/1_Conv2D_ReLU_BiasAdd",
        "level3/1_MLP",
        "level1/42_Max_Pooling_2D",
        "level1/88_MinGPTNewGelu",
        "level1/45_Average_Pooling_2D",
        "level1/19_ReLU",
        "level1/21_Sigmoid",
        "level1/26_GELU_",
    ]
    ref = [by_id[i] for i in ids]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    cands = [
        ("conv", CONV_RELU_BIAS_RESIZED),
        ("mlp", MLP_RESIZED),
        ("maxpool", MAXPOOL_RESIZED.replace("REDUCE", "cols.amax(dim=2)")),
        ("gelu", GELU_AS_SIGMOID_GATE),
        ("gelu_buffers", GELU_CONSTANTS_IN_BUFFERS),
        (
            "meanpool",
            MAXPOOL_RESIZED.replace("REDUCE", "cols.mean(dim=2)").replace('value=float("-inf")', "value=0.0"),
        ),
        ("gelu_buffers_other", GELU_CONSTANTS_IN_BUFFERS.replace("0.044715", "0.06")),
    ]
    table = decontaminate(cands, ref, settings)
    rows = table.to_pylist()
    want = {"conv": ids[0], "mlp": ids[1], "maxpool": ids[2], "gelu": ids[3], "gelu_buffers": ids[3]}
    for r in rows[:5]:
        assert r["contaminated"] and r["reason"] == "functional_match", r
        assert json.loads(r["evidence"])["ref"] == want[r["task_id"]], r
    assert json.loads(rows[0]["evidence"])["rebuilt_at"] == "[6, 20, 5, (20, 1, 1)]"
    assert json.loads(rows[1]["evidence"])["rebuilt_at"] == "[96, [80, 64, 48], 10]"
    assert json.loads(rows[3]["evidence"])["rebuilt_at"] is None  # the problem as it is, found by the probe
    assert json.loads(rows[4]["evidence"])["rebuilt_at"] is None  # so with its constants as buffers
    assert not rows[6]["contaminated"], rows[6]  # another cubic coefficient: another function
    # a mean over the window (zeros padded): another function at the same arguments
    assert not rows[5]["contaminated"] and rows[5]["reason"] == "", rows[5]
    tried = json.loads(rows[5]["evidence"])["tried"]
    # ended in the worker: its canonical outputs differ from the max pool's in every layout (no run)
    assert any(t.get("rebuilt_at") == "[3, 2, 1, 2]" and t["status"] == "probe_differs" for t in tried), tried
    # the auditor sees the arguments the problem was built at
    from pipeline.decontam.report import write_report

    html = write_report(table, cands, ref, settings, tmp_path / "report", reference_source="test").read_text()
    assert "class='rebuilt'" in html and "[6, 20, 5, (20, 1, 1)]" in html
    off = settings.model_copy(update={"rebuilt_max": 0, "probe_max": 0, "same_ranks_max": 0, "same_init_max": 0})
    rows = decontaminate(cands[:5], ref, off).to_pylist()
    assert not any(r["contaminated"] for r in rows), rows


# A depthwise convolution written as a sum of shifted slices, its taps stored (k, k, C), at other sizes
# (level1/82_conv_depthwise_2D_square_input_square_kernel: a (C, 1, k, k) filter): no tie by name, shape or an order
# of dims of equal rank reaches it; a layout the canonical probe tries does.
DEPTHWISE_TAPS_KKC = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels, k, stride, pad):
        super().__init__()
        self.k, self.stride, self.pad = k, stride, pad
        self.taps = nn.Parameter(torch.randn(k, k, channels) * 0.2)

    def forward(self, x):
        x = F.pad(x, (self.pad,) * 4)
        n, c, h, w = x.shape
        oh, ow = (h - self.k) // self.stride + 1, (w - self.k) // self.stride + 1
        out = x.new_zeros(n, c, oh, ow)
        s = self.stride
        for i in range(self.k):
            for j in range(self.k):
                win = x[:, :, i : i + s * (oh - 1) + 1 : s, j : j + s * (ow - 1) + 1 : s]
                out = out + win * self.taps[i, j].view(1, c, 1, 1)
        return out


def get_inputs():
    return [torch.rand(4, 10, 30, 26)]


def get_init_inputs():
    return [10, 5, 2, 1]
"""


def test_a_rebuilt_problem_is_screened_by_its_canonical_probe_and_tied_by_layout(kernelbench_path, tmp_path):
    """Rebuilt pairs are screened in the worker by the canonical probe (both models' weights set to canonical values
    by element count and position; the problem's in four layouts): a convolution + sigmoid + bias at other sizes
    (the same constructor arguments as level2/1_Conv2D_ReLU_BiasAdd, another activation) ends there,
    `probe_differs`, without a run; a depthwise filter stored (k, k, C) agrees in a layout of the problem's
    (C, 1, k, k) filter (first dim last), runs, and matches under that layout with random weights (`layout:...`); a
    filter stored (k, k, out, in) agrees only with every weight at one value (the constant probe), runs, and matches
    with the filter tied by an order of its dims."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ids = ["level2/1_Conv2D_ReLU_BiasAdd", "level1/82_conv_depthwise_2D_square_input_square_kernel", "level1/19_ReLU"]
    ref = [by_id[i] for i in ids]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    sigmoid = CONV_RELU_BIAS_RESIZED.replace("torch.where(y > 0, y, torch.zeros_like(y))", "torch.sigmoid(y)")
    assert sigmoid != CONV_RELU_BIAS_RESIZED
    cands = [("sigmoid", sigmoid), ("depthwise", DEPTHWISE_TAPS_KKC), ("taps", CONV_TAPS_KKOC)]
    rows = decontaminate(cands, ref, settings).to_pylist()
    assert not rows[0]["contaminated"], rows[0]
    tried = json.loads(rows[0]["evidence"])["tried"]
    assert any(t.get("rebuilt_at") and t["status"] == "probe_differs" for t in tried), tried
    assert rows[1]["contaminated"] and rows[1]["reason"] == "functional_match", rows[1]
    ev = json.loads(rows[1]["evidence"])
    assert ev["ref"] == ids[1] and ev["rebuilt_at"] == "[10, 5, 2, 1]" and ev["mapping"][0][2].startswith("layout:"), (
        ev
    )
    # a filter stored (k, k, out, in): the four layouts differ, every weight at one value agrees, and the run ties it
    # by an order of its dims
    assert rows[2]["contaminated"] and rows[2]["reason"] == "functional_match", rows[2]
    ev = json.loads(rows[2]["evidence"])
    assert ev["ref"] == ids[0] and ev["rebuilt_at"] == "[6, 20, 5, (20, 1, 1)]", ev
    assert dict((m[0], m[2]) for m in ev["mapping"])["taps"] == "permute:2,3,0,1", ev["mapping"]


# A Linear + softmax at the sizes of level2/99_Matmul_GELU_Softmax (which has a GELU between them): with the
# confirmation's weights the softmax over 8,192 outputs saturates to one-hot, and both give it.
LINEAR_SOFTMAX_AT_99 = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.proj = nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.softmax(self.proj(x), dim=1)


def get_inputs():
    return [torch.rand(1024, 8192)]


def get_init_inputs():
    return [8192, 8192]
"""


def test_a_match_only_where_the_drawn_weights_saturate_is_no_match(kernelbench_path, tmp_path):
    """Outputs equal on the first draw because a wide layer saturates what follows it (a softmax to one-hot: the
    GELU before it cannot show) are tried again with both models' weights moved alike (x / 10 - 1/2): they differ,
    so no functional_match; the problem itself, rewritten (the same GELU by erf), still matches after the move."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level2/99_Matmul_GELU_Softmax"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    gelu = LINEAR_SOFTMAX_AT_99.replace(
        "torch.softmax(self.proj(x), dim=1)",
        "torch.softmax((lambda z: 0.5 * z * (1 + torch.erf(z / 2 ** 0.5)))(self.proj(x)), dim=1)",
    )
    # at other sizes (rebuilt pairs) with SiLU then ReLU for the GELU: with every weight at one value both softmaxes
    # are uniform, so the constant probe says nothing there (and Linear layers get none); the layouts tell them apart
    silu = LINEAR_SOFTMAX_AT_99.replace(
        "torch.softmax(self.proj(x), dim=1)", "torch.softmax(F.silu(self.proj(x)).relu(), dim=1)"
    )
    silu = silu.replace("import torch.nn as nn", "import torch.nn as nn\nimport torch.nn.functional as F")
    silu = silu.replace("torch.rand(1024, 8192)", "torch.rand(256, 1024)").replace("[8192, 8192]", "[1024, 512]")
    cands = [("softmax", LINEAR_SOFTMAX_AT_99), ("gelu", gelu), ("silu_relu", silu)]
    rows = decontaminate(cands, ref, settings).to_pylist()
    assert rows[0]["reason"] != "functional_match", rows[0]
    tried = json.loads(rows[0]["evidence"])["tried"]
    assert any(
        t["ref"] == "level2/99_Matmul_GELU_Softmax" and t["status"] == "ran" and not t["equivalent"] for t in tried
    )
    assert rows[1]["contaminated"] and rows[1]["reason"] == "functional_match", rows[1]
    shifted = json.loads(rows[1]["evidence"])["shifted_params"]
    assert shifted["max_abs_diff"] <= settings.confirm_atol + settings.confirm_rtol * shifted["ref_scale"], shifted
    assert not rows[2]["contaminated"], rows[2]  # its run would saturate alike: the screen must end it
    tried = json.loads(rows[2]["evidence"])["tried"]
    rebuilt = [t for t in tried if t["ref"] == "level2/99_Matmul_GELU_Softmax" and t.get("rebuilt_at")]
    assert rebuilt and rebuilt[0]["status"] == "probe_differs", tried


def _decided(kernelbench_path, tmp_path, problem_id: str, cands: list) -> list[dict]:
    """The contamination table's rows for `cands` against one problem (and level1/19_ReLU beside it), semantic view
    on, two jailed workers, a fresh cache."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    return decontaminate(cands, [by_id[problem_id], by_id["level1/19_ReLU"]], settings).to_pylist()


# level2/40_Matmul_Scaling_ResidualAdd (x W^T + b, times s, plus itself) at its own sizes, the factor 1 + s folded
# into weights made at construction (stored (in, out)); FORWARD is what the forward returns of z = x @ w + b.
FOLDED_AT_40 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        gain = 1.0 + scaling_factor
        self.w = nn.Parameter(torch.empty(in_features, out_features).uniform_(-bound, bound) * gain)
        self.b = nn.Parameter(torch.empty(out_features).uniform_(-bound, bound) * gain)

    def forward(self, x):
        z = torch.addmm(self.b, x, self.w)
        return FORWARD

def get_inputs():
    return [torch.rand(16384, 4096)]

def get_init_inputs():
    return [4096, 4096, 0.5]
"""


def test_a_scale_folded_into_weights_at_construction_is_tied_scaled(kernelbench_path, tmp_path):
    """The problem's constant moved into its weights when they are made: tied to the problem's weights as they are,
    the outputs differ by the factor; the two constructors' scales (their draws as constants) give it, and the
    candidate, run with each tied tensor scaled by it, matches (mapping `transpose*1.5`). The same weights under
    another function (a ReLU after them) stay apart, and so do weights drawn at a scale of their own that fold
    nothing (0.02 * randn)."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level2/40_Matmul_Scaling_ResidualAdd"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    own_scale = FOLDED_AT_40.replace(".uniform_(-bound, bound) * gain", ".normal_() * 0.02")
    cands = [
        ("folded", FOLDED_AT_40.replace("FORWARD", "z")),
        ("relu", FOLDED_AT_40.replace("FORWARD", "torch.relu(z)")),
        ("own_scale", own_scale.replace("FORWARD", "torch.relu(z) * 1.5")),
    ]
    table = decontaminate(cands, ref, settings)
    rows = table.to_pylist()
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/40_Matmul_Scaling_ResidualAdd", ev
    from pipeline.decontam.report import write_report

    html = write_report(table, cands, ref, settings, tmp_path, reference_source="test").read_text()
    assert "class='scaled'" in html and "transpose*1.5" in html  # the auditor sees the folded constant
    ties = sorted(m[2].split("*") for m in ev["mapping"])
    assert [t[0] for t in ties] == ["shape", "transpose"] and all(abs(float(t[1]) - 1.5) < 1e-6 for t in ties), ties
    for r in rows[1:]:
        assert r["reason"] != "functional_match", r
        tried = json.loads(r["evidence"])["tried"]
        assert any(t["ref"] == "level2/40_Matmul_Scaling_ResidualAdd" and t["status"] == "ran" for t in tried), tried


OFFSET_AT_35 = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, c_in, c_out, k, subtract, pool):
        super().__init__()
        r = 1.0 / math.sqrt(c_in * k * k)
        self.w = nn.Parameter(torch.empty(c_out, c_in, k, k).uniform_(-r, r))
        self.b = nn.Parameter(torch.empty(c_out).uniform_(-r, r)BIAS)
        self.pool = pool

    def forward(self, x):
        y = F.hardswish(F.conv2d(x, self.w, self.b))
        y = F.max_pool2d(y, self.pool)
        return y * torch.tanh(F.softplus(y))

def get_inputs():
    return [torch.rand(2, 64, 17, 17)]

def get_init_inputs():
    return [64, 128, 3, 0.5, 2]
"""


def test_an_offset_folded_into_a_bias_at_construction_is_tied_shifted(kernelbench_path, tmp_path):
    """KernelBench's conv - constant - hardswish - maxpool - mish at its own constructor arguments on smaller inputs,
    with the constant subtracted inside the bias when it is made: tied as they are, the outputs differ; the two
    constructors' draws as constants differ by -0.5, and the candidate run with the bias shifted by it matches
    (mapping `shape+=-0.5`). The same model with the constant left out of its bias computes another function and
    stays apart."""
    from pipeline.decontam.stage import decontaminate

    by_id = {r.ref_id: r for r in load_reference(kernelbench_path)}
    ref = [by_id["level2/35_Conv2d_Subtract_HardSwish_MaxPool_Mish"], by_id["level1/19_ReLU"]]
    settings = DecontamSettings(semantic=True, workers=2, semantic_cache_dir=str(tmp_path / "cache"))
    cands = [("folded", OFFSET_AT_35.replace("BIAS", " - subtract")), ("kept", OFFSET_AT_35.replace("BIAS", ""))]
    rows = decontaminate(cands, ref, settings).to_pylist()
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/35_Conv2d_Subtract_HardSwish_MaxPool_Mish", ev
    shifted = [m[2] for m in ev["mapping"] if "+=" in m[2]]
    assert len(shifted) == 1 and abs(float(shifted[0].split("+=")[1]) + 0.5) < 1e-9, ev["mapping"]
    assert ev["shifted_params"]["max_abs_diff"] <= 1e-4  # the weights moved, the outputs still agree
    from pipeline.decontam.report import write_report

    html = write_report(
        decontaminate(cands[:1], ref, settings), cands[:1], ref, settings, tmp_path, reference_source="test"
    )
    assert "class='shifted'" in html.read_text()  # the auditor sees the folded offset
    assert rows[1]["reason"] != "functional_match", rows[1]


def test_an_offset_folded_into_a_bias_at_other_sizes_passes_the_screen_with_the_offset_taken_out(
    kernelbench_path, tmp_path
):
    """The same fold resized through the constructor: the problem rebuilt at the candidate's arguments differs on
    every canonical probe (the candidate's weights take canonical values and drop the constant the problem still
    subtracts). The bias alone has another scale than the problem's, so the problem is probed with that vector less
    the offset its sign leaves open (`jailed._fold_shifts`): the pair runs and is tied shifted. The copy that keeps
    its bias as drawn folds nothing, has the problem's scales and is decided by the screen."""
    small = OFFSET_AT_35.replace("torch.rand(2, 64, 17, 17)", "torch.rand(2, 8, 17, 17)").replace(
        "[64, 128, 3, 0.5, 2]", "[8, 16, 3, 0.5, 2]"
    )
    cands = [("folded", small.replace("BIAS", " - subtract")), ("kept", small.replace("BIAS", ""))]
    rows = _decided(kernelbench_path, tmp_path, "level2/35_Conv2d_Subtract_HardSwish_MaxPool_Mish", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["rebuilt_at"] == "[8, 16, 3, 0.5, 2]", ev
    assert any(m[2].endswith("+=-0.5") for m in ev["mapping"]), ev["mapping"]
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    assert any(t.get("rebuilt_at") and t["status"] == "probe_differs" for t in tried), tried


def test_a_scale_folded_into_weights_at_other_sizes_passes_the_screen_at_the_weights_own_scales(
    kernelbench_path, tmp_path
):
    """The folded copy resized through its constructor: the problem rebuilt at its arguments differs on the
    canonical probe (canonical weights drop the factor), but the trace also probes at the scales the constructor
    makes the weights (`natural`), where the factor shows, so the pair runs and is tied scaled. A ReLU after the
    same weights differs in both probes: decided by the screen (`probe_differs`, natural probe tried)."""
    small = FOLDED_AT_40.replace("torch.rand(16384, 4096)", "torch.rand(5, 24)").replace(
        "[4096, 4096, 0.5]", "[24, 20, 0.5]"
    )
    cands = [("folded", small.replace("FORWARD", "z")), ("relu", small.replace("FORWARD", "torch.relu(z)"))]
    rows = _decided(kernelbench_path, tmp_path, "level2/40_Matmul_Scaling_ResidualAdd", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/40_Matmul_Scaling_ResidualAdd" and ev["rebuilt_at"] == "[24, 20, 0.5]", ev
    assert all(abs(float(m[2].split("*")[1]) - 1.5) < 1e-6 for m in ev["mapping"]), ev["mapping"]
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    rebuilt = [t for t in tried if t["ref"] == "level2/40_Matmul_Scaling_ResidualAdd" and t.get("rebuilt_at")]
    assert rebuilt and rebuilt[0]["status"] == "probe_differs", tried


# level2/73_Conv2d_BatchNorm_Scaling with the batch statistics written out and its output scale folded into the
# norm's gain (made at the factor) and shift (made zeros); SIZES and AFTER vary per test
GAIN_FOLDED_AT_73 = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, cin, cout, k, factor):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k)
        self.gain = nn.Parameter(torch.full((cout,), float(factor)))
        self.shift = nn.Parameter(torch.zeros(cout))

    def forward(self, x):
        y = self.conv(x)
        mu = y.mean(dim=(0, 2, 3), keepdim=True)
        var = ((y - mu) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        z = (y - mu) / torch.sqrt(var + 1e-5) * self.gain.view(1, -1, 1, 1) + self.shift.view(1, -1, 1, 1)
        return AFTER

def get_inputs():
    return [torch.rand(INPUT)]

def get_init_inputs():
    return [INIT]
"""


@pytest.mark.parametrize(
    "sizes",
    [("128, 8, 128, 128", "8, 64, 3, 2.0"), ("5, 4, 14, 14", "4, 12, 3, 2.0")],
    ids=["own_sizes", "rebuilt"],
)
def test_an_output_scale_folded_into_a_norms_gain_and_zero_shift_is_tied_scaled(sizes, kernelbench_path, tmp_path):
    """The problem's final scale moved into the norm's affine when it is made: the gain at the factor (its scale
    read against the problem's ones) and the shift made zeros, whose scale neither constructor shows: tied as they
    are, the shift misses the factor; tied with every unread tensor times the one factor read elsewhere, the
    outputs agree (mapping `shape*2.0` on both). At other sizes the problem is rebuilt at the candidate's arguments
    and the screen's natural probe lets the pair run only with the problem's zero tensors scaled back by that factor
    (`jailed._fold_of`). The same weights with a tanh after the norm compute another function and stay apart."""
    inputs, init = sizes
    code = GAIN_FOLDED_AT_73.replace("INPUT", inputs).replace("INIT", init)
    cands = [("folded", code.replace("AFTER", "z")), ("tanh", code.replace("AFTER", "torch.tanh(z)"))]
    rows = _decided(kernelbench_path, tmp_path, "level2/73_Conv2d_BatchNorm_Scaling", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/73_Conv2d_BatchNorm_Scaling", ev
    assert (ev["rebuilt_at"] is not None) == (init != "8, 64, 3, 2.0"), ev["rebuilt_at"]
    scaled = {m[0]: m[2] for m in ev["mapping"] if "*" in m[2]}
    assert set(scaled) == {"gain", "shift"} and all(abs(float(h.split("*")[1]) - 2.0) < 1e-9 for h in scaled.values())
    assert ev["shifted_params"]["max_abs_diff"] <= 1e-4  # the weights moved, the outputs still agree
    assert rows[1]["reason"] != "functional_match", rows[1]


# level2/71_Conv2d_Divide_LeakyReLU at other sizes: the filter stored channels-last (out, kh, kw, in), the divisor
# folded into the filter and the bias when they are made; ACT is the activation
DIVISOR_FOLDED_CHANNELS_LAST_AT_71 = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, cin, cout, k, divisor):
        super().__init__()
        r = 1.0 / math.sqrt(cin * k * k)
        self.filt = nn.Parameter(torch.empty(cout, k, k, cin).uniform_(-r, r) / divisor)
        self.bias = nn.Parameter(torch.empty(cout).uniform_(-r, r) / divisor)

    def forward(self, x):
        y = F.conv2d(x, self.filt.permute(0, 3, 1, 2), self.bias)
        return ACT

def get_inputs():
    return [torch.rand(3, 7, 12, 12)]

def get_init_inputs():
    return [7, 18, 3, 2]
"""


def test_a_divisor_folded_into_a_channels_last_filter_at_other_sizes_passes_the_constant_probe_scaled(
    kernelbench_path, tmp_path
):
    """No layout the canonical probe lays the problem's filter out in is the candidate's (out, kh, kw, in), and the
    divisor is in the weights: every probe differs but the constant one, where the problem's weights take the
    constant over each factor the two constructors' scales read (`jailed._fold_ratios`); the pair runs, tied by a
    permutation of the filter's dims and scaled by 0.5. The same weights under a tanh are decided by the screen."""
    code = DIVISOR_FOLDED_CHANNELS_LAST_AT_71
    cands = [("folded", code.replace("ACT", "torch.maximum(y, 0.01 * y)")), ("tanh", code.replace("ACT", "y.tanh()"))]
    rows = _decided(kernelbench_path, tmp_path, "level2/71_Conv2d_Divide_LeakyReLU", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/71_Conv2d_Divide_LeakyReLU" and ev["rebuilt_at"] == "[7, 18, 3, 2]", ev
    ties = {m[0]: m[2] for m in ev["mapping"]}
    assert ties["filt"].startswith("permute:") and all(abs(float(h.split("*")[1]) - 0.5) < 1e-9 for h in ties.values())
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    rebuilt = [t for t in tried if t["ref"] == "level2/71_Conv2d_Divide_LeakyReLU" and t.get("rebuilt_at")]
    assert rebuilt and rebuilt[0]["status"] == "probe_differs", tried


def test_constructor_arguments_one_or_two_fewer_or_more_are_laid_into_the_problems_by_kind():
    """An argument the task fixed as a constant keeps the problem's own value; an argument it added is dropped;
    equal lengths, lengths three apart, or more than two layings give nothing."""
    from pipeline.decontam.semantic import _aligned

    def lit(*xs):
        return [
            ["t", [["i", v] for v in x]] if isinstance(x, tuple) else ["f" if isinstance(x, float) else "i", x]
            for x in xs
        ]

    problem = lit(8, 16, (3, 3, 3), 2.0, (2, 2, 2), (16, 1, 1, 1), 1)
    assert _aligned(lit(4, 8, (3, 3, 3), 2.0, (8, 1, 1, 1)), problem) == [
        lit(4, 8, (3, 3, 3), 2.0, (2, 2, 2), (8, 1, 1, 1), 1)
    ]
    # an added eps: the problem's float laid onto either float
    assert _aligned(lit(4, 8, 3, 0.5, 1e-5), lit(8, 16, 3, 2.0)) == [lit(4, 8, 3, 0.5), lit(4, 8, 3, 1e-5)]
    assert _aligned(lit(4, 8, 3, 0.5), lit(8, 16, 3, 2.0)) == []  # same length: _resized's
    assert _aligned(lit(4, 0.5), lit(8, 16, 3, 2.0)) == []  # three ways to lay the int: none taken
    assert _aligned(lit(8, 16), lit(8, 16, 3)) == []  # the problem's own arguments: its own pair


# level2/8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum at other sizes, its pool size and summed dim fixed as
# constants of the task (five constructor arguments for the problem's seven); POOL is the block reduction
ARGS_FIXED_AT_8 = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, cin, cout, kernel_size, divisor, bias_shape):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, kernel_size)
        self.divisor = divisor
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = self.conv(x) / self.divisor
        y = POOL
        y = y.mean(dim=(2, 3, 4), keepdim=True) + self.bias
        return y.sum(dim=1)

def get_inputs():
    return [torch.rand(3, 4, 8, 12, 12)]

def get_init_inputs():
    return [4, 8, (3, 3, 3), 2.0, (8, 1, 1, 1)]
"""


def test_a_copy_with_constructor_arguments_fixed_as_constants_is_rebuilt_at_its_arguments_aligned(
    kernelbench_path, tmp_path
):
    """The task takes five of the problem's seven arguments (the pool size and the summed dim written into its
    forward): no rebuild at its arguments as they are (other kinds), and at its own sizes the problem does not take
    the task's inputs. Rebuilt with the task's values where their kinds align and its own values elsewhere, the
    problem matches (`rebuilt_at` shows the arguments used). The same task with an average pool instead of the max
    computes another function and stays apart."""
    cands = [
        ("fixed", ARGS_FIXED_AT_8.replace("POOL", "F.max_pool3d(y, 2)")),
        ("avg", ARGS_FIXED_AT_8.replace("POOL", "F.avg_pool3d(y, 2)")),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level2/8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["rebuilt_at"] == "[4, 8, (3, 3, 3), 2.0, (2, 2, 2), (8, 1, 1, 1), 1]", ev
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    assert any(t.get("rebuilt_at") == ev["rebuilt_at"] for t in tried), tried  # run, and apart


# level3/19_MobileNetV1 at another width and class count: a plan of (channels, stride) pairs, batch norm written
# with the batch's statistics, convolutions as functional calls; ACT is the activation after each norm
MOBILENET_PLAN = """
import torch
import torch.nn as nn
import torch.nn.functional as F

PLAN = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]

class ConvNorm(nn.Module):
    def __init__(self, cin, cout, k, stride, groups):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin // groups, k, k) * 0.1)
        self.gamma, self.beta = nn.Parameter(torch.ones(cout)), nn.Parameter(torch.zeros(cout))
        self.stride, self.groups, self.pad = stride, groups, k // 2

    def forward(self, x):
        y = F.conv2d(x, self.weight, None, self.stride, self.pad, 1, self.groups)
        mu = y.mean(dim=(0, 2, 3), keepdim=True)
        var = y.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
        y = (y - mu) / torch.sqrt(var + 1e-5) * self.gamma[:, None, None] + self.beta[:, None, None]
        return ACT

class Model(nn.Module):
    def __init__(self, num_classes=1000, input_channels=3, alpha=1.0):
        super().__init__()
        c = int(32 * alpha)
        layers = [ConvNorm(input_channels, c, 3, 2, 1)]
        for width, stride in PLAN:
            layers += [ConvNorm(c, c, 3, stride, c), ConvNorm(c, int(width * alpha), 1, 1, 1)]
            c = int(width * alpha)
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c, num_classes)

    def forward(self, x):
        x = F.avg_pool2d(self.features(x), 7)
        return self.head(x.flatten(1))

def get_inputs():
    return [torch.rand(2, 3, 224, 224)]

def get_init_inputs():
    return [10, 3, 0.25]
"""


def test_a_network_resized_through_its_constructor_without_a_canonical_probe_is_rebuilt_when_its_graph_is_the_problems(
    kernelbench_path, tmp_path
):
    """A network whose pools need its full-size images has no canonical probe (its forward fails on the probe's
    small inputs), so no pair rebuilt at its arguments could be screened and none was made; at its own arguments the
    problem gives 1,000 classes against 10. The one problem whose whole graph is the candidate's (semantic score at
    least structure_threshold) is rebuilt anyway and matches; the same network with a ReLU6 has another graph and
    gets no rebuilt pair."""
    cands = [
        ("relu", MOBILENET_PLAN.replace("ACT", "F.relu(y)")),
        ("relu6", MOBILENET_PLAN.replace("ACT", "F.relu6(y)")),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level3/19_MobileNetV1", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level3/19_MobileNetV1" and ev["rebuilt_at"] == "[10, 3, 0.25]", ev
    assert rows[1]["reason"] != "functional_match", rows[1]
    assert not any(t.get("rebuilt_at") for t in json.loads(rows[1]["evidence"] or '{"tried": []}')["tried"])


# level3/32_ConvolutionalVisionTransformer at another width and class count, its post-norm encoder layers written
# out: the layers register their two norms together after the feed-forward maps (as torch's encoder layer does not)
# and read them between; NORM_FIRST: pre-norm instead (another function)
CVIT_POST_NORM = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))
        self.norm2 = nn.LayerNorm(dim)

    def attend(self, x):
        B, T, E = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, E // self.heads).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(E // self.heads), dim=-1)
        return self.out((a @ v).transpose(1, 2).reshape(B, T, E))

    def forward(self, x):
        if NORM_FIRST:
            x = x + self.attend(self.norm1(x))
            return x + self.ff(self.norm2(x))
        x = self.norm1(x + self.attend(x))
        return self.norm2(x + self.ff(x))

class Model(nn.Module):
    def __init__(self, num_classes, embed_dim=512, num_heads=8, num_layers=6):
        super().__init__()
        self.patch = nn.Conv2d(3, embed_dim, 4, 4)
        self.proj = nn.Linear(embed_dim * 64, embed_dim)
        self.blocks = nn.ModuleList([Block(embed_dim, num_heads) for _ in range(num_layers)])
        self.cls = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        t = self.proj(self.patch(x).flatten(1))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), t[:, None]], dim=1)
        for b in self.blocks:
            x = b(x)
        return self.head(x[:, 0])

def get_inputs():
    return [torch.rand(3, 3, 32, 32)]

def get_init_inputs():
    return [10, 32, 4]
"""


def test_same_shaped_vectors_are_tied_in_the_order_the_forwards_read_them(kernelbench_path, tmp_path):
    """torch's encoder layer registers its feed-forward maps before its norms and reads a norm between them; the
    written-out layer registers them in reading order. Tied by shape in registration order, a norm's gain took a
    feed-forward bias and the outputs were 12 apart; tied in the order both forwards read their tensors, they match.
    The pre-norm layer (another function) stays apart under every tie."""
    cands = [
        ("post", CVIT_POST_NORM.replace("NORM_FIRST", "False")),
        ("pre", CVIT_POST_NORM.replace("NORM_FIRST", "True")),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level3/32_ConvolutionalVisionTransformer", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level3/32_ConvolutionalVisionTransformer", ev
    ties = {m[0]: m[1] for m in ev["mapping"]}
    assert ties["blocks.0.norm1.weight"] == "transformer_layers.0.norm1.weight", ties
    assert rows[1]["reason"] != "functional_match", rows[1]


# level3/43_MinGPTCausalAttention at its own sizes with separate query, key and value maps stored (in, out), the
# 1/sqrt(head size) factor folded into the query's, the softmax and its mask by hand; MASK is the mask applied.
SPLIT_QKV_AT_43 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        self.h = n_head
        bound = 1.0 / math.sqrt(n_embd)
        hs = n_embd // n_head
        mk = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-bound, bound))
        self.wq, self.bq = nn.Parameter(mk(n_embd, n_embd) / math.sqrt(hs)), nn.Parameter(mk(n_embd) / math.sqrt(hs))
        self.wk, self.bk = mk(n_embd, n_embd), mk(n_embd)
        self.wv, self.bv = mk(n_embd, n_embd), mk(n_embd)
        self.wo, self.bo = mk(n_embd, n_embd), mk(n_embd)

    def forward(self, x):
        B, T, C = x.shape
        split = lambda t: t.reshape(B, T, self.h, C // self.h)
        q = split(x @ self.wq + self.bq)
        k = split(x @ self.wk + self.bk)
        v = split(x @ self.wv + self.bv)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k)
        s = s.masked_fill(MASK, float("-inf"))
        s = torch.exp(s - s.amax(-1, keepdim=True))
        y = torch.einsum("bhqk,bkhd->bqhd", s / s.sum(-1, keepdim=True), v).reshape(B, T, C)
        return y @ self.wo + self.bo

def get_inputs():
    return [torch.rand(128, 512, 768)]

def get_init_inputs():
    return [768, 8, 0.0, 0.0, 1024]
"""


def test_separate_projections_of_one_packed_weight_are_tied_as_its_slices(kernelbench_path, tmp_path):
    """Query, key and value maps written as three matrices where the problem packs them in one (3C, C) Linear:
    tied as its slices (`split_t:0:<offset>`, tied before the same-shape output projection could take one), the
    query's folded factor fitted (`*0.102...`); attention over large logits rounds apart in float32 between the two
    orders of computation, so the near miss is decided in float64 (`precision`). Without the causal mask (another
    function) the outputs stay apart."""
    causal = "torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)"
    resized = SPLIT_QKV_AT_43.replace("torch.rand(128, 512, 768)", "torch.rand(3, 11, 48)")
    resized = resized.replace("[768, 8, 0.0, 0.0, 1024]", "[48, 6, 0.0, 0.0, 20]").replace("MASK", causal)
    cands = [
        ("split", SPLIT_QKV_AT_43.replace("MASK", causal)),
        ("unmasked", SPLIT_QKV_AT_43.replace("MASK", "torch.zeros(T, T, dtype=torch.bool)")),
        ("resized", resized),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level3/43_MinGPTCausalAttention", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    ties = {m[0]: m[2] for m in ev["mapping"]}
    assert ties["wk"] == "split_t:0:768" and ties["wv"] == "split_t:0:1536", ties
    how, scale = ties["wq"].split("*")
    assert how == "split_t:0:0" and abs(float(scale) - 96**-0.5) < 1e-9, ties
    assert ev["precision"] in ("float32", "float64"), ev
    assert rows[1]["reason"] != "functional_match", rows[1]
    tried = json.loads(rows[1]["evidence"])["tried"]
    assert any(t["ref"] == "level3/43_MinGPTCausalAttention" and t["status"] == "ran" for t in tried), tried
    # at other sizes: the problem rebuilt at its arguments; its weights are the problem's cut in pieces, which the
    # canonical probe cannot tie, so the screen leaves the pair to the run
    assert rows[2]["contaminated"] and rows[2]["reason"] == "functional_match", rows[2]
    ev = json.loads(rows[2]["evidence"])
    assert ev["rebuilt_at"] == "[48, 6, 0.0, 0.0, 20]" and any(m[2].startswith("split") for m in ev["mapping"]), ev


# level3/44_MiniGPTBlock at its own width with the norms declared first (their gains and shifts are the first vectors
# of its size) and three Linear maps for the query, key and value, which the problem packs in one (3C, C) Linear;
# ATTEND names the tensors attended with (keys, values).
NORMS_FIRST_AT_44 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, width, heads, p_attn, p_resid, max_len):
        super().__init__()
        self.heads = heads
        self.pre_attn, self.pre_mlp = nn.LayerNorm(width), nn.LayerNorm(width)
        self.query, self.key, self.value = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.out = nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def attend(self, u):
        b, t, c = u.shape
        heads = lambda z: z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q, k, v = heads(self.query(u)), heads(self.key(u)), heads(self.value(u))
        keys, values = ATTEND
        w = (q @ keys.transpose(-2, -1)) / math.sqrt(c // self.heads)
        w = w.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)
        return self.out((w @ values).transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attend(self.pre_attn(x))
        return x + self.down(nn.functional.gelu(self.up(self.pre_mlp(x)), approximate="tanh"))

def get_inputs():
    return [torch.rand(2, 5, 768)]

def get_init_inputs():
    return [768, 8, 0.0, 0.0, 1024]
"""


def test_a_packed_projections_bias_is_cut_beside_its_weight_not_from_the_first_vectors(kernelbench_path, tmp_path):
    """A transformer block whose norms come first: tying the problem's packed (3C,) bias to the first three vectors
    of size C took the norms' gain and shift; its pieces are the vectors the forward reads right after each piece
    of the packed weight (the query's, key's and value's biases), and the rest tied around them: a copy
    (`functional_match`). Keys and values swapped is another function: no match."""
    cands = [
        ("copy", NORMS_FIRST_AT_44.replace("ATTEND", "k, v")),
        ("swap", NORMS_FIRST_AT_44.replace("ATTEND", "v, k")),
    ]
    copy, swap = _decided(kernelbench_path, tmp_path, "level3/44_MiniGPTBlock", cands)
    assert copy["contaminated"] and copy["reason"] == "functional_match", copy
    ties = {m[0]: m[1:] for m in json.loads(copy["evidence"])["mapping"]}
    assert ties["query.bias"] == ["attn.c_attn.bias", "split:0:0"], ties
    assert ties["value.bias"] == ["attn.c_attn.bias", "split:0:1536"], ties
    assert ties["pre_attn.weight"] == ["ln_1.weight", "shape"], ties
    assert swap["reason"] != "functional_match", swap


PLAIN = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return FORWARD

def get_inputs():
    return [torch.rand(4, 64)]

def get_init_inputs():
    return []
"""


def test_a_near_miss_from_float32_rounding_is_decided_in_float64(tmp_path):
    """(x + 1e4) - 1e4 is x, but float32 rounds it off by ~5e-4 (past the 1e-4 tolerance, within NEAR of it): run
    again in float64, the pair matches (`precision`). x * 1.002 is another function: apart in float64 as well."""
    from pipeline.decontam.semantic import confirm_pairs

    settings = DecontamSettings(semantic=True, workers=1, semantic_cache_dir=str(tmp_path / "cache"))
    plain = PLAIN.replace("FORWARD", "x.clone()")
    pairs = [(PLAIN.replace("FORWARD", "(x + 1e4) - 1e4"), plain), (PLAIN.replace("FORWARD", "x * 1.002"), plain)]
    same, other = confirm_pairs(pairs, settings, [True, True])
    assert same["equivalent"] and same["precision"] == "float64" and same["max_abs_diff"] < 1e-9, same
    assert not other["equivalent"] and other.get("precision") is None, other
    assert 1e-3 < other["max_abs_diff"] < 3e-3, other


def test_constructor_arguments_are_rebuilt_as_plain_literals_only():
    """A problem is rebuilt from the candidate's reported arguments (its trace's, as untrusted as the rest of it):
    only checked plain values become code, as their repr; anything else leaves the pair out."""
    from pipeline.decontam.semantic import _kinds, _literal_ok, python_literal, rebuilt_code

    lit = ["l", [["i", 3], ["f", 0.5], ["t", [["i", 8], ["i", 1]]], ["l", [["i", 4], ["i", 5]]], ["s", "x'\n"]]]
    assert _literal_ok(lit)
    assert python_literal(lit).startswith("[3, 0.5, (8, 1), [4, 5], ")
    code = rebuilt_code("def get_init_inputs():\n    return [1]\n", lit)
    ns: dict = {}
    exec(code, ns)
    assert ns["get_init_inputs"]() == [3, 0.5, (8, 1), [4, 5], "x'\n"]
    for bad in (
        ["l", [["i", "__import__('os')"]]],
        ["l", [["x", 1]]],
        ["l", [["i", True]]],
        ["l", [["i", 1 << 40]]],
        ["l", [["s", "x" * 65]]],
        ["l", [["f", float("nan")]]],
        ["l", [["t", [["i", 1]] * 17]]],
        ["s", 1],
        {"l": []},
    ):
        assert not _literal_ok(bad), bad
    # where each argument sits and of what kind decides which problems can be rebuilt; a list's length does not
    assert _kinds(["l", [["i", 1], ["i", 2]]]) == _kinds(["l", [["i", 7]]]) != _kinds(["t", [["i", 1], ["i", 2]]])


# level2/37_Matmul_Swish_Sum_GroupNorm at its own sizes with the group norm written out and its gain of ones and
# shift of zeros left out (the problem as built); AFTER varies per test
NORM_WITHOUT_AFFINE_AT_37 = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.shift = nn.Parameter(torch.randn(bias_shape))
        self.groups = num_groups

    def forward(self, x):
        h = self.fc(x)
        h = h * torch.sigmoid(h) + self.shift
        z = h.view(h.shape[0], self.groups, -1)
        z = (z - z.mean(-1, keepdim=True)) / torch.sqrt(z.var(-1, unbiased=False, keepdim=True) + 1e-5)
        return AFTER

def get_inputs():
    return [torch.rand(32768, 1024)]

def get_init_inputs():
    return [1024, 4096, 64, (4096,)]
"""


def test_a_norm_written_out_without_its_gain_and_shift_matches_the_problem_as_built(kernelbench_path, tmp_path):
    """A copy writes the group norm out and leaves out its gain of ones and shift of zeros (the problem's
    constructor makes them so): the problem's parameters made constant that nothing ties stay at their value
    (`kept` in the evidence), so the copy matches. The same with its output doubled (what a free gain would
    absorb) does not: the constants are the problem's as built, not free."""
    cands = [
        ("as_built", NORM_WITHOUT_AFFINE_AT_37.replace("AFTER", "z.view_as(h)")),
        ("doubled", NORM_WITHOUT_AFFINE_AT_37.replace("AFTER", "z.view_as(h) * 2.0")),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level2/37_Matmul_Swish_Sum_GroupNorm", cands)
    assert rows[0]["contaminated"] and rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["ref"] == "level2/37_Matmul_Swish_Sum_GroupNorm" and ev["kept"] == [
        "group_norm.bias",
        "group_norm.weight",
    ]
    assert rows[1]["reason"] != "functional_match", rows[1]


# level2/68_Matmul_Min_Subtract (min(x W^T + b, c) - c, c a parameter made from the argument) at other sizes, c kept
# as a plain float; FORWARD is what the forward returns
CONSTANT_AS_FLOAT_AT_68 = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.c = constant

    def forward(self, x):
        return FORWARD

def get_inputs():
    return [torch.rand(16, 64)]

def get_init_inputs():
    return [64, 48, 0.5]
"""
# the same with c folded into the bias when it is made and the weight stored (in, out)
CONSTANT_FOLDED_AT_68 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_out, ceiling):
        super().__init__()
        r = 1.0 / math.sqrt(n_in)
        self.w_t = nn.Parameter(torch.empty(n_in, n_out).uniform_(-r, r))
        self.offset = nn.Parameter(torch.empty(n_out).uniform_(-r, r) - ceiling)

    def forward(self, x):
        return -torch.relu(-(torch.matmul(x, self.w_t) + self.offset))

def get_inputs():
    return [torch.rand(16, 64)]

def get_init_inputs():
    return [64, 48, 0.5]
"""


def test_a_constant_parameter_kept_as_a_float_at_other_sizes_passes_the_screen_and_matches(kernelbench_path, tmp_path):
    """The problem's constant (a parameter its constructor makes from an argument) kept as a plain float by a copy
    at other sizes: the rebuilt problem's canonical probe also runs with its parameters made constant that the
    candidate's weights leave over at their value (`jailed._kept`), so the pair reaches the run and matches; also
    with the constant folded into the bias when made and the weight stored transposed (the offset probe in each
    layout). Clamping from below instead differs in every probe: decided by the screen."""
    cands = [
        ("as_float", CONSTANT_AS_FLOAT_AT_68.replace("FORWARD", "torch.clamp(self.fc(x), max=self.c) - self.c")),
        ("folded", CONSTANT_FOLDED_AT_68),
        ("below", CONSTANT_AS_FLOAT_AT_68.replace("FORWARD", "torch.clamp(self.fc(x), min=self.c) - self.c")),
    ]
    rows = _decided(kernelbench_path, tmp_path, "level2/68_Matmul_Min_Subtract", cands)
    for row in rows[:2]:
        assert row["contaminated"] and row["reason"] == "functional_match", row
        ev = json.loads(row["evidence"])
        assert ev["ref"] == "level2/68_Matmul_Min_Subtract" and ev["kept"] == ["constant"], ev
        assert ev["rebuilt_at"] in ("[64, 48, 0.5]",), ev
    assert rows[2]["reason"] != "functional_match", rows[2]
    tried = json.loads(rows[2]["evidence"])["tried"]
    rebuilt = [t for t in tried if t["ref"] == "level2/68_Matmul_Min_Subtract" and t.get("rebuilt_at")]
    assert rebuilt and rebuilt[0]["status"] == "probe_differs", tried


# level2/12_Gemm_Multiply_LeakyReLU at other sizes, its Linear kept as one augmented matrix applied to [x, 1]:
# [W | b] made at the multiplier (MADE) or [b; W^T] used as it is (FORWARD: what the forward returns of x)
AUGMENTED_AT_12 = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, n_in, n_out, multiplier, slope):
        super().__init__()
        r = 1.0 / math.sqrt(n_in)
        self.aug = nn.Parameter(torch.empty(SHAPE).uniform_(-r, r) * MADE)
        self.m, self.slope = multiplier, slope

    def forward(self, x):
        return F.leaky_relu(FORWARD, self.slope)

def get_inputs():
    return [torch.rand(16, 48)]

def get_init_inputs():
    return [48, 40, 2.0, 0.1]
"""


def test_a_linear_kept_as_one_augmented_matrix_matches(kernelbench_path, tmp_path):
    """A Linear's weight and bias kept as one augmented matrix applied to [x, 1], at other sizes: the screen lets the
    pair run (the problem's weights join into the candidate's: `jailed._pieces_of`), and the run ties the matrix to
    the problem's weight and bias joined (`augment:...`), with the multiplier folded in when it is made, or with the
    bias first and the matrix stored (in + 1, out). The same matrix applied to [x, -1] (the bias subtracted) does not
    match."""
    folded = AUGMENTED_AT_12.replace("SHAPE", "n_out, n_in + 1").replace("MADE", "multiplier")
    folded = folded.replace("FORWARD", "torch.cat([x, x.new_ones(x.shape[0], 1)], 1) @ self.aug.t()")
    first = AUGMENTED_AT_12.replace("SHAPE", "n_in + 1, n_out").replace("MADE", "1.0")
    first = first.replace("FORWARD", "torch.cat([torch.ones_like(x[:, :1]), x], 1).mm(self.aug) * self.m")
    minus = first.replace("torch.ones_like(x[:, :1])", "-torch.ones_like(x[:, :1])")
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level2/12_Gemm_Multiply_LeakyReLU",
        [("folded", folded), ("first", first), ("minus", minus)],
    )
    for row, how in zip(rows[:2], ("augment:col_last:gemm.bias*2", "augment:row_first:gemm.bias")):
        assert row["contaminated"] and row["reason"] == "functional_match", row
        ev = json.loads(row["evidence"])
        assert ev["ref"] == "level2/12_Gemm_Multiply_LeakyReLU" and ev["rebuilt_at"] == "[48, 40, 2.0, 0.1]", ev
        assert [m[2][: len(how)] for m in ev["mapping"]] == [how], ev["mapping"]
    assert rows[2]["reason"] != "functional_match", rows[2]


# level2/5_ConvTranspose2d_Subtract_Tanh at its own sizes, the convolution's bias and the subtracted one merged into
# one shift; FORWARD is what the forward returns of y (the convolution without a bias)
MERGED_SHIFT_AT_5 = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, stride=2, padding=1, output_padding=1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_channels, out_channels, kernel_size, kernel_size) * 0.05)
        self.shift = nn.Parameter(torch.zeros(out_channels))
        self.cfg = (stride, padding, output_padding)

    def forward(self, x):
        s, p, op = self.cfg
        y = F.conv_transpose2d(x, self.weight, None, s, p, op)
        return FORWARD

def get_inputs():
    return [torch.rand(32, 64, 256, 256)]

def get_init_inputs():
    return [64, 64, 4, (64, 1, 1)]
"""
# level2/15_ConvTranspose3d_BatchNorm_Subtract at its own sizes, the norm written out with its gain alone (the
# convolution's bias and the norm's shift cancel against the means subtracted); CENTER: the axes of the last mean
GAIN_ONLY_AT_15 = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias=True):
        super().__init__()
        k = kernel_size
        self.weight = nn.Parameter(torch.randn(in_channels, out_channels, k, k, k) * 0.05)
        self.gain = nn.Parameter(torch.ones(out_channels))
        self.cfg = (stride, padding)

    def forward(self, x):
        y = F.conv_transpose3d(x, self.weight, None, *self.cfg)
        var = y.var((0, 2, 3, 4), unbiased=False, keepdim=True)
        y = (y - y.mean((0, 2, 3, 4), keepdim=True)) * torch.rsqrt(var + 1e-5)
        y = y * self.gain.view(1, -1, 1, 1, 1)
        return y - y.mean(CENTER, keepdim=True)

def get_inputs():
    return [torch.rand(16, 16, 16, 32, 32)]

def get_init_inputs():
    return [16, 32, 3, 2, 1]
"""


def test_two_problem_vectors_merged_into_one_and_a_gain_tied_past_a_dropped_bias_match(kernelbench_path, tmp_path):
    """A copy that merges the convolution's bias and the subtracted bias into one shift is tied to the two joined
    (`shape&-bias`: _other_ties); the same shift added after the tanh instead is another function. A copy that
    drops the convolution's bias and the norm's shift (both cancel against the means) ties its gain, first taken by
    the bias of the same shape, to the norm's gain left untied (_other_ties' free tensors); centring over every axis
    instead stays apart."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level2/5_ConvTranspose2d_Subtract_Tanh",
        [
            ("merged", MERGED_SHIFT_AT_5.replace("FORWARD", "torch.tanh(y + self.shift.view(1, -1, 1, 1))")),
            ("after", MERGED_SHIFT_AT_5.replace("FORWARD", "torch.tanh(y) + self.shift.view(1, -1, 1, 1)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ["shift", "conv_transpose.bias", "shape&-bias"] in ev["mapping"], ev["mapping"]
    assert rows[1]["reason"] != "functional_match", rows[1]
    rows = _decided(
        kernelbench_path,
        tmp_path / "b",
        "level2/15_ConvTranspose3d_BatchNorm_Subtract",
        [
            ("gain", GAIN_ONLY_AT_15.replace("CENTER", "(2, 3, 4)")),
            ("all", GAIN_ONLY_AT_15.replace("CENTER", "(1, 2, 3, 4)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ["gain", "batch_norm.weight", "shape"] in ev["mapping"] and ev["kept"] == ["batch_norm.bias"], ev
    assert rows[1]["reason"] != "functional_match", rows[1]


# level1/65_conv_transposed_2D__square_input__asymmetric_kernel at its own sizes (stride 1, no padding) written as a
# plain convolution over the input padded by k - 1, its filter stored as the problem's with the channel dims swapped
# and the spatial dims flipped; FORWARD is what the forward returns of y
FLIPPED_AT_65 = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(out_channels, in_channels, *kernel_size) * 0.02)
        self.k = kernel_size

    def forward(self, x):
        kh, kw = self.k
        y = F.conv2d(F.pad(x, (kw - 1, kw - 1, kh - 1, kh - 1)), self.kernel)
        return FORWARD

def get_inputs():
    return [torch.rand(8, 64, 512, 512)]

def get_init_inputs():
    return [64, 64, (3, 7)]
"""


def test_a_transposed_convolution_written_as_a_plain_one_over_a_flipped_filter_matches(kernelbench_path, tmp_path):
    """A transposed convolution written as a plain convolution over the padded input with its filter stored
    channel-swapped and flipped: tied as the problem's filter permuted and flipped over its spatial dims
    (`permute:1,0,2,3|flip`). A ReLU after it is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level1/65_conv_transposed_2D__square_input__asymmetric_kernel",
        [
            ("flipped", FLIPPED_AT_65.replace("FORWARD", "y")),
            ("relu", FLIPPED_AT_65.replace("FORWARD", "torch.relu(y)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    assert json.loads(rows[0]["evidence"])["mapping"][0][2].endswith("|flip"), rows[0]["evidence"][:300]
    assert rows[1]["reason"] != "functional_match", rows[1]


# level3/33_VanillaRNN (its state made at the module's `batch_size` in its constructor) written as an Elman cell
# with the input and recurrent maps apart, at other sizes; ACT is the state's activation.
ELMAN_AT_33 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        b = 1.0 / math.sqrt(n_in + n_hidden)
        self.w_in = nn.Parameter(torch.empty(n_in, n_hidden).uniform_(-b, b))
        self.w_rec = nn.Parameter(torch.empty(n_hidden, n_hidden).uniform_(-b, b))
        self.b_rec = nn.Parameter(torch.empty(n_hidden).uniform_(-b, b))
        self.readout = nn.Linear(n_hidden, n_out)

    def forward(self, x, h):
        state = ACT(x @ self.w_in + h @ self.w_rec + self.b_rec)
        return self.readout(state)

def get_inputs():
    return [torch.rand(5, 12), torch.rand(5, 10)]

def get_init_inputs():
    return [12, 10, 7]
"""


def test_a_problem_that_reads_a_module_level_size_runs_at_the_candidates_sizes(kernelbench_path, tmp_path):
    """KernelBench's VanillaRNN makes its state at the module's batch_size: beside a cell written out at batch 5
    it runs with batch_size set to 5 (`rebuilt_sizes`), so the paraphrase matches; another activation does not."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level3/33_VanillaRNN",
        [
            ("elman", ELMAN_AT_33.replace("ACT", "torch.tanh")),
            ("sigmoid", ELMAN_AT_33.replace("ACT", "torch.sigmoid")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["rebuilt_sizes"] == {"batch_size": 5}, ev
    assert rows[1]["reason"] != "functional_match", rows[1]


def test_only_a_size_the_problems_model_reads_and_its_inputs_give_is_set_and_only_to_a_plain_int():
    """What rebuilt_code sets comes from the candidate's (untrusted) trace: a positive int only, one value per
    name; the name is one the problem binds once to an int and reads in its class."""
    from pipeline.decontam.semantic import rebuilt_code

    problem = (
        "import torch\nN = 4\nM = 3\nM = 5\n"
        "class Model(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.s = torch.zeros(N, M)\n"
        "    def forward(self, x, y):\n        return x + self.s.sum()\n"
        "def get_inputs():\n    return [torch.rand(N, 2), torch.rand((N, M))]\n"
    )
    assert rebuilt_code(problem, None, [[[6, 2], "float32"], [[6, 5], "float32"]]).endswith(
        "\nN = 6  # rebuilt at a candidate's input sizes\n"
    )
    for bad in (
        [[[True, 2], "float32"], [[True, 5], "float32"]],
        [[[6, 2], "float32"], [[7, 5], "float32"]],  # two values for one name
        [[[1 << 40, 2], "float32"], [[1 << 40, 5], "float32"]],
        [["v", 3], [[6, 5], "float32"]],
        [[["6", 2], "float32"], [["6", 5], "float32"]],
    ):
        assert rebuilt_code(problem, None, bad) == problem, bad
    assert rebuilt_code(problem, None, [[[4, 2], "float32"], [[4, 5], "float32"]]) == problem  # its own size
    assert (
        rebuilt_code(
            problem.replace("self.s = torch.zeros(N, M)", "self.s = torch.zeros(2, 2)"),
            None,
            [[[6, 2], "float32"], [[6, 5], "float32"]],
        ).count("rebuilt")
        == 0
    )


# level3/36_LSTMHn (a batch-first LSTM returning every layer's last hidden state) written with one (in + hidden,
# 4 hidden) matrix per layer acting on [x_t, h] and one bias for the two, at other sizes; FORGET is the forget
# gate's pre-activation.
FUSED_LSTM_AT_36 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_hidden, n_layers, n_out, dropout=0.0):
        super().__init__()
        r = 1.0 / math.sqrt(n_hidden)
        self.w = nn.ParameterList(
            nn.Parameter(torch.empty((n_in if l == 0 else n_hidden) + n_hidden, 4 * n_hidden).uniform_(-r, r))
            for l in range(n_layers)
        )
        self.b = nn.ParameterList(nn.Parameter(torch.empty(4 * n_hidden).uniform_(-r, r)) for _ in range(n_layers))

    def forward(self, x, h0, c0):
        last, seq = [], x
        for l in range(len(self.w)):
            h, c, outs = h0[l], c0[l], []
            for t in range(seq.shape[1]):
                i, f, g, o = (torch.cat([seq[:, t], h], dim=1) @ self.w[l] + self.b[l]).chunk(4, dim=1)
                c = torch.sigmoid(FORGET) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                outs.append(h)
            seq = torch.stack(outs, dim=1)
            last.append(h)
        return torch.stack(last)

def get_inputs():
    return [torch.rand(3, 5, 10), torch.rand(2, 3, 14), torch.rand(2, 3, 14)]

def get_init_inputs():
    return [10, 14, 2, 5, 0.0]
"""


def test_an_lstm_with_its_input_and_recurrent_matrices_joined_and_its_biases_added_matches(kernelbench_path, tmp_path):
    """Each layer's input and recurrent matrices kept as one (in + hidden, 4 hidden) matrix on [x_t, h] and its two
    biases as one vector: tied as the two joined (`join:row_t:<recurrent>`) and the two biases added (`&+`), the
    problem rebuilt at the candidate's arguments (the screen's pieces read the problem's matrices as joined). A
    forget gate shifted by one is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level3/36_LSTMHn",
        [("fused", FUSED_LSTM_AT_36.replace("FORGET", "f")), ("shifted", FUSED_LSTM_AT_36.replace("FORGET", "f + 1"))],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    ties = [m[2] for m in json.loads(rows[0]["evidence"])["mapping"]]
    assert ties.count("join:row_t:lstm.weight_hh_l0") == 1 and "shape&+lstm.bias_hh_l1" in ties, ties
    assert rows[1]["reason"] != "functional_match", rows[1]


# level3/35_LSTM (draws its initial states in its forward, then a Linear on the last step) written out with a
# cell module per layer at other sizes; STATES makes h0 and c0.
DRAWN_STATES_AT_35 = """
import math
import torch
import torch.nn as nn

class Cell(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        k = 1.0 / math.sqrt(n_hidden)
        self.W_ih = nn.Parameter(torch.empty(4 * n_hidden, n_in).uniform_(-k, k))
        self.W_hh = nn.Parameter(torch.empty(4 * n_hidden, n_hidden).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(4 * n_hidden).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(4 * n_hidden).uniform_(-k, k))

    def forward(self, x, h, c):
        i, f, g, o = (x @ self.W_ih.T + self.b_ih + h @ self.W_hh.T + self.b_hh).chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c

class Model(nn.Module):
    def __init__(self, n_in, n_hidden, n_layers, n_out, dropout=0.0):
        super().__init__()
        self.n_hidden, self.n_layers = n_hidden, n_layers
        self.cells = nn.ModuleList(Cell(n_in if l == 0 else n_hidden, n_hidden) for l in range(n_layers))
        self.head = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        shape = (self.n_layers, x.shape[0], self.n_hidden)
        STATES
        seq = x
        for l, cell in enumerate(self.cells):
            h, c, outs = h0[l], c0[l], []
            for t in range(seq.shape[1]):
                h, c = cell(seq[:, t], h, c)
                outs.append(h)
            seq = torch.stack(outs, dim=1)
        return self.head(seq[:, -1])

def get_inputs():
    return [torch.rand(3, 6, 10)]

def get_init_inputs():
    return [10, 16, 2, 5, 0.0]
"""


def test_a_forward_that_draws_its_states_as_its_problem_does_matches(kernelbench_path, tmp_path):
    """KernelBench's LSTM draws its initial states in its forward: the generator is seeded alike before each
    forward (the canonical probe's and the run's), so a paraphrase drawing them the same way matches; one starting
    from zeros is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level3/35_LSTM",
        [
            ("drawn", DRAWN_STATES_AT_35.replace("STATES", "h0, c0 = torch.randn(shape), torch.randn(shape)")),
            ("zeros", DRAWN_STATES_AT_35.replace("STATES", "h0, c0 = torch.zeros(shape), torch.zeros(shape)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    assert rows[1]["reason"] != "functional_match", rows[1]


# level3/39_GRU (every step's state of the top layer) written gate by gate with one ParameterList per gate and role
# (maps stored (in, hidden)), at other sizes; UPDATE is the new state from n, z and h.
GATES_AT_39 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_hidden, n_layers=3):
        super().__init__()
        r = 1.0 / math.sqrt(n_hidden)
        p = lambda *s: nn.Parameter(torch.empty(*s).uniform_(-r, r))
        self.n_layers = n_layers
        self.Wr, self.Wz, self.Wn = nn.ParameterList(), nn.ParameterList(), nn.ParameterList()
        self.Ur, self.Uz, self.Un = nn.ParameterList(), nn.ParameterList(), nn.ParameterList()
        self.br, self.bz, self.bn, self.cr, self.cz, self.cn = [nn.ParameterList() for _ in range(6)]
        for l in range(n_layers):
            for w in (self.Wr, self.Wz, self.Wn):
                w.append(p(n_in if l == 0 else n_hidden, n_hidden))
            for u in (self.Ur, self.Uz, self.Un):
                u.append(p(n_hidden, n_hidden))
            for b in (self.br, self.bz, self.bn, self.cr, self.cz, self.cn):
                b.append(p(n_hidden))

    def forward(self, x, h0):
        seq = x
        for l in range(self.n_layers):
            h, outs = h0[l], []
            for t in range(seq.shape[0]):
                r = torch.sigmoid(seq[t] @ self.Wr[l] + self.br[l] + h @ self.Ur[l] + self.cr[l])
                z = torch.sigmoid(seq[t] @ self.Wz[l] + self.bz[l] + h @ self.Uz[l] + self.cz[l])
                n = torch.tanh(seq[t] @ self.Wn[l] + self.bn[l] + r * (h @ self.Un[l] + self.cn[l]))
                h = UPDATE
                outs.append(h)
            seq = torch.stack(outs)
        return seq

def get_inputs():
    return [torch.rand(5, 3, 10), torch.rand(2, 3, 12)]

def get_init_inputs():
    return [10, 12, 2]
"""


def test_a_gru_written_gate_by_gate_is_tied_one_piece_per_gate(kernelbench_path, tmp_path):
    """Each gate's input map, bias, recurrent map and recurrent bias read in turn: the r-th tensor of every gate is
    a piece of one problem tensor (weight_ih = [W_ir; W_iz; W_in] ...), tied per layer by that stride (jailed.
    _strided), the square maps read transposed. The update gate's two terms swapped is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level3/39_GRU",
        [
            ("gates", GATES_AT_39.replace("UPDATE", "n + z * (h - n)")),
            ("swapped", GATES_AT_39.replace("UPDATE", "h + z * (n - h)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    mapping = json.loads(rows[0]["evidence"])["mapping"]
    assert ["Uz.1", "gru.weight_hh_l1", "split_t:0:12"] in mapping, mapping
    assert rows[1]["reason"] != "functional_match", rows[1]


# level2/48_Conv3d_Scaling_Tanh_Multiply_Sigmoid (its per-channel scale a random parameter) with the scale drawn and
# multiplied into the filter and its bias when they are made; COMBINE joins the activation and the gain.
SCALE_FOLDED_AT_48 = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        scale = torch.randn(bias_shape)
        with torch.no_grad():
            self.conv.weight.mul_(scale.view(-1, 1, 1, 1, 1))
            self.conv.bias.mul_(scale.view(-1))
        self.gain = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.sigmoid(COMBINE)

def get_inputs():
    return [torch.rand(128, 3, 16, 64, 64)]

def get_init_inputs():
    return [3, 16, 3, 2, (16, 1, 1, 1)]
"""


def test_a_random_per_channel_scale_folded_into_a_filter_and_its_bias_is_tied_as_their_product(
    kernelbench_path, tmp_path
):
    """The problem's scale parameter multiplied into the filter and the bias when they are made: each tied as the
    problem's tensor times the scale per output channel (`&*scaling_factor`), the gain moved to the problem's other
    parameter of its size. The gain added instead of multiplied is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level2/48_Conv3d_Scaling_Tanh_Multiply_Sigmoid",
        [
            ("folded", SCALE_FOLDED_AT_48.replace("COMBINE", "torch.tanh(self.conv(x)) * self.gain")),
            ("added", SCALE_FOLDED_AT_48.replace("COMBINE", "torch.tanh(self.conv(x)) + self.gain")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    mapping = json.loads(rows[0]["evidence"])["mapping"]
    assert ["conv.weight", "conv.weight", "name&*scaling_factor"] in mapping, mapping
    assert rows[1]["reason"] != "functional_match", rows[1]


# level2/9_Matmul_Subtract_Multiply_ReLU (relu((x W^T + b - c) * m)) at its sizes, the factor and the offset folded
# into the weights when they are made; OFFSET is the stored bias.
SCALE_AND_OFFSET_AT_9 = """
import math
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n_in, n_out, sub, mul):
        super().__init__()
        bound = 1.0 / math.sqrt(n_in)
        self.weight = nn.Parameter(torch.empty(n_out, n_in).uniform_(-bound, bound) * mul)
        b = torch.empty(n_out).uniform_(-bound, bound)
        self.bias = nn.Parameter(OFFSET)

    def forward(self, x):
        return torch.relu(x @ self.weight.t() + self.bias)

def get_inputs():
    return [torch.rand(1024, 8192)]

def get_init_inputs():
    return [8192, 8192, 2.0, 1.5]
"""


def test_a_scale_and_an_offset_folded_in_together_are_tied_as_both(kernelbench_path, tmp_path):
    """The factor in the matrix and the bias, the subtracted constant scaled into the bias: tied as
    the problem's tensors times the factor, the bias also moved by the scaled offset (`shape*1.5+=-3.0`). The offset
    folded in unscaled is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level2/9_Matmul_Subtract_Multiply_ReLU",
        [
            ("both", SCALE_AND_OFFSET_AT_9.replace("OFFSET", "(b - sub) * mul")),
            ("unscaled", SCALE_AND_OFFSET_AT_9.replace("OFFSET", "b * mul - sub")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    ties = [m[2] for m in json.loads(rows[0]["evidence"])["mapping"]]
    assert any("*1.5+=" in t and abs(float(t.split("+=")[1]) + 3.0) < 1e-6 for t in ties), ties
    assert rows[1]["reason"] != "functional_match", rows[1]


def test_a_parameter_free_copy_whose_outputs_differ_is_a_near_variant_after_its_run(kernelbench_path, tmp_path):
    """A copy with one constant changed, without weights (Softplus at another sharpness): its run beside the problem
    compares the outputs (no tie to fold, no exception) and the row is a near_variant of it."""
    code = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return F.softplus(x, beta=1.01)\n\n"
        "def get_inputs():\n    return [torch.rand(16, 64)]\n\ndef get_init_inputs():\n    return []\n"
    )
    rows = _decided(kernelbench_path, tmp_path, "level1/29_Softplus", [("sharpened", code)])
    assert rows[0]["reason"] == "near_variant", rows[0]
    ev = json.loads(rows[0]["evidence"])
    assert ev["tried"][0]["status"] == "ran" and ev["tried"][0]["max_abs_diff"] > 1e-3, ev


# level2/41_Gemm_BatchNorm_GELU_ReLU at other sizes, its square matrix kept as (in, out) and read as x @ kernel, the
# batch statistics written out; ACT is the activation after the norm.
SQUARE_KERNEL_AT_41 = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        a = n_in ** -0.5
        self.kernel = nn.Parameter(torch.empty(n_in, n_out).uniform_(-a, a))
        self.offset = nn.Parameter(torch.empty(n_out).uniform_(-a, a))
        self.gamma = nn.Parameter(torch.ones(n_out))
        self.beta = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        h = x @ self.kernel + self.offset
        var, mean = torch.var_mean(h, dim=0, unbiased=False)
        h = (h - mean) / torch.sqrt(var + 1e-5) * self.gamma + self.beta
        return torch.maximum(ACT, torch.zeros_like(h))

def get_inputs():
    return [torch.rand(32, 64)]

def get_init_inputs():
    return [64, 64]
"""


def test_a_square_matrix_stored_transposed_beside_a_group_of_vectors_is_tried_transposed(kernelbench_path, tmp_path):
    """A square weight stored (in, out) beside three vectors of one shape (its bias, the norm's gain and shift): each
    group's first other tie is tried alone before the combinations, so the matrix's transpose is not left behind the
    vectors' permutations, which fill the budget (jailed._tie_combinations). Another activation is another function."""
    rows = _decided(
        kernelbench_path,
        tmp_path,
        "level2/41_Gemm_BatchNorm_GELU_ReLU",
        [
            ("transposed", SQUARE_KERNEL_AT_41.replace("ACT", "F.gelu(h)")),
            ("silu", SQUARE_KERNEL_AT_41.replace("ACT", "F.silu(h)")),
        ],
    )
    assert rows[0]["reason"] == "functional_match", rows[0]
    mapping = json.loads(rows[0]["evidence"])["mapping"]
    assert ["kernel", "gemm.weight", "transpose"] in mapping, mapping
    assert rows[1]["reason"] != "functional_match", rows[1]
