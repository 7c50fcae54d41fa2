#!/usr/bin/env bash
# The Python side: one virtual environment outside the tree with PyPI's torch==2.11.0 (the
# LibTorch `scripts/setup.sh --cuda` builds against, and its torchrun), the readers that prove
# gmlp's outputs are what other tools expect (safetensors, transformers, tensorboard), and gmlp's
# own package (python/, the PyTorch twin). Safe to re-run: installs only what is missing; python/
# is reinstalled every time (it is small and may have changed).
#
#   bash scripts/python_env.sh            prints the environment's directory last
#
# Environment: GMLP_TORCH_VENV (default /var/cache/gmlp/torch-2.11.0, so a machine that has it does
# not download torch's 2.7 GB again).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/packages.sh
install_missing_packages python3-venv

TORCH_VERSION=2.11.0
# Pinned: the versions the tests were written against (PyPI, 2026-12). sentencepiece: gmlp.Tokenizer
# (python/). wheel: `pip install --no-build-isolation ./python` builds with the venv's setuptools
# 65.5, whose bdist_wheel comes from wheel <= 0.44 (0.45 on defer to setuptools >= 70.1).
# tensorboard: its EventAccumulator reads gmlp's event files (tests/tensorboard_test.cc).
READERS=(safetensors==0.8.0 transformers==5.25.0 sentencepiece==0.2.3 wheel==0.44.0
         tensorboard==2.21.0)
VENV=${GMLP_TORCH_VENV:-/var/cache/gmlp/torch-$TORCH_VERSION}
PIP=("$VENV/bin/pip" install -q --disable-pip-version-check)

have=$("$VENV/bin/python" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [[ $have != "$TORCH_VERSION"+* && $have != "$TORCH_VERSION" ]]; then
  echo "python_env: installing torch==$TORCH_VERSION into $VENV (about 2.7 GB, once per machine)" >&2
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV"
  "${PIP[@]}" "torch==$TORCH_VERSION"
fi
missing=()
for req in "${READERS[@]}"; do
  [[ $("$VENV/bin/pip" show "${req%%==*}" 2>/dev/null | sed -n 's/^Version: //p') == "${req##*==}" ]] ||
    missing+=("$req")
done
if ((${#missing[@]})); then
  echo "python_env: installing ${missing[*]} into $VENV" >&2
  "${PIP[@]}" "${missing[@]}"
fi
if [[ -f python/pyproject.toml ]]; then
  # The user's command, `pip install ./python`, without re-resolving torch and safetensors.
  "${PIP[@]}" --no-deps --no-build-isolation --force-reinstall ./python >&2
fi
echo "$VENV"
