"""Build a tiny, randomly initialised Qwen3-VL in HF layout, offline, for the verl check's
vision-language episodes: transformers' own ``Qwen3VLForConditionalGeneration`` (small text and
vision towers), a byte-level BPE tokenizer with Qwen's vision tokens, a chat template that puts
``<|vision_start|><|image_pad|><|vision_end|>`` where a message has an image, and the
processor (``Qwen3VLProcessor``) with a small pixel budget, all saved with ``save_pretrained``.

Usage: python tiny_vl_model.py OUT_DIR
"""
import sys

from tiny_model import SPECIAL as TEXT_SPECIAL
from tiny_model import tokenizer

CHAT_TEMPLATE = (
    "{%- macro render(content) %}"
    "{%- if content is string %}{{ content }}"
    "{%- else %}{%- for c in content %}"
    "{%- if c.type == 'image' or 'image' in c %}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif c.type == 'text' %}{{ c.text }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{%- endmacro %}"
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ render(messages[0].content) }}\n\n{%- endif %}"
    "# Tools\n<tools>\n{%- for tool in tools %}{{ tool | tojson }}\n{%- endfor %}</tools><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ render(messages[0].content) }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ render(m.content) }}\n</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ render(m.content) }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
SPECIAL = TEXT_SPECIAL + ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# A screenshot budget of at most 64 merged tokens (patch 16, merge 2: 32 px a token).
PREPROCESSOR = {
    "size": {"longest_edge": 64 * 32 * 32, "shortest_edge": 4 * 32 * 32}, "patch_size": 16,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}


def main(out: str) -> None:
    import torch
    from transformers import (Qwen2VLImageProcessorFast, Qwen3VLConfig, Qwen3VLForConditionalGeneration,
                              Qwen3VLProcessor, Qwen3VLVideoProcessor)

    hf_tok = tokenizer(SPECIAL, CHAT_TEMPLATE)
    ids = {t: hf_tok.convert_tokens_to_ids(t) for t in SPECIAL}
    text = {
        "vocab_size": len(hf_tok), "hidden_size": 48, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12, "max_position_embeddings": 8192,
        "rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0,
                            "mrope_section": [2, 2, 2], "mrope_interleaved": True},
        "eos_token_id": hf_tok.eos_token_id, "pad_token_id": hf_tok.pad_token_id,
    }
    vision = {
        "depth": 2, "hidden_size": 32, "intermediate_size": 48, "num_heads": 2, "patch_size": 16,
        "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 48,
        "num_position_embeddings": 64, "deepstack_visual_indexes": [0], "hidden_act": "gelu_pytorch_tanh",
    }
    cfg = Qwen3VLConfig(text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
                        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
                        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(cfg).save_pretrained(out)
    processor = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessorFast(**PREPROCESSOR), tokenizer=hf_tok,
                                 video_processor=Qwen3VLVideoProcessor(), chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(out)
    hf_tok.save_pretrained(out)
    print("wrote", out, "vocab", len(hf_tok))


if __name__ == "__main__":
    main(sys.argv[1])
