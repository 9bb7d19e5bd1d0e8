"""`wrlc serve` through the official `openai` client: the shapes its parser expects, streamed
answers equal to whole ones, logprobs, errors carrying `param`, tool calls, and images sent to a
vision-language model as data URLs. Run by openai-client.sh."""

import base64
import json
import math
import os
import struct
import sys
import zlib

import openai

base = os.environ["WRL_BASE_URL"]
client = openai.OpenAI(base_url=base, api_key="unused", max_retries=0)
msgs = [{"role": "system", "content": "You are a web agent."}, {"role": "user", "content": "Open the cart."}]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
    checks += 1


models = client.models.list()
check([m.id for m in models.data] == ["tiny"], "models lists the served model")

# Chat, whole, greedy, with logprobs and 3 alternatives per token.
whole = client.chat.completions.create(
    model="tiny", messages=msgs, temperature=0, max_tokens=20, logprobs=True, top_logprobs=3
)
text = whole.choices[0].message.content
check(whole.object == "chat.completion" and isinstance(text, str), "a chat completion")
lp = whole.choices[0].logprobs.content
check(len(lp) > 0, "logprobs.content has the tokens")
for t in lp:
    check(t.logprob <= 0 and len(t.top_logprobs) == 3, "each token has 3 alternatives")
    check(t.top_logprobs[0].logprob >= t.top_logprobs[-1].logprob, "alternatives sorted")
    # Greedy: the chosen token is the most likely one.
    check(math.isclose(t.logprob, t.top_logprobs[0].logprob, abs_tol=1e-4), "greedy takes the best")
check(bytes(b for t in lp for b in t.bytes).decode("utf-8", "replace") == text, "token bytes make the text")

# Chat, streamed: the same text, one role chunk first, a finish reason, a usage chunk.
chunks = list(
    client.chat.completions.create(
        model="tiny", messages=msgs, temperature=0, max_tokens=20, stream=True,
        stream_options={"include_usage": True}, logprobs=True, top_logprobs=3,
    )
)
check(all(c.object == "chat.completion.chunk" for c in chunks), "chunk objects")
check(chunks[0].choices[0].delta.role == "assistant", "the first chunk has the role")
streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
check(streamed == text, f"streamed {streamed!r} == whole {text!r}")
finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
check(finish == [whole.choices[0].finish_reason], "one finish reason, as in the whole answer")
check(chunks[-1].choices == [] and chunks[-1].usage.total_tokens == whole.usage.total_tokens, "usage chunk")
slp = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
check([t.token for t in slp] == [t.token for t in lp], "streamed logprobs == whole logprobs")

# Stop sequences: streamed and whole agree, and the stop text is left out.
if len(text) > 4:
    stop = text[3]
    a = client.chat.completions.create(model="tiny", messages=msgs, temperature=0, max_tokens=20, stop=[stop])
    s = client.chat.completions.create(model="tiny", messages=msgs, temperature=0, max_tokens=20, stop=[stop], stream=True)
    st = "".join(c.choices[0].delta.content or "" for c in s if c.choices)
    check(a.choices[0].message.content == text[: text.index(stop)] == st, "stop cut, streamed and whole")
    check(a.choices[0].finish_reason == "stop", "finish_reason stop")

# n = 2, streamed: both choices arrive.
s = client.chat.completions.create(model="tiny", messages=msgs, temperature=1, seed=4, max_tokens=8, n=2, stream=True)
idx = sorted({c.choices[0].index for c in s if c.choices})
check(idx == [0, 1], "n=2 streams two choices")

# Text completions, whole and streamed, with 2 alternatives per token.
c = client.completions.create(model="tiny", prompt="The cart is", max_tokens=12, temperature=0, logprobs=2)
check(c.object == "text_completion", "a text completion")
ctext = c.choices[0].text
check(len(c.choices[0].logprobs.tokens) == len(c.choices[0].logprobs.token_logprobs), "token logprobs")
check(all(len(t) <= 2 for t in c.choices[0].logprobs.top_logprobs), "top_logprobs dicts")
cs = list(client.completions.create(model="tiny", prompt="The cart is", max_tokens=12, temperature=0, stream=True))
check("".join(x.choices[0].text for x in cs) == ctext, "streamed completion == whole")
e = client.completions.create(model="tiny", prompt="The cart is", max_tokens=3, temperature=0, echo=True)
check(e.choices[0].text.startswith("The cart is"), "echo puts the prompt first")

# Refusals: the client raises the right class, with `param` and `code`.
def refused(cls, param, code, **kw):
    try:
        client.chat.completions.create(model="tiny", messages=msgs, max_tokens=2, **kw)
    except cls as err:
        body = err.body or {}
        check(body.get("param") == param and body.get("code") == code, f"{kw}: {body}")
        return
    check(False, f"{kw} was accepted")


refused(openai.BadRequestError, "tools", "tools_not_supported",
        tools=[{"type": "function", "function": {"name": "click", "parameters": {"type": "object"}}}])
refused(openai.BadRequestError, "response_format.type", "response_format_not_supported",
        response_format={"type": "json_object"})
refused(openai.BadRequestError, "temperature", "invalid_value", temperature=5)
refused(openai.BadRequestError, "frequency_penalty", "unsupported_parameter", frequency_penalty=1)
try:
    client.chat.completions.create(model="gpt-4o", messages=msgs)
    check(False, "another model was accepted")
except openai.NotFoundError as err:
    check(err.body.get("param") == "model", "model_not_found names `model`")

# Tool calls: a tiny Hugging Face policy taught to answer with a Hermes call of `click`.
tools_client = openai.OpenAI(base_url=os.environ["WRL_TOOLS_BASE_URL"], api_key="unused", max_retries=0)
tools_model = tools_client.models.list().data[0].id
click = {"type": "function", "function": {"name": "click", "description": "Click an element.",
         "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
ask = [{"role": "user", "content": "Open the cart."}]
r = tools_client.chat.completions.create(model=tools_model, messages=ask, tools=[click], temperature=0)
c = r.choices[0]
check(c.finish_reason == "tool_calls", f"finish_reason tool_calls: {c}")
check(c.message.content is None, "no content besides the call")
call = c.message.tool_calls[0]
check(call.type == "function" and call.function.name == "click", f"the call: {call}")
check(json.loads(call.function.arguments) == {"id": 7}, "arguments are a JSON string")
# The call and the tool's answer go back as the client's next turn.
ask2 = ask + [c.message.model_dump(exclude_none=True),
              {"role": "tool", "tool_call_id": call.id, "content": "opened"}]
r2 = tools_client.chat.completions.create(model=tools_model, messages=ask2, tools=[click], temperature=0,
                                          max_tokens=4)
check(r2.usage.prompt_tokens > r.usage.prompt_tokens, "the history with the call is rendered")
r3 = tools_client.chat.completions.create(model=tools_model, messages=ask, tools=[click], tool_choice="none",
                                          temperature=0)
check(r3.choices[0].message.tool_calls is None and "<tool_call>" in r3.choices[0].message.content,
      "tool_choice none: the reply as content")
try:
    tools_client.chat.completions.create(model=tools_model, messages=ask, tools=[click], tool_choice="required")
    check(False, "tool_choice required was accepted")
except openai.BadRequestError as err:
    check(err.body.get("param") == "tool_choice", "tool_choice required is refused")

# Images: `image_url` data URLs sent to the tiny random Qwen3-VL; an http URL is never fetched.
def png(width, height, seed):
    rows = b"".join(b"\x00" + bytes((x * 7 + y * 3 + seed) % 256 for x in range(width * 3))
                    for y in range(height))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def seen(url):
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": "Which button buys the mug?"}]}]


vl_client = openai.OpenAI(base_url=os.environ["WRL_VL_BASE_URL"], api_key="unused", max_retries=0)
vl_model = vl_client.models.list().data[0].id
data = "data:image/png;base64," + base64.b64encode(png(64, 48, 1)).decode()
r = vl_client.chat.completions.create(model=vl_model, messages=seen(data), temperature=0, max_tokens=4)
text_only = vl_client.chat.completions.create(
    model=vl_model, messages=[{"role": "user", "content": "Which button buys the mug?"}], temperature=0,
    max_tokens=4)
check(r.usage.prompt_tokens > text_only.usage.prompt_tokens + 1, f"the image's tokens are counted: {r.usage}")
vs = list(vl_client.chat.completions.create(model=vl_model, messages=seen(data), temperature=0, max_tokens=4,
                                            stream=True))
check("".join(x.choices[0].delta.content or "" for x in vs if x.choices) == r.choices[0].message.content,
      "a streamed image answer == whole")
try:
    vl_client.chat.completions.create(model=vl_model, messages=seen("https://example.com/mug.png"), max_tokens=2)
    check(False, "an http image URL was accepted")
except openai.BadRequestError as err:
    check(err.body.get("code") == "invalid_image_url" and "not fetched" in err.body.get("message", ""),
          f"an http image URL is refused, not fetched: {err.body}")
try:
    client.chat.completions.create(model="tiny", messages=seen(data), max_tokens=2)
    check(False, "an image was accepted by a text model")
except openai.BadRequestError as err:
    check(err.body.get("param") == "messages[0].content[0].type", f"a text model reads text only: {err.body}")

print(f"openai client: {checks} checks passed")
