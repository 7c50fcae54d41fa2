#!/usr/bin/env bash
# How much capping the kernels' instruction sets to AVX2 slows fp32 pretraining on this machine,
# beside uncapped fp32 and bf16: gmlp-tiny pretraining steps (32 x 128 tokens), the three modes
# alternated over ROUNDS rounds (the machine is noisy); prints tokens/s of steps 21-40 and
# 41-60 of each run. The caps are the ones results/2026-12-07-default-avx2-capped ran under
# (OPENBLAS_CORETYPE, ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA); gmlp's own vectorized kernels
# pick their clone from the CPU's flags and are not capped.
#
#   bash bench/isa_caps.sh SHARD_DIR [GMLP]      # GMLP defaults to build/gmlp
set -euo pipefail
if [[ $# -lt 1 ]]; then
  echo "usage: bash bench/isa_caps.sh SHARD_DIR [GMLP]  (shards of seq_len 128: gmlp prepare)" >&2
  exit 2
fi
shards=$1 gmlp=${2:-build/gmlp} rounds=${ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for round in $(seq "$rounds"); do
  for mode in capped fp32 bf16; do
    caps=() bf16=false
    [[ $mode == capped ]] && caps=(OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2)
    [[ $mode == bf16 ]] && bf16=true
    rm -rf "$out/run"
    rates=$(env "${caps[@]}" "$gmlp" pretrain --preset=gmlp-tiny --shard_dir="$shards" \
      --out_dir="$out/run" --steps=60 --global_batch=32 --micro_batch=32 --warmup_steps=10 \
      --log_every=20 --eval_every=100000 --checkpoint_every=100000 --bf16=$bf16 2>&1 |
      awk '$1 == "step" && ($2 ~ /^(40|60)\//) {printf "%s ", $9}')
    echo "round $round  $mode  tokens/s (steps 21-40, 41-60): $rates"
  done
done
