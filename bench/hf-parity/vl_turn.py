"""The transformers side of bench/vl-turn.sh: the same vision-language rollout turn as the
`vl_turn` example (the random Qwen3-VL wrl wrote in Hugging Face layout, loaded with
`from_pretrained`; the prompt ids and the screenshot's pixel rows wrl's processor made, so both
sides run the same numbers), through `generate`: greedy with one row, and four sampled rows of one
prompt (`num_return_sequences`, as a GRPO group), 32 new tokens, the image tokens suppressed as
wrl never draws them. A warm-up, then the median of RUNS (default 3). Writes DIR/transformers.json.

`vl_turn.py DIR`
"""

import json
import os
import pathlib
import statistics
import sys
import time

import torch
from safetensors.torch import load_file
from transformers import Qwen3VLForConditionalGeneration

RUNS = int(os.environ.get("RUNS", "3"))
NEW_TOKENS = 32


def main(work):
    model = Qwen3VLForConditionalGeneration.from_pretrained(
        str(work / "model"), dtype=torch.float32).eval()
    inputs = load_file(str(work / "inputs.safetensors"))
    ids = inputs["input_ids"].long()
    pixels = inputs["pixel_values"].float()
    grid = inputs["image_grid_thw"].long()
    c = model.config
    suppress = [c.vision_start_token_id, c.image_token_id, c.vision_end_token_id, c.video_token_id]
    out = {"threads": torch.get_num_threads(), "attention": model.config._attn_implementation,
           "prompt_tokens": ids.shape[1], "rows": {}}
    with torch.inference_mode():
        model.model.visual(pixels, grid_thw=grid)
        tower = []
        for _ in range(RUNS):
            started = time.perf_counter()
            model.model.visual(pixels, grid_thw=grid)
            tower.append((time.perf_counter() - started) * 1e3)
    out["tower_ms"] = statistics.median(tower)
    print(f"transformers tower: {out['tower_ms']:.0f} ms", file=sys.stderr)
    for n in (1, 4):
        def turn():
            kwargs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixels,
                          image_grid_thw=grid, max_new_tokens=NEW_TOKENS,
                          suppress_tokens=suppress, pad_token_id=0)
            if n == 1:
                kwargs.update(do_sample=False)
            else:
                kwargs.update(do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                              num_return_sequences=n)
            started = time.perf_counter()
            with torch.inference_mode():
                seq = model.generate(**kwargs)
            return (time.perf_counter() - started) * 1e3, seq.shape[1] - ids.shape[1]
        turn()
        runs = [turn() for _ in range(RUNS)]
        ms = statistics.median(r[0] for r in runs)
        out["rows"][str(n)] = {"ms": ms, "tokens": runs[-1][1], "runs": [r[0] for r in runs]}
        print(f"transformers n={n}: {ms:.0f} ms, {runs[-1][1]} new tokens", file=sys.stderr)
    (work / "transformers.json").write_text(json.dumps(out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: vl_turn.py DIR")
    main(pathlib.Path(sys.argv[1]))
