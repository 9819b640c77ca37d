"""The agent's tools (OpenAI schemas) and where their heavy work runs.

`LocalRunner` calls the evaluation harness in this process (the harness itself isolates untrusted code in its own
processes). `RayRunner` sends compiles to Ray CPU tasks and evaluations to Ray tasks that ask for one GPU, so Ray
runs one evaluation at a time per GPU while the LLM replicas keep generating for the other trajectories. Work is
shipped as file contents, so a worker on any node rebuilds the workspace locally.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol


def _fn(name: str, description: str, props: dict[str, Any] | None = None, required: list[str] | None = None) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props or {}, "required": required or []},
        },
    }


TOOLS: list[dict[str, Any]] = [
    _fn("list_files", "List the files of the workspace with their sizes and whether they are read-only."),
    _fn(
        "read_file",
        "Read a workspace file (long files are trimmed; use offset to page).",
        {
            "path": {"type": "string", "description": "path relative to the workspace"},
            "offset": {"type": "integer", "description": "first character to return (default 0)"},
        },
        ["path"],
    ),
    _fn(
        "write_file",
        "Create or overwrite a workspace file with the given content. Read-only files are refused.",
        {
            "path": {"type": "string", "description": "path relative to the workspace"},
            "content": {"type": "string", "description": "the complete new file content"},
        },
        ["path", "content"],
    ),
    _fn("compile", "Build the solution (CUDA kernels and bindings); returns success and the trimmed compiler log."),
    _fn(
        "verify",
        "Compile if needed, then check the solution's outputs against the reference on fresh random "
        "inputs; returns correctness, max errors and any rule violations.",
    ),
    _fn(
        "profile",
        "Verify, then time the solution against the reference in eager mode and under torch.compile; "
        "returns times, speedups and the reward (-1 incorrect, 1 correct, 2 faster than eager, 3 faster than "
        "both). Before you have a solution it reports the reference times only.",
    ),
    _fn(
        "finish",
        "End the session. The current solution is evaluated and scored.",
        {"summary": {"type": "string", "description": "one or two sentences on what you did"}},
    ),
]
TOOL_NAMES = [t["function"]["name"] for t in TOOLS]


def materialize(files: dict[str, str], root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return root


def compile_files(files: dict[str, str], cache_dir: str | None = None) -> dict[str, Any]:
    """Build a workspace given as {path: content}; a plain dict (it crosses process boundaries)."""
    from pipeline.evaluate.build import compile_solution

    tmp = Path(tempfile.mkdtemp(prefix="opforge-build-"))
    try:
        t0 = time.perf_counter()
        r = compile_solution(materialize(files, tmp / "ws"), cache_dir=cache_dir)
        out = r.to_dict()  # CompileResult fields: the GPU actor hands it back to the harness as is
        out.setdefault("seconds", time.perf_counter() - t0)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def evaluate_files(task_code: str, files: dict[str, str], mode: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Evaluate a workspace given as {path: content} with the harness; returns EvalResult.to_dict()."""
    from pipeline.evaluate.harness import evaluate

    tmp = Path(tempfile.mkdtemp(prefix="opforge-eval-"))
    try:
        return evaluate(task_code, materialize(files, tmp / "ws"), mode=mode, settings=settings).to_dict()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def reference_times(task_code: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Eager and torch.compile times of the reference alone (the harness's cached baselines)."""
    from pipeline.evaluate import options
    from pipeline.evaluate.build import resolve_arch_list
    from pipeline.evaluate.harness import cuda_device, get_baselines

    s = options.resolve(settings)
    device = cuda_device()
    if device is None:
        return {"eager_ms": None, "compile_ms": None, "device": "", "reason": "no_gpu"}
    b = get_baselines(task_code, device, s, resolve_arch_list(s["arch_list"]))
    return {
        "eager_ms": b.get("eager_ms"),
        "compile_ms": b.get("compile_ms"),
        "device": device,
        "reason": b.get("reason", ""),
        "error": b.get("compile_error", ""),
    }


class ToolRunner(Protocol):
    def compile(self, files: dict[str, str], cache_dir: str | None) -> dict[str, Any]: ...

    def evaluate(self, task_code: str, files: dict[str, str], mode: str, settings: dict[str, Any]) -> dict: ...

    def reference(self, task_code: str, settings: dict[str, Any]) -> dict[str, Any]: ...


class LocalRunner:
    def compile(self, files: dict[str, str], cache_dir: str | None) -> dict[str, Any]:
        return compile_files(files, cache_dir)

    def evaluate(self, task_code: str, files: dict[str, str], mode: str, settings: dict[str, Any]) -> dict:
        return evaluate_files(task_code, files, mode, settings)

    def reference(self, task_code: str, settings: dict[str, Any]) -> dict[str, Any]:
        return reference_times(task_code, settings)


class RayRunner:
    """Compiles as Ray CPU tasks; evaluations on the harness's GPU actors (`pipeline.evaluate.actor.GPUEvaluator`,
    one per GPU, each measuring one candidate at a time behind its GPU lock), fed with the CPU task's build.
    Ray retries a task whose worker died (max_retries); an error raised by the harness is not retried.
    Without GPUs in the cluster, one actor without a GPU answers (the harness then reports no_gpu)."""

    def __init__(
        self,
        compile_cpus: float = 1.0,
        eval_cpus: float = 1.0,
        max_retries: int = 2,
        num_gpus: int | None = None,
        eval_settings: dict[str, Any] | None = None,
        plan: Any = None,
    ):
        import ray

        from pipeline.llm.placement import plan_gpus

        # The evaluator pool is sized from the GPUs the LLM replicas leave (pipeline.llm.placement); without a
        # plan, no LLM holds GPUs of this cluster.
        plan = plan or plan_gpus(int(ray.cluster_resources().get("GPU", 0)), 0)
        n = num_gpus if num_gpus is not None else max(1, plan.evaluators)
        gpus = plan.gpus_per_evaluator
        self.plan = plan
        self._compile = ray.remote(compile_files).options(num_cpus=compile_cpus, max_retries=max_retries)
        actor = ray.remote(WorkspaceEvaluator).options(
            num_gpus=gpus, num_cpus=0 if gpus else eval_cpus, max_concurrency=2, max_restarts=2, max_task_retries=2
        )
        self._actors = [actor.remote(eval_settings) for _ in range(n)]
        self._load = [0] * n
        self._lock = __import__("threading").Lock()

    def compile(self, files: dict[str, str], cache_dir: str | None) -> dict[str, Any]:
        import ray

        return ray.get(self._compile.remote(files, cache_dir))

    def _on_actor(self, method: str, *args: Any) -> Any:
        import ray

        with self._lock:
            i = min(range(len(self._actors)), key=lambda k: self._load[k])
            self._load[i] += 1
        try:
            return ray.get(getattr(self._actors[i], method).remote(*args))
        finally:
            with self._lock:
                self._load[i] -= 1

    def evaluate(self, task_code: str, files: dict[str, str], mode: str, settings: dict[str, Any]) -> dict:
        cr = self.compile(files, settings.get("cache_dir"))  # a CPU task builds; the GPU actor only measures
        return self._on_actor("evaluate_files", task_code, files, mode, settings, cr)

    def reference(self, task_code: str, settings: dict[str, Any]) -> dict[str, Any]:
        return self._on_actor("reference", task_code, settings)

    def close(self) -> None:
        import ray

        for a in self._actors:
            ray.kill(a)


class WorkspaceEvaluator:
    """The harness's GPU actor, taking a workspace as file contents (so any node can serve it)."""

    def __init__(self, settings: dict[str, Any] | None = None):
        from pipeline.evaluate.actor import GPUEvaluator

        self.inner = GPUEvaluator(settings)

    def evaluate_files(
        self,
        task_code: str,
        files: dict[str, str],
        mode: str,
        settings: dict[str, Any],
        compile_result: dict[str, Any] | None,
    ) -> dict[str, Any]:
        import os

        if compile_result and not (compile_result.get("ok") and os.path.exists(compile_result.get("artifact", ""))):
            compile_result = None  # built on another node, or failed: the harness builds (and reports) here
        tmp = Path(tempfile.mkdtemp(prefix="opforge-eval-"))
        try:
            ws = materialize(files, tmp / "ws")
            item = {"task_code": task_code, "solution_path": str(ws), "mode": mode}
            return self.inner.evaluate(item, compile_result)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def reference(self, task_code: str, settings: dict[str, Any]) -> dict[str, Any]:
        return reference_times(task_code, {**self.inner.settings, **settings})

    def placement(self) -> dict[str, Any]:
        """Where this evaluator runs: its GPU(s) and the lock its timed regions take."""
        import os

        return {
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu_lock": self.inner.settings.get("gpu_lock"),
        }
