#!/usr/bin/env bash
# Packs what scripts/gpu_check.sh runs on a GPU machine that has torch 2.11.0+cu130 but no
# compiler toolchain for gmlp and no network: the CUDA build's binaries (built here by
# `scripts/setup.sh --cuda`) and the Debian shared libraries they need that such a machine lacks
# (Abseil, SentencePiece, ...). LibTorch, CUDA and NCCL are not packed: the machine's torch
# provides them. Writes .gpu-bundle/ (about 40 MB; the device tool carries at most 64 MiB).
#
#   bash scripts/gpu_bundle.sh        # then carry .gpu-bundle to the GPU machine
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-cuda}
BUNDLE=.gpu-bundle
[[ -x $BUILD_DIR/gmlp ]] || BUILD_DIR=$BUILD_DIR bash scripts/setup.sh --cuda
grep -q "GMLP_WITH_CUDA" "$BUILD_DIR/build.ninja" ||
  { echo "gpu_bundle: $BUILD_DIR is not a CUDA build (scripts/setup.sh --cuda)" >&2; exit 1; }
cmake --build "$BUILD_DIR" --target gmlp gpu_test pretrain_bench gmlp_spm_shim >/dev/null

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/lib"
BINS=(gmlp gpu_test pretrain_bench)
for b in "${BINS[@]}"; do strip -o "$BUNDLE/$b" "$BUILD_DIR/$b"; done
strip -o "$BUNDLE/libgmlp_spm_shim.so" "$BUILD_DIR/libgmlp_spm_shim.so"
# Every library the binaries load that is neither torch's (torch/lib, nvidia/*) nor the C and
# C++ runtime that any Linux machine has.
for f in "${BINS[@]/#/$BUILD_DIR/}" "$BUILD_DIR/libgmlp_spm_shim.so"; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(torch|nvidia)/|/lib(c|m|dl|rt|pthread|gcc_s|stdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" "$BUNDLE/lib/"; done
echo "gpu_bundle: $(du -sh "$BUNDLE" | cut -f1) in $BUNDLE ($(ls "$BUNDLE/lib" | wc -l) libraries)"
