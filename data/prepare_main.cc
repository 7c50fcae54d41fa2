// `gmlp prepare`: raw text -> binary shards + manifest.json (see data/prepare.h and
// data/README.md).
#include <cstdio>
#include <string>
#include <vector>

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
  flags.AddFields(options);
  flags.Add("merge", &merge,
            "Only merge the part manifests in --output into manifest.json, then exit.");
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
