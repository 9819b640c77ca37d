"""Where the GPUs go during rollouts: every GPU consumer holds its GPUs through Ray's accounting.

- LLM replicas (vLLM in Ray actors) hold `tensor_parallel_size` GPUs each.
- Evaluator actors (one candidate measured at a time per actor) get the GPUs left, one each.
- When the replicas would take every GPU, one replica fewer is started so evaluation has a GPU; on a node whose
  GPUs cannot be split that way (one GPU, or one replica spanning them all with tensor_parallel_size 1), the
  replica and one evaluator share the GPU (half a GPU each in Ray's accounting) through the GPU's lock
  (pipeline.gpulock): the engine holds it shared around every generate step, a timed region holds it exclusive, so a
  timing never overlaps generation.

Stdlib only: imported by the GPU-worker side too.
"""

from __future__ import annotations

from dataclasses import dataclass


class PlacementError(ValueError):
    """The requested LLM layout leaves no way to evaluate on these GPUs."""


@dataclass(frozen=True)
class GpuPlan:
    total_gpus: int
    replicas: int  # LLM replicas to start (0: the LLM is not on this cluster, e.g. an OpenAI endpoint)
    gpus_per_replica: float  # Ray num_gpus of each replica actor
    evaluators: int  # evaluator actors
    gpus_per_evaluator: float  # Ray num_gpus of each evaluator actor (0: no GPU in the cluster)
    shared: bool  # generation and evaluation share GPUs and take turns through the GPU lock

    @property
    def held(self) -> float:
        return self.replicas * self.gpus_per_replica + self.evaluators * self.gpus_per_evaluator


def plan_gpus(total_gpus: int, replicas: int, tensor_parallel_size: int = 1) -> GpuPlan:
    """The placement for `replicas` in-cluster LLM replicas of `tensor_parallel_size` GPUs on `total_gpus`."""
    total, tp = int(total_gpus), max(1, int(tensor_parallel_size))
    if total <= 0:  # CPU cluster: engines and one evaluator without GPUs (the harness reports no_gpu)
        return GpuPlan(0, replicas, 0.0, 1, 0.0, False)
    if replicas <= 0:
        return GpuPlan(total, 0, 0.0, total, 1.0, False)
    if tp > total:
        raise PlacementError(f"tensor_parallel_size {tp} needs more GPUs than the cluster's {total}")
    fit = min(replicas, (total - 1) // tp)  # leave at least one GPU for evaluation
    if fit >= 1:
        return GpuPlan(total, fit, float(tp), total - fit * tp, 1.0, False)
    if tp == 1:  # one GPU per replica and no GPU to spare: share each GPU with an evaluator, taking turns
        n = min(replicas, total)
        return GpuPlan(total, n, 0.5, n, 0.5, True)
    raise PlacementError(
        f"{replicas} replica(s) of tensor_parallel_size {tp} would hold all {total} GPUs and "
        f"leave none for kernel evaluation; use tensor_parallel_size <= {total - 1} or 1"
    )
