"""The verl side of wrl, checked with verl 0.9.1 itself (CPU, no Ray, no GPU):

1. every shipped recipe and its profiles lowered by `wrlc lower --to verl`, and each run's config
   accepted by verl's own loading and validation (``validate.py``);
2. `wrlc env serve` of the quickstart job's plan.json, in real Chromium on loopback, and the
   wrl agent loop (``wrl_verl.agent_loop.WrlAgentLoop``, built by hydra from the job's
   agent_loops.yaml with the arguments verl's AgentLoopWorker passes) running whole episodes
   against it: a scripted policy that solves shop tasks and a real token generator (a randomly
   initialised tiny Qwen2's ``generate``) in place of verl's rollout server; the masks, rewards
   and failure classes it returns are checked, and verl's own postprocessing pads them;
3. the reward entry point loaded as verl loads it, the env client's coded errors, and an
   episode a recipe excludes (`truncated`) kept with an all-zero mask;
4. a vision-language recipe (tests/recipes/vl_browser.wrl) lowered, its config accepted by verl
   with a tiny random Qwen3-VL (transformers' own, ``tiny_vl_model.py``) and its processor, and
   whole episodes in Chromium driven by that model's ``generate`` on the screenshots the env
   service hands the loop: every prompt holds as many image pads as the processor gives the
   images sent with it, and verl's postprocessing computes their multimodal inputs.

Usage: python check_verl.py WRLC WORK_DIR     (bench/verl-check.sh runs it)
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

SEEDS = ["quickstart", "openwebrl", "opagent", "webdancer", "openwebrl-8b"]
EXTRA = [("ppo-critic", "tests/ui/ok/ppo_critic.wrl")]


def lower_all(wrlc: str, work: str) -> list[tuple[str, str]]:
    """Every recipe, with and without each profile: (label, job dir)."""
    jobs = []
    for name in SEEDS:
        recipe = os.path.join(ROOT, "recipes", name + ".wrl")
        text = open(recipe, encoding="utf-8").read()
        profiles = [None] + re.findall(r"^profile (\w+)", text, re.M)
        for p in profiles:
            label = name + (f"-{p}" if p else "")
            out = os.path.join(work, "jobs", label)
            cmd = [wrlc, "lower", recipe, "--to", "verl", "--allow-unmapped", "--out", out]
            if p:
                cmd += ["--profile", p]
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0, f"wrlc lower {label}: {r.stderr}"
            jobs.append((label, out))
    # Constructs no seed recipe uses: PPO with a critic and GAE, KL on the reward.
    for label, rel in EXTRA:
        out = os.path.join(work, "jobs", label)
        r = subprocess.run([wrlc, "lower", os.path.join(ROOT, rel), "--to", "verl", "--allow-unmapped",
                            "--out", out], capture_output=True, text=True)
        assert r.returncode == 0, f"wrlc lower {label}: {r.stderr}"
        jobs.append((label, out))
    return jobs


def check_configs(jobs, model):
    from validate import validate

    n = 0
    for label, job in jobs:
        for f in sorted(os.listdir(os.path.join(job, "config"))):
            run = f[: -len(".yaml")]
            t0 = time.time()
            got = validate(job, run, model)
            n += 1
            print(f"  verl accepted {label}/{run}: adv={got['adv']} tools={got['tools']} rows={got['rows']} "
                  f"({time.time() - t0:.1f}s)")
    # The overrides bench/verl-gpu.sh passes for its two GRPO steps on one GPU.
    quick = dict(jobs)["quickstart"]
    extra = [l for l in open(os.path.join(HERE, "gpu_overrides.txt")).read().split("\n") if l and not l.startswith("#")]
    got = validate(quick, "online-1", model, ["trainer.n_gpus_per_node=1"] + extra)
    print(f"  verl accepted quickstart/online-1 with bench/verl-gpu.sh's overrides ({got['rows']} rows)")
    return n + 1


class Served:
    """`wrlc env serve` in a child process."""

    def __init__(self, wrlc: str, plan: str, work: str, token: str):
        env = dict(os.environ, WRL_ENV_TOKEN=token)
        self.out = open(os.path.join(work, "env-serve.out"), "w+")
        self.err = open(os.path.join(work, "env-serve.log"), "w+")
        self.proc = subprocess.Popen([wrlc, "env", "serve", plan, "--bind", "127.0.0.1:0", "--state-dir", work],
                                     stdout=self.out, stderr=self.err, env=env)
        for _ in range(600):
            self.out.seek(0)
            line = self.out.readline()
            if line.endswith("\n"):
                self.url = line.split()[-1]
                return
            if self.proc.poll() is not None:
                self.err.seek(0)
                raise RuntimeError("wrlc env serve exited: " + self.err.read())
            time.sleep(0.1)
        raise RuntimeError("wrlc env serve did not print its URL")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


class ScriptedPolicy:
    """A policy for the sandbox's shop price tasks, in place of verl's rollout server: it reads
    the prompt it is given (decoded), types the product into the search box, then answers with
    the price the results show. Same call shape as verl's ``LLMServerClient.generate``."""

    def __init__(self, tokenizer):
        self.tok, self.calls = tokenizer, 0

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls += 1
        prompt = self.tok.decode(prompt_ids)
        # The last user message is the current observation (the env service's prompt/text).
        page = prompt.rsplit("<|im_start|>user", 1)[-1]
        product = re.search(r"price of the (.+?)\?", page).group(1)
        price = re.search(r"\$(\d+\.\d\d)", page)
        box = re.search(r"\[(\d+)\] textbox \"Search products\"", page)
        if os.environ.get("WRL_CHECK_DEBUG"):
            print("POLICY SEES:", repr(page[-1500:]))
        if price and "Results for" in page:
            call = {"name": "answer", "arguments": {"text": price.group(1)}}
        else:
            call = {"name": "type", "arguments": {"id": int(box.group(1)), "text": product, "submit": True}}
        text = f"<tool_call>{json.dumps(call)}</tool_call><|im_end|>"
        ids = self.tok.encode(text, add_special_tokens=False)[: sampling_params.get("max_tokens")]
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


class HFGenerator:
    """A real token generator: a randomly initialised tiny Qwen2's ``generate`` (its text is
    noise, so its episodes end in format errors)."""

    def __init__(self, path):
        from transformers import AutoModelForCausalLM

        self.model = AutoModelForCausalLM.from_pretrained(path).eval()
        self.calls = 0

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        import torch

        self.calls += 1
        return sampled(self.model, {"input_ids": torch.tensor([prompt_ids])}, len(prompt_ids),
                       sampling_params, pad=0, seed=self.calls)


def sampled(model, inputs, prompt_len, sampling_params, pad, seed):
    """``model.generate`` sampled at temperature 1 from ``inputs`` (seeded by ``seed``), as
    verl's ``TokenOutput``: the new tokens and their log-probabilities."""
    import torch

    from verl.workers.rollout.replica import TokenOutput

    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=sampling_params.get("max_tokens", 16), do_sample=True,
                             temperature=1.0, output_scores=True, return_dict_in_generate=True, pad_token_id=pad)
    new = out.sequences[0, prompt_len:].tolist()
    lps = [torch.log_softmax(s[0], -1)[t].item() for s, t in zip(out.scores, new)]
    return TokenOutput(token_ids=new, log_probs=lps, stop_reason="completed")


def rows_of(job, run, config, model_cfg):
    from verl.trainer.ppo.utils import create_rl_dataset

    ds = create_rl_dataset(config.data.train_files, config.data, model_cfg.tokenizer, model_cfg.processor)
    return [{k: v for k, v in ds[i].items() if k != "dummy_tensor"} for i in range(len(ds))]


async def run_loop(config, entry, server, model_cfg, tools, row):
    """Builds the loop as AgentLoopWorker._run_agent_loop does (inside the running event loop)
    and runs it on one dataset row."""
    from hydra.utils import instantiate

    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    loop = instantiate(config=entry, trainer_config=DictConfigWrap(config=config), server_manager=server,
                       tokenizer=model_cfg.tokenizer, processor=model_cfg.processor,
                       hf_model_type=getattr(model_cfg.hf_config, "model_type", None), dataset_cls=RLHFDataset,
                       data_config=DictConfigWrap(config.data), tools=ToolListWrap(tools))
    sampling = dict(temperature=1.0, top_p=1.0, top_k=-1, repetition_penalty=1.0, logprobs=True)
    return await loop.run(sampling, **row)


def postprocess(config, tokenizer, output, row, processor=None):
    """verl's own padding and masks (AgentLoopWorker._agent_loop_postprocess)."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker

    class _W:
        _compute_multi_modal_inputs = AgentLoopWorker._compute_multi_modal_inputs
        _compute_position_ids = AgentLoopWorker._compute_position_ids
        _get_mm_processor_kwargs = AgentLoopWorker._get_mm_processor_kwargs
        _compute_score = AgentLoopWorker._compute_score
        _compute_teacher_logprobs = AgentLoopWorker._compute_teacher_logprobs
        _pad_token_ids = AgentLoopWorker._pad_token_ids
        distillation_enabled = False
        mm_processor_kwargs = {}
        reward_loop_worker_handles = None

    w = _W()
    w.tokenizer, w.processor = tokenizer, processor
    w.rollout_config = config.actor_rollout_ref.rollout
    return asyncio.run(AgentLoopWorker._agent_loop_postprocess(w, output, validate=False, **row))


def check_episodes(wrlc, work, job, model):
    from omegaconf import OmegaConf

    from validate import compose, launch_overrides
    from verl.tools.tool_registry import load_all_tools
    from verl.utils.config import omega_conf_to_dataclass

    import wrl_verl.agent_loop as wal
    from wrl_verl.env_client import EnvClient, EnvError

    run = "online-1"
    config = compose(job, run, launch_overrides(job, run, model))
    model_cfg = omega_conf_to_dataclass(config.actor_rollout_ref.model)
    tok = model_cfg.tokenizer
    tools = load_all_tools(tool_config_path=config.actor_rollout_ref.rollout.multi_turn.tool_config_path,
                           function_tool_path=None)
    entries = {e.name: e for e in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path)}
    rows = rows_of(job, run, config, model_cfg)
    shop = [r for r in rows if json.loads(r["extra_info"]["task_json"])["template"] == "shop_price"]
    assert shop, "the quickstart tasks hold shop price tasks"
    token = "check-" + os.urandom(8).hex()
    served = Served(wrlc, os.path.join(job, "plan.json"), work, token)
    os.environ["WRL_ENV_URL"], os.environ["WRL_ENV_TOKEN"] = served.url, token
    try:
        entry = entries[shop[0]["agent_name"]]
        assert entry.level == "turn"
        # The quickstart's budgets are the tiny byte-level policy's tokens; this tokenizer's
        # tool calls are longer, so the turn and trajectory budgets are raised for it.
        config.actor_rollout_ref.rollout.response_length = 256
        entry = OmegaConf.merge(entry, {"max_tokens": 256})
        # (a) per-turn outputs, a policy that solves the task
        policy = ScriptedPolicy(tok)
        outs = asyncio.run(run_loop(config, entry, policy, model_cfg, tools, shop[0]))
        outs = outs if isinstance(outs, list) else [outs]
        assert len(outs) == 2 == policy.calls, f"type then answer: {len(outs)} outputs, {policy.calls} calls"
        for o in outs:
            assert len(o.response_ids) == len(o.response_mask) == len(o.response_logprobs)
            assert all(m == 1 for m in o.response_mask), "a turn's own tokens are trained"
            assert tok.decode(o.response_ids).endswith("</tool_call><|im_end|>"), "the whole turn"
            assert o.response_logprobs == [-0.5] * len(o.response_ids), "the rollout's logprobs"
            assert o.reward_score == 1.0, o.reward_score
            info = o.extra_fields["reward_extra_info"]
            assert info["success"] == 1.0 and info["failure_class"] == "completed", info
        assert "<tool_call>" in tok.decode(outs[0].response_ids) and '"type"' in tok.decode(outs[0].response_ids)
        assert "Results for" in tok.decode(outs[1].prompt_ids), "the second turn's prompt is the results page"
        inner = postprocess(config, tok, outs[1], shop[0])
        assert inner.response_mask.shape == inner.response_ids.shape
        assert outs[1].as_dict()["rm_scores"][-1] == 1.0
        print(f"  turn level: {len(outs)} outputs, reward 1.0, masks {[sum(o.response_mask) for o in outs]} "
              f"trained tokens; verl padded to {tuple(inner.input_ids.shape)}")

        # (b) one trajectory-level output: observations masked 0, assistant tokens 1
        traj = OmegaConf.merge(entry, {"level": "trajectory"})
        config.actor_rollout_ref.rollout.response_length = 1024
        policy = ScriptedPolicy(tok)
        out = asyncio.run(run_loop(config, traj, policy, model_cfg, tools, shop[1 % len(shop)]))
        trained = tok.decode([t for t, m in zip(out.response_ids, out.response_mask) if m])
        masked = tok.decode([t for t, m in zip(out.response_ids, out.response_mask) if not m])
        assert out.reward_score == 1.0, out.extra_fields
        assert trained.count("<tool_call>") == 2, trained
        assert "Results for" in masked and "<tool_call>" not in masked, masked
        assert len(out.response_logprobs) == len(out.response_ids)
        assert out.num_turns == 5, out.num_turns
        print(f"  trajectory level: reward 1.0, {sum(out.response_mask)} trained / "
              f"{len(out.response_mask) - sum(out.response_mask)} masked tokens (the results page among them)")
        config.actor_rollout_ref.rollout.response_length = config.data.max_response_length
        entry = entries[shop[0]["agent_name"]]

        # (c) a real token generator: noise, so malformed turns end it as a format error (-1)
        gen = HFGenerator(model)
        outs = asyncio.run(run_loop(config, entry, gen, model_cfg, tools, rows[0]))
        outs = outs if isinstance(outs, list) else [outs]
        info = outs[0].extra_fields["reward_extra_info"]
        assert info["failure_class"] == "agent_error" and outs[0].reward_score == -1.0, info
        for o in outs:
            assert len(o.response_ids) == len(o.response_mask) <= config.actor_rollout_ref.rollout.response_length
            assert o.response_logprobs is not None and len(o.response_logprobs) == len(o.response_ids)
        print(f"  tiny Qwen2 generate: {gen.calls} turns, failure class {info['failure_class']}, reward -1")

        # (d) the reward entry point, loaded as verl loads it, reads the loop's score back
        from verl.trainer.ppo.reward import get_custom_reward_fn

        fn = get_custom_reward_fn(config)
        got = fn("tasks", "", "", extra_info={"reward_extra_info": info})
        assert got["score"] == -1.0 and got["failure_class"] == "agent_error", got

        # (e) the service's coded errors, as the client raises them
        async def errors():
            c = EnvClient(served.url, token)
            try:
                await c.step("ep-999999", "click 1")
            except EnvError as e:
                assert e.code == "E0612" and e.status == 404, e
            else:
                raise AssertionError("an unknown episode is refused")
            try:
                await EnvClient(served.url, "wrong").describe()
            except EnvError as e:
                assert e.code == "E0611" and e.status == 401, e
            else:
                raise AssertionError("a wrong token is refused")
            env = await c.describe()
            assert env["live"] == 0, env
            return env

        env = asyncio.run(errors())
        print(f"  env service: {env['finished']} episodes by class, none left live; E0611/E0612 raised")
        assert wal.WrlAgentLoop._checked, "the loop checked the service's plan digest"
    finally:
        served.stop()


def check_excluded(wrlc, work, model):
    """A recipe that excludes `truncated`: a trajectory that runs past verl's response budget
    keeps its row with an all-zero mask (no gradient) and no reward."""
    from omegaconf import OmegaConf

    from validate import compose, launch_overrides
    from verl.tools.tool_registry import load_all_tools
    from verl.utils.config import omega_conf_to_dataclass

    job = os.path.join(work, "jobs", "quickstart-exclude-truncated")
    r = subprocess.run([wrlc, "lower", os.path.join(ROOT, "recipes", "quickstart.wrl"), "--to", "verl",
                        "--allow-unmapped", "--set", "online.exclude=[env_error, infra_timeout, truncated]",
                        "--out", job], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    config = compose(job, "online-1", launch_overrides(job, "online-1", model))
    model_cfg = omega_conf_to_dataclass(config.actor_rollout_ref.model)
    tools = load_all_tools(tool_config_path=config.actor_rollout_ref.rollout.multi_turn.tool_config_path,
                           function_tool_path=None)
    rows = rows_of(job, "online-1", config, model_cfg)
    row = next(r for r in rows if json.loads(r["extra_info"]["task_json"])["template"] == "shop_price")
    entry = next(e for e in OmegaConf.load(os.path.join(job, "agent_loops.yaml")) if e.name == row["agent_name"])
    entry = OmegaConf.merge(entry, {"level": "trajectory", "max_tokens": 256})
    token = "check-" + os.urandom(8).hex()
    served = Served(wrlc, os.path.join(job, "plan.json"), work, token)
    os.environ["WRL_ENV_URL"], os.environ["WRL_ENV_TOKEN"] = served.url, token
    try:
        # Room for the first turn, not for the page it leads to.
        config.actor_rollout_ref.rollout.response_length = 120
        out = asyncio.run(run_loop(config, entry, ScriptedPolicy(model_cfg.tokenizer), model_cfg, tools, row))
        info = out.extra_fields["reward_extra_info"]
        assert info["failure_class"] == "truncated" and info["excluded"] == 1.0, info
        assert sum(out.response_mask) == 0 and len(out.response_ids) > 0, out.response_mask
        assert out.reward_score == 0.0
        print(f"  excluded (truncated): {len(out.response_ids)} response tokens, all masked, reward 0")
    finally:
        served.stop()


class VLGenerator:
    """A real vision-language generator: a randomly initialised tiny Qwen3-VL's ``generate`` on
    the prompt and the screenshots the loop sends (pixel values from the model's own processor).
    It records each call's image count and checks the prompt's image pads against them."""

    def __init__(self, path):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.model = AutoModelForImageTextToText.from_pretrained(path).eval()
        self.processor = AutoProcessor.from_pretrained(path)
        self.calls, self.images = 0, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, image_data=None, **kwargs):
        import torch

        self.calls += 1
        images = list(image_data or [])
        self.images.append(len(images))
        inputs = {"input_ids": torch.tensor([prompt_ids]), "attention_mask": torch.ones(1, len(prompt_ids), dtype=torch.long)}
        pads = prompt_ids.count(self.model.config.image_token_id)
        if images:
            px = self.processor.image_processor(images=images, return_tensors="pt")
            merge = self.processor.image_processor.merge_size
            want = int(px["image_grid_thw"].prod(-1).sum()) // (merge * merge)
            assert pads == want, f"{pads} image pads in the prompt, {want} for its {len(images)} images"
            inputs.update(pixel_values=px["pixel_values"], image_grid_thw=px["image_grid_thw"])
        else:
            assert pads == 0, f"{pads} image pads and no image"
        return sampled(self.model, inputs, len(prompt_ids), sampling_params,
                       pad=self.processor.tokenizer.pad_token_id, seed=self.calls)


def check_vl_episodes(wrlc, work):
    """tests/recipes/vl_browser.wrl lowered (verl keeps the last screenshots and drops older ones
    without a placeholder, and trains every parameter: both set so), its config accepted with a
    tiny random Qwen3-VL, and its episodes driven by that model's generate in Chromium."""
    from omegaconf import OmegaConf

    from validate import compose, launch_overrides, validate
    from verl.tools.tool_registry import load_all_tools
    from verl.utils.config import omega_conf_to_dataclass

    model = os.path.join(work, "tiny-qwen3-vl")
    if not os.path.exists(os.path.join(model, "config.json")):
        from tiny_vl_model import main as make_vl_model

        make_vl_model(model)
    job = os.path.join(work, "jobs", "vl-browser")
    r = subprocess.run([wrlc, "lower", os.path.join(ROOT, "tests", "recipes", "vl_browser.wrl"), "--to", "verl",
                        "--set", "web.observe=[screenshot(last: 2, older: drop), elements(max: 16), url, feedback]",
                        "--set", "online.frozen=[]", "--out", job], capture_output=True, text=True)
    assert r.returncode == 0, f"wrlc lower vl_browser: {r.stderr}"
    got = validate(job, "online-1", model)
    print(f"  verl accepted vl-browser/online-1 with a tiny Qwen3-VL: adv={got['adv']} rows={got['rows']}")
    config = compose(job, "online-1", launch_overrides(job, "online-1", model))
    model_cfg = omega_conf_to_dataclass(config.actor_rollout_ref.model)
    assert model_cfg.processor is not None, "verl loads the VL model's processor"
    tools = load_all_tools(tool_config_path=config.actor_rollout_ref.rollout.multi_turn.tool_config_path,
                           function_tool_path=None)
    entries = {e.name: e for e in OmegaConf.load(config.actor_rollout_ref.rollout.agent.agent_loop_config_path)}
    rows = rows_of(job, "online-1", config, model_cfg)
    token = "check-" + os.urandom(8).hex()
    served = Served(wrlc, os.path.join(job, "plan.json"), work, token)
    os.environ["WRL_ENV_URL"], os.environ["WRL_ENV_TOKEN"] = served.url, token
    try:
        entry = entries[rows[0]["agent_name"]]
        assert entry.images and entry.screenshots == 2, entry
        gen = VLGenerator(model)
        outs = asyncio.run(run_loop(config, entry, gen, model_cfg, tools, rows[0]))
        outs = outs if isinstance(outs, list) else [outs]
        assert gen.calls == len(outs) >= 1 and gen.images[0] == 1, (gen.calls, gen.images)
        assert all(1 <= n <= 2 for n in gen.images), f"the last two screenshots at most: {gen.images}"
        for o in outs:
            assert len(o.response_ids) == len(o.response_mask) == len(o.response_logprobs)
            assert len(o.multi_modal_data["images"]) >= 1
        # verl's own postprocessing of the last turn, with the processor: the images become
        # the model's multimodal inputs beside the padded ids.
        inner = postprocess(config, model_cfg.tokenizer, outs[-1], rows[0], model_cfg.processor)
        mm = inner.multi_modal_inputs
        assert "pixel_values" in mm and "image_grid_thw" in mm, sorted(mm)
        print(f"  tiny Qwen3-VL generate: {gen.calls} turns in Chromium, images per turn {gen.images}, "
              f"failure class {outs[0].extra_fields['reward_extra_info']['failure_class']}; verl's multimodal "
              f"inputs: grid {mm['image_grid_thw'].tolist()}")
    finally:
        served.stop()


def main():
    wrlc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    model = os.path.join(work, "tiny-qwen2")
    if not os.path.exists(os.path.join(model, "config.json")):
        from tiny_model import main as make_model

        make_model(model)
    import verl

    print(f"verl {verl.__version__}")
    jobs = lower_all(wrlc, work)
    n = check_configs(jobs, model)
    print(f"configs: {n} runs of {len(jobs)} jobs accepted by verl ({time.time() - t0:.0f}s)")
    quick = dict(jobs)["quickstart"]
    check_episodes(wrlc, work, quick, model)
    check_excluded(wrlc, work, model)
    check_vl_episodes(wrlc, work)
    print(f"VERL CHECK OK ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
