"""Build a tiny, randomly initialised Qwen2 model + byte-level BPE tokenizer in HF layout, offline.

Usage: python tiny_model.py OUT_DIR [HIDDEN] [LAYERS]
(the CPU check uses the defaults; bench/verl-gpu.sh asks for head size 64, which vLLM's kernels take)
"""
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

CHAT_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{%- endif %}"
    "# Tools\n<tools>\n{%- for tool in tools %}{{ tool | tojson }}\n{%- endfor %}</tools><|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]


def tokenizer(special: list[str], chat_template: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE of ~400 tokens over browsing words, with `special` (the first is the
    padding, `<|im_end|>` the end) and `chat_template`."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["click the link, type into the search box, scroll down, read the page, answer the question"] * 50
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token=special[0],
                                     additional_special_tokens=special[1:])
    hf_tok.chat_template = chat_template
    return hf_tok


def main(out: str, hidden: int = 64, layers: int = 2) -> None:
    hf_tok = tokenizer(SPECIAL, CHAT_TEMPLATE)
    hf_tok.save_pretrained(out)
    cfg = Qwen2Config(vocab_size=len(hf_tok), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
                      eos_token_id=hf_tok.eos_token_id, pad_token_id=hf_tok.pad_token_id, bos_token_id=None,
                      tie_word_embeddings=True)
    Qwen2ForCausalLM(cfg).save_pretrained(out)
    print("wrote", out, "vocab", len(hf_tok))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
