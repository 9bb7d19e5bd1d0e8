"""The agent loop of a wrl job: one verl trajectory is one episode of the recipe's environment,
run through ``wrlc env serve``.

verl builds one ``WrlAgentLoop`` per trajectory from an entry of the job's agent_loops.yaml (the
entry's keys are the arguments below) and calls ``run`` with the dataset row. The loop creates
an episode for the row's wrl task, samples each turn from verl's rollout server
(``server_manager.generate``), sends the model's text to the env service, which parses and runs
it as ``wrlc run`` would, and ends the episode, which the service scores with the recipe's reward
and failure class. What it returns:

- ``level: trajectory``: one ``AgentLoopOutput``; the assistant tokens carry mask 1, the
  observations (tool or user messages, chat-template boundaries) mask 0;
- ``level: turn``: one output per turn (verl trains each, copying the trajectory's reward to all
  and computing GRPO advantages per trajectory); each turn's prompt is rebuilt as the agent sees
  it (the env service's ``prompt``: the page, the actions so far, the task; the last
  ``screenshots`` images), and its response is that turn's tokens alone;
- in an evaluation entry (``eval: true``), only the last turn, so verl's validation metrics are
  per episode.

Every output's ``reward_score`` is the env service's reward (DAPO's overlong penalty added when
the entry has ``overlong``), so verl skips its reward loop; ``extra_fields.reward_extra_info``
carries the score, success and failure class. An episode whose reward the recipe excludes
(``exclude``, a judge that timed out) keeps its rows with ``response_mask`` all 0: no gradient,
and its group is not failed. An episode that ends in ``env_error`` or ``infra_timeout`` is run
again up to ``retries`` times, as ``wrlc run`` does.
"""

from __future__ import annotations

import base64
import io
import json
import logging
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput

from .env_client import EnvClient

logger = logging.getLogger(__name__)

INFRA = ("env_error", "infra_timeout")


class WrlAgentLoop(AgentLoopBase):
    _checked: set[str] = set()

    def __init__(self, *args, node: str = "", max_steps: int = 30, max_tokens: int = 512,
                 level: str = "turn", history: str = "action_only", screenshots: int = 0,
                 images: bool = False, retries: int = 0, overlong: dict | None = None,
                 image_max_pixels: int | None = None, plan_digest: str | None = None,
                 eval: bool = False, name: str | None = None, tools=None,
                 env_url: str | None = None, env_token: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.node, self.max_steps, self.max_tokens = node, int(max_steps), int(max_tokens)
        self.level, self.history, self.evaluation = level, history, bool(eval)
        self.screenshots, self.images = int(screenshots or 0), bool(images)
        self.retries, self.overlong = int(retries or 0), dict(overlong) if overlong else None
        self.image_max_pixels, self.plan_digest = image_max_pixels, plan_digest
        self.env_url, self.env_token = env_url, env_token
        tool_list = tools.tools if tools is not None else []
        self.schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tool_list] or None
        self.response_length = self.rollout_config.response_length

    # ---------------------------------------------------------------- helpers

    def _image(self, obs: dict | None):
        """The observation's screenshot as a PIL image (resized to the model's budget), or None."""
        if not self.images or not obs or not obs.get("screenshot"):
            return None
        from PIL import Image

        img = Image.open(io.BytesIO(base64.b64decode(obs["screenshot"]))).convert("RGB")
        if self.image_max_pixels and img.width * img.height > self.image_max_pixels:
            scale = (self.image_max_pixels / (img.width * img.height)) ** 0.5
            img = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))))
        return img

    def _text(self, ids: list[int]) -> str:
        """A turn's text as the env service reads it. Tool-call tags are added tokens (special in
        some tokenizers), so they are kept; only the end-of-turn and padding tokens are cut."""
        tok = self.tokenizer
        ends = {i for i in (tok.eos_token_id, tok.pad_token_id) if i is not None}
        ends.update(i for i in tok.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
                    if isinstance(i, int) and i != tok.unk_token_id)
        kept = list(ids)
        while kept and kept[-1] in ends:
            kept.pop()
        return tok.decode(kept, skip_special_tokens=False)

    @staticmethod
    def _message(role: str, text: str, images: list) -> dict:
        if not images:
            return {"role": role, "content": text}
        return {"role": role, "content": [{"type": "image", "image": i} for i in images] + [{"type": "text", "text": text}]}

    async def _check(self, client: EnvClient) -> None:
        """Once per service: it serves the plan this job was lowered from."""
        if client.url in WrlAgentLoop._checked or not self.plan_digest:
            return
        env = await client.describe()
        if env.get("plan_digest") != self.plan_digest:
            raise RuntimeError(
                f"the env service at {client.url} serves plan {env.get('plan_digest')}, this job was lowered "
                f"from plan {self.plan_digest}: start `wrlc env serve` on the job's plan.json")
        WrlAgentLoop._checked.add(client.url)

    def _reward(self, score: dict, longest: int) -> tuple[float, bool]:
        excluded = score.get("excluded") is not None or score.get("reward") is None
        reward = 0.0 if excluded else float(score["reward"])
        o = self.overlong
        if o and not excluded and o.get("buffer", 0) > 0:
            start = self.max_tokens - int(o["buffer"])
            if longest > start:
                reward += max(-float(o["penalty"]), (start - longest) / float(o["buffer"]) * float(o["penalty"]))
        return reward, excluded

    def _extra(self, score: dict, reward: float, excluded: bool) -> dict:
        return {
            "reward_extra_info": {
                "score": reward,
                "success": float(bool(score.get("success"))),
                "excluded": float(excluded),
                "failure_class": str(score.get("excluded") or score.get("failure_class") or ""),
                "steps": int(score.get("steps", 0)),
            },
            "wrl_episode": score.get("episode"),
            "turn_scores": [],
            "tool_rewards": [],
        }

    # ---------------------------------------------------------------- verl's entry point

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput | list[AgentLoopOutput]:
        extra = kwargs.get("extra_info") or {}
        task = json.loads(extra["task_json"])
        node = extra.get("node") or self.node
        client = EnvClient(self.env_url, self.env_token)
        await self._check(client)
        attempt = 0
        while True:
            outputs, score = await self._episode(client, task, node, sampling_params, kwargs)
            if score.get("failure_class") in INFRA and attempt < self.retries:
                attempt += 1
                continue
            return outputs

    async def _episode(self, client: EnvClient, task: dict, node: str, sampling_params: dict, row: dict):
        created = await client.create(task, node)
        eid = created["episode"]
        metrics: dict[str, Any] = {}
        try:
            if self.level == "trajectory":
                return await self._trajectory(client, eid, created, sampling_params, row, metrics)
            return await self._turns(client, eid, created, sampling_params, row, metrics)
        except BaseException:
            # The episode's browser slot comes free; the error reaches verl (the group fails).
            try:
                await client.end(eid, "aborted")
            except Exception:  # noqa: BLE001 - the first error is the one to report
                pass
            raise

    async def _trajectory(self, client, eid, created, sampling_params, row, metrics):
        obs, done = created["observation"], created.get("done", False)
        system = list(row["raw_prompt"])[:-1]
        first = self._image(obs)
        images = [first] if first is not None else []
        messages = system + [self._message("user", obs["text"], images)]
        prompt_ids = await self.ct_build_initial_tokens(messages, tools=self.schemas, images=images or None)
        runtime, mask, logprobs = list(prompt_ids), [], []
        turns, longest, truncated = 0, 0, False
        request_id = uuid4().hex
        while not done:
            budget = self.response_length - len(mask)
            if budget <= 0:
                truncated = True
                break
            sp = dict(sampling_params, max_tokens=min(self.max_tokens, budget))
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=runtime,
                                                     sampling_params=sp, image_data=images or None)
            merge, mask, lp = await self.ct_merge_assistant_token(
                runtime, out.token_ids, mask, logprobs if (logprobs or out.log_probs) else None,
                assistant_logprobs=out.log_probs or None)
            runtime = merge.token_ids
            if lp is not None:
                logprobs = lp
            turns += 1
            longest = max(longest, len(out.token_ids))
            text = self._text(out.token_ids)
            step = await client.step(eid, text)
            done = step["done"]
            if done:
                break
            obs = step["observation"]
            messages.append({"role": "assistant", "content": text})
            previous = list(messages)
            img = self._image(obs)
            role = "tool" if "<tool_call>" in text else "user"
            messages.append(self._message(role, obs["text"], [img] if img is not None else []))
            merge, new_mask, lp = await self.ct_merge_context_msg(previous, messages, runtime, mask,
                                                                   logprobs or None, tools=self.schemas)
            if len(new_mask) >= self.response_length:
                truncated = True  # the observation does not fit: the episode ends without it
                break
            runtime, mask = merge.token_ids, new_mask
            if lp is not None:
                logprobs = lp
            if img is not None:
                images.append(img)
        score = await client.end(eid, "truncated" if truncated else None)
        reward, excluded = self._reward(score, longest)
        n = len(mask)
        prompt_part, response = runtime[: len(runtime) - n], runtime[len(runtime) - n:]
        if not response:  # the episode ended before a turn: one masked token keeps the row valid
            response, mask, logprobs = [self.tokenizer.eos_token_id or 0], [0], None
        if excluded:
            mask = [0] * len(mask)
        R = self.response_length
        output = AgentLoopOutput(
            prompt_ids=prompt_part, response_ids=response[:R], response_mask=mask[:R],
            response_logprobs=logprobs[:R] if logprobs else None, reward_score=reward,
            num_turns=2 * turns + 1, metrics=metrics,
            multi_modal_data={"images": images} if images else None,
            extra_fields=self._extra(score, reward, excluded))
        return output, score

    async def _turns(self, client, eid, created, sampling_params, row, metrics):
        obs, done = created["observation"], created.get("done", False)
        system = list(row["raw_prompt"])[:-1]
        shots: list = []
        turns: list[dict] = []
        while not done:
            img = self._image(obs)
            if img is not None and self.screenshots > 0:
                shots = (shots + [img])[-self.screenshots:]
            messages = system + [self._message("user", obs["prompt"], shots)]
            prompt_ids = await self.ct_build_initial_tokens(messages, tools=self.schemas, images=list(shots) or None)
            sp = dict(sampling_params, max_tokens=min(self.max_tokens, self.response_length))
            out = await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=prompt_ids,
                                                     sampling_params=sp, image_data=list(shots) or None)
            merge, mask, lp = await self.ct_merge_assistant_token(
                prompt_ids, out.token_ids, [], [] if out.log_probs else None,
                assistant_logprobs=out.log_probs or None)
            response = merge.token_ids[-len(mask):] if mask else []
            turns.append({
                "prompt_ids": merge.token_ids[: len(merge.token_ids) - len(mask)], "response_ids": response,
                "response_mask": mask, "logprobs": lp, "images": list(shots), "length": len(out.token_ids),
            })
            text = self._text(out.token_ids)
            step = await client.step(eid, text)
            done, obs = step["done"], step.get("observation")
        score = await client.end(eid)
        reward, excluded = self._reward(score, max((t["length"] for t in turns), default=0))
        if not turns:  # the episode ended before a turn: one masked row keeps the group whole
            prompt_ids = await self.ct_build_initial_tokens(system + [self._message("user", obs["prompt"] if obs else "", [])])
            turns.append({"prompt_ids": prompt_ids, "response_ids": [self.tokenizer.eos_token_id or 0],
                          "response_mask": [0], "logprobs": None, "images": [], "length": 0})
        if self.evaluation:
            turns = turns[-1:]
        R = self.response_length
        outputs = []
        for t in turns:
            mask = [0] * len(t["response_mask"]) if excluded else t["response_mask"]
            outputs.append(AgentLoopOutput(
                prompt_ids=t["prompt_ids"], response_ids=t["response_ids"][:R], response_mask=mask[:R],
                response_logprobs=t["logprobs"][:R] if t["logprobs"] else None, reward_score=reward,
                num_turns=2, metrics=metrics,
                multi_modal_data={"images": t["images"]} if t["images"] else None,
                extra_fields=self._extra(score, reward, excluded)))
        return (outputs[0] if len(outputs) == 1 else outputs), score
