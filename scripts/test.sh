#!/usr/bin/env bash
# Runs every test: the libFuzzer targets of the input parsers (scripts/fuzz.sh, 200,000 inputs
# each; they are torch-free, so only the default build runs them), then GoogleTest through ctest
# against the build in $BUILD_DIR (default build/). ctest's summary is the last thing printed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [[ $BUILD_DIR == build && ${GMLP_FUZZ:-1} != 0 ]]; then
  bash scripts/fuzz.sh
fi
# The Python side of the tests (torchrun, safetensors and transformers readers, python/): the torch
# 2.11 environment; the tests that need it find it there (or at $GMLP_TORCH_VENV).
bash scripts/python_env.sh >/dev/null
cd "$BUILD_DIR"
ctest --output-on-failure -j "${CTEST_JOBS:-1}" "$@"
