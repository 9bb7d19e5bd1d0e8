#!/usr/bin/env bash
# One vision-language rollout turn, wrl against transformers, same model, same inputs, same
# threads: a random Qwen3-VL (8 text layers of width 512, an 8-block tower of width 512 with
# DeepStack; written by wrl in Hugging Face layout, loaded by transformers' `from_pretrained`), a
# prompt of 48 text tokens around one real Chromium screenshot of the sandbox shop at the
# recipes' 1280x1000 viewport under OpenWebRL's pixel budget (512x512), 32 new tokens: greedy
# with one row, and a group of four sampled rows. wrl runs it through the shared decoding batch
# (what rollouts use) and through candle's whole model (what they used before #43 item 9), each
# on a freshly loaded policy (no screenshot or prefix cached). Prints a table with the load
# average (and the tower alone, which both wrl paths run once per screenshot); not part of
# `cargo test`. Run it on a quiet machine. Needs torch and transformers with
# Qwen3-VL (VISION_PYTHON=/path/to/python, else bench/.venv-vision-tower from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
WORK="${WORK:-bench/.vl-turn}"
. bench/vision-env.sh vl-turn
rm -rf "$WORK" && mkdir -p "$WORK"
cargo build -q --release -p wrl-trainer --example vl_turn >&2
cat > "$WORK/page.html" <<'HTML'
<!doctype html><meta charset="utf-8"><title>Shop</title>
<body style="font-family: sans-serif; margin: 24px">
<h1>Sandbox shop</h1><p>Search the catalogue, open a product, add it to the cart.</p>
<form><input name="q" value="green kettle" size="40"> <button>Search</button></form>
<ul><li><a href="#">Green kettle, 1.7 l — 34.90</a><li><a href="#">Steel kettle — 29.00</a>
<li><a href="#">Glass teapot — 19.50</a><li><a href="#">Milk frother — 24.00</a></ul>
</body>
HTML
"$CHROME" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1000 \
  --screenshot="$PWD/$WORK/screenshot.png" "file://$PWD/$WORK/page.html" >/dev/null 2>&1
BIN="$CARGO_TARGET_DIR/release/examples/vl_turn"
"$BIN" make "$WORK" "$WORK/screenshot.png"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" bench/hf-parity/vl_turn.py "$WORK"
load_mid="$(cut -d' ' -f1-3 /proc/loadavg)"
RAYON_NUM_THREADS="$(nproc)" "$BIN" time "$WORK" > "$WORK/wrl.tsv"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
"$PY" - "$WORK" "$load_before" "$load_mid" "$load_after" <<'PY'
import json, sys
work, before, mid, after = sys.argv[1:]
t = json.load(open(f"{work}/transformers.json"))
wrl = {}
for line in open(f"{work}/wrl.tsv"):
    path, n, ms, tokens = line.rstrip("\n").split("\t")
    wrl[(path, n)] = (float(ms), int(tokens))
print(f"One VL rollout turn: random Qwen3-VL (8 x 512 text, 8 x 512 tower), prompt of "
      f"{t['prompt_tokens']} tokens with one 1280x1000 Chromium screenshot, 32 new tokens, "
      f"{t['threads']} threads, f32, transformers attention `{t['attention']}`")
print("| rows | transformers ms | wrl batch ms | wrl candle ms | batch / transformers | new tokens (transformers, batch, candle) |")
print("|---|---|---|---|---|---|")
tw = wrl[("tower", "1")][0]
print(f"| tower alone | {t['tower_ms']:.0f} | {tw:.0f} | {tw:.0f} | {tw / t['tower_ms']:.2f} | |")
for n in ("1", "4"):
    peer = t["rows"][n]
    b, c = wrl[("batch", n)], wrl[("candle", n)]
    print(f"| {n} | {peer['ms']:.0f} | {b[0]:.0f} | {c[0]:.0f} | {b[0] / peer['ms']:.2f} | "
          f"{peer['tokens']}, {b[1]}, {c[1]} |")
print(f"load average: before {before} · after transformers {mid} · after wrl {after}")
PY
