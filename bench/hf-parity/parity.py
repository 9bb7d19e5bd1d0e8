"""The transformers side of bench/hf-parity.sh.

  parity.py make WORK TOKDIR    small random Qwen2/Qwen3 models saved by save_pretrained (with
                                the real Qwen3 tokenizer in TOKDIR), and the job for the Rust side
  parity.py check WORK          compares the Rust side's logits, SFT step and chat token ids
  parity.py checkpoint CKPT OUT  logits of a `wrlc run` checkpoint through from_pretrained
"""

import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import load_file
from transformers import (AutoModelForCausalLM, AutoTokenizer, Qwen2Config, Qwen2ForCausalLM,
                          Qwen3Config, Qwen3ForCausalLM)

torch.manual_seed(0)
torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))

TEXTS = [
    "Hi",
    "What is the population of Barvel? Search the wiki first.",
    "The sandbox wiki has forty towns. " * 8,
    "A web agent reads the page, calls a tool and reads the result. " * 24,
]

TOOLS = [
    {"type": "function", "function": {"name": "search", "description": "Search the web.",
     "parameters": {"type": "object", "properties": {"query": {"type": "array", "items": {"type": "string"}}},
                    "required": ["query"]}}},
    {"type": "function", "function": {"name": "click", "description": "Click at a point.",
     "parameters": {"type": "object", "properties": {"point_2d": {"type": "array", "items": {"type": "number"}},
                                                     "clicks": {"type": "integer", "minimum": 1, "maximum": 3}},
                    "required": ["point_2d"]}}},
]


def call(name, args):
    return {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}


def msg(role, content, reasoning=None, calls=(), train=False):
    m = {"role": role, "content": content, "train": train}
    if reasoning is not None:
        m["reasoning"] = reasoning
    if calls:
        m["tool_calls"] = list(calls)
    return m


SEARCH = msg("assistant", "I will search.", calls=[call("search", {"query": ["Barvel", "Zürich"]})], train=True)
TWO = msg("assistant", "", calls=[call("click", {"point_2d": [412.5, 80], "clicks": 2}),
                                  call("search", {"query": ["a \"quoted\" word\n"]})], train=True)
BASE = [msg("system", "You are a web agent."), msg("user", "What is the population of Barvel?")]
CHATS = [
    ("tools, thinking off", False, False, BASE + [SEARCH, msg("tool", "Barvel: 12,400 people"),
                                                  msg("assistant", "<answer>12400</answer>", train=True)]),
    ("tools, generation prompt, thinking on", True, True, BASE + [SEARCH, msg("tool", "Barvel: 12,400 people")]),
    ("reasoning kept after the last query", True, False, BASE + [
        msg("assistant", "It is 12400.", reasoning="The page says 12,400.", train=True)]),
    ("thinking in the content, earlier turn", True, False, BASE + [
        msg("assistant", "<think>\nLook it up.\n</think>\n\nSearching.", calls=[call("search", {"query": ["x"]})]),
        msg("tool", "nothing"), msg("user", "Try again."), msg("assistant", "Done.")]),
    ("several calls per turn, two tool responses", False, False, BASE + [TWO, msg("tool", "clicked"),
                                                                        msg("tool", "no results")]),
    ("no tools, generation prompt, thinking off", False, True, [msg("user", "Hello")]),
]

# The recipes' own tool sets, as `wrlc run` gives them to the template (written by
# runtime/exec/tests/all/hermes_chat.rs from the quickstart's and WebDancer's plans), and turns as
# the ReAct loop renders them: the policy's user prompt, then an expert step as tool calls.
RECIPE_TOOLS = json.load(open(os.path.join(os.path.dirname(__file__), "recipe-tools.json")))
PAGE = "url: /shop\n[1] link \"Blue mug\"\n[2] searchbox \"Search\"\ndone: click 1\ntask: Buy the blue mug."
RECIPE_CHATS = [
    ("quickstart tools, an expert step as a call", False, False, RECIPE_TOOLS["elements"], [
        msg("user", PAGE),
        msg("assistant", "", calls=[{"name": "type", "arguments": '{"id":2,"submit":true,"text":"blue mug"}'}],
            train=True)]),
    ("quickstart tools, the rollout prompt", False, True, RECIPE_TOOLS["elements"], [msg("user", PAGE)]),
    ("webdancer tools, search then the answer tag", False, False, RECIPE_TOOLS["webdancer"], [
        msg("user", "task: What is the population of Barvel?\n"),
        msg("assistant", "", calls=[{"name": "search", "arguments": '{"query":["Barvel population"]}'}], train=True),
        msg("user", "task: What is the population of Barvel?\nresult: Barvel: 12,400 people\n"),
        msg("assistant", "<answer>12400</answer>", train=True)]),
]


def randomize(model):
    """Weights large enough that logits differ visibly: N(0, 0.3) matrices, norms near 1."""
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


def make(work, tokdir):
    vocab = len(json.load(open(os.path.join(tokdir, "tokenizer.json")))["model"]["vocab"]) + 26
    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=4096, eos_token_id=151645)
    models = [
        ("qwen3 tied, GQA 4:2", "qwen3", Qwen3ForCausalLM(Qwen3Config(
            **common, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True,
            rope_parameters={"rope_type": "default", "rope_theta": 1e6}))),
        ("qwen3 biases, yarn x4", "qwen3", Qwen3ForCausalLM(Qwen3Config(
            **common, num_key_value_heads=4, head_dim=32, tie_word_embeddings=False, attention_bias=True,
            rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256,
                             "rope_theta": 1e4}))),
        ("qwen2 window 16, linear x2", "qwen2", Qwen2ForCausalLM(Qwen2Config(
            **common, num_key_value_heads=1, tie_word_embeddings=False, use_sliding_window=True,
            sliding_window=16, max_window_layers=1,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6}))),
    ]
    job = {"texts": TEXTS, "models": [], "chats": [], "sft": None}
    for i, (name, arch, model) in enumerate(models):
        randomize(model)
        d = os.path.join(work, "models", f"m{i}")
        model.save_pretrained(d)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(tokdir, f), d)
        job["models"].append({"name": name, "arch": arch, "dir": d})
    for name, thinking, generation, messages in CHATS:
        job["chats"].append({"name": name, "thinking": thinking, "generation": generation,
                             "conversation": {"messages": messages, "tools": [json.dumps(t) for t in TOOLS]}})
    for name, thinking, generation, tools, messages in RECIPE_CHATS:
        job["chats"].append({"name": name, "thinking": thinking, "generation": generation,
                             "conversation": {"messages": messages, "tools": tools}})
    job["sft"] = {"messages": BASE + [SEARCH, msg("tool", "Barvel: 12,400 people"),
                                      msg("assistant", "<answer>12400</answer>", train=True)],
                  "tools": [json.dumps(t) for t in TOOLS]}
    json.dump(job, open(os.path.join(work, "job.json"), "w"), indent=1)


def hf_messages(messages):
    out = []
    for m in messages:
        h = {"role": m["role"], "content": m["content"]}
        if "reasoning" in m:
            h["reasoning_content"] = m["reasoning"]
        if m.get("tool_calls"):
            h["tool_calls"] = [{"type": "function", "function": {"name": c["name"], "arguments": json.loads(c["arguments"])}}
                               for c in m["tool_calls"]]
        out.append(h)
    return out


def load(d):
    return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")


def check(work):
    job = json.load(open(os.path.join(work, "job.json")))
    rust = json.load(open(os.path.join(work, "out", "rust.json")))
    rows, ok = [], True
    for m in job["models"]:
        r = rust[m["name"]]
        model = load(m["dir"])
        ours = load_file(os.path.join(work, "out", f"{m['name']}.logits.safetensors"))
        for i, ids in enumerate(r["ids"]):
            with torch.no_grad():
                theirs = model(torch.tensor([ids])).logits[0]
            d = (ours[f"text{i}"] - theirs).abs().max().item()
            ok &= d <= 1e-4
            rows.append((m["name"], f"logits, {len(ids)} tokens", f"{d:.2e}", "≤ 1e-4", d <= 1e-4))
        tokens, weights = r["sft"]["tokens"], r["sft"]["weights"]
        labels = [t if w != 0 else -100 for t, w in zip(tokens, weights)]
        model.zero_grad()
        out = model(torch.tensor([tokens]), labels=torch.tensor([labels]))
        out.loss.backward()
        gn = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in model.parameters() if p.grad is not None))
        dl = abs(out.loss.item() - r["sft"]["loss"]) / abs(out.loss.item())
        dg = abs(gn - r["sft"]["grad_norm"]) / gn
        ok &= dl <= 1e-5 and dg <= 1e-4
        trained = sum(1 for w in weights if w != 0)
        rows.append((m["name"], f"SFT loss ({trained} of {len(tokens)} tokens)",
                     f"{r['sft']['loss']:.6f} vs {out.loss.item():.6f}", "rel ≤ 1e-5", dl <= 1e-5))
        rows.append((m["name"], "SFT grad norm", f"{r['sft']['grad_norm']:.5f} vs {gn:.5f}", "rel ≤ 1e-4", dg <= 1e-4))
    tok = AutoTokenizer.from_pretrained(job["models"][0]["dir"])
    for c in job["chats"]:
        conv = c["conversation"]
        tools = [json.loads(t) for t in conv["tools"]] or None
        ids = tok.apply_chat_template(hf_messages(conv["messages"]), tools=tools, tokenize=True,
                                      add_generation_prompt=c["generation"], enable_thinking=c["thinking"])
        if not isinstance(ids, list):
            ids = ids["input_ids"]
        same = ids == rust["chats"][c["name"]]
        ok &= same
        rows.append(("chat template", c["name"], f"{len(ids)} ids", "identical", same))
    print(f"{'model':<28} {'check':<44} {'value':<28} {'bound':<11} ok")
    for r in rows:
        print(f"{r[0]:<28} {r[1]:<44} {r[2]:<28} {r[3]:<11} {'yes' if r[4] else 'NO'}")
    return ok


def checkpoint(ckpt, out):
    model = load(ckpt)
    rust = json.load(open(os.path.join(out, "rust.json")))
    name = next(k for k in rust if k != "chats")
    ours = load_file(os.path.join(out, f"{name}.logits.safetensors"))
    worst = 0.0
    for i, ids in enumerate(rust[name]["ids"]):
        with torch.no_grad():
            theirs = model(torch.tensor([ids])).logits[0]
        worst = max(worst, (ours[f"text{i}"] - theirs).abs().max().item())
    ok = worst <= 1e-4
    print(f"{'wrlc run checkpoint':<28} {'from_pretrained logits, all texts':<44} {worst:<28.2e} {'≤ 1e-4':<11} {'yes' if ok else 'NO'}")
    return ok


def peft(ckpt, base, out):
    """A LoRA checkpoint of `wrlc run`: PEFT's `PeftModel.from_pretrained` on its `adapter/`
    over the base model, and its merged model by `from_pretrained`, against our logits with the
    adapters unmerged (the checkpoint resumed)."""
    from peft import PeftModel
    rust = json.load(open(os.path.join(out, "rust.json")))
    name = next(k for k in rust if k != "chats")
    ours = load_file(os.path.join(out, f"{name}.logits.safetensors"))
    # Adapters attached after training began sit on the weights of that step: the run's
    # checkpoint of it (its merged model) is their base.
    step = json.load(open(os.path.join(ckpt, "adapter", "adapter_config.json")))["wrl_base_step"]
    if step:
        root = os.path.dirname(ckpt)
        base = next(os.path.join(root, d) for d in sorted(os.listdir(root))
                    if json.load(open(os.path.join(root, d, "trainer_state.json")))["step"] == step)
    print(f"adapters over {base} (step {step})")
    adapted = PeftModel.from_pretrained(load(base), os.path.join(ckpt, "adapter")).eval()
    merged = load(ckpt)
    ok = True
    for what, model in [("PeftModel.from_pretrained(base, adapter/)", adapted),
                        ("from_pretrained(merged checkpoint)", merged)]:
        worst = 0.0
        for i, ids in enumerate(rust[name]["ids"]):
            with torch.no_grad():
                theirs = model(torch.tensor([ids])).logits[0]
            worst = max(worst, (ours[f"text{i}"] - theirs).abs().max().item())
        good = worst <= 1e-4
        ok &= good
        print(f"{'wrlc run LoRA checkpoint':<28} {what:<44} {worst:<28.2e} {'≤ 1e-4':<11} {'yes' if good else 'NO'}")
    return ok


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "make":
        make(sys.argv[2], sys.argv[3])
    elif what == "check":
        sys.exit(0 if check(sys.argv[2]) else 1)
    elif what == "checkpoint":
        sys.exit(0 if checkpoint(sys.argv[2], sys.argv[3]) else 1)
    elif what == "peft":
        sys.exit(0 if peft(sys.argv[2], sys.argv[3], sys.argv[4]) else 1)
