"""Engine replicas in Ray actors: one actor per replica, `tensor_parallel_size` GPUs each (none on CPU).

The actor is threaded (max_concurrency), so the engine's micro-batcher sees every waiting request of the
trajectories routed to it. A dead actor surfaces as ReplicaDiedError: the router takes it out of rotation and the
rollout stage restarts that replica's trajectories on the others.
"""

from __future__ import annotations

from typing import Any

from pipeline.llm.backend import BackendError, ChatResponse, Message, ReplicaDiedError, SamplingParams


class BackendActor:
    """Hosts any backend built by `make_backend` from a settings dict (in a Ray actor)."""

    def __init__(self, settings: dict[str, Any]):
        from pipeline.llm.backend import make_backend

        settings = {**settings, "replicas": 1, "use_ray": False}
        if settings.get("share_gpu"):  # this GPU is shared with an evaluator: take turns through its lock
            from pipeline.gpulock import lock_path

            settings["gpu_lock"] = lock_path()
            if settings.get("gpu_memory_utilization") is None:
                settings["gpu_memory_utilization"] = 0.45
        self.gpu_lock = settings.get("gpu_lock")
        self.backend = make_backend(settings)

    def chat(self, messages, tools, sampling, session_id):
        return self.backend.chat(messages, tools=tools, sampling=sampling, session_id=session_id)

    def count_prompt_tokens(self, messages, tools, session_id=None):
        return self.backend.count_prompt_tokens(messages, tools, session_id)

    def end_session(self, session_id):
        self.backend.end_session(session_id)

    def info(self) -> dict[str, Any]:
        import os

        return {
            "model_name": self.backend.model_name,
            "pid": os.getpid(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "gpu_lock": self.gpu_lock,
        }


class RayActorBackend:
    """The chat interface over one BackendActor handle."""

    def __init__(self, handle: Any, model_name: str):
        self.handle = handle
        self.model_name = model_name

    def _call(self, method: str, *args: Any) -> Any:
        import ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

        try:
            return ray.get(getattr(self.handle, method).remote(*args))
        except (ActorDiedError, ActorUnavailableError, RayActorError) as e:
            raise ReplicaDiedError(f"LLM replica died: {type(e).__name__}") from None
        except ray.exceptions.RayTaskError as e:  # the backend itself raised: keep its type when it is ours
            cause = e.as_instanceof_cause()
            if isinstance(cause, BackendError):
                raise cause from None
            raise BackendError(str(e)[:500]) from None

    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[dict] | None = None,
        sampling: SamplingParams = SamplingParams(),
        session_id: str | None = None,
    ) -> ChatResponse:
        return self._call("chat", messages, tools, sampling, session_id)

    def count_prompt_tokens(
        self, messages: list[Message], tools: list[dict] | None = None, session_id: str | None = None
    ) -> int | None:
        return self._call("count_prompt_tokens", messages, tools, session_id)

    def end_session(self, session_id: str) -> None:
        try:
            self._call("end_session", session_id)
        except BackendError:
            pass

    def close(self) -> None:
        import ray

        ray.kill(self.handle)


def rollout_plan(settings: Any) -> Any:
    """The GPU placement of a rollout on the current Ray cluster (pipeline.llm.placement): the vllm backend's
    replicas run in the cluster; any other backend holds no GPU of it."""
    import ray

    from pipeline.llm.placement import plan_gpus
    from pipeline.llm.settings import LLMSettings

    s = LLMSettings.from_any(settings)
    in_cluster = max(1, s.replicas) if s.backend == "vllm" else 0
    return plan_gpus(int(ray.cluster_resources().get("GPU", 0)), in_cluster, s.tensor_parallel_size)


def start_replicas(
    settings: Any, *, cpus_per_replica: float = 1.0, max_concurrency: int = 256, plan: Any = None
) -> list[RayActorBackend]:
    """Start the LLM replica actors (Ray must be initialised, or a local one is started), each holding its GPUs
    through Ray (`plan`, default `rollout_plan(settings)`: tensor_parallel_size GPUs each, or half a GPU shared
    with an evaluator on a node with nothing to spare)."""
    import ray

    from pipeline.executor import ensure_ray
    from pipeline.llm.settings import LLMSettings

    s = LLMSettings.from_any(settings)
    ensure_ray()
    plan = plan or rollout_plan(s)
    # A plan without in-cluster replicas (a backend that holds no GPU, e.g. replay): the replicas asked for.
    n, gpus = (plan.replicas, plan.gpus_per_replica) if plan.replicas else (max(1, s.replicas), 0.0)
    cls = ray.remote(BackendActor).options(
        num_cpus=cpus_per_replica, num_gpus=gpus, max_concurrency=max_concurrency, max_restarts=0
    )
    conf = {**s.model_dump(), "share_gpu": plan.shared}
    handles = [cls.remote(conf) for _ in range(n)]
    infos = ray.get([h.info.remote() for h in handles])  # fail now if an engine cannot start
    return [RayActorBackend(h, info["model_name"]) for h, info in zip(handles, infos)]
