#!/usr/bin/env bash
# Finetuning-lr check (noticed in issue 39): SST-2 from the 2026-12-07 default run's pretrained
# encoders, the study's finetuning settings (1,000 train examples, 1,000 held out from train for
# selection, 3 epochs, batch 32, bf16, seeds 1-3) at other peak lrs (the study used 1e-3).
set -euo pipefail
cd /var/cache/gmlp/lrsweep
G=/var/cache/gmlp/calib/gmlp-now
R=/var/cache/gmlp/runs/default-budget-2026-12-07/cells
for lr in 1e-4 3e-4 3e-3; do
  for cell in gmlp-tiny transformer-tiny-alibi amlp-tiny; do
    out=$cell-lr$lr
    [[ -f $out/results.json ]] && continue
    date -u
    $G finetune --init=$R/$cell/pretrain --task=SST-2 --data_root=/work/shared/data \
      --max_train_examples=1000 --select_from_train=1000 --epochs=3 --lr=$lr --seeds=1,2,3 \
      --bf16=true --threads=1 --save_model=false --output=$out > $out.log 2>&1
  done
done
date -u
