#!/usr/bin/env bash
# Runs every test (GoogleTest through ctest) against the build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cd "$BUILD_DIR"
ctest --output-on-failure -j "${CTEST_JOBS:-1}" "$@"
