#!/usr/bin/env bash
# Installs what is missing (Debian packages only), then configures and builds gmlp in Release.
# Leaves the executable at build/gmlp. Safe to re-run: installs and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git xz-utils
  libtorch-dev libgloo-dev libsentencepiece-dev sentencepiece libabsl-dev libgtest-dev
  nlohmann-json3-dev libopenblas0-openmp zlib1g-dev liblzma-dev
  python3-torch gnuplot-nox
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/gmlp"
