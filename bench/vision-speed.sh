#!/usr/bin/env bash
# The vision tower's forward per screenshot, wrl (candle, release build) against transformers
# (PyTorch, CPU), same shape, same pixels, same threads: Qwen3-VL-4B's tower (random weights) on a
# real Chromium screenshot of the sandbox shop at the recipes' 1280x1000 viewport, under
# OpenWebRL's pixel budget (512x512: ~256 image tokens) and a 1024-token one. Prints a table
# with the load average; not part of `cargo test`. Run it on a quiet machine: a figure taken
# under load is not a result. Needs PyPI the first time (bench/.venv-vision-tower: transformers,
# torch CPU, pillow, numpy, safetensors), or VISION_PYTHON=/path/to/python with those.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
WORK="${WORK:-bench/.vision-speed}"
. bench/vision-env.sh vision-speed
rm -rf "$WORK" && mkdir -p "$WORK"
cargo build -q --release -p wrl-trainer --example vision_speed >&2
cat > "$WORK/page.html" <<'HTML'
<!doctype html><meta charset="utf-8"><title>Shop</title>
<body style="font-family: sans-serif; margin: 24px">
<h1>Sandbox shop</h1><p>Search the catalogue, open a product, add it to the cart.</p>
<form><input name="q" value="green kettle" size="40"> <button>Search</button></form>
<ul><li><a href="#">Green kettle, 1.7 l — 34.90</a><li><a href="#">Steel kettle — 29.00</a>
<li><a href="#">Glass teapot — 19.50</a><li><a href="#">Milk frother — 24.00</a></ul>
<table border="1" cellpadding="6"><tr><th>Item</th><th>Price</th><th>Stock</th></tr>
<tr><td>Mug</td><td>4.50</td><td>12</td></tr><tr><td>Kettle</td><td>34.90</td><td>3</td></tr></table>
</body>
HTML
"$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1000 \
  --screenshot="$PWD/$WORK/screenshot.png" "file://$PWD/$WORK/page.html" >/dev/null 2>&1
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" bench/hf-parity/vision_speed.py make "$WORK" "$WORK/screenshot.png"
load_mid="$(cut -d' ' -f1-3 /proc/loadavg)"
"$CARGO_TARGET_DIR/release/examples/vision_speed" "$WORK" openwebrl-256 tokens-1024 > "$WORK/wrl.tsv"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$WORK" "$load_before" "$load_mid" "$load_after" <<'PY'
import json, sys
work, before, mid, after = sys.argv[1:]
t = json.load(open(f"{work}/transformers.json"))
print(f"Qwen3-VL-4B vision tower (24 blocks, width 1024), one 1280x1000 Chromium screenshot, "
      f"{t['threads']} threads, f32, transformers attention `{t['attention']}`")
print("| budget | grid (t, h, w) | image tokens | transformers ms | wrl ms | wrl / transformers | max abs diff |")
print("|---|---|---|---|---|---|---|")
for line in open(f"{work}/wrl.tsv"):
    name, grid, tokens, ms, diff = line.rstrip("\n").split("\t")
    peer = t["budgets"][name]["ms"]
    print(f"| {name} | {grid} | {tokens} | {peer:.0f} | {float(ms):.0f} | {float(ms) / peer:.2f} | {diff} |")
print(f"load average: before {before} · after transformers {mid} · after wrl {after}")
PY
