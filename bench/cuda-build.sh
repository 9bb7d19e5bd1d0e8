#!/usr/bin/env bash
# Builds wrlc with CUDA (`cargo build --release -p wrl-cli --features cuda`) on a machine with
# no GPU and no CUDA toolkit: nvcc, the CUDA headers and the libraries candle links against come
# from the package registry's NVIDIA wheels, installed into a virtual environment (nothing is
# downloaded from NVIDIA, no toolkit is installed system-wide). Prints how long each part took.
#
# Usage: bench/cuda-build.sh [--check-only | --print-env] [VENV]
#   --check-only  stop after nvcc has compiled a bf16 kernel (the toolchain, ~1 min); no cargo
#   --print-env   install the libraries too, then print the build environment as `export` lines
#                 on stdout (everything else on stderr) and stop: `eval "$(… --print-env)"`
#                 before another CUDA cargo build (bench/gpu.sh build does)
#   VENV          where the wheels go (default target/cuda-venv; reused when present)
#   CUDA_COMPUTE_CAP  the GPU generation to compile for (default 90: H100/H200; 80 for A100)
#   CARGO_TARGET_DIR  where the CUDA build goes (default target/cuda, beside the CPU build)
#
# Not run in CI: candle-kernels compiles its CUDA kernels (PTX for every op, a static library of
# MoE/GGUF kernels) with nvcc, well over 10 minutes on 2 cores on top of a release build, and
# the wheels are ~1 GB. The pins: the CUDA 12 nvcc wheels ship no `nvcc` driver, so this uses
# CUDA 13.0; nvvm and crt are pinned with it, since an unpinned nvvm 13.5 emits PTX 9.5 that the
# 13.0 ptxas rejects ("Unsupported .version 9.5").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
check_only=0
print_env=0
case "${1:-}" in
  --check-only) check_only=1; shift ;;
  --print-env) print_env=1; shift; exec 3>&1 1>&2 ;;
esac
venv="${1:-$root/target/cuda-venv}"
cap="${CUDA_COMPUTE_CAP:-90}"
start=$(date +%s)
stamp() { echo "cuda-build: $1 ($(( $(date +%s) - start )) s so far, load $(cut -d' ' -f1 /proc/loadavg))"; }

py="${PYTHON:-python3}"
command -v "$py" >/dev/null || { echo "cuda-build: no $py (set PYTHON)" >&2; exit 2; }
if [[ ! -x "$venv/bin/python" ]]; then
  "$py" -m venv "$venv"
fi
pip_install() { "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"; }
# The compiler and headers (~150 MB).
pip_install 'nvidia-cuda-nvcc==13.0.88' 'nvidia-cuda-crt==13.0.88' 'nvidia-nvvm==13.0.88' \
  'nvidia-cuda-runtime==13.0.*' 'nvidia-cuda-cccl==13.0.*'
stamp "toolchain wheels installed in $venv"

# The wheels' toolkit layout: site-packages/nvidia/cu13/{bin,include,lib,nvvm}.
cuda="$("$venv/bin/python" - <<'EOF'
import pathlib, nvidia
for base in nvidia.__path__:
    for d in pathlib.Path(base).glob("cu13*"):
        if (d / "bin" / "nvcc").exists():
            print(d)
            raise SystemExit
raise SystemExit("no nvidia/cu13*/bin/nvcc in the venv")
EOF
)"
export CUDA_ROOT="$cuda" CUDA_HOME="$cuda" CUDA_PATH="$cuda" CUDA_COMPUTE_CAP="$cap"
export PATH="$cuda/bin:$PATH"
# candle links libcuda (the driver) at build time: without a driver here, the toolkit's stub
# stands in; at run time the machine's driver is loaded.
for d in "$cuda/lib" "$cuda/lib/stubs" "$cuda/lib64/stubs"; do
  [[ -d "$d" ]] && export LIBRARY_PATH="$d${LIBRARY_PATH:+:$LIBRARY_PATH}"
done
if ! find "$cuda" -name 'libcuda.so*' | grep -q .; then
  # The wheels hold no driver stub (the toolkit's lib64/stubs/libcuda.so). One that exports
  # every driver API name of cuda.h (each returning an error) under the driver's soname is
  # enough to link; at run time the loader takes the machine's real libcuda.so.1.
  mkdir -p "$venv/stubs"
  grep -ohE '\bcu[A-Z][A-Za-z0-9_]*\b' "$cuda/include/cuda.h" | sort -u \
    | awk '{ printf "int %s(void) { return 999; }\n", $1 }' > "$venv/stubs/stub.c"
  cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$venv/stubs/libcuda.so" "$venv/stubs/stub.c"
  export LIBRARY_PATH="$venv/stubs${LIBRARY_PATH:+:$LIBRARY_PATH}"
fi
nvcc --version | tail -1

# The toolchain works: a bf16 kernel to PTX for this compute capability.
tmp="$(mktemp -d)"
cat > "$tmp/k.cu" <<'EOF'
#include <cuda_bf16.h>
extern "C" __global__ void axpy(__nv_bfloat16 *y, const __nv_bfloat16 *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16(a * __bfloat162float(x[i]) + __bfloat162float(y[i]));
}
EOF
nvcc --ptx -arch="sm_$cap" -o "$tmp/k.ptx" "$tmp/k.cu"
grep -q '.entry axpy' "$tmp/k.ptx"
stamp "nvcc compiled a bf16 kernel for sm_$cap"
[[ $check_only == 1 ]] && { echo "cuda-build: toolchain OK (--check-only)"; exit 0; }

# What candle links against (cuBLAS is ~0.6 GB).
pip_install 'nvidia-cublas==13.0.*' 'nvidia-curand==10.4.0.*' 'nvidia-cuda-nvrtc==13.0.*'
stamp "library wheels installed"
# Wherever the wheels put them, the linker (and, at run time, the loader) finds them.
libdirs="$(find "$venv" -name 'libcublas.so*' -o -name 'libcurand.so*' -o -name 'libnvrtc.so*' -o -name 'libcudart.so*' | xargs -r -n1 dirname | sort -u | paste -sd:)"
[[ -n "$libdirs" ]] || { echo "cuda-build: the wheels hold no libcublas/libcurand/libnvrtc" >&2; exit 1; }
# The wheels hold only versioned libraries (libcublas.so.13), the linker's `-lcublas` wants
# libcublas.so: unversioned links to them, in a folder of their own. The binary still records
# the sonames (libcublas.so.13), which the loader finds at run time.
links="$venv/links"
mkdir -p "$links"
while IFS= read -r f; do
  base="$(basename "$f")"
  ln -sf "$f" "$links/${base%%.so.*}.so"
done < <(find "$venv" -name 'libcublas.so.*' -o -name 'libcublasLt.so.*' -o -name 'libcurand.so.*' -o -name 'libnvrtc.so.*' -o -name 'libcudart.so.*')
export LIBRARY_PATH="$links:$libdirs:$LIBRARY_PATH"
if [[ $print_env == 1 ]]; then
  for v in CUDA_ROOT CUDA_HOME CUDA_PATH CUDA_COMPUTE_CAP PATH LIBRARY_PATH; do
    printf 'export %s=%q\n' "$v" "${!v}" >&3
  done
  exit 0
fi

# Its own target directory, so the CPU build in target/ is left as it is.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/cuda}"
cargo build --release -p wrl-cli --features cuda
stamp "wrlc built with CUDA"
ls -la "$CARGO_TARGET_DIR/release/wrlc"
echo "cuda-build: OK in $(( $(date +%s) - start )) s"
echo "cuda-build: to run it, LD_LIBRARY_PATH=$libdirs $CARGO_TARGET_DIR/release/wrlc run …"
