// `gmlp prepare`: raw text -> binary shards + manifest.json (see data/prepare.h and
// data/README.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "data/prepare.h"

namespace gmlp::cli {

int PrepareMain(int argc, char** argv) {
  data::PrepareOptions options;
  options.input = {"../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz"};
  options.tokenizer = "runs/tokenizer/spm.model";
  options.output = "runs/shards";
  bool merge = false;
  FlagSet flags(
      argv[0],
      "gmlp prepare --input=<files or globs> --tokenizer=spm.model --output=<dir> [flags]\n\n"
      "Tokenizes raw text, packs it into [CLS] ... [SEP] ... sequences of --seq_len ids and "
      "writes checksummed binary shards plus manifest.json, holding out --valid_fraction of the "
      "documents for validation. Output is identical whatever --workers; re-running skips "
      "finished shards.");
  flags.Add("input", &options.input, "Text files or globs, comma-separated (plain, .gz, .xz).");
  flags.Add("tokenizer", &options.tokenizer,
            "SentencePiece .model file written by `gmlp tokenizer train`.");
  flags.Add("output", &options.output, "Shard directory (created).");
  flags.Add("seq_len", &options.seq_len, "Sequence length in ids, [CLS] included.");
  flags.Add("workers", &options.workers, "Tokenizing threads; 0 = all cores.");
  flags.Add("valid_fraction", &options.valid_fraction,
            "Fraction of documents held out as the validation split.");
  flags.Add("seed", &options.seed, "Random seed (the validation split).");
  flags.Add("shard_input_bytes", &options.shard_input_bytes,
            "Bytes of text per block; each block becomes one train (and one valid) shard.");
  flags.Add("part", &options.part,
            "i/N: this process writes part i of N disjoint parts (e.g. a Slurm array); the last "
            "part to finish merges the manifests.");
  flags.Add("merge", &merge,
            "Only merge the part manifests in --output into manifest.json, then exit.");
  flags.Add("strict_utf8", &options.strict_utf8,
            "Stop at the first line of invalid UTF-8 (default: count and skip such lines).");
  flags.Add("max_piece_bytes", &options.max_piece_bytes,
            "Longer lines are cut into pieces of at most this many bytes (bounded memory).");
  flags.Add("progress", &options.progress, "Log progress (MB/s) to stderr.");
  ParseSubcommandFlags(flags, argc, argv);
  const std::string& output = options.output;
  if (merge) {
    absl::StatusOr<data::Manifest> merged = data::MergeParts(output);
    if (!merged.ok()) return Fail(argv[0], merged.status());
    const data::SplitTotals train = merged->Totals("train");
    const data::SplitTotals valid = merged->Totals("valid");
    std::printf("merged: %lld train + %lld valid sequences in %zu shards -> %s/manifest.json\n",
                static_cast<long long>(train.sequences), static_cast<long long>(valid.sequences),
                merged->shards.size(), output.c_str());
    return 0;
  }

  absl::StatusOr<data::PrepareResult> result = data::Prepare(options);
  if (!result.ok()) return Fail(argv[0], result.status());
  const data::Manifest& m = result->manifest;
  const data::SplitTotals train = m.Totals("train");
  const data::SplitTotals valid = m.Totals("valid");
  std::printf(
      "%s: %lld documents -> %lld train sequences (%lld shards) + %lld valid sequences (%lld "
      "shards) of %lld ids; %lld blocks written, %lld already complete; %.1f MB of text in %.1f "
      "s\n",
      result->manifest_path.c_str(), static_cast<long long>(m.documents),
      static_cast<long long>(train.sequences), static_cast<long long>(train.shards),
      static_cast<long long>(valid.sequences), static_cast<long long>(valid.shards),
      static_cast<long long>(m.seq_len), static_cast<long long>(result->blocks_written),
      static_cast<long long>(result->blocks_skipped), result->text_bytes / 1e6, result->seconds);
  if (result->merged && valid.sequences == 0 && options.valid_fraction > 0) {
    std::fprintf(stderr,
                 "gmlp prepare: warning: no document fell in the validation split; raise "
                 "--valid_fraction (now %g) to evaluate during pretraining\n",
                 options.valid_fraction);
  }
  if (!result->merged) {
    std::printf(
        "part %s done; manifest.json is written when the last part finishes (or run "
        "`gmlp prepare --merge --output=%s`)\n",
        options.part.c_str(), output.c_str());
  }
  return 0;
}

}  // namespace gmlp::cli
