#!/usr/bin/env bash
# Trainer throughput: our candle trainer vs the same model in PyTorch (CPU, 2 threads), side by
# side. Not part of `cargo test`. Prints a table and, last, `ratio: X.XX` (ours / PyTorch, tiny).
# Needs network access to PyPI the first time (creates bench/.venv-trainer with CPU torch, ~5 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target-trainer}"
# Keep 2–8 MB activations on the heap instead of a fresh mmap + page faults per op.
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296
STEPS="${STEPS:-8}"
# Threads for both sides (2 = the dev machine's cores). THREADS=1 is less sensitive to a
# machine shared with other jobs (no spin-waiting thread pools).
THREADS="${THREADS:-2}"
export RAYON_NUM_THREADS="$THREADS" CANDLE_NUM_THREADS="$THREADS" TORCH_THREADS="$THREADS"
DATA="${DATA:-/usr/share/common-licenses/GPL-3}"

cargo build --release -p wrl-trainer --example trainer_bench >&2
BIN="$CARGO_TARGET_DIR/release/examples/trainer_bench"

VENV=bench/.venv-trainer
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet torch numpy >&2
fi
PY="$VENV/bin/python"

# name layers d heads ctx batch
SHAPES=("tiny 2 128 4 256 8" "4x256 4 256 4 256 8")
declare -A OURS THEIRS
# Best step of STEPS timed steps (after 2 warm-up steps) is reported: it is the number least
# disturbed by other jobs on a shared machine. Medians are printed alongside.
printf '%-8s %-14s %12s %12s %12s %12s %7s\n' model shape "ours best" "torch best" "ours median" "torch median" ratio
for s in "${SHAPES[@]}"; do
  read -r name l d h c b <<<"$s"
  o=$("$BIN" "$l" "$d" "$h" "$c" "$b" "$STEPS" "$DATA")
  t=$("$PY" bench/trainer/bench_torch.py "$l" "$d" "$h" "$c" "$b" "$STEPS" "$DATA")
  ob=$(sed -n 's/.*best=\([0-9]*\).*/\1/p' <<<"$o"); om=$(sed -n 's/.*median=\([0-9]*\).*/\1/p' <<<"$o")
  tb=$(sed -n 's/.*best=\([0-9]*\).*/\1/p' <<<"$t"); tm=$(sed -n 's/.*median=\([0-9]*\).*/\1/p' <<<"$t")
  OURS[$name]=$ob
  THEIRS[$name]=$tb
  printf '%-8s %-14s %12s %12s %12s %12s %7s\n' "$name" "L$l d$d ${b}x$c" "$ob" "$tb" "$om" "$tm" \
    "$(python3 -c "print(f'{$ob/$tb:.2f}')")"
done
echo "threads: $THREADS; tokens/s of training (forward + backward + AdamW)"
echo "ratio: $(python3 -c "print(f'{${OURS[tiny]}/${THEIRS[tiny]}:.2f}')")"
