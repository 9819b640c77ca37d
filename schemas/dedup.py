from schemas._base import BOOL, F64, I64, STR, field, table_schema

SCHEMA = table_schema(
    "dedup",
    1,
    "One row per task of our corpus: its near-duplicate cluster and whether it is removed in favour of the "
    "cluster's kept task (pipeline.decontam.dedup).",
    [
        field("task_id", STR, "the task"),
        field("cluster_id", STR, "the cluster: task_id of its kept task (a singleton cluster is the task itself)"),
        field("kept_task_id", STR, "the task kept for this cluster"),
        field("removed", BOOL, "true: a near-duplicate of kept_task_id, drop it"),
        field("reason", STR, "near_duplicate | exact_duplicate when removed; empty when kept"),
        field("jaccard_to_kept", F64, "exact Jaccard of this task's view to the kept task's (1.0 for the kept one)"),
        field("cluster_size", I64, "number of tasks in the cluster"),
    ],
)
