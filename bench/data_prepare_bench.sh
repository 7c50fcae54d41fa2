#!/usr/bin/env bash
# Benchmarks `gmlp prepare` (through bench/data_prepare_bench, the same library code) on the whole
# shared Wikipedia extract, side by side in one run with `spm_encode` of the same model on the same
# text, and measures peak memory on the extract, on the extract concatenated 4 times, and on one
# ~330 MB line. Prints MB/s, the ratio (target >= 1.5x) and max RSS.
#
#   bench/data_prepare_bench.sh [build_dir]       (default: build)
#   MODEL=path/to/spm.model bench/data_prepare_bench.sh   (skip training a vocab-8192 model)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/data_prepare_bench
XZ=$ROOT/../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz
WORKERS=${WORKERS:-2}
[[ -x $BIN ]] || { echo "build it first: ninja -C $BUILD data_prepare_bench" >&2; exit 1; }
[[ -f $XZ ]] || { echo "$XZ not found" >&2; exit 1; }
WORK=$(mktemp -d /tmp/gmlp_prepare_bench_XXXXXX)
trap 'rm -rf "$WORK"' EXIT

now() { date +%s.%N; }
xz -dc "$XZ" > "$WORK/wiki.txt"
MB=$(python3 -c "import os; print(os.path.getsize('$WORK/wiki.txt') / 1e6)")

MODEL=${MODEL:-}
if [[ -z $MODEL ]]; then
  head -c 10000000 "$WORK/wiki.txt" > "$WORK/sample.txt"
  "$BIN" train "$WORK/sample.txt" "$WORK/spm" 8192 > "$WORK/train.log" 2>&1
  MODEL=$WORK/spm.model
fi

# Both report wall-clock MB/s and MB per CPU-second (user + sys): on a machine shared with other
# jobs the wall-clock ratio swings with the load, the per-CPU-second one much less.
run_spm() {
  /usr/bin/time -f "%e %U %S" -o "$WORK/spm_time.txt" \
    spm_encode --model="$MODEL" --output_format=id < "$WORK/wiki.txt" > /dev/null
  read -r wall user sys < "$WORK/spm_time.txt"
  python3 -c "print('%.2f %.2f' % ($MB / $wall, $MB / ($user + $sys)))"
}
# Prints the MB/s line of data_prepare_bench and leaves /usr/bin/time's report in $WORK/time.txt.
run_prepare() {
  rm -rf "$WORK/out"
  /usr/bin/time -v -o "$WORK/time.txt" "$BIN" prepare "$MODEL" "$WORK/out" "$WORKERS" "$@"
}
cpu_s() { awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$WORK/time.txt"; }
max_rss_mb() { awk '/Maximum resident set size/ {printf "%.0f", $6 / 1024}' "$WORK/time.txt"; }

echo "text: $XZ ($MB MB decompressed); model: $MODEL; workers: $WORKERS; $(nproc) cores;" \
     "load average $(cut -d' ' -f1-3 /proc/loadavg)"
best_spm=0; best_xz=0; best_txt=0; cpu_spm=0; cpu_xz=0
for round in 1 2; do
  read -r spm spm_cpu <<< "$(run_spm)"
  xz_line=$(run_prepare "$XZ"); xz_rss=$(max_rss_mb); xz_cpu=$(python3 -c "print('%.2f' % ($MB / $(cpu_s)))")
  txt_line=$(run_prepare "$WORK/wiki.txt"); txt_rss=$(max_rss_mb)
  xz_mbs=$(awk '{print $2}' <<< "$xz_line"); txt_mbs=$(awk '{print $2}' <<< "$txt_line")
  echo "round $round: spm_encode $spm MB/s ($spm_cpu MB/cpu-s) | prepare .xz $xz_mbs MB/s" \
       "($xz_cpu MB/cpu-s, max RSS $xz_rss MB) | prepare plain $txt_mbs MB/s (max RSS $txt_rss MB)"
  best_spm=$(python3 -c "print(max($best_spm, $spm))")
  best_xz=$(python3 -c "print(max($best_xz, $xz_mbs))")
  best_txt=$(python3 -c "print(max($best_txt, $txt_mbs))")
  cpu_spm=$(python3 -c "print(max($cpu_spm, $spm_cpu))")
  cpu_xz=$(python3 -c "print(max($cpu_xz, $xz_cpu))")
done
echo "prepare output: $xz_line"
python3 -c "print('best of 2: spm_encode %.2f MB/s; prepare .xz %.2f MB/s = %.2fx; prepare plain %.2f MB/s = %.2fx' % ($best_spm, $best_xz, $best_xz / $best_spm, $best_txt, $best_txt / $best_spm))"
python3 -c "print('per CPU-second: spm_encode %.2f MB, prepare .xz %.2f MB (%.2fx; 2 idle cores give about twice that in wall-clock terms)' % ($cpu_spm, $cpu_xz, $cpu_xz / $cpu_spm))"

for i in 1 2 3 4; do cat "$WORK/wiki.txt"; done > "$WORK/wiki4.txt"
line4=$(run_prepare "$WORK/wiki4.txt")
echo "extract x4 ($(python3 -c "print(4 * $MB)") MB): max RSS $(max_rss_mb) MB; $(awk '{print $2}' <<< "$line4") MB/s"
rm -f "$WORK/wiki4.txt"

# WikiExtractor's <doc> lines dropped first: a line starting with <doc would be skipped whole.
grep -v '^</\?doc' "$WORK/wiki.txt" | tr '\n' ' ' > "$WORK/flat.txt"
for i in 1 2 3 4 5; do cat "$WORK/flat.txt"; done > "$WORK/oneline.txt"
rm -f "$WORK/flat.txt"
line1=$(run_prepare "$WORK/oneline.txt")
echo "one line of $(python3 -c "import os; print(os.path.getsize('$WORK/oneline.txt') / 1e6)") MB: max RSS $(max_rss_mb) MB; $(awk '{print $2}' <<< "$line1") MB/s"
