#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (Debian's clang, AddressSanitizer and
# UndefinedBehaviorSanitizer; installs clang and its runtime when missing) in build-fuzz/ and runs
# each for FUZZ_RUNS inputs (default 200000) from its committed seed corpus, with libFuzzer's seed
# FUZZ_SEED (default 1). A count, not a time: a fixed seed and count try the same inputs in the
# same order on every machine, so a finding in CI is found again here, however fast either is (a
# 30 s budget let a faster CI machine reach a crash that the runs here had stopped short of).
# FUZZ_SECONDS (default 600) caps each target's time and says so when it stops it. New inputs
# libFuzzer finds go to a scratch copy, never into the tree. Any crash, leak, sanitizer report or
# hang (an input over 10 s) fails the script and leaves the input in build-fuzz/findings/<target>/.
#
#   bash scripts/fuzz.sh                 every target, 200000 inputs each
#   FUZZ_RUNS=2000000 FUZZ_SEED=0 bash scripts/fuzz.sh manifest shard
#                                        more inputs, chosen targets, a random seed
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS_EACH=${FUZZ_RUNS:-200000}
SECONDS_CAP=${FUZZ_SECONDS:-600}
source scripts/packages.sh
install_missing_packages clang libclang-rt-14-dev libzstd-dev
cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null
if ! cmake --build build-fuzz -j "$(nproc)" >build-fuzz/build.log 2>&1; then
  grep -E "error|Error" -A4 build-fuzz/build.log | head -40
  echo "fuzz: the fuzz targets do not build (build-fuzz/build.log)" >&2
  exit 1
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for dir in tests/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi
scratch=$(mktemp -d /tmp/gmlp_fuzz_corpus_XXXXXX)
trap 'rm -rf "$scratch"' EXIT
passed=0 failed=0
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t" "build-fuzz/findings/$t"
  cp tests/fuzz/corpus/"$t"/* "$scratch/$t/"
  log=build-fuzz/findings/$t/log.txt
  start=$SECONDS
  if build-fuzz/"${t}"_fuzz "$scratch/$t" -runs="$RUNS_EACH" -max_total_time="$SECONDS_CAP" \
       -seed="${FUZZ_SEED:-1}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/findings/$t/" >"$log" 2>&1; then
    ran=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
    capped=""
    if ((ran < RUNS_EACH)); then capped=" (stopped by the ${SECONDS_CAP} s cap, short of $RUNS_EACH)"; fi
    echo "fuzz: $t: $ran inputs in $((SECONDS - start)) s$capped, no finding"
    passed=$((passed + 1))
  else
    echo "fuzz: $t: FINDING (input and report in build-fuzz/findings/$t/):"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -8
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
