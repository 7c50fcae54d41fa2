#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (Debian's clang, AddressSanitizer and
# UndefinedBehaviorSanitizer; installs clang and its runtime when missing) in build-fuzz/ and runs
# each for FUZZ_SECONDS (default 30) from its committed seed corpus. New inputs libFuzzer finds go
# to a scratch copy, never into the tree. Any crash, leak, sanitizer report or hang (an input
# over 10 s) fails the script and leaves the input in build-fuzz/findings/<target>/.
#
#   bash scripts/fuzz.sh                 every target, 30 s each
#   FUZZ_SECONDS=300 FUZZ_SEED=0 bash scripts/fuzz.sh manifest shard
#                                        longer, chosen targets, a random seed (CI uses seed 1,
#                                        so its runs explore the same inputs in the same order)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-30}
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
  if build-fuzz/"${t}"_fuzz "$scratch/$t" -max_total_time="$SECONDS_EACH" -seed="${FUZZ_SEED:-1}" -timeout=10 \
       -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/findings/$t/" >"$log" 2>&1; then
    echo "fuzz: $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs in ${SECONDS_EACH} s, no finding"
    passed=$((passed + 1))
  else
    echo "fuzz: $t: FINDING (input and report in build-fuzz/findings/$t/):"
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -8
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
