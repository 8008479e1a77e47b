#!/usr/bin/env bash
# Installs what kfuse needs on a fresh Debian 12 machine and builds it into
# build/. Safe to run again: installed packages and a configured build are
# reused.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/install-packages.sh
install_packages setup cmake ninja-build g++ libfmt-dev libgtest-dev zlib1g-dev \
  python3 libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/nvrtc.h" ]; then
  echo "setup: error: the CUDA 13 toolkit (NVRTC headers and library) was not found at $cuda;" \
       "set CUDA_HOME to its root" >&2
  exit 1
fi

if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCUDAToolkit_ROOT="$cuda" >/dev/null
fi
ninja -C build -j"$(nproc)"
