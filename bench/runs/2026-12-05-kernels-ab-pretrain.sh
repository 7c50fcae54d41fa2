#!/usr/bin/env bash
# Whole pretraining steps (bench/pretrain_bench: trainer, loss, clipping, AdamW) under
# --kernels=auto and --kernels=aten, rounds interleaved; one JSON line per run.
set -euo pipefail
out=$(realpath "$1")
cd "$(dirname "$0")/../.."
for round in 1 2 3; do
  for preset in gmlp-tiny amlp-tiny transformer-tiny; do
    for bf16 in false true; do
      for kernels in auto aten; do
        build/pretrain_bench --preset=$preset --bf16=$bf16 --kernels=$kernels \
          --steps=10 --warmup=3 --threads=2 2>/dev/null | tail -1 | \
          python3 -c "import json,sys; r=json.loads(sys.stdin.read()); r['round']=$round; print(json.dumps(r))" >> "$out"
      done
    done
  done
done
