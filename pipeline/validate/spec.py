"""The validate stage: every task runs in its own sandboxed process (eager and torch.compile); one verdict each."""

from __future__ import annotations

from typing import Any

from pipeline.stage import Plan, Resources, Skip, Stage, device

# The shard only drives the work: validate() asks the item executor for a GPU share per candidate. A shard holding
# a GPU while it waits for children that need one would deadlock a one-GPU node (Ray lends a blocked task's CPU to
# its children, not its GPU).
STAGE = Stage(
    name="validate",
    inputs=("tasks",),
    outputs=("validation",),
    settings="validate_",
    fn="pipeline.validate.stage:validate",
    plan="pipeline.validate.spec:plan",
    shard_key="task_id",
    shard_size=4,
    # threads=0: a shard per CPU without Ray (each task waits on its sandbox subprocess); fan_out: validate()
    # spreads a shard's candidates on the runner's item executor (Ray tasks, a GPU share each on CUDA).
    resources=Resources(cpus=1, gpus=0),
    threads=0,
    fan_out=True,
    command="validate",
    flow="validate_flow",
    docs="validate",
    doc="Run every task in a sandbox (eager and torch.compile) and record a verdict with a reason per task.",
)


def plan(cfg: Any) -> Plan:
    from pipeline.selection import has_table, run_table

    if not has_table(cfg, "tasks"):
        raise Skip("no tasks for this run (run synthesize first)")
    dev = device(cfg)
    return Plan(
        args={"settings": cfg.validate_, "device": dev},
        items=run_table(cfg, "tasks"),
        key={"settings": cfg.validate_, "device": dev},
    )
