"""verl integration for the warm-up dataset: the reward function (`reward.compute_score`) and a PPO config
(`ppo_warmup.yaml`). docs/datasets.md says how to run them."""
