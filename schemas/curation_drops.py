from schemas._base import STR, STR_LIST, field, table_schema

SCHEMA = table_schema(
    "curation_drops",
    1,
    "Every task or trajectory that curation left out of a dataset, with the reason (first failing filter) and "
    "every filter it failed.",
    [
        field("dataset", STR, "warmup | sft | critic | rejection_sampled"),
        field("kind", STR, "task | trajectory | sample (a single-turn answer)"),
        field("item_id", STR, "task_id (kind task) or traj_id (kind trajectory)"),
        field("task_id", STR, "task of the item ('' when a trajectory carries none)"),
        field(
            "reason", STR, "first failing filter's reason code, e.g. nonpositive_reward, loop, contamination_changed"
        ),
        field("reasons", STR_LIST, "every filter the item failed, in filter order"),
        field("detail", STR, "human-readable detail (e.g. the duplicate it was folded into)"),
        field("run_id", STR, "curation run that wrote the row"),
    ],
)
