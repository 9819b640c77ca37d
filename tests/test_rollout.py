"""Agent rollouts through the real tools: the evaluation harness's workspace, real nvcc builds, the harness's
verify/profile (which report no_gpu here and measure on the H200), a real vLLM engine on a tiny random model, real
Ray actors and tasks, and Parquet written through the trajectories schema."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from pipeline.llm.replay import ReplayBackend
from pipeline.rollout.agent import TERMINATIONS
from pipeline.rollout.environment import KernelEnv, trim
from pipeline.rollout.stage import rollout, token_view, traj_id
from pipeline.rollout.tools import LocalRunner

# Our own task (not KernelBench's): y = relu(x) * 2 on a 4M-element tensor.
TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(4096, 1024)]


def get_init_inputs():
    return []
"""

BROKEN_KERNEL = r"""#include <cuda_runtime.h>
__global__ void relu2_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x
  if (i < n) y[i] = fmaxf(x[i], 0.f) * 2.f;
}
"""

KERNEL = r"""#include <cuda_runtime.h>

__global__ void relu2_kernel(const float4* __restrict__ x, float4* __restrict__ y, long n4) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f) * 2.f; v.y = fmaxf(v.y, 0.f) * 2.f;
    v.z = fmaxf(v.z, 0.f) * 2.f; v.w = fmaxf(v.w, 0.f) * 2.f;
    y[i] = v;
  }
}

__global__ void relu2_tail(const float* __restrict__ x, float* __restrict__ y, long start, long n) {
  long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f) * 2.f;
}

extern "C" void launch_relu2(const float* x, float* y, long n, cudaStream_t stream) {
  long n4 = n / 4;
  int threads = 256;
  if (n4 > 0) relu2_kernel<<<(n4 + threads - 1) / threads, threads, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n4);
  long rest = n - n4 * 4;
  if (rest > 0) relu2_tail<<<1, threads, 0, stream>>>(x, y, n4 * 4, n);
}
"""

BINDING = r"""#include "../binding_registry.h"
#include <c10/cuda/CUDAStream.h>

extern "C" void launch_relu2(const float* x, float* y, long n, cudaStream_t stream);

torch::Tensor relu2_forward(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_relu2(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(), c10::cuda::getCurrentCUDAStream());
  return y;
}

REGISTER_BINDING(relu2_forward, relu2_forward)
"""

MODEL_NEW = """import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return cuda_extension.relu2_forward(x)
"""


def call(name: str, **args) -> dict:
    return {"id": "r", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def turn(content: str, *calls: dict) -> dict:
    return {"content": content, "tool_calls": list(calls)}


def kernel_script() -> list:
    """A full trajectory: explore, reference times, the binding and module, a broken kernel, the fix, compile,
    verify, profile, finish. The template's example kernel and binding files are rewritten (no delete tool), so a
    fresh build cache compiles two torch bindings once. One turn is Hermes text (a model served without a tool
    parser)."""
    return [
        turn("Look around first.", call("list_files")),
        turn("Read the task.", call("read_file", path="model.py")),
        turn("Reference times.", call("profile")),
        turn(
            "Binding and module first.",
            call("write_file", path="kernels/identity_binding.cpp", content=BINDING),
            call("write_file", path="model_new.py", content=MODEL_NEW),
        ),
        turn(
            "A first kernel.", call("write_file", path="kernels/identity.cu", content=BROKEN_KERNEL), call("compile")
        ),
        turn("Missing semicolon; fix it.", call("write_file", path="kernels/identity.cu", content=KERNEL)),
        '<tool_call>\n{"name": "compile", "arguments": {}}\n</tool_call>',
        turn("Check correctness.", call("verify")),
        turn("Measure.", call("profile")),
        turn("Done.", call("finish", summary="vectorised relu*2 with float4 loads")),
    ]


def settings(**kw):
    from pipeline.rollout.settings import RolloutSettings

    base = dict(backend="replay", concurrency=2, max_turns=50, max_context_tokens=131072)
    return RolloutSettings(**(base | kw))


@pytest.fixture(scope="session")
def eval_settings() -> dict:
    # The harness's default build cache (content-addressed, so sharing it is safe): the protected binding.cpp,
    # which every workspace compiles with torch's headers (~30 CPU-seconds), is then built once per machine.
    return {"timing_trials": 10}


def tasks_table(*codes: str) -> pa.Table:
    from pipeline.identity import task_id

    return pa.table({"task_id": [task_id(c) for c in codes], "code": list(codes)})


# ---------------------------------------------------------------- environment


def test_environment_confines_paths_protects_files_and_trims(tmp_path, eval_settings):
    env = KernelEnv(TASK, tmp_path / "ws", LocalRunner(), eval_settings, max_output_chars=300)
    files = env.call("list_files", "{}").text
    assert "model.py" in files and "(read-only)" in files and "model_new.py" in files
    for bad in ("../escape.cu", "/etc/passwd", "kernels/../../x"):
        r = env.call("write_file", json.dumps({"path": bad, "content": "x"}))
        assert r.error and not r.fatal and "workspace" in r.text
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", tmp_path / "ws" / "link.txt")
    assert "outside the workspace" in env.call("read_file", '{"path": "link.txt"}').text
    r = env.call("write_file", json.dumps({"path": "model.py", "content": "hacked"}))
    assert r.error and "read-only" in r.text and (tmp_path / "ws" / "model.py").read_text() == TASK
    assert "shadow" in env.call("write_file", json.dumps({"path": "torch.py", "content": "x"})).text
    # a change that bypassed the tools (e.g. a build step) is detected and reverted
    (tmp_path / "ws" / "binding.cpp").write_text("// replaced")
    (tmp_path / "ws" / "numpy.py").write_text("")
    found = env.check_protected()
    assert "protected_file_modified:binding.cpp" in found and "shadowing_file:numpy.py" in found
    assert env.check_protected() == [] and not (tmp_path / "ws" / "numpy.py").exists()
    # malformed calls become tool text, never exceptions
    assert env.call("rm_rf", "{}").error and "unknown tool" in env.call("rm_rf", "{}").text
    assert "not valid JSON" in env.call("read_file", "{path:").text
    assert "bad arguments" in env.call("read_file", '{"nope": 1}').text
    assert "does not exist" in env.call("read_file", '{"path": "none.cu"}').text
    long = env.call("write_file", json.dumps({"path": "big.txt", "content": "a" * 5000}))
    assert not long.error
    r = env.call("read_file", '{"path": "big.txt"}')
    assert len(r.text) <= 300 + 120 and "offset=300" in r.text
    t = trim("x" * 1000 + "TAIL", 200)
    assert len(t) <= 200 and t.endswith("TAIL") and "trimmed" in t


# ---------------------------------------------------------------- replayed trajectories through the real tools


def test_replayed_kernel_trajectory_compiles_verifies_profiles(tmp_path, eval_settings):
    from pipeline.identity import task_id

    tid = task_id(TASK)
    be = ReplayBackend({tid: kernel_script()})
    out = rollout(
        tasks_table(TASK), settings(), be, eval_settings, "run-replay", out_dir=tmp_path / "data", runner=LocalRunner()
    )
    assert out.num_rows == 1
    row = out.to_pylist()[0]
    assert row["termination"] == "finished" and row["num_turns"] == 10
    turns = row["turns"]
    assert [t["action"] for t in turns] == [
        "list_files",
        "read_file",
        "profile",
        "write_file,write_file",
        "write_file,compile",
        "write_file",
        "compile",
        "verify",
        "profile",
        "finish",
    ]
    msgs = row["messages"]
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    assert len(tool_msgs) == 12 and all(m["tool_call_id"] and m["name"] for m in tool_msgs)
    assert "reference only" in tool_msgs[2]["content"]
    broken_compile = tool_msgs[6]["content"]
    assert "FAILED" in broken_compile and "identity.cu" in broken_compile and "error" in broken_compile
    assert turns[4]["compiled"] is False and turns[4]["kernel_hash"]
    assert turns[6]["compiled"] is True and turns[6]["kernel_hash"] != turns[4]["kernel_hash"]
    verify_text, profile_text = tool_msgs[9]["content"], tool_msgs[10]["content"]
    if "no_gpu" in verify_text:  # CPU machine: the harness says so and nothing is scored as correct
        assert "no_gpu" in profile_text and turns[7]["correct"] is False and row["final_reward"] == -1
    else:  # on the H200: the replayed kernel is verified and timed
        assert turns[7]["correct"] is True and row["final_reward"] >= 1 and turns[8]["solution_ms"] > 0
        assert turns[2]["eager_ms"] > 0
    assert json.loads(row["final_kernel"])["kernels/identity.cu"] == KERNEL
    assert row["final_kernel_hash"] == turns[8]["kernel_hash"]
    timings = json.loads(row["timings"])
    assert timings["compile_s"] > 0 and timings["total_s"] >= timings["gen_s"] + timings["compile_s"]
    assert row["traj_id"] == traj_id(tid, 0, row["seed"]) and row["attempts"] == 1
    # written through the schema as its own shard; a rerun finds it and runs nothing
    from pipeline.storage import DataStore

    assert DataStore(tmp_path / "data").read("trajectories").num_rows == 1
    ran = []
    again = rollout(
        tasks_table(TASK),
        settings(),
        ReplayBackend([]),
        eval_settings,
        "run-replay-2",
        out_dir=tmp_path / "data",
        runner=LocalRunner(),
        on_row=ran.append,
    )
    assert ran == [] and again.to_pylist()[0]["traj_id"] == row["traj_id"]
    # re-scoring: the recorded trajectory replays through today's tools to the same end
    rescored = rollout(
        tasks_table(TASK),
        settings(),
        ReplayBackend.from_trajectories(out),
        eval_settings,
        "rescore",
        runner=LocalRunner(),
    )
    r2 = rescored.to_pylist()[0]
    assert r2["termination"] == "finished" and [t["action"] for t in r2["turns"]] == [t["action"] for t in turns]
    assert r2["final_reward"] == row["final_reward"]


def test_limits_and_termination_reasons(tmp_path, eval_settings):
    """Each termination reason from a script that provokes it; items are never lost."""
    garbage = ["I think the answer is 42.", '<tool_call>{"name": "compile", oops</tool_call>', "still no call"]
    listing = [turn("again", call("list_files"))] * 10
    bad_tools = [
        turn("hm", call("delete_everything")),
        turn("hm", call("read_file", path="../../etc/passwd")),
        turn("hm", call("write_file", path="model.py", content="x")),
    ]
    recover = [garbage[0], turn("ok", call("finish"))]
    codes = [TASK + f"\n# variant {i}\n" for i in range(5)]
    from pipeline.identity import task_id

    ids = [task_id(c) for c in codes]
    assert len(set(ids)) == 1  # comments do not change a task's identity...
    codes = [TASK.replace("2.0", f"{i + 2}.0") for i in range(5)]  # ...values do
    ids = [task_id(c) for c in codes]
    be = ReplayBackend(
        {
            ids[0]: garbage,
            ids[1]: listing,
            ids[2]: bad_tools,
            ids[3]: recover,
            ids[4]: [turn("x" * 4000, call("list_files"))] * 5,
        }
    )
    s = settings(max_turns=4, max_consecutive_malformed=3, max_consecutive_tool_errors=3, max_context_tokens=3500)
    out = {
        r["task_id"]: r
        for r in rollout(tasks_table(*codes), s, be, eval_settings, "limits", runner=LocalRunner()).to_pylist()
    }
    r = out[ids[0]]
    assert r["termination"] == "malformed_output" and r["num_turns"] == 3
    assert [t["action"] for t in r["turns"]] == ["no_tool_call", "malformed", "no_tool_call"]
    assert all(t["malformed"] for t in r["turns"]) and "not valid JSON" in r["turns"][1]["detail"]
    nudges = [m for m in r["messages"] if m["role"] == "user"][1:]
    assert len(nudges) == 2 and "valid tool call" in nudges[0]["content"]
    assert out[ids[1]]["termination"] == "max_turns" and out[ids[1]]["num_turns"] == 4
    r = out[ids[2]]
    assert r["termination"] == "tool_error" and all(t["tool_error"] for t in r["turns"])
    assert "unknown tool" in [m for m in r["messages"] if m["role"] == "tool"][0]["content"]
    r = out[ids[3]]
    assert r["termination"] == "finished" and r["turns"][0]["malformed"] and not r["turns"][1]["malformed"]
    r = out[ids[4]]  # each long turn eats the estimated context budget until no room is left
    assert r["termination"] == "context_exhausted" and 1 <= r["num_turns"] < 4
    for r in out.values():
        assert r["termination"] in TERMINATIONS and r["final_reward"] == -1  # nothing written, nothing scored
        assert r["prompt_token_ids"] is None  # replay has no token ids


def test_timeout_and_engine_error_keep_a_row(tmp_path, eval_settings):
    from pipeline.llm.backend import BackendError

    class Broken(ReplayBackend):
        def chat(self, *a, **kw):
            raise BackendError("HTTP 500: engine crashed")

    out = rollout(tasks_table(TASK), settings(), Broken([]), eval_settings, "broken", runner=LocalRunner())
    r = out.to_pylist()[0]
    assert r["termination"] == "engine_error" and "engine crashed" in r["error"] and r["num_turns"] == 0
    out = rollout(
        tasks_table(TASK),
        settings(trajectory_timeout_s=0.0),
        ReplayBackend([turn("a", call("list_files"))]),
        eval_settings,
        "timeout",
        runner=LocalRunner(),
    )
    assert out.to_pylist()[0]["termination"] == "timeout"


def test_token_view_is_exact_only_when_prefix_consistent():
    turns = [{"completion_token_ids": [5, 6]}, {"completion_token_ids": [9]}]
    p, resp, mask, exact = token_view([[1, 2], [1, 2, 5, 6, 7, 8]], turns)
    assert (p, resp, mask, exact) == ([1, 2], [5, 6, 7, 8, 9], [1, 1, 0, 0, 1], True)
    p, resp, mask, exact = token_view([[1, 2], [1, 2, 5, 4, 7]], turns)  # re-tokenized sample
    assert p == [1, 2] and resp is None and exact is False
    assert token_view([None], [{"completion_token_ids": None}]) == (None, None, None, None)


# ---------------------------------------------------------------- a real vLLM engine drives the loop


@pytest.fixture(scope="session")
def tiny_engine(tmp_path_factory):
    pytest.importorskip("vllm")
    from pipeline.llm.tiny_model import shared_tiny_engine

    return shared_tiny_engine(tmp_path_factory.getbasetemp() / "tiny-llm")


def test_vllm_engine_drives_rollouts_end_to_end(tmp_path, tiny_engine, eval_settings):
    """Nonsense from a random model: every trajectory ends with a reason, with exact sampled ids and seeds."""
    codes = [TASK, TASK.replace("2.0", "3.0")]
    s = settings(
        backend="vllm", samples_per_task=2, max_turns=3, max_tokens_per_turn=48, concurrency=4, temperature=1.0
    )
    out = rollout(
        tasks_table(*codes), s, tiny_engine, eval_settings, "vllm-e2e", out_dir=tmp_path / "data", runner=LocalRunner()
    )
    rows = out.to_pylist()
    assert len(rows) == 4 and len({r["traj_id"] for r in rows}) == 4 and len({r["seed"] for r in rows}) == 4
    for r in rows:
        assert r["termination"] in ("malformed_output", "max_turns", "tool_error", "finished")
        assert 1 <= r["num_turns"] <= 3 and r["model"] == tiny_engine.model_name
        assert r["prompt_token_ids"] == tiny_engine.render(
            [{"role": m["role"], "content": m["content"]} for m in r["messages"][:2]], json.loads(r["tools"])
        )
        for t in r["turns"]:
            assert 1 <= len(t["completion_token_ids"]) <= 48 and t["completion_tokens"] == len(
                t["completion_token_ids"]
            )
            assert t["prompt_tokens"] >= len(r["prompt_token_ids"])
        assert json.loads(r["sampling"])["seed"] == r["seed"]
        # token-exact: the engine continued each session from the sampled tokens, so the view is exact
        assert r["token_view_exact"] is True
        assert sum(r["response_mask"]) == sum(len(t["completion_token_ids"]) for t in r["turns"])
        last = r["turns"][-1]
        assert (
            len(r["prompt_token_ids"]) + len(r["response_token_ids"])
            == last["prompt_tokens"] + last["completion_tokens"]
        )
    # the recorded seed reproduces the first turn exactly
    r = rows[0]
    from pipeline.llm.backend import SamplingParams

    again = tiny_engine.chat(
        [{"role": m["role"], "content": m["content"]} for m in r["messages"][:2]],
        tools=json.loads(r["tools"]),
        sampling=SamplingParams(max_tokens=48, seed=r["seed"]),
    )
    assert again.completion_token_ids == r["turns"][0]["completion_token_ids"]
    # the context budget is enforced per request: room for less than one turn ends the trajectory
    n_prompt = len(r["prompt_token_ids"])
    s2 = settings(backend="vllm", max_turns=3, max_tokens_per_turn=4096, max_context_tokens=n_prompt + 20)
    out2 = rollout(tasks_table(TASK), s2, tiny_engine, eval_settings, "vllm-ctx", runner=LocalRunner()).to_pylist()[0]
    assert out2["termination"] in ("context_exhausted", "malformed_output", "finished")
    assert all(t["completion_tokens"] <= 20 for t in out2["turns"])
    if out2["termination"] != "context_exhausted":  # the first turn fitted; the second could not
        assert out2["num_turns"] == 1


# ---------------------------------------------------------------- Ray: replicas in actors, tools as Ray tasks


def test_ray_replicas_retry_a_dead_replicas_trajectories(ray_local, tmp_path, eval_settings):
    from pipeline.identity import task_id
    from pipeline.llm.backend import ReplicaDiedError, StickyRouter
    from pipeline.llm.ray_replicas import start_replicas
    from pipeline.rollout.tools import RayRunner

    codes = [TASK.replace("2.0", f"{i + 2}.0") for i in range(4)]
    script = {
        task_id(c): [
            turn("look", call("list_files")),
            turn("read", call("read_file", path="model.py")),
            turn("done", call("finish")),
        ]
        for c in codes
    }
    script[task_id(codes[0])][2:2] = [  # one build as a Ray CPU task (the kernel test's sources: cached objects)
        turn(
            "write",
            call("write_file", path="kernels/identity_binding.cpp", content=BINDING),
            call("write_file", path="kernels/identity.cu", content=KERNEL),
            call("write_file", path="model_new.py", content=MODEL_NEW),
        ),
        turn("build", call("compile")),
        turn("check", call("verify")),
    ]
    p = tmp_path / "script.json"
    p.write_text(json.dumps(script))
    router = StickyRouter(
        start_replicas({"backend": "replay", "replay_path": str(p), "replicas": 2}, cpus_per_replica=0)
    )
    slow = task_id(codes[0])
    killed: list[int] = []
    msgs = [{"role": "user", "content": "probe"}]
    for i in range(2):  # one open session on each replica (pick: fewest open sessions, then the lowest index)
        router.count_prompt_tokens(msgs, None, session_id=f"probe-{i}")
    assert router._sessions == {"probe-0": 0, "probe-1": 1}

    class KillOnFirstBuild(RayRunner):
        """The real Ray runner; its first build also kills the replica serving the compiling trajectory, so that
        replica dies mid-trajectory (deterministically, whatever the build cache holds), and another session of
        that replica finds it dead first (the race a loaded machine used to win: the router then served the
        trajectory's next turns on the live replica instead of restarting it)."""

        def compile(self, files, cache_dir):
            if not killed:
                sid = next(k for k in router._sessions if k.startswith(slow))
                killed.append(router._sessions[sid])
                handle = router.replicas[killed[0]].handle
                ray_local.kill(handle, no_restart=True)
                # The kill is asynchronous: wait for the event itself (a call on the actor failing with
                # RayActorError), with no timeout, so that a loaded machine cannot let the trajectory finish its
                # remaining turns on a replica that is still alive (the old bounded poll did, under load).
                while True:
                    try:
                        ray_local.get(handle.info.remote())
                    except ray_local.exceptions.RayActorError:
                        break
                with pytest.raises(ReplicaDiedError):
                    router.count_prompt_tokens(msgs, None, session_id=f"probe-{killed[0]}")
                assert router.live_replicas == 1
            return super().compile(files, cache_dir)

    out = rollout(
        tasks_table(*codes),
        settings(concurrency=4),
        router,
        eval_settings,
        "ray",
        out_dir=tmp_path / "data",
        runner=KillOnFirstBuild(compile_cpus=1, eval_cpus=1, eval_settings=eval_settings),
    )
    rows = out.to_pylist()
    assert len(rows) == 4 and len({r["traj_id"] for r in rows}) == 4
    assert all(r["termination"] == "finished" and r["num_turns"] == len(script[r["task_id"]]) for r in rows), [
        (r["termination"], r["num_turns"], r["attempts"], r["error"]) for r in rows
    ]
    slow_row = next(r for r in rows if r["task_id"] == task_id(codes[0]))
    tool_text = [m["content"] for m in slow_row["messages"] if m["role"] == "tool"]
    assert "compile succeeded" in tool_text[5] and tool_text[6].startswith("verify: compiled=True")
    assert {r["task_id"]: r["attempts"] for r in rows}[slow] == 2 and router.live_replicas == 1
    from pipeline.storage import DataStore

    assert DataStore(tmp_path / "data").read("trajectories").num_rows == 4  # no duplicate from the retries
    router.close()


# ---------------------------------------------------------------- CLI


def test_cli_rollout_replay_writes_table_catalog_and_contamination(tmp_path):
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from pipeline.cli import app
    from pipeline.identity import task_id

    codes = [TASK, TASK.replace("2.0", "5.0")]
    pq.write_table(tasks_table(*codes), tmp_path / "tasks.parquet")
    out = tmp_path / "data"
    # the decontamination stage's decision for the first task, as its table lays it out
    (out / "tables" / "contamination" / "run_id=20261130T000000-aaaaaa").mkdir(parents=True)
    pq.write_table(
        pa.table({"task_id": [task_id(codes[0])], "contaminated": [False]}),
        out / "tables" / "contamination" / "run_id=20261130T000000-aaaaaa" / "part-00000.parquet",
    )
    (tmp_path / "script.json").write_text(
        json.dumps({"*": [turn("look", call("list_files")), turn("done", call("finish"))]})
    )
    args = [
        "rollout",
        "--tasks",
        str(tmp_path / "tasks.parquet"),
        "--backend",
        "replay",
        "--replay",
        str(tmp_path / "script.json"),
        "--out",
        str(out),
        "--samples",
        "2",
        "--run-id",
        "cli-run",
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    t = pq.read_table(out / "trajectories.parquet").to_pylist()
    assert len(t) == 4 and {r["termination"] for r in t} == {"finished"}
    by_task = {r["task_id"]: r for r in t}
    assert by_task[task_id(codes[0])]["contaminated_at_rollout"] is False
    assert by_task[task_id(codes[0])]["contamination_run_id"] == "20261130T000000-aaaaaa"
    assert by_task[task_id(codes[1])]["contaminated_at_rollout"] is None
    from pipeline.catalog import Catalog

    cat = Catalog(out / "catalog.duckdb", out)
    assert cat.sql("SELECT count(*) AS n FROM trajectories").column("n")[0].as_py() == 4
    assert cat.sql("SELECT rows_out FROM stages WHERE stage = 'rollout'").column(0)[0].as_py() == 4
    again = CliRunner().invoke(app, args)  # resume: nothing left to run, nothing duplicated
    assert again.exit_code == 0 and "(0 new)" in again.output
    assert cat.sql("SELECT count(*) AS n FROM trajectories").column("n")[0].as_py() == 4
