#!/usr/bin/env bash
# Whole fp32 pretraining steps (bench/pretrain_bench) of the tree before the kernel layer
# (502e987, kernels inside model/) against this tree's `--kernels=auto`, on the same machine in
# one run: BEFORE is a build directory of 502e987 (git worktree add DIR 502e987; cmake; ninja
# pretrain_bench). Rounds and presets interleaved; one JSON line per run, tagged with its tree.
#   [ROUNDS=3] bash bench/runs/2026-12-07-kernel-move-before-after.sh BEFORE_BUILD_DIR OUT.jsonl
set -euo pipefail
before=$(realpath "$1")
out=$(realpath "$2")
cd "$(dirname "$0")/../.."
tag() {
  python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r.update(tree='$1', round=$2); print(json.dumps(r))"
}
for round in $(seq 1 "${ROUNDS:-3}"); do
  for preset in gmlp-tiny amlp-tiny transformer-tiny mixer-tiny; do
    "$before/pretrain_bench" --preset=$preset --steps=10 --warmup=3 --threads=2 2>/dev/null |
      tail -1 | tag before $round >> "$out"
    build/pretrain_bench --preset=$preset --kernels=auto --steps=10 --warmup=3 --threads=2 \
      2>/dev/null | tail -1 | tag after $round >> "$out"
  done
done
