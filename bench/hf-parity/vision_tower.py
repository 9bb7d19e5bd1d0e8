"""The transformers side of bench/vision-parity.sh's `tower` and `tower25` modes: the Qwen3-VL or
Qwen2.5-VL vision tower and whole model.

`make DIR [qwen3_vl|qwen2_5_vl]`: builds a tiny random `Qwen3VLForConditionalGeneration` (a small text and vision
config, seed 0, every weight redrawn at a scale that keeps activations near 1 so a wrong op shows),
saves it with `save_pretrained` plus a `preprocessor_config.json` into DIR/model, runs three
images of different sizes (one image's grid smaller than the learned position table, two larger,
one not square) through transformers' `Qwen2VLImageProcessorPil`, then `model.model.visual` on
all three at once, and writes DIR/reference.safetensors: `pixel_values`, `image_grid_thw`, the
tower's last hidden state, the merged embeddings (`pooler_output`) and each DeepStack feature
(`deepstack_0`, …); and DIR/rope.json: `get_rope_index`'s three position rows and delta, and the
text rotary embedding's cos and sin (interleaved mRoPE, `mrope_section` [2, 2, 2]), for two token
sequences with `<|vision_start|><|image_pad|>…<|vision_end|>` runs (one image; two images of
different shapes). The Rust example `vision_tower_parity` holds wrl to both files.

With `qwen2_5_vl`: a tiny random `Qwen2_5_VLForConditionalGeneration` instead (Qwen2.5-VL's
processor settings: 14-pixel patches, CLIP's mean and std), whose tower attends in windows of 112
pixels (4 × 4 merged tokens) except in its `fullatt_block_indexes`, on three images whose grids
span several windows (one a whole number of windows, two not); its text side's mRoPE in sections.
Needs torch (CPU is enough).
"""

import json
import pathlib
import sys

import numpy as np
import torch
from PIL import Image
from safetensors.numpy import save_file

PREPROCESSOR = {
    # Qwen3-VL's settings with a small pixel budget so the tiny tower runs fast in a debug build.
    "size": {"longest_edge": 160 * 32 * 32, "shortest_edge": 4 * 32 * 32}, "patch_size": 16,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5], "processor_class": "Qwen3VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}
SIZES = [(64, 64), (300, 190), (120, 410)]  # (width, height)
PREPROCESSOR_25 = {
    # Qwen2.5-VL's settings with a small pixel budget (at most 256 merged tokens an image).
    "size": {"longest_edge": 256 * 28 * 28, "shortest_edge": 4 * 28 * 28}, "patch_size": 14,
    "temporal_patch_size": 2, "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711], "processor_class": "Qwen2_5_VLProcessor",
    "image_processor_type": "Qwen2VLImageProcessorFast",
}
# Grids 16 × 32 (2 × 4 windows of 8 × 8 patches, whole), 14 × 22 (2 × 3, the last row and column
# partial) and 30 × 8 (4 × 1, the last row partial).
SIZES_25 = [(448, 224), (300, 190), (120, 410)]


def tiny_config():
    from transformers import Qwen3VLConfig

    text = {
        "vocab_size": 151936 // 512, "hidden_size": 48, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
        "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0,
                            "mrope_section": [2, 2, 2], "mrope_interleaved": True},
    }
    vision = {
        "depth": 4, "hidden_size": 64, "intermediate_size": 96, "num_heads": 4, "patch_size": 16,
        "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 48,
        "num_position_embeddings": 64, "deepstack_visual_indexes": [0, 2],
        "hidden_act": "gelu_pytorch_tanh",
    }
    return Qwen3VLConfig(text_config=text, vision_config=vision, image_token_id=250,
                         video_token_id=251, vision_start_token_id=248, vision_end_token_id=249)


def tiny_config_25():
    from transformers import Qwen2_5_VLConfig

    text = {
        "vocab_size": 151936 // 512, "hidden_size": 48, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0,
                            "mrope_section": [2, 2, 2]},
    }
    vision = {
        "depth": 4, "hidden_size": 64, "intermediate_size": 96, "num_heads": 4, "patch_size": 14,
        "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 48,
        "window_size": 112, "fullatt_block_indexes": [1, 3], "hidden_act": "silu",
        "tokens_per_second": 2,
    }
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, image_token_id=250,
                            video_token_id=251, vision_start_token_id=248, vision_end_token_id=249)


def redraw(model):
    """Every weight at a scale where a mistake is visible: matrices ~ 1/sqrt(fan-in), biases and
    the position table ~ 0.5, LayerNorm weights 1 ± 0.2."""
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if ("norm" in name or "ln_q" in name) and name.endswith("weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif p.dim() >= 2 and "pos_embed" not in name and "embed_tokens" not in name:
                fan_in = p[0].numel()
                p.copy_(torch.randn_like(p) / fan_in**0.5)
            else:
                p.copy_(0.5 * torch.randn_like(p))


def make(work, family):
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen3VLForConditionalGeneration
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    torch.manual_seed(0)
    if family == "qwen2_5_vl":
        model = Qwen2_5_VLForConditionalGeneration(tiny_config_25()).eval()
        preprocessor, sizes = PREPROCESSOR_25, SIZES_25
    else:
        model = Qwen3VLForConditionalGeneration(tiny_config()).eval()
        preprocessor, sizes = PREPROCESSOR, SIZES
    model.config._attn_implementation = "eager"
    model.model.visual.config._attn_implementation = "eager"
    redraw(model)
    model_dir = work / "model"
    model.save_pretrained(model_dir)
    (model_dir / "preprocessor_config.json").write_text(json.dumps(preprocessor, indent=1))

    kwargs = {k: v for k, v in preprocessor.items() if k not in ("processor_class", "image_processor_type")}
    processor = Qwen2VLImageProcessorPil(**kwargs)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)) for w, h in sizes]
    batch = processor(images=images, return_tensors="pt")
    pixels, grid = batch["pixel_values"].float(), batch["image_grid_thw"]
    with torch.no_grad():
        out = model.model.visual(pixels, grid_thw=grid)
    tensors = {
        "pixel_values": pixels.numpy(),
        "image_grid_thw": grid.numpy().astype(np.int64),
        "last_hidden_state": out.last_hidden_state.numpy(),
        "pooler_output": out.pooler_output.numpy(),
    }
    for i, f in enumerate(getattr(out, "deepstack_features", None) or []):
        tensors[f"deepstack_{i}"] = f.numpy()
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(work / "reference.safetensors"))
    rope(model, work)
    whole_model(model, pixels, grid, work)
    print("grids", grid.tolist(), "merged", tuple(out.pooler_output.shape), file=sys.stderr)


def rope(model, work):
    cfg = model.config
    start, pad, end = cfg.vision_start_token_id, cfg.image_token_id, cfg.vision_end_token_id
    cases = {
        "one image": ([10, 11, start] + [pad] * 6 + [end, 12, 13], [[1, 4, 6]]),
        "two images": ([7, start] + [pad] * 4 + [end, 8, 9, start] + [pad] * 3 + [end, 5],
                       [[1, 4, 4], [1, 6, 2]]),
    }
    rotary = model.model.language_model.rotary_emb
    # Qwen3-VL's rotary embedding interleaves the rows itself; Qwen2.5-VL's returns one table per
    # row and its attention takes them in sections (`apply_multimodal_rotary_pos_emb`, done below
    # as it does it).
    section = getattr(rotary, "mrope_section", None) or cfg.text_config.rope_parameters["mrope_section"]
    sectioned = not hasattr(rotary, "mrope_section")
    out = {"image_token_id": pad, "video_token_id": cfg.video_token_id,
           "mrope_section": list(section), "inv_freq": rotary.inv_freq.tolist(), "cases": []}
    for name, (ids, grids) in cases.items():
        ids_t = torch.tensor([ids])
        with torch.no_grad():
            pos, delta = model.model.get_rope_index(
                ids_t, mm_token_type_ids=(ids_t == pad).int(), image_grid_thw=torch.tensor(grids))
            cos, sin = rotary(torch.zeros(1), pos)
            if sectioned:
                parts = list(section) * 2
                cos, sin = (torch.cat([m[i % 3] for i, m in enumerate(t.split(parts, dim=-1))], dim=-1)
                            for t in (cos, sin))
        out["cases"].append({"name": name, "ids": ids, "grids": grids, "positions": pos[:, 0].tolist(),
                             "delta": int(delta[0, 0]), "cos": cos[0].tolist(), "sin": sin[0].tolist()})
    (work / "rope.json").write_text(json.dumps(out))


def whole_model(model, pixels, grid, work):
    """The whole model on token sequences holding the three images: logits, greedy tokens and one
    SFT step's loss and gradient norm with the tower frozen (the text decoder's gradients only).
    Writes DIR/vl.safetensors (`logits_<case>`, `greedy_<case>`) and DIR/vl.json (each case's
    ids, which images it holds, the loss and the gradient norm)."""
    cfg = model.config
    start, pad, end = cfg.vision_start_token_id, cfg.image_token_id, cfg.vision_end_token_id
    counts = [int(g.prod()) // 4 for g in grid]
    patches = [int(g.prod()) for g in grid]
    offsets = [sum(patches[:i]) for i in range(len(patches))]

    def image_run(i):
        return [start] + [pad] * counts[i] + [end]

    cases = {
        "one_image": ([10, 11] + image_run(0) + [12, 13], [0]),
        "two_images": ([7] + image_run(1) + [8, 9] + image_run(2) + [5], [1, 2]),
        "text_only": ([3, 4, 5, 6, 7, 8], []),
    }
    for p in model.model.visual.parameters():
        p.requires_grad_(False)
    out_tensors, out_json = {}, {"cases": []}
    for name, (ids, images) in cases.items():
        kwargs = {}
        if images:
            rows = torch.cat([pixels[offsets[i]:offsets[i] + patches[i]] for i in images])
            kwargs = {"pixel_values": rows, "image_grid_thw": grid[images]}
        ids_t = torch.tensor([ids])
        if images:
            kwargs["mm_token_type_ids"] = (ids_t == pad).int()
        with torch.no_grad():
            logits = model(input_ids=ids_t, **kwargs).logits
            greedy = model.generate(input_ids=ids_t, attention_mask=torch.ones_like(ids_t),
                                    max_new_tokens=8, do_sample=False, **kwargs)[0, len(ids):]
        labels = ids_t.clone()
        labels[(labels == pad) | (labels == start) | (labels == end)] = -100
        model.zero_grad()
        loss = model(input_ids=ids_t, labels=labels, **kwargs).loss
        loss.backward()
        norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters() if p.grad is not None))
        out_tensors[f"logits_{name}"] = logits[0].numpy()
        out_tensors[f"greedy_{name}"] = greedy.numpy().astype(np.int64)
        out_json["cases"].append({"name": name, "ids": ids, "images": images, "loss": float(loss.detach()),
                                  "grad_norm": float(norm)})
    save_file({k: np.ascontiguousarray(v) for k, v in out_tensors.items()}, str(work / "vl.safetensors"))
    (work / "vl.json").write_text(json.dumps(out_json))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[1] != "make":
        sys.exit("usage: vision_tower.py make DIR [qwen3_vl|qwen2_5_vl]")
    family = sys.argv[3] if len(sys.argv) == 4 else "qwen3_vl"
    if family not in ("qwen3_vl", "qwen2_5_vl"):
        sys.exit(f"unknown family {family}")
    make(pathlib.Path(sys.argv[2]), family)
