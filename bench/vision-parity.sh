#!/usr/bin/env bash
# Parity of the Qwen-VL image processor with transformers: noise and gradient images at awkward
# sizes and a real Chromium screenshot, through wrl's processor (`vision_parity` example) and
# transformers' `Qwen2VLImageProcessorPil` (PIL's bicubic), with Qwen2.5-VL's and Qwen3-VL's
# preprocessor configs and one that forces downscaling; every value within 1e-6 and every grid
# equal. Not part of `cargo test`; prints a table, exits 1 on a mismatch. Needs PyPI the first
# time (bench/.venv-vision: transformers, pillow, numpy, safetensors; no torch), or
# VISION_PYTHON=/path/to/python with those installed.
#
# `bench/vision-parity.sh tower`: Qwen3-VL's vision tower instead. vision_tower.py builds a tiny
# random Qwen3-VL checkpoint (save_pretrained, seed 0) and runs transformers' tower on three images
# of different sizes; the `vision_tower_parity` example loads the same safetensors and holds the
# last hidden state, the merged tokens and every DeepStack feature to transformers' within 1e-4.
# Needs torch as well (CPU is enough): bench/.venv-vision-tower, or VISION_PYTHON.
#
# `bench/vision-parity.sh tower25`: the same for Qwen2.5-VL: a tiny random
# Qwen2_5_VLForConditionalGeneration (window attention over windows of 112 pixels, full attention
# in `fullatt_block_indexes`, sectioned mRoPE) on three images whose grids span several windows,
# one a whole number of them and two not; tower outputs and whole-model logits within 1e-4.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
WORK="${WORK:-bench/.vision}"
MODE="${1:-processor}"

if [ "$MODE" = tower ] || [ "$MODE" = tower25 ]; then
  FAMILY=qwen3_vl
  [ "$MODE" = tower25 ] && FAMILY=qwen2_5_vl
  PY="${VISION_PYTHON:-bench/.venv-vision-tower/bin/python}"
  if [ -z "${VISION_PYTHON:-}" ] && [ ! -x "$PY" ]; then
    python3 -m venv bench/.venv-vision-tower >&2
    bench/.venv-vision-tower/bin/pip install --quiet "transformers>=5.20" torch pillow numpy safetensors >&2
  fi
  rm -rf "$WORK" && mkdir -p "$WORK"
  cargo build -q -p wrl-trainer --example vision_tower_parity >&2
  "$PY" bench/hf-parity/vision_tower.py make "$WORK" "$FAMILY"
  status=0
  "$CARGO_TARGET_DIR/debug/examples/vision_tower_parity" "$WORK" || status=1
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit $status
fi
[ "$MODE" = processor ] || { echo "usage: bench/vision-parity.sh [processor|tower|tower25]" >&2; exit 2; }

rm -rf "$WORK" && mkdir -p "$WORK/images"

if [ -n "${VISION_PYTHON:-}" ]; then
  PY="$VISION_PYTHON"
else
  VENV=bench/.venv-vision
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet "transformers>=5.20" pillow numpy safetensors >&2
  fi
  PY="$VENV/bin/python"
fi

# A real screenshot at the recipes' viewport: a page of text, links and a form.
CHROME="$(command -v chromium-headless-shell || command -v chromium || true)"
if [ -n "$CHROME" ]; then
  cat > "$WORK/page.html" <<'HTML'
<!doctype html><meta charset="utf-8"><title>Shop</title>
<body style="font-family: sans-serif; margin: 24px">
<h1>Sandbox shop</h1><p>Search the catalogue, open a product, add it to the cart.</p>
<form><input name="q" value="green kettle" size="40"> <button>Search</button></form>
<ul><li><a href="#">Green kettle, 1.7 l — 34.90</a><li><a href="#">Steel kettle — 29.00</a></ul>
<table border="1" cellpadding="6"><tr><th>Item</th><th>Price</th></tr><tr><td>Mug</td><td>4.50</td></tr></table>
</body>
HTML
  "$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,720 \
    --screenshot="$PWD/$WORK/images/screenshot-1280x720.png" "file://$PWD/$WORK/page.html" >/dev/null 2>&1
fi

cargo build -q -p wrl-trainer --example vision_parity >&2
BIN="$CARGO_TARGET_DIR/debug/examples/vision_parity"
"$PY" bench/hf-parity/vision.py make "$WORK"
for config in qwen2_5_vl qwen3_vl small; do
  "$BIN" "$WORK/$config.json" "$WORK/images" "$WORK/out-$config" > "$WORK/times-$config.tsv"
done
status=0
"$PY" bench/hf-parity/vision.py check "$WORK" || status=1
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
