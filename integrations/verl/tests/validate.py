"""verl 0.9.1's own config loading and validation, run over one config of a job `wrlc lower --to
verl` wrote: Hydra composes it over verl's ``ppo_trainer`` exactly as ``python -m
verl.trainer.main_ppo --config-path JOB/config --config-name RUN`` does (with the overrides the
job's launch.sh passes), then verl's ``validate_config``, the dataclass configs the trainer and
workers build (their ``__post_init__`` checks), the names verl resolves only at training time
(advantage estimator, policy loss, KL estimators, reward manager), the tools, agent loops and
reward function loaded as verl's workers load them, and verl's ``RLHFDataset`` over the job's
parquet. CPU only: no Ray, no GPU.
"""

from __future__ import annotations

import os
import warnings

warnings.filterwarnings("ignore")


def launch_overrides(job: str, run: str, model: str) -> list[str]:
    """The overrides launch.sh passes to ``main_ppo`` (absolute paths)."""
    data = os.path.join(job, "data")
    evals = sorted(f for f in os.listdir(data) if f.startswith("eval-")) if os.path.isdir(data) else []
    out = [
        f"data.train_files={os.path.join(data, run + '.train.parquet')}",
        f"actor_rollout_ref.model.path={model}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={os.path.join(job, 'agent_loops.yaml')}",
        f"actor_rollout_ref.rollout.multi_turn.tool_config_path={os.path.join(job, 'tools.yaml')}",
        f"trainer.default_local_dir={os.path.join(job, 'checkpoints', run)}",
    ]
    if evals:
        out.append("data.val_files=[" + ",".join(os.path.join(data, e) for e in evals) + "]")
    return out


def compose(job: str, run: str, overrides: list[str]):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=os.path.join(job, "config"), version_base=None):
        return hydra_compose(config_name=run, overrides=overrides)


def unknown_keys(job: str, run: str) -> list[str]:
    """Keys the job's yaml sets that verl's stock composition does not have: Hydra merges them
    silently into plain-dict sections (``trainer``, ``data``), where verl would ignore them."""
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    stock_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=stock_dir, version_base=None):
        stock = hydra_compose(config_name="ppo_trainer")
    own = OmegaConf.load(os.path.join(job, "config", run + ".yaml"))

    def leaves(node, prefix=""):
        for k in node.keys():
            v = node._get_node(k)  # unresolved: `???` (a value launch.sh passes) is a leaf
            if prefix == "" and k in ("hydra", "defaults"):
                continue
            path = f"{prefix}{k}"
            there = OmegaConf.select(stock, path)
            if OmegaConf.is_dict(there) and len(there) == 0:
                continue  # a free-form mapping of verl's (e.g. apply_chat_template_kwargs)
            if OmegaConf.is_dict(v) and len(v) and there is not None and OmegaConf.is_dict(there):
                yield from leaves(v, path + ".")
            else:
                yield path

    def in_stock(path):
        parent, _, key = path.rpartition(".")
        node = OmegaConf.select(stock, parent) if parent else stock
        if not OmegaConf.is_dict(node):
            return False
        try:
            return node._get_node(key) is not None
        except Exception:  # noqa: BLE001 - a struct config raises for an unknown key
            return False

    return [p for p in leaves(own) if not in_stock(p)]


def validate(job: str, run: str, model: str, extra: list[str] | None = None) -> dict:
    """Every check verl makes of the run's config; raises verl's own error on a bad one."""
    from omegaconf import OmegaConf

    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_policy_loss_fn, kl_penalty
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    bad = unknown_keys(job, run)
    assert not bad, f"{run}: keys not in verl's ppo_trainer config: {bad}"
    config = compose(job, run, launch_overrides(job, run, model) + list(extra or []))
    cwd = os.getcwd()
    os.chdir(job)
    try:
        validate_config(config=config, use_reference_policy=need_reference_policy(config),
                        use_critic=need_critic(config))
        algo = omega_conf_to_dataclass(config.algorithm)
        rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
        if need_reference_policy(config):
            # verl/workers/engine_workers.py renames the ref's keys before building its config
            ref = OmegaConf.create(OmegaConf.to_container(config.actor_rollout_ref.ref, resolve=True))
            ref.ppo_mini_batch_size = config.actor_rollout_ref.actor.ppo_mini_batch_size
            ref.ppo_micro_batch_size = ref.pop("log_prob_micro_batch_size", None)
            ref.ppo_micro_batch_size_per_gpu = ref.pop("log_prob_micro_batch_size_per_gpu", None)
            ref.use_dynamic_bsz = ref.pop("log_prob_use_dynamic_bsz", False)
            ref.ppo_max_token_len_per_gpu = ref.pop("log_prob_max_token_len_per_gpu", None)
            omega_conf_to_dataclass(ref)
        # The trainer never builds RewardConfig (0.9.1's RewardManagerConfig.__post_init__ calls a
        # BaseConfig.__post_init__ that does not exist): check what it would have checked.
        rm = config.reward.reward_manager
        if rm.source == "register":
            from verl.experimental.reward_loop.reward_manager.registry import REWARD_MANAGER

            assert rm.name in REWARD_MANAGER, f"reward manager {rm.name} not in {sorted(REWARD_MANAGER)}"
        if need_critic(config):
            omega_conf_to_dataclass(config.critic)
        model_cfg = omega_conf_to_dataclass(config.actor_rollout_ref.model)
        assert algo.adv_estimator in ADV_ESTIMATOR_REGISTRY, f"unknown adv_estimator {algo.adv_estimator}"
        get_policy_loss_fn(config.actor_rollout_ref.actor.policy_loss.loss_mode)
        import torch

        x = torch.zeros(2)
        if config.actor_rollout_ref.actor.use_kl_loss:
            kl_penalty(x, x, config.actor_rollout_ref.actor.kl_loss_type)
        if config.algorithm.use_kl_in_reward:
            kl_penalty(x, x, config.algorithm.kl_penalty)
        fg = config.algorithm.get("filter_groups")
        if fg is not None and fg.get("enable", False):
            assert fg.get("metric"), "algorithm.filter_groups.metric must be set when enabled"

        from hydra.utils import get_class

        import verl.experimental.agent_loop  # noqa: F401 - registers verl's own loops
        from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
        from verl.tools.tool_registry import load_all_tools
        from verl.trainer.ppo.reward import get_custom_reward_fn
        from verl.trainer.ppo.utils import create_rl_dataset

        mt = rollout.multi_turn
        tools = load_all_tools(tool_config_path=mt.tool_config_path, function_tool_path=mt.function_tool_path)
        names = set(_agent_loop_registry)
        for entry in OmegaConf.load(rollout.agent.agent_loop_config_path):
            get_class(entry._target_)
            names.add(entry.name)
        assert rollout.agent.default_agent_loop in names, f"default_agent_loop {rollout.agent.default_agent_loop}"
        reward_fn = get_custom_reward_fn(config)
        assert reward_fn is not None, "the job names no reward function"
        rows = 0
        for files in (config.data.train_files, config.data.val_files):
            paths = [files] if isinstance(files, str) else list(files or [])
            if not paths or not all(os.path.exists(p) for p in paths):
                # The recipe's datasets are not on this machine (portability.md says which):
                # the config is still verl's to accept, the rows are not there to read.
                rows = None
                continue
            ds = create_rl_dataset(files, config.data, model_cfg.tokenizer, model_cfg.processor)
            for i in range(len(ds)):
                row = ds[i]
                name = row.get("agent_name", rollout.agent.default_agent_loop)
                assert name in names, f"row {i}: agent_name {name} is not a loop of the job"
                assert isinstance(row["raw_prompt"], list)
            rows = (rows or 0) + len(ds)
        return {"run": run, "adv": algo.adv_estimator, "tools": sorted(t.name for t in tools), "rows": rows}
    finally:
        os.chdir(cwd)
