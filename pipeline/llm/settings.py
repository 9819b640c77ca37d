"""Settings of the one LLM-backend layer (used by rollouts and by the LLM task composer)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SecretStr

from pipeline.credentials import Secret


class LLMSettings(BaseModel):
    """Which model, served how. `make_backend` reads these fields from any settings object that has them."""

    model: str | None = Field(None, description="Model path or name (the vLLM model dir, or the served name).")
    backend: str = Field("vllm", description="vllm (offline engine) | openai (OpenAI-compatible endpoint) | replay")
    base_url: str | None = Field(
        None,
        description="openai backend: e.g. http://127.0.0.1:8000/v1; several "
        "comma-separated servers get a sticky router",
    )
    api_key: Secret = Field(
        SecretStr("EMPTY"),
        description="openai backend: bearer token (vLLM's server ignores it "
        "by default). A secret: give it as env:NAME (the environment variable NAME); it is "
        "never stored (docs/runs.md).",
    )
    request_timeout_s: float = Field(600.0, description="openai backend: per-request timeout.")
    request_retries: int = Field(3, description="openai backend: retries of connection errors and 5xx answers.")
    replicas: int = Field(1, description="vllm backend: engine replicas; >1 (or use_ray) puts each in a Ray actor.")
    use_ray: bool = Field(False, description="vllm backend: host the engine(s) in Ray actors even for 1 replica.")
    tensor_parallel_size: int = Field(1, description="vllm backend: GPUs per replica.")
    gpu_memory_utilization: float | None = Field(
        None, description="vllm: share of GPU (CPU: host RAM) memory; None: 0.9 on GPU, 0.15 on CPU."
    )
    max_model_len: int | None = Field(None, description="vllm: engine context length (None: the model's).")
    max_batch_wait_ms: float = Field(2.0, description="vllm: how long the micro-batcher waits to fill a batch.")
    engine_kwargs: dict[str, Any] = Field(default_factory=dict, description="vllm: extra vllm.LLM(...) arguments.")
    share_gpu: bool = Field(
        False,
        description="vllm in Ray: set by the GPU placement (pipeline.llm.placement) "
        "when a replica shares its GPU with kernel evaluation; the engine then takes the GPU's "
        "lock around each generate step and defaults to 0.45 of the GPU memory.",
    )
    gpu_lock: str | None = Field(
        None,
        description="vllm: lock file the engine holds around each generate step "
        "(set from share_gpu inside the replica).",
    )
    replay_path: str | None = Field(
        None,
        description="replay backend: a trajectories Parquet file or a JSON "
        "file {session_or_task_id: [assistant turns]}.",
    )

    @classmethod
    def from_any(cls, settings: Any) -> "LLMSettings":
        """Pick this class's fields out of a dict, a pydantic model or any object with the same attribute names."""
        if isinstance(settings, cls):
            return settings
        if settings is None:
            return cls()
        if isinstance(settings, dict):
            src = settings
        elif hasattr(settings, "model_dump"):
            src = settings.model_dump()
        else:
            src = {k: getattr(settings, k) for k in cls.model_fields if hasattr(settings, k)}
        if isinstance(src.get("llm"), dict):  # a nested `llm:` section wins
            src = {**src, **src["llm"]}
        return cls(**{k: v for k, v in src.items() if k in cls.model_fields})
