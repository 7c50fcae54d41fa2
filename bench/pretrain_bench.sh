#!/usr/bin/env bash
# Pretraining benchmark: LibTorch trainer step (pretrain_bench) vs PyTorch eager
# (pretrain_reference.py) for each encoder at two CPU presets, fp32 and bf16, interleaved over
# ROUNDS rounds (the machine is noisy); then weak scaling, 2 ranks x 1 thread vs 1 rank x 1
# thread at the same per-rank batch. Prints a Markdown table of medians; raw JSON lines go to
# $OUT (default /tmp/gmlp_pretrain_bench.jsonl).
#
# PyTorch runs twice per pair: as users run it (glibc's default malloc, which on this VM hands
# every large freed buffer back to the kernel and page-faults it in again next step), and with
# GLIBC_TUNABLES giving it the same allocator behaviour gmlp sets for itself through mallopt
# (common/process.h). The second is the engine-to-engine comparison.
#
# Weak scaling also runs two independent 1-rank processes at once: what the machine's shared
# memory bandwidth and caches leave of two cores when nothing is communicated (the ceiling of
# the 2-rank run), so the efficiency splits into contention and communication.
#
# With PyTorch 2.11 at $PY211 (default: the venv of `scripts/setup.sh --cuda`), each pair also
# runs PyTorch 2.11 eager and torch.compile (inductor, CPU), both with gmlp's malloc setting;
# with a 2.11 build at $BUILD211 (default build-cuda/, which runs on CPU too), gmlp built
# against 2.11 as well. Every ratio is a median of per-round ratios.
#
#   BUILD_DIR=build ROUNDS=3 STEPS=10 bash bench/pretrain_bench.sh
#   PRECISIONS=fp32 bash bench/pretrain_bench.sh          # one precision (default: auto)
#   ONLY=scaling ROUNDS=5 bash bench/pretrain_bench.sh   # weak scaling alone
#   ONLY=pairs PRECISIONS=bf16 bash bench/pretrain_bench.sh   # the engine table alone
#   ONLY=pairs ARCHS="gmlp amlp" PEERS=pt2.11 bash bench/pretrain_bench.sh   # fewer rows/peers
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-10}
THREADS=${THREADS:-2}
SCALING_STEPS=${SCALING_STEPS:-20}  # a 2-rank step is ~0.25 s: fewer steps are mostly noise
ONLY=${ONLY:-all}  # all | pairs (the engine table) | scaling
ARCHS=${ARCHS:-gmlp amlp transformer}
SIZES=${SIZES:-tiny small}
PEERS=${PEERS:-pt1.13 pt2.11 pt2.11-compile}  # which PyTorch runs each pair includes
# Precisions: "fp32 bf16", or auto = bf16 only where the CPU has it natively (avx512_bf16 or
# amx_bf16): elsewhere bf16 matmuls run 20-90x slower than fp32 and a round takes hours.
PRECISIONS=${PRECISIONS:-auto}
if [[ $PRECISIONS == auto ]]; then
  if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
    PRECISIONS="fp32 bf16"
  else
    PRECISIONS="fp32"
    echo "pretrain_bench: no native bf16 on this CPU: fp32 only (PRECISIONS='fp32 bf16' to force)" >&2
  fi
fi
OUT=${OUT:-/tmp/gmlp_pretrain_bench.jsonl}
BENCH="$BUILD_DIR/pretrain_bench"
PY211=${PY211:-/var/cache/gmlp/torch-2.11.0/bin/python}
BENCH211=${BUILD211:-build-cuda}/pretrain_bench
REF="bench/pretrain_reference.py"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: > "$OUT"

run_pair() {  # preset vocab bf16(0|1)
  local preset=$1 vocab=$2 bf16=$3 flag="" pyflag=""
  if [[ $bf16 == 1 ]]; then flag="--bf16"; pyflag="--bf16"; fi
  "$BENCH" --preset="$preset" --vocab="$vocab" --steps="$STEPS" --threads="$THREADS" $flag \
    --config_out="$TMP/$preset.json" | sed "s/^{/{\"round\":$r,/" >> "$OUT"
  if [[ " $PEERS " == *" pt1.13 "* ]]; then
    /usr/bin/python3 "$REF" --config "$TMP/$preset.json" --steps "$STEPS" --threads "$THREADS" $pyflag \
      | sed "s/^{/{\"round\":$r,\"preset\":\"$preset\",\"malloc\":\"default\",/" >> "$OUT"
    GLIBC_TUNABLES=$SAME_MALLOC \
      /usr/bin/python3 "$REF" --config "$TMP/$preset.json" --steps "$STEPS" --threads "$THREADS" $pyflag \
      | sed "s/^{/{\"round\":$r,\"preset\":\"$preset\",\"malloc\":\"same\",/" >> "$OUT"
  fi
  if [[ -x $PY211 ]]; then
    for compile in "" --compile; do
      [[ " $PEERS " == *" pt2.11${compile:+-compile} "* ]] || continue
      GLIBC_TUNABLES=$SAME_MALLOC \
        "$PY211" "$REF" --config "$TMP/$preset.json" --steps "$STEPS" --threads "$THREADS" $pyflag \
        $compile 2>/dev/null | sed "s/^{/{\"round\":$r,\"preset\":\"$preset\",\"malloc\":\"same\",/" >> "$OUT"
    done
  fi
  if [[ -x $BENCH211 ]]; then
    "$BENCH211" --preset="$preset" --vocab="$vocab" --steps="$STEPS" --threads="$THREADS" $flag \
      | sed "s/^{/{\"round\":$r,\"torch\":\"2.11\",/; s/\"impl\":\"libtorch\"/\"impl\":\"libtorch-2.11\"/" >> "$OUT"
  fi
}
# gmlp's mallopt (common/process.h): no mmap below 1 GiB, no trimming below 1 GiB.
SAME_MALLOC=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824

for r in $(seq 1 "$ROUNDS"); do
  for precision in $PRECISIONS; do
    [[ $ONLY == scaling ]] && break
    bf16=0
    [[ $precision == bf16 ]] && bf16=1
    for arch in $ARCHS; do
      for size in $SIZES; do
        vocab=8192
        [[ $size == small ]] && vocab=16384
        run_pair "$arch-$size" "$vocab" "$bf16"
      done
    done
  done
  [[ $ONLY == pairs ]] && continue
  # Weak scaling: same per-rank batch, 1 thread per rank.
  "$BENCH" --preset=gmlp-tiny --steps="$SCALING_STEPS" --threads=1 --batch=16 \
    | sed "s/^{/{\"round\":$r,\"scaling\":1,/" >> "$OUT"
  for copy in 0 1; do  # two independent single-rank runs at once
    "$BENCH" --preset=gmlp-tiny --steps="$SCALING_STEPS" --threads=1 --batch=16 \
      | sed "s/^{/{\"round\":$r,\"scaling\":0,\"copy\":$copy,/" >> "$OUT" &
  done
  wait
  port=$((29500 + RANDOM % 1000))
  for rank in 0 1; do
    RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      "$BENCH" --preset=gmlp-tiny --steps="$SCALING_STEPS" --threads=1 --batch=16 \
      | sed "s/^{/{\"round\":$r,\"scaling\":2,/" >> "$OUT" &
  done
  wait
done

/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(xs): return statistics.median(xs) if xs else float("nan")
def peer(r):
    """A row's engine: gmlp-1.13, gmlp-2.11, pt1.13 (default|same malloc), pt2.11, pt2.11-compile."""
    if r["impl"] == "libtorch": return "gmlp-1.13"
    if r["impl"] == "libtorch-2.11": return "gmlp-2.11"
    v = r.get("torch", "1.13")[:4]
    if v.startswith("1.13"): return f"pt1.13-{r.get('malloc')}"
    return "pt" + v + ("-compile" if r["impl"] == "pytorch-compile" else "")
cols = [("gmlp-1.13", "pt1.13-default"), ("gmlp-1.13", "pt1.13-same"), ("gmlp-1.13", "pt2.11"),
        ("gmlp-1.13", "pt2.11-compile"), ("gmlp-2.11", "pt2.11"), ("gmlp-2.11", "pt2.11-compile")]
print("| preset | precision | gmlp 1.13 tok/s | MFU | gmlp 2.11 tok/s | MFU | "
      + " | ".join(f"{a} / {b}" for a, b in cols) + " |")
print("|---|---|" + "---|" * (4 + len(cols)))
keys = []
for r in rows:
    if "scaling" in r: continue
    k = (r["preset"], r["bf16"])
    if k not in keys: keys.append(k)
for preset, bf16 in keys:
    by = {}  # engine -> round -> row
    for r in rows:
        if r.get("preset") == preset and r["bf16"] == bf16 and "scaling" not in r:
            by.setdefault(peer(r), {})[r["round"]] = r
    def tps(e):
        return med([x["tokens_per_s"] for x in by.get(e, {}).values()])
    def mfu(e):
        xs = list(by.get(e, {}).values())
        return med([x["flops_per_token"] * x["tokens_per_s"] / x["peak_gflops"] / 1e9 for x in xs])
    def ratio(a, b):  # median of the per-round ratios
        rounds = sorted(set(by.get(a, {})) & set(by.get(b, {})))
        if not rounds: return "n/a"
        return f"{med([by[a][i]['tokens_per_s'] / by[b][i]['tokens_per_s'] for i in rounds]):.2f}x"
    print(f"| {preset} | {'bf16' if bf16 else 'fp32'} | {tps('gmlp-1.13'):.0f} | {mfu('gmlp-1.13'):.2f} | "
          f"{tps('gmlp-2.11'):.0f} | {mfu('gmlp-2.11'):.2f} | "
          + " | ".join(ratio(a, b) for a, b in cols) + " |")
one = {r["round"]: r for r in rows if r.get("scaling") == 1}
two = {r["round"]: r for r in rows if r.get("scaling") == 2}
pair = {}  # round -> the slower of the two independent copies (the pace a 2-rank job would keep)
for r in rows:
    if r.get("scaling") == 0:
        pair[r["round"]] = min(pair.get(r["round"], float("inf")), r["tokens_per_s"])
rounds = sorted(set(one) & set(two) & set(pair))
def show(name, xs):
    print(f"{name}: median {med(xs):.2f} (rounds: {', '.join(f'{x:.2f}' for x in xs)})")
if rounds:
    print("\nweak scaling (gmlp-tiny, 16 seq/rank, 1 thread/rank)")
    show("- 2 ranks vs 1 rank (efficiency)", [two[i]["tokens_per_s"] / (2 * one[i]["tokens_per_s"]) for i in rounds])
    show("- 2 independent copies vs 1 (contention ceiling)", [pair[i] / one[i]["tokens_per_s"] for i in rounds])
    show("- 2 ranks vs 2 independent copies (communication)", [two[i]["tokens_per_s"] / (2 * pair[i]) for i in rounds])
PY
