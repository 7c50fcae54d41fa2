// `gmlp prepare`: raw text -> binary shards + manifest.json (see data/prepare.h and
// data/README.md).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "data/prepare.h"

namespace {
const gmlp::data::PrepareOptions kDefaults;
}  // namespace

ABSL_DECLARE_FLAG(std::string, input);      // cli/shared_flags.cc
ABSL_DECLARE_FLAG(std::string, tokenizer);  // cli/shared_flags.cc
ABSL_DECLARE_FLAG(std::string, output);     // cli/shared_flags.cc
ABSL_DECLARE_FLAG(int64_t, seq_len);        // cli/shared_flags.cc
ABSL_FLAG(int, workers, kDefaults.workers, "Tokenizing threads; 0 = all cores.");
ABSL_FLAG(double, valid_fraction, kDefaults.valid_fraction,
          "Fraction of documents held out as the validation split.");
ABSL_DECLARE_FLAG(uint64_t, seed);  // cli/shared_flags.cc
ABSL_FLAG(int64_t, shard_input_bytes, kDefaults.shard_input_bytes,
          "Bytes of text per block; each block becomes one train (and one valid) shard.");
ABSL_FLAG(std::string, part, kDefaults.part,
          "i/N: this process writes part i of N disjoint parts (e.g. a Slurm array); the last "
          "part to finish merges the manifests.");
ABSL_FLAG(bool, merge, false,
          "Only merge the part manifests in --output into manifest.json, then exit.");
ABSL_DECLARE_FLAG(bool, strict_utf8);  // cli/shared_flags.cc
ABSL_FLAG(int64_t, max_piece_bytes, kDefaults.max_piece_bytes,
          "Longer lines are cut into pieces of at most this many bytes (bounded memory).");
ABSL_FLAG(bool, progress, kDefaults.progress, "Log progress (MB/s) to stderr.");

namespace gmlp::cli {

int PrepareMain(int argc, char** argv) {
  // Shared flags (cli/shared_flags.cc) take this subcommand's defaults.
  absl::SetFlag(&FLAGS_input, "../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz");
  absl::SetFlag(&FLAGS_output, "runs/shards");
  absl::SetFlag(&FLAGS_seed, kDefaults.seed);
  absl::SetFlag(&FLAGS_seq_len, kDefaults.seq_len);
  absl::SetFlag(&FLAGS_strict_utf8, kDefaults.strict_utf8);
  absl::SetFlag(&FLAGS_tokenizer, "runs/tokenizer/spm.model");
  ParseSubcommandFlags(
      argc, argv,
      {"prepare_main.cc", {"input", "output", "seed", "seq_len", "strict_utf8", "tokenizer"}},
      "gmlp prepare --input=<files or globs> --tokenizer=spm.model --output=<dir> [flags]\n\n"
      "Tokenizes raw text, packs it into [CLS] ... [SEP] ... sequences of --seq_len ids and "
      "writes checksummed binary shards plus manifest.json, holding out --valid_fraction of the "
      "documents for validation. Output is identical whatever --workers; re-running skips "
      "finished shards.");
  const std::string output = absl::GetFlag(FLAGS_output);
  if (absl::GetFlag(FLAGS_merge)) {
    absl::StatusOr<data::Manifest> merged = data::MergeParts(output);
    if (!merged.ok()) return Fail(argv[0], merged.status());
    const data::SplitTotals train = merged->Totals("train");
    const data::SplitTotals valid = merged->Totals("valid");
    std::printf("merged: %lld train + %lld valid sequences in %zu shards -> %s/manifest.json\n",
                static_cast<long long>(train.sequences), static_cast<long long>(valid.sequences),
                merged->shards.size(), output.c_str());
    return 0;
  }

  data::PrepareOptions options;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_input), ',', absl::SkipEmpty())) {
    options.input.emplace_back(s);
  }
  options.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  options.output = output;
  options.seq_len = absl::GetFlag(FLAGS_seq_len);
  options.workers = absl::GetFlag(FLAGS_workers);
  options.valid_fraction = absl::GetFlag(FLAGS_valid_fraction);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.shard_input_bytes = absl::GetFlag(FLAGS_shard_input_bytes);
  options.part = absl::GetFlag(FLAGS_part);
  options.strict_utf8 = absl::GetFlag(FLAGS_strict_utf8);
  options.max_piece_bytes = absl::GetFlag(FLAGS_max_piece_bytes);
  options.progress = absl::GetFlag(FLAGS_progress);

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
