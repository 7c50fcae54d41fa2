#!/usr/bin/env bash
# Second part: SICK (the study's settings: 1,000 train pairs, epoch chosen on TRIAL, TEST reported)
# at lr 3e-3 and 1e-2, SST-2 at 1e-2.
set -euo pipefail
cd /var/cache/gmlp/lrsweep
G=/var/cache/gmlp/calib/gmlp-now
R=/var/cache/gmlp/runs/default-budget-2026-12-07/cells
for lr in 3e-3 1e-2; do
  for cell in gmlp-tiny transformer-tiny-alibi amlp-tiny; do
    out=$cell-SICK-lr$lr
    [[ -f $out/results.json ]] && continue
    date -u
    $G finetune --init=$R/$cell/pretrain --task_spec=sick.json --data_root=/work/shared/data \
      --max_train_examples=1000 --epochs=3 --lr=$lr --seeds=1,2,3 \
      --bf16=true --threads=1 --save_model=false --eval_splits=test --output=$out > $out.log 2>&1
  done
done
for cell in gmlp-tiny transformer-tiny-alibi amlp-tiny; do
  out=$cell-lr1e-2
  [[ -f $out/results.json ]] && continue
  date -u
  $G finetune --init=$R/$cell/pretrain --task=SST-2 --data_root=/work/shared/data \
    --max_train_examples=1000 --select_from_train=1000 --epochs=3 --lr=1e-2 --seeds=1,2,3 \
    --bf16=true --threads=1 --save_model=false --output=$out > $out.log 2>&1
done
date -u
