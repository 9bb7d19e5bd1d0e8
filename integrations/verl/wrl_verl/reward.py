"""The reward entry point of a wrl job (``reward.custom_reward_function.path: pkg://wrl_verl.reward``).

The wrl agent loop sets each sample's ``reward_score`` from the env service's score, and verl
then skips its reward loop; this function is reached only for samples whose reward was not set
(for instance rows given to another agent loop). It reads the score the agent loop recorded,
else 0 — it never guesses a reward from text.
"""


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    info = dict(extra_info or {})
    extra = info.get("reward_extra_info") or {}
    score = extra.get("score", info.get("score", 0.0))
    return {"score": float(score or 0.0), "failure_class": str(extra.get("failure_class", "unscored"))}
