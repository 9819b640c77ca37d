from schemas._base import BOOL, F64, I64, STR, field, table_schema
from schemas._chat import CHAT, TOOL_SCHEMAS

SCHEMA = table_schema(
    "critic",
    2,
    "Critic (value model) pretraining targets: one row per assistant turn of each kept trajectory. "
    "return_to_go is always filled: the Monte-Carlo return G_t = sum of r_k for k >= t (gamma = 1; with the default "
    "terminal rewards, every turn's return is the trajectory's final reward). value, advantage and gae_target are "
    "filled when value estimates V(s_t) were supplied to curation (curate.values_path: rows of traj_id, turn, "
    "value): delta_t = r_t + V_{t+1} - V_t (V after the last turn = 0), A_t = sum (gamma lambda)^(k-t) delta_k with "
    "lambda = 0.95, and the critic target A_t + V_t (the lambda-return).",
    [
        field("row_id", STR, "published row id, 'critic:<traj_id>:<turn>'; `opforge lineage ROW_ID` traces it"),
        field(
            "messages",
            CHAT,
            "conversation prefix up to and including this assistant turn (the critic "
            "scores the state after the turn's action), in the sft table's message format",
        ),
        field(
            "tools",
            TOOL_SCHEMAS,
            "the OpenAI tool schemas the agent was given, each an object (pass as apply_chat_template(tools=...))",
        ),
        field("traj_id", STR, "trajectory id (trajectories table)"),
        field("task_id", STR, "task id (tasks table)"),
        field("split", STR, "train | validation (by a hash of task_id, so no task is in both)"),
        field("turn", I64, "0-based index of this assistant turn"),
        field("num_turns", I64, "assistant turns in the whole trajectory"),
        field("is_last", BOOL, "this is the trajectory's last assistant turn"),
        field(
            "turn_reward",
            F64,
            "reward r_t assigned to this turn (settings.turn_reward: 'terminal' puts the "
            "final reward on the last turn and 0 elsewhere; 'per_turn' uses each turn's "
            "evaluation reward)",
        ),
        field(
            "eval_reward",
            I64,
            "the evaluation reward of the kernel this turn produced, if it was evaluated",
            nullable=True,
        ),
        field("return_to_go", F64, "return G_t = sum of r_k for k >= t (gamma = 1)"),
        field("value", F64, "value baseline V(s_t) given to curation", nullable=True),
        field("advantage", F64, "GAE advantage A_t with gamma and lambda (needs the baseline)", nullable=True),
        field("gae_target", F64, "critic target A_t + V(s_t) (the lambda-return; needs the baseline)", nullable=True),
        field("gamma", F64, "discount used (1.0)"),
        field("lam", F64, "GAE lambda used (0.95)"),
        field("final_reward", I64, "the trajectory's final reward"),
        field("model", STR, "model that produced the trajectory"),
        field("rollout_run_id", STR, "run that produced the trajectory"),
        field("run_id", STR, "curation run that wrote the row"),
    ],
)
