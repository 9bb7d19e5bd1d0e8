#!/usr/bin/env bash
# Recreate the CPU venv for verl 0.9.1 checks (config validation, agent-loop episodes). ~5.6 GB, ~2-4 min.
# torch from PyPI is the CUDA 13 build; its nvidia-* wheels are needed only so `import torch` finds
# libcudart/libcublas, no GPU or driver is used (torch.cuda.is_available() is False). torchvision
# (the release built for that torch) is what transformers' Qwen-VL image and video processors
# need: the check's vision-language episodes load one.
set -euo pipefail
V="${1:-/work/venvs/verl}"
python3 -m venv "$V"
"$V/bin/pip" install -q --no-cache-dir -U pip
"$V/bin/pip" install -q --no-cache-dir torch==2.11.0 torchvision==0.26.0 verl==0.9.1 cachetools fastapi uvicorn 'TransferQueue>=0.1.10' aiohttp pillow tokenizers
# The wrl side itself (bench/verl-check.sh also puts the checkout first on PYTHONPATH).
"$V/bin/pip" install -q "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$V/bin/python" -c "import verl, verl.experimental.agent_loop, verl.trainer.main_ppo; print('verl', verl.__version__)"
