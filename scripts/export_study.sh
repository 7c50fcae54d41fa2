#!/usr/bin/env bash
# Copies what a `gmlp study` output folder needs to be read, committed, or resumed on another
# machine, without what its run re-creates or no longer needs: the report, the tables and plots,
# study.json, the tokenizer and the alignment probe (so a resumed run uses the same ones), every
# finished cell's cell.json, perplexity, learning curve and finetuning results with each seed's
# predictions. Left out: checkpoints, shards and the corpus extract (re-created from the corpus
# and the kept tokenizer; data/shards.md5 lets you check they came back the same), and cells
# that have not finished (a resumed run redoes them).
#
#   bash scripts/export_study.sh RUN_DIR DEST
#
# To resume elsewhere: copy DEST to a new output folder and re-run the study's command with
# --output=<that folder>; finished cells are reused ("done earlier, skipped"), an unfinished
# cell's pretraining starts over.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: bash scripts/export_study.sh RUN_DIR DEST" >&2
  exit 2
fi
src=$1 dest=$2
if [[ ! -f $src/study.json ]]; then
  echo "export_study: $src/study.json not found: RUN_DIR must be a gmlp study --output folder" >&2
  exit 1
fi
mkdir -p "$dest"
cd "$src"
{
  # The run's own outputs (absent until its first report) and settings.
  find . -maxdepth 1 -type f \( -name '*.md' -o -name '*.csv' -o -name '*.json' -o -name '*.png' \
    -o -name '*.svg' \)
  # Data the remaining cells must share with the finished ones.
  find ./data -maxdepth 1 -type f \( -name 'tokenizer.*' -o -name 'stages.json' \)
  [[ -d data/probe ]] && find ./data/probe -type f
  # Per finished cell (cell.json): the markers, the curve, and finetuning results with
  # predictions. An unfinished cell is left out whole: without its checkpoint its finished parts
  # could not be continued, so a resumed run redoes it.
  for done in cells/*/cell.json; do
    [[ -f $done ]] || continue
    find "./$(dirname "$done")" -type f \( -name 'cell.json' -o -name 'pretrain_done.json' \
      -o -path '*/pretrain/metrics.jsonl' -o -path '*/pretrain/config.json' \
      -o -path '*/ft/*/results.json' -o -path '*/ft/*/seconds.json' \
      -o -path '*/ft/*/predictions/seed-*/*' \)
  done
} | sort | while IFS= read -r f; do
  mkdir -p "$dest/$(dirname "$f")"
  cp -p "$f" "$dest/$f"
done
if compgen -G "data/shards/*.bin" >/dev/null; then
  (cd data/shards && md5sum -- *.bin) >"$dest/data/shards.md5"
fi
echo "export_study: $(find "$dest" -type f | wc -l) files, $(du -sh "$dest" | cut -f1) in $dest"
