#!/usr/bin/env bash
# The GPU check: on a machine with one NVIDIA GPU, no network and torch 2.11.0+cu130 in its
# python3 (as on the GPU machines this project is tested on), it runs in about 8 minutes:
#   1. the GPU test suite (tests/gpu_test.cc: every encoder's forward and backward on CUDA
#      against CPU, a trainer step over NCCL, checkpoints crossing devices, bf16 autocast,
#      finetune and predict);
#   2. a pretraining benchmark at the paper's shapes (gmlp-base, amlp-base, transformer-base;
#      n = 128, vocab 30522, bf16) with the largest batch of 512/256/128 that fits: tokens/s and
#      MFU against a bf16 GEMM peak measured in the same process;
#   3. the same training step in PyTorch eager and under torch.compile from that python3, as
#      peers, at the same batch.
# It prints a Markdown table and writes every JSON line to $OUT/gpu_check.jsonl when OUT is set.
#
# What it runs comes from .gpu-bundle/ (made here by scripts/gpu_bundle.sh: the CUDA build's
# binaries and the Debian libraries they need; carry it), or from build-cuda/ when this machine
# built gmlp itself (scripts/setup.sh --cuda).
#
#   bash scripts/gpu_bundle.sh                      # on the build machine
#   bash scripts/gpu_check.sh                       # on the GPU machine
#   STEPS=30 PRESETS="gmlp-base" bash scripts/gpu_check.sh
#   DEVICE=cpu PRESETS=gmlp-tiny BATCHES=8 VOCAB=8192 STEPS=2 bash scripts/gpu_check.sh
#                                                   # the script's plumbing, on a CPU machine
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
STEPS=${STEPS:-20}
PRESETS=${PRESETS:-"gmlp-base amlp-base transformer-base"}
BATCHES=${BATCHES:-"512 256 128"}
VOCAB=${VOCAB:-30522}
COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-150}
DEVICE=${DEVICE:-cuda}
OUT_FILE=${OUT:-/tmp}/gpu_check.jsonl
: > "$OUT_FILE"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
say() { printf '\n== %s (%ds)\n' "$*" "$SECONDS"; }

if [[ -x .gpu-bundle/gmlp ]]; then
  BIN=.gpu-bundle
  TORCH_LIB=$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=$PWD/.gpu-bundle/lib:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
elif [[ -x build-cuda/gmlp ]]; then
  BIN=build-cuda
else
  echo "gpu_check: neither .gpu-bundle/ nor build-cuda/ found: run scripts/gpu_bundle.sh on the" \
       "build machine and carry .gpu-bundle, or scripts/setup.sh --cuda here" >&2
  exit 1
fi
export GMLP_SPM_SHIM=$PWD/$BIN/libgmlp_spm_shim.so

say "machine"
if [[ $DEVICE == cuda ]]; then
  nvidia-smi -L || { echo "gpu_check: no GPU (nvidia-smi failed)" >&2; exit 1; }
fi
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__,
  "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
status=0

say "GPU tests ($BIN/gpu_test)"
if ! "$BIN/gpu_test" --gtest_brief=1 2>&1 | tee "$TMP/gpu_test.log" | tail -n 40; then status=1; fi
# On a GPU nothing may be skipped; on a CPU (DEVICE=cpu) every test skips, naming why.
skipped_ok=$([[ $DEVICE == cpu ]] && echo 1 || echo 0)
grep -q "FAILED" "$TMP/gpu_test.log" && status=1
((skipped_ok)) || ! grep -q "SKIPPED" "$TMP/gpu_test.log" || status=1

say "pretraining benchmark: gmlp, PyTorch eager, torch.compile (bf16, n = 128, $STEPS steps)"
for preset in $PRESETS; do
  line=""
  for batch in $BATCHES; do  # the largest that fits: an out-of-memory run exits non-zero
    if line=$("$BIN/pretrain_bench" --preset="$preset" --vocab="$VOCAB" --seq_len=128 --bf16 \
                --batch="$batch" --steps="$STEPS" --threads="$(nproc)" \
                --config_out="$TMP/$preset.json" 2> "$TMP/$preset.err" | tail -n 1) &&
       [[ $line == "{"* ]]; then
      break
    fi
    line=""
  done
  if [[ -z $line ]]; then
    echo "$preset: gmlp failed at every batch size:"; tail -n 3 "$TMP/$preset.err"; status=1
    continue
  fi
  echo "$line" >> "$OUT_FILE"
  echo "$line"
  "$PY" bench/pretrain_reference.py --config "$TMP/$preset.json" --device "$DEVICE" --bf16 \
      --batch "$batch" --steps "$STEPS" >> "$OUT_FILE" 2> "$TMP/eager.err" ||
    { echo "$preset: PyTorch eager failed"; tail -n 3 "$TMP/eager.err"; }
  timeout "$COMPILE_TIMEOUT" "$PY" bench/pretrain_reference.py --config "$TMP/$preset.json" \
      --device "$DEVICE" --bf16 --compile --batch "$batch" --steps "$STEPS" >> "$OUT_FILE" \
      2> "$TMP/compile.err" ||
    { echo "$preset: torch.compile failed or took over ${COMPILE_TIMEOUT}s"; tail -n 3 "$TMP/compile.err"; }
  tail -n 2 "$OUT_FILE"
done

say "summary"
"$PY" - "$OUT_FILE" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
gmlp = {r["arch"]: r for r in rows if r["impl"] == "libtorch"}
print("| encoder | batch | gmlp tokens/s | MFU | PyTorch eager | torch.compile | gmlp / eager | gmlp / compile |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for arch, g in gmlp.items():
    peers = {r["impl"]: r["tokens_per_s"] for r in rows if r["impl"] != "libtorch" and r["arch"] == arch}
    eager, comp = peers.get("pytorch"), peers.get("pytorch-compile")
    f = lambda x: f"{x:,.0f}" if x else "n/a"
    ratio = lambda p: f"{g['tokens_per_s'] / p:.2f}" if p else "n/a"
    print(f"| {g['preset']} | {g['batch_per_rank']} | {f(g['tokens_per_s'])} | {g['mfu']:.2f} | "
          f"{f(eager)} | {f(comp)} | {ratio(eager)} | {ratio(comp)} |")
if gmlp:
    g = next(iter(gmlp.values()))
    print(f"\nbf16 GEMM peak measured by pretrain_bench: {g['peak_gflops'] / 1000:.0f} TFLOP/s")
PYEOF
say "done: status $status (0 = every GPU test passed and every gmlp benchmark ran)"
exit $status
