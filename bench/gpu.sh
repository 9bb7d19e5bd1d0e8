#!/usr/bin/env bash
# The GPU device check (issue #19): SFT tokens/s and MFU at several sequence lengths, one GRPO
# update and sampling tokens/s for a randomly initialised Qwen2-0.5B-shaped model in Hugging
# Face layout (written by the benchmark itself: no network), on one NVIDIA GPU; peak GPU memory
# from nvidia-smi. Prints a table and, last, `mfu: X.XX`.
#
# Two halves, because the GPU machine has CUDA and a driver but no Rust toolchain and no
# network:
#   bench/gpu.sh build   here: builds wrl-trainer's gpu_bench example with --features cuda
#                        (toolchain from bench/cuda-build.sh's venv, or nvcc on PATH), stripped,
#                        into target-gpu/carry/ (an ignored folder, well under 64 MiB: carry it)
#   bench/gpu.sh run     there: finds the CUDA libraries (the image's NVIDIA wheels, or
#                        LD_LIBRARY_PATH), runs the carried binary on cuda:0, samples nvidia-smi
#   bench/gpu.sh cpu     here: the same benchmark on the CPU with a narrow shape (a check that
#                        it runs; its MFU means nothing)
# Options (environment): SEQS (default 512,1024,2048), STEPS (3), PEAK_TFLOPS (989: H100/H200
# dense bf16), SHAPE, DTYPE (bf16 | f16 | f32; default bf16 over f32 master weights),
# CHECKPOINTING (on | off; default on). Each row also shows the memory the trainer measured.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-run}"
seqs="${SEQS:-512,1024,2048}"
steps="${STEPS:-3}"
peak="${PEAK_TFLOPS:-989}"
carry="$root/target-gpu/carry"
echo "gpu.sh $mode: $(date -u '+%Y-%m-%d %H:%M') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"

case "$mode" in
  build)
    if ! command -v nvcc >/dev/null 2>&1; then
      # The toolchain and libraries of bench/cuda-build.sh's venv, checked, as its environment.
      eval "$(bench/cuda-build.sh --print-env)"
    fi
    export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
    export CARGO_TARGET_DIR="$root/target-gpu"
    cargo build --release -p wrl-trainer --features cuda --example gpu_bench
    mkdir -p "$carry"
    cp "$CARGO_TARGET_DIR/release/examples/gpu_bench" "$carry/gpu_bench"
    strip "$carry/gpu_bench"
    ls -la "$carry/gpu_bench"
    echo "gpu.sh: carry target-gpu/carry (run: bench/gpu.sh run)"
    ;;
  run)
    bin="$carry/gpu_bench"
    [[ -x "$bin" ]] || { echo "gpu.sh: no $bin (bench/gpu.sh build, then carry target-gpu/carry)" >&2; exit 2; }
    command -v nvidia-smi >/dev/null || { echo "gpu.sh: no nvidia-smi: is this the GPU machine?" >&2; exit 2; }
    # cuBLAS, cuRAND and NVRTC: the image's NVIDIA wheels (PyTorch's), unless given.
    libs="$(python3 - <<'EOF' 2>/dev/null || true
import glob, os, site
dirs = set()
for base in site.getsitepackages():
    for name in ("libcublas.so*", "libcurand.so*", "libnvrtc.so*", "libcudart.so*"):
        for f in glob.glob(os.path.join(base, "nvidia", "**", name), recursive=True):
            dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
EOF
)"
    export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    mem_log="$(mktemp)"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$mem_log" &
    smi=$!
    set +e
    "$bin" "${SHAPE:-qwen2-0.5b}" cuda:0 "$seqs" "$steps" "$peak" "${DTYPE:-bf16}" \
      "${CHECKPOINTING:-on}" >"$mem_log.out"
    code=$?
    set -e
    kill "$smi" 2>/dev/null || true
    # The table, then the GPU's peak memory, then the benchmark's last line (`mfu: …`).
    head -n -1 "$mem_log.out"
    echo "peak GPU memory (nvidia-smi, every 200 ms): $(sort -n "$mem_log" | tail -1) MiB"
    tail -n 1 "$mem_log.out"
    exit "$code"
    ;;
  cpu)
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
    cargo build --release -q -p wrl-trainer --example gpu_bench
    "$CARGO_TARGET_DIR/release/examples/gpu_bench" "${SHAPE:-narrow}" cpu "${SEQS:-64,128}" "$steps" \
      "${PEAK_TFLOPS:-0.1}" "${DTYPE:-bf16}" "${CHECKPOINTING:-on}"
    ;;
  *)
    echo "usage: bench/gpu.sh build | run | cpu" >&2
    exit 2
    ;;
esac
