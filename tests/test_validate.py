"""Validation filters: each filter's failure case and each hostile candidate becomes its reason code, the run
completes, and valid tasks pass. Candidates run as real Ray tasks in real sandboxed processes."""

from __future__ import annotations

import json
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.validate.settings import ValidateSettings
from pipeline.validate.stage import validate


def task(
    forward: str,
    init: str = "",
    inputs: str = "[torch.randn(4, 8)]",
    init_inputs: str = "[]",
    header: str = "import torch\nimport torch.nn as nn",
) -> str:
    return f"""{header}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{textwrap.indent(textwrap.dedent(init) or "pass", " " * 8)}

    def forward(self, x):
{textwrap.indent(textwrap.dedent(forward), " " * 8)}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return {init_inputs}
"""


GOOD = task("return torch.relu(self.lin(x))", init="self.lin = nn.Linear(8, 8)")

# name -> (code, expected reason); filters' failure cases first, then hostile candidates.
CASES = {
    "good": (GOOD, ""),
    "syntax": ("def f(:\n  pass", "syntax_error"),
    "missing": ("import torch\nclass Model(torch.nn.Module):\n    pass\n", "missing_definitions"),
    "import_os": (task("return x", header="import torch\nimport torch.nn as nn\nimport os"), "disallowed_import"),
    "dropout_static": (task("return nn.functional.dropout(x, 0.5)"), "stochastic_op_static"),
    "init_error": (task("return x", init="raise RuntimeError('no')"), "init_error"),
    "bad_inputs": (task("return x", inputs="[]"), "bad_inputs"),
    "forward_error": (task("raise ValueError('bad forward')"), "forward_error"),
    "bad_output": (task("return x.argmax(dim=1)"), "bad_output"),
    "nan": (task("return x / 0.0"), "nan_or_inf"),
    "fixed_inputs": (task("return x * 2", inputs="[torch.ones(4, 8)]"), "fixed_inputs"),
    # Dodges the static list; caught at run time because forward consumes the RNG.
    "stochastic_runtime": (
        task(
            "return x + noise(x)", header="import torch\nimport torch.nn as nn\nfrom torch import rand_like as noise"
        ),
        "stochastic_op",
    ),
    "nondeterministic": (
        task("COUNTER.append(1)\nreturn x * len(COUNTER)", header="import torch\nimport torch.nn as nn\nCOUNTER = []"),
        "nondeterministic",
    ),
    "constant": (task("return torch.zeros_like(x) + 1.0"), "constant_output"),
    "input_independent": (
        task("return self.w.expand(4, 8) + 0.0 * x.sum()", init="self.w = nn.Parameter(torch.randn(8))"),
        "input_independent",
    ),
    "weight_independent": (
        task("return x * 2 + 0.0 * self.w.sum()", init="self.w = nn.Parameter(torch.randn(8))"),
        "weight_independent",
    ),
    "unused_param": (
        task("return x * self.a", init="self.a = nn.Parameter(torch.randn(8))\nself.b = nn.Parameter(torch.randn(8))"),
        "unused_parameters",
    ),
    "unused_module": (
        task("return self.lin(x)", init="self.lin = nn.Linear(8, 8)\nself.act = nn.ReLU()"),
        "unused_modules",
    ),
    "train_eval": (task("return self.bn(x)", init="self.bn = nn.BatchNorm1d(8)"), "train_eval_mismatch"),
    # Nothing to compute: the output is an input's values (as is, reshaped, or through an op that is the identity
    # on these inputs); and a forward that writes into its inputs (the evaluator rejects kernels that do).
    "identity": (task("return x"), "identity_output"),
    "reshape_only": (task("return x.reshape(8, 4)"), "identity_output"),
    "relu_of_nonnegative": (task("return torch.relu(x)", inputs="[torch.rand(4, 8)]"), "identity_output"),
    "inplace_input": (task("x.mul_(2)\nreturn x"), "mutates_inputs"),
    "inplace_then_new": (task("x.add_(1.0)\nreturn torch.tanh(x) * 2"), "mutates_inputs"),
    # The inputs' state is a digest (sums, a position-weighted sum, sampled bytes): values only moved are caught too.
    "inplace_permute": (task("x.copy_(x.flip(0))\nreturn torch.tanh(x) * 2"), "mutates_inputs"),
    # The first inputs are drawn again from their seed: a get_inputs() that draws differently each time fails.
    "inputs_differ_per_draw": (
        task(
            "return torch.tanh(x) * 2",
            inputs="[torch.randn(4, 8) + len(DRAWS.append(1) or DRAWS)]",
            header="import torch\nimport torch.nn as nn\nDRAWS = []",
        ),
        "nondeterministic",
    ),
    # Hostile candidates.
    "infinite_loop": (task("while True:\n    pass"), "timeout"),
    "memory_bomb": (task("return torch.empty(2**40) + x.sum()"), "memory_limit"),
    "sys_exit": (task("raise SystemExit(3)"), "sys_exit"),
    "exit_builtin": (task("exit()"), "sys_exit"),
    # Reaching out through attribute chains (`torch.os`, `torch.save`, private helpers, `torch.hub`): static.
    "file_outside": (task("torch.save(x, '/tmp/opforge-validate-evil.pt')\nreturn x"), "disallowed_import"),
    "file_outside_py": (
        task("torch.serialization._open_file('/etc/opforge-evil', 'wb')\nreturn x"),
        "disallowed_import",
    ),
    "network": (
        task("torch.hub.download_url_to_file('http://192.0.2.1/w.pt', 'w.pt')\nreturn x"),
        "disallowed_import",
    ),
    "torch_os": (task("torch.os.system('touch /tmp/x')\nreturn x * 2"), "disallowed_import"),
    "getattr_chain": (task("getattr(torch, 'o' + 's').getpid()\nreturn x * 2"), "disallowed_import"),
    "cpp_ext_subprocess": (
        task("torch.utils.cpp_extension.subprocess.run(['id'])\nreturn x * 2"),
        "disallowed_import",
    ),
    "flood_stdout": (task("print('y' * 2_000_000)\nreturn self.lin(x)", init="self.lin = nn.Linear(8, 8)"), ""),
    # Replacing what the filters compute with (a nondeterministic task that makes allclose always agree):
    # seen in the source, or, through an alias the static check cannot follow, after the module body / forward.
    "patch_static": (
        task(
            "return x * torch.rand_like(x)",
            header="import torch\nimport torch.nn as nn\ntorch.allclose = lambda *a, **k: True",
        ),
        "monkey_patching",
    ),
    "patch_alias": (
        task("return x * 2", header="import torch\nimport torch.nn as nn\nT = torch\nT.equal = lambda *a, **k: False"),
        "monkey_patching",
    ),
    "patch_in_forward": (task("T = torch\nT.isnan = torch.isinf\nreturn x * 2"), "monkey_patching"),
    # Importing transformers makes torch wrap some of its own functions (torch.manual_seed): not a patch.
    "torch_wraps_itself": (
        task(
            "return self.act(x)",
            init="self.act = MishActivation()",
            header="import torch\nimport torch.nn as nn\nfrom transformers.activations import MishActivation",
        ),
        "",
    ),
}
# Scale is not structure: a loss is one number, a softmax over 32k columns is ~3e-5 everywhere; both depend on
# their inputs and must be kept (compared across inputs at their own scale, never element against element).
LOSS_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(64, 32)

    def forward(self, x, y):
        return torch.nn.functional.mse_loss(self.lin(x), y)


def get_inputs():
    return [torch.randn(16, 64), torch.randn(16, 32)]


def get_init_inputs():
    return []
"""
CASES["scalar_loss"] = (LOSS_TASK, "")
CASES["wide_softmax"] = (task("return torch.softmax(x, dim=-1)", inputs="[torch.randn(4, 32768)]"), "")
CASES["nearly_constant"] = (task("return x * 1e-12 + 3.0"), "constant_output")
# Only reachable with the static import filter off (the sandbox layers alone must catch them).
UNCHECKED = {
    "segfault": (task("import ctypes\nctypes.string_at(0)\nreturn x"), "segfault"),
    "fork_bomb": (task("import os\nwhile True:\n    os.fork()"), "process_blocked"),
    "socket": (
        task("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=2)\nreturn x"),
        "network_blocked",
    ),
    "file_outside": (
        task("torch.serialization._open_file('/etc/opforge-evil', 'wb')\nreturn x"),
        "file_access_blocked",
    ),
    "native_write_outside": (
        task("torch.save(x, '/etc/opforge-validate-evil.pt')\nreturn x * 2"),
        "file_access_blocked",
    ),
    "network": (task("torch.hub.download_url_to_file('http://192.0.2.1/w.pt', 'w.pt')\nreturn x"), "network_blocked"),
    # Writing a verdict on the result channel (the fd the bootstrap reports on) and closing it so that the real
    # report is lost, then returning zeros.
    "forged_channel": (
        task(
            "return torch.zeros_like(x)",
            header=(
                "import torch\nimport torch.nn as nn\nimport os, json\n"
                "for fd in range(3, 1024):\n    try:\n        os.write(fd, (json.dumps({'type': 'result', 'value': {"
                "'checks': {}, 'details': {}, 'reason': ''}}) + '\\n').encode())\n        os.close(fd)\n"
                "    except OSError:\n        pass\n"
            ),
        ),
        "forged_report",
    ),
}


@pytest.fixture(scope="module")
def fast_settings():
    return ValidateSettings(timeout_s=30, memory_mb=3072, check_compile=False)


def test_every_filter_and_hostile_candidate_gets_its_reason(ray_local, fast_settings):
    names = list(CASES)
    tbl = pa.table({"code": [CASES[n][0] for n in names]})
    from pipeline.executor import RayExecutor

    out = validate(tbl, fast_settings, "cpu", executor=RayExecutor())  # a Ray task per candidate
    assert out.num_rows == len(names)  # the run completed: one row per candidate
    rows = dict(zip(names, out.to_pylist()))
    got = {n: rows[n]["reason"] for n in names}
    want = {n: CASES[n][1] for n in names}
    assert got == want
    for n in names:
        assert rows[n]["valid"] == (want[n] == "")
        assert rows[n]["runtime_window_checked"] is False  # CPU: recorded as not checked
        assert rows[n]["check_runtime_window"] is None
    assert rows["good"]["eager_ms"] > 0 and rows["good"]["n_params"] == 72
    # Where its time went, phase by phase (from the jail's start to the eager timing; CPU: nothing compiled here)
    phases = json.loads(rows["good"]["phase_s"])
    assert {"start", "import", "build", "forward", "checks", "eager_timing"} <= set(phases), phases
    assert all(v >= 0 for v in phases.values()) and phases["import"] > 0, phases
    from pipeline.validate.harness import PHASES

    # Only the harness's phases reach a row, whatever a candidate writes into its report
    assert all(set(json.loads(r["phase_s"] or "{}")) <= set(PHASES) for r in rows.values())
    assert rows["flood_stdout"]["stdout_bytes"] > 2_000_000
    assert rows["unused_param"]["unused"] == ["b"]
    assert rows["unused_module"]["unused"] == ["module:act"]
    assert rows["train_eval"]["train_eval_max_abs_err"] > 1e-3
    assert rows["file_outside"]["check_imports"] is False


def test_sandbox_layers_alone_catch_what_static_checks_would(fast_settings):
    s = fast_settings.model_copy(update={"enforce_imports": False})
    names = list(UNCHECKED)
    out = validate(pa.table({"code": [UNCHECKED[n][0] for n in names]}), s, "cpu")
    assert dict(zip(names, out.column("reason").to_pylist())) == {n: UNCHECKED[n][1] for n in names}


def test_output_and_memory_limits(fast_settings):
    s = fast_settings.model_copy(update={"max_output_mb": 0.0001})
    out = validate(pa.table({"code": [GOOD]}), s, "cpu")
    assert out.column("reason").to_pylist() == ["output_too_large"]
    s = fast_settings.model_copy(update={"max_memory_mb": 1})
    out = validate(pa.table({"code": [GOOD]}), s, "cpu")
    assert out.column("reason").to_pylist() == ["memory_too_large"]
    assert out.column("peak_memory_mb").to_pylist()[0] > 1


@pytest.mark.slow
def test_compile_filters():
    """torch.compile must run and agree with eager: a candidate that computes something else when compiled is
    caught with its error recorded (one sandboxed compile; 10-60 s on a loaded 2-core CPU)."""
    # Statically, `torch.compiler` is already refused; the static filter is off here to test the runtime one.
    s = ValidateSettings(timeout_s=300, enforce_imports=False)  # the session's TORCHINDUCTOR_CACHE_DIR (conftest)
    code = task(
        "if torch.compiler.is_compiling():\n    return x * 2\nreturn torch.relu(self.lin(x))",
        init="self.lin = nn.Linear(8, 8)",
    )
    out = validate(pa.table({"code": [code]}), s, "cpu").to_pylist()[0]
    assert out["check_compile_runs"] is True and out["compile_s"] > 0
    assert out["reason"] == "compile_mismatch" and out["check_compile_agree"] is False
    assert out["max_abs_err"] > 1e-3 and out["max_rel_err"] > 1e-3


def test_cli_accepts_the_cuda_agent_ops_shape(tmp_path, fast_settings):
    """`opforge validate` on a Parquet shaped like CUDA-Agent-Ops-6K (code, ops, data_source), exit 0."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    src = tmp_path / "ops6k.parquet"
    pq.write_table(
        pa.table(
            {
                "code": [GOOD, "def f(:"],
                "ops": ['["torch.nn.Linear", "torch.relu"]', "[]"],
                "data_source": ["torch#2", "torch#1"],
            }
        ),
        src,
    )
    res = CliRunner().invoke(
        app,
        [
            "validate",
            str(src),
            "--out",
            str(tmp_path / "out"),
            "--no-ray",
            "--device",
            "cpu",
            "--set",
            "validate.check_compile=false",
            "--set",
            "validate.timeout_s=60",
            "--set",
            f"data_root={tmp_path / 'data'}",
        ],
    )
    assert res.exit_code == 0, res.output
    v = pq.read_table(tmp_path / "out" / "validation.parquet")
    assert v.column("reason").to_pylist() == ["", "syntax_error"]
    from pipeline.identity import task_id

    assert v.column("task_id").to_pylist()[0] == task_id(GOOD)


@pytest.mark.gpu
def test_runtime_window_on_gpu(tmp_path):
    """On a GPU the eager time is measured with CUDA events and the window is checked, both ways."""
    big = task("return torch.relu(x) * 2.0 + 1.0", inputs="[torch.randn(2**28)]")
    tiny = task("return torch.relu(x) * 2.0", inputs="[torch.randn(64)]")
    s = ValidateSettings(check_compile=False, memory_mb=0)
    out = validate(pa.table({"code": [big, tiny]}), s, "cuda").to_pylist()
    assert all(r["runtime_window_checked"] for r in out), [(r["reason"], r["detail"], r["jail"]) for r in out]
    assert out[0]["check_runtime_window"] is True and 1.0 <= out[0]["eager_ms"] <= 100.0, out[0]
    assert out[1]["reason"] == "runtime_out_of_window" and out[1]["eager_ms"] < 1.0
    # The window comes before torch.compile: a task outside it is dropped without being compiled.
    (r,) = validate(pa.table({"code": [tiny]}), ValidateSettings(memory_mb=0), "cuda").to_pylist()
    assert r["reason"] == "runtime_out_of_window" and r["check_compile_runs"] is None and r["compile_s"] is None, r
    # A task far past the window's top is out of it after one warm call, before the eager checks run.
    slow = task("for _ in range(3000):\n    x = torch.sin(x)\nreturn x", inputs="[torch.randn(2**27)]")
    (r,) = validate(pa.table({"code": [slow]}), s, "cuda").to_pylist()
    assert r["reason"] == "runtime_out_of_window" and r["eager_ms"] > 400.0, r
    assert r["check_deterministic"] is None and r["check_non_constant"] is None, r


@pytest.mark.gpu
def test_out_of_gpu_memory_beside_others_is_not_the_tasks_fault(tmp_path):
    """Two tasks that each fit the GPU alone but not together, validated side by side: one runs out of memory
    beside the other, runs again with the GPU to itself, and both are valid."""
    import torch

    from pipeline.executor import LocalExecutor

    n = int(torch.cuda.mem_get_info()[0] * 0.6) // 4  # 60% of the free memory each (kept by the caching allocator)
    code = [
        task(
            f"z = torch.zeros({n}, device=x.device)\nreturn torch.relu(x) * 2.0 + z[:1] + {k}.0",
            inputs="[torch.randn(2**26)]",
        )
        for k in range(2)
    ]
    s = ValidateSettings(check_compile=False, memory_mb=0, jobs_per_gpu=2)
    out = validate(pa.table({"code": code}), s, "cuda", executor=LocalExecutor(threads=2)).to_pylist()
    assert all(r["valid"] for r in out), [(r["reason"], r["detail"]) for r in out]
    # One ran again with the share its out-of-memory message asked for: more than half, so never beside the other.
    assert any(r["gpu_memory_share"] > 0.5 for r in out), [r["gpu_memory_share"] for r in out]


@pytest.mark.gpu
def test_a_task_sure_to_run_out_of_its_share_says_so_before_allocating(tmp_path):
    """Twice its inputs, weights and outputs past its share of the GPU, a task is out of memory there before it
    allocates anything (in torch's message form, with what it needs); validated beside 15 others, it runs again with
    that and is valid."""
    import torch

    from pipeline.validate.harness import check

    # 5 GiB in, 5 MiB out: 10.01 GiB estimated, past 1/16 of an H200 (7.9 GiB with its headroom).
    big = task("return (x.view(-1, 1024) * 2.0).sum(1)", inputs="[torch.randn(5 * 2**28)]")
    with pytest.raises(torch.cuda.OutOfMemoryError, match="estimated before allocating") as e:
        check({"code": big, "device": "cuda", "gpu_memory_fraction": 0.9 / 16, "check_compile": False})
    assert "Tried to allocate 10.0" in str(e.value)
    assert torch.cuda.memory_allocated() == 0
    # A module-level cache that get_inputs fills: the estimate fills its own namespace's, never the real one with
    # meta tensors.
    cached = task(
        "return torch.sin(x) * 2",
        inputs="[_const() * torch.randn(2**24)]",
        header="import torch\nimport torch.nn as nn\n_C = []\n\n\ndef _const():\n    if not _C:\n"
        "        _C.append(torch.arange(2**24) % 7 + 1.0)\n    return _C[0]",
    )
    s = ValidateSettings(memory_mb=0, jobs_per_gpu=16)
    out = validate(pa.table({"code": [big, cached]}), s, "cuda").to_pylist()
    assert out[0]["valid"] and out[0]["gpu_memory_share"] > 1 / 16, [(r["reason"], r["detail"]) for r in out]
    assert out[1]["check_inputs"] is True and out[1]["check_forward"] is True, (out[1]["reason"], out[1]["detail"])
    assert out[1]["check_deterministic"] is True and out[1]["gpu_memory_share"] == 1 / 16, out[1]["reason"]


def test_a_tasks_footprint_comes_from_the_meta_device_and_leaves_its_module_alone():
    """Inputs, weights, buffers and outputs, counted without memory; a forward that cannot run on the meta device
    leaves its outputs out; a task that cannot build there has no footprint; module state stays the real build's."""
    import torch

    from pipeline.validate.harness import _footprint

    lin = task(
        "return self.lin(x)",
        init="self.lin = nn.Linear(1024, 2048)\nself.register_buffer('b', torch.zeros(256))",
        inputs="[torch.randn(64, 1024)]",
    )
    assert _footprint(torch, lin) == 4 * (64 * 1024 + 1024 * 2048 + 2048 + 256 + 64 * 2048)
    data_dependent = task("return x[: int(x.sum().item()) % 3 + 1]", inputs="[torch.randn(1000)]")
    assert _footprint(torch, data_dependent) == 4 * 1000
    assert _footprint(torch, task("return x", init="self.w = torch.randn(4).numpy()")) is None
    assert _footprint(torch, "this is not python") is None
    # The module body runs on the meta device too: its module-level tensors take no memory.
    import builtins

    seen = task(
        "return x * _W",
        inputs="[torch.randn(8)]",
        header="import builtins\nimport torch\nimport torch.nn as nn\n_W = torch.ones(2**20)\n"
        "builtins.__dict__.setdefault('_opforge_fp_seen', []).append(str(_W.device))",
    )
    try:
        assert _footprint(torch, seen) is not None and builtins._opforge_fp_seen == ["meta"]
    finally:
        builtins.__dict__.pop("_opforge_fp_seen", None)


def test_timing_stops_at_a_warm_call_far_past_the_window():
    """The first warm-up call is timed: past the give-up bound its time is the answer (a task far outside the runtime
    window holds the GPU's exclusive timing lock for one call, not thirteen); below it, warm-up and trials all run."""
    from pipeline.validate.harness import _median_ms

    calls = []
    assert _median_ms(lambda: calls.append(1), "cpu", 3, 10, give_up_ms=-1.0) >= 0 and len(calls) == 1
    calls.clear()
    _median_ms(lambda: calls.append(1), "cpu", 3, 10, give_up_ms=None)
    assert len(calls) == 13
    calls.clear()
    _median_ms(lambda: calls.append(1), "cpu", 3, 10, give_up_ms=1e9)
    assert len(calls) == 13


def test_timed_calls_hold_the_timing_lock_and_warm_up_calls_do_not():
    """The first call and the trials run inside the timing context (the GPU's lock exclusive), the warm-up calls
    inside the other one: nothing is measured there, so they need not keep the GPU from every other candidate."""
    import contextlib

    from pipeline.validate.harness import _median_ms

    where: list[str] = []
    state = {"in": "none"}

    def ctx(name):
        @contextlib.contextmanager
        def c():
            state["in"] = name
            yield
            state["in"] = "none"

        return c

    _median_ms(lambda: where.append(state["in"]), "cpu", 3, 10, None, (ctx("warm"), ctx("timed")))
    assert where == ["timed"] + ["warm"] * 2 + ["timed"] * 10
    where.clear()
    _median_ms(lambda: where.append(state["in"]), "cpu", 3, 10, -1.0, (ctx("warm"), ctx("timed")))
    assert where == ["timed"]


def test_output_comparison_is_chunked_and_exact():
    """The harness compares outputs slice by slice on their own device (GPU-sized outputs never go to the host):
    the chunked errors and closeness equal the whole-tensor float64 computation."""
    import torch

    from pipeline.validate import harness

    x = torch.randn(1000, 37)
    y = x + torch.randn(1000, 37) * 1e-3
    y[500, 3] = x[500, 3] + 0.5
    parts = list(harness._chunks(x, y, n=4096))
    assert len(parts) == -(-x.numel() // 4096) and sum(p[0].numel() for p in parts) == x.numel()
    assert all(p[0].dtype == torch.float64 for p in parts)
    mabs, mrel, same = harness._errors([x], [y])
    d = (x.double() - y.double()).abs()
    assert same and mabs == float(d.max()) and mrel == float((d / (y.double().abs() + 1e-8)).max())
    assert harness._close([x], [x.clone()], 0.0, 0.0) and not harness._close([x], [y], 1e-2, 1e-2)
    assert harness._close([x], [y], 1.0, 0.0)
    nan = x.clone()
    nan[0, 0] = float("nan")
    assert harness._close([nan], [nan.clone()], 0.0, 0.0)  # NaN in the same place on both sides is agreement
    z = torch.complex(x, y)  # complex outputs: the imaginary parts count too
    assert harness._close([z], [z.clone()], 0.0, 0.0) and not harness._close([z], [torch.complex(x, x)], 0.0, 0.0)
    assert harness._errors([z], [torch.complex(x, x)])[0] == float(d.max())


def test_a_task_out_of_gpu_memory_at_its_share_runs_again_with_what_it_needed():
    """The next share comes from torch's out-of-memory message (1.5x allocated plus asked), at least 1.5x the last,
    at most the whole GPU; a message without figures (or a lying one) still makes progress."""
    from pipeline.gpumemory import SLOTS
    from pipeline.validate.stage import next_share

    msg = (
        "CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 100.02 GiB "
        "is free. Including non-PyTorch memory, this process has 12.51 GiB memory in use. Of the allocated memory "
        "4.00 GiB is allocated by PyTorch, and 0.50 GiB is reserved by PyTorch but unallocated."
    )
    assert next_share(4, msg) == 9  # 1.5 x 12 GiB of 139.81 GiB: 8.24 of 64 slots, rounded up
    assert next_share(4, "CUDA out of memory.") == 6 and next_share(1, "") == 2
    assert next_share(40, msg) == 60 and next_share(60, msg) == SLOTS
    huge = msg.replace("Tried to allocate 8.00 GiB", "Tried to allocate 900.00 GiB")
    assert next_share(4, huge) == SLOTS


def test_a_deadline_fires_once_and_a_late_cancel_waits_for_the_end():
    """The watchdog behind the runtime window's early stops: cancelled in time, nothing is sent; fired, its verdict is
    the only one (the caller's cancel then waits for the process to end instead of sending a second)."""
    import threading

    from pipeline.validate.harness import _Deadline

    fired = threading.Event()
    d = _Deadline(3600.0, fired.set)
    d.cancel()
    assert not fired.is_set()
    sent = []
    released = threading.Event()
    d = _Deadline(0.0, lambda: (sent.append("verdict"), released.set()))
    assert released.wait(60)
    late = threading.Thread(target=d.cancel, daemon=True)
    late.start()
    late.join(0.2)  # a cancel after the verdict never returns: the verdict's sender ends the process
    assert late.is_alive() and sent == ["verdict"]
