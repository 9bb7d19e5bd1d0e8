"""The transformers side of bench/vision-speed.sh: Qwen3-VL-4B's vision tower (its published
vision_config, random weights: transformers' own initialisation, seed 0) on a real Chromium
screenshot at the recipes' 1280x1000 viewport, under two pixel budgets (OpenWebRL's
image_max_pixels 512x512, and 1024 merged tokens).

`make DIR SCREENSHOT`: saves the tower as DIR/model (config.json with the vision_config, the
tensors under `model.visual.` as in a whole checkpoint), each budget's processor output and the
tower's merged tokens to DIR/<budget>.safetensors, and transformers' forward times (warm-up, then
the median of RUNS) to DIR/transformers.json. Threads: torch.get_num_threads() (all cores).
"""

import json
import os
import pathlib
import statistics
import sys
import time

import numpy as np
import torch
from PIL import Image
from safetensors.numpy import save_file
from safetensors.torch import save_file as save_torch

VISION_4B = {
    "depth": 24, "hidden_size": 1024, "intermediate_size": 4096, "num_heads": 16, "patch_size": 16,
    "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 2560,
    "num_position_embeddings": 2304, "deepstack_visual_indexes": [5, 11, 17],
    "hidden_act": "gelu_pytorch_tanh", "in_channels": 3, "model_type": "qwen3_vl_vision",
}
BUDGETS = {"openwebrl-256": 512 * 512, "tokens-1024": 1024 * 32 * 32}
RUNS = int(os.environ.get("RUNS", "3"))


def make(work, screenshot):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

    torch.manual_seed(0)
    tower = Qwen3VLVisionModel(Qwen3VLVisionConfig(**VISION_4B)).eval()
    model_dir = work / "model"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps({"model_type": "qwen3_vl", "vision_config": VISION_4B}))
    save_torch({f"model.visual.{k}": v.contiguous() for k, v in tower.state_dict().items()},
               str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    image = Image.open(screenshot).convert("RGB")
    times = {"threads": torch.get_num_threads(), "attention": tower.config._attn_implementation,
             "budgets": {}}
    for name, max_pixels in BUDGETS.items():
        processor = Qwen2VLImageProcessorPil(
            size={"longest_edge": max_pixels, "shortest_edge": 65536}, patch_size=16,
            temporal_patch_size=2, merge_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3)
        batch = processor(images=[image], return_tensors="pt")
        pixels, grid = batch["pixel_values"].float(), batch["image_grid_thw"]
        runs = []
        with torch.inference_mode():
            tower(pixels, grid_thw=grid)
            for _ in range(RUNS):
                started = time.perf_counter()
                out = tower(pixels, grid_thw=grid)
                runs.append((time.perf_counter() - started) * 1e3)
        save_file({"pixel_values": pixels.numpy(), "image_grid_thw": grid.numpy().astype(np.int64),
                   "pooler_output": np.ascontiguousarray(out.pooler_output.numpy())},
                  str(work / f"{name}.safetensors"))
        times["budgets"][name] = {"grid": grid[0].tolist(), "ms": statistics.median(runs), "runs": runs}
        print(name, grid[0].tolist(), f"{statistics.median(runs):.0f} ms", file=sys.stderr)
    (work / "transformers.json").write_text(json.dumps(times))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "make":
        sys.exit("usage: vision_speed.py make DIR SCREENSHOT")
    make(pathlib.Path(sys.argv[2]), sys.argv[3])
