#!/usr/bin/env bash
# Two GRPO iterations of the quickstart's structure under real verl 0.9.1 on one GPU: the job
# `wrlc lower recipes/quickstart.wrl --to verl` writes, trained from a randomly initialised small
# Qwen2 in HF layout (built here, offline), its episodes run by the wrl agent loop through
# `wrlc env serve` in real Chromium, rollouts on vLLM, updates on FSDP. No network is needed.
# Prints each step's metrics (verl's console logger) and a last line `VERL GPU OK` when both
# steps finished.
#
# Usage: bench/verl-gpu.sh [WORK_DIR]
#   VERL_PY  a Python with `verl[vllm]==0.9.1` (torch 2.11, vllm 0.24) and integrations/verl
#            installed (`pip install 'verl[vllm]==0.9.1' TransferQueue integrations/verl`)
#   WRLC     the wrlc binary (default target/release/wrlc, else target/debug/wrlc)
#   GPUS     GPUs to use (default 1)
# Not run in CI: it needs a GPU. Its CPU half (configs, agent loop, env service) is
# bench/verl-check.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${VERL_PY:-python3}"
gpus="${GPUS:-1}"
wrlc="${WRLC:-}"
for c in "$root/target/release/wrlc" "$root/target/debug/wrlc"; do
  [ -z "$wrlc" ] && [ -x "$c" ] && wrlc="$c"
done
[ -n "$wrlc" ] || { echo "verl-gpu: no wrlc (cargo build --release -p wrl-cli, or set WRLC)" >&2; exit 2; }
"$py" -c 'import verl, vllm, wrl_verl, sys; sys.exit(verl.__version__ != "0.9.1")' || {
  echo "verl-gpu: $py lacks verl[vllm]==0.9.1 or wrl_verl (pip install 'verl[vllm]==0.9.1' integrations/verl)" >&2; exit 2; }
"$py" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' || { echo "verl-gpu: no GPU visible to torch" >&2; exit 2; }
work="${1:-$(mktemp -d /tmp/wrl-verl-gpu.XXXXXX)}"
mkdir -p "$work"
echo "verl-gpu: $(date -u '+%Y-%m-%d %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $gpus GPU(s), work dir $work"
# A small random Qwen2 (head size 64 for vLLM's kernels) and its byte-level BPE tokenizer.
"$py" integrations/verl/tests/tiny_model.py "$work/model" 256 2
rm -rf "$work/job"
"$wrlc" lower recipes/quickstart.wrl --to verl --allow-unmapped --out "$work/job" 2>"$work/lower.log"
# Two RL steps, sized for one GPU (integrations/verl/tests/gpu_overrides.txt, which
# bench/verl-check.sh has verl validate on CPU): 2 prompts x group 2, the rest as lowered.
mapfile -t overrides < <(grep -v '^#' integrations/verl/tests/gpu_overrides.txt)
MODEL="$work/model" WRLC="$wrlc" "$work/job/launch.sh" trainer.n_gpus_per_node="$gpus" "${overrides[@]}" \
  2>&1 | tee "$work/train.log"
grep -q "step:2" "$work/train.log" || { echo "verl-gpu: no second step in $work/train.log" >&2; exit 1; }
echo "VERL GPU OK"
