#!/usr/bin/env bash
# Installs what is missing, then configures and builds gmlp in Release. Safe to re-run: installs
# and rebuilds only what changed.
#
#   bash scripts/setup.sh          Debian's LibTorch 1.13 (CPU): build/gmlp
#   bash scripts/setup.sh --cuda   PyPI's torch==2.11.0 (CUDA 13.0, NCCL) in a virtual environment
#                                  outside the tree: build-cuda/gmlp. Needs the CUDA toolkit
#                                  (nvcc); runs on CPU too when the machine has no GPU.
#
# Environment: BUILD_DIR (build / build-cuda), CMAKE_ARGS (extra configure arguments),
# GMLP_TORCH_VENV (the virtual environment; default /var/cache/gmlp/torch-2.11.0, so a machine
# that has it does not download its 2.7 GB again), TORCH_CUDA_ARCH_LIST (default "8.0;9.0").
set -euo pipefail
cd "$(dirname "$0")/.."

CUDA=0
for arg in "$@"; do
  case "$arg" in
    --cuda) CUDA=1 ;;
    *) echo "setup: unknown argument '$arg' (use --cuda or nothing)" >&2; exit 2 ;;
  esac
done

# Every build needs these; the Debian build also LibTorch 1.13 and the 1.13 PyTorch that the
# benchmarks compare against.
PACKAGES=(
  build-essential cmake ninja-build pkg-config git xz-utils
  libgloo-dev libsentencepiece-dev sentencepiece libabsl-dev libgtest-dev
  nlohmann-json3-dev libopenblas0-openmp zlib1g-dev liblzma-dev libzstd-dev gnuplot-nox
  libtorch-dev python3-torch
)
source scripts/packages.sh
install_missing_packages "${PACKAGES[@]}"

EXTRA_ARGS=()
if ((CUDA)); then
  VENV=$(bash scripts/python_env.sh)
  if ! command -v nvcc >/dev/null; then
    [[ -x /usr/local/cuda/bin/nvcc ]] || {
      echo "setup: --cuda needs the CUDA toolkit (nvcc): install CUDA 13.0 or put nvcc on PATH" >&2
      exit 1
    }
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  PREFIX=$("$VENV/bin/python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  BUILD_DIR=${BUILD_DIR:-build-cuda}
  # The wheel's CMake files and headers only: Debian's TorchConfig must not be found first.
  EXTRA_ARGS+=("-DCMAKE_PREFIX_PATH=$PREFIX"
               "-DCUDAToolkit_ROOT=$(dirname "$(dirname "$(command -v nvcc)")")")
  export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-8.0;9.0}
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${EXTRA_ARGS[@]}" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/gmlp"
