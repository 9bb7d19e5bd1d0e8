#!/usr/bin/env bash
# Rollout decoding: each turn alone on candle's ops (before batching) against the shared
# row-stable batch (`wrlc run` now), at 1, 4 and 16 concurrent episodes, in one run. Not part
# of `cargo test`. Prints a table and, last, `speedup: X.XX` (batched / alone at 16).
# Knobs: LEVELS (1,4,16), EPISODES (32), PROMPT_BYTES (400), MAX_TOKENS (48), THREADS (2),
# GROUP (1: every episode its own task; 6: groups of six sharing one, as the quickstart's GRPO).
# ROUNDS (3): runs per figure, the decoders taking turns; the table gives the best and the median.
# MODEL (tiny): qwen decodes a random Qwen2 with Qwen2.5-0.5B's layer shape that the bench writes
# itself, QWEN_LAYERS (4) of its 24 layers (try EPISODES=16 PROMPT_BYTES=128 MAX_TOKENS=32 ROUNDS=1).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# The allocator settings `wrlc` applies at start-up (compiler/cli/src/malloc.rs).
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296}"
THREADS="${THREADS:-2}"
export RAYON_NUM_THREADS="$THREADS" CANDLE_NUM_THREADS="$THREADS"
cargo build --release -p wrl-trainer --example rollout_bench >&2
"$CARGO_TARGET_DIR/release/examples/rollout_bench" "${LEVELS:-1,4,16}" "${EPISODES:-32}" \
  "${PROMPT_BYTES:-400}" "${MAX_TOKENS:-48}"
