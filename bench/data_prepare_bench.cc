// The `gmlp prepare` pipeline (data::Prepare, the same code the subcommand runs) as a torch-free
// executable, so that bench/data_prepare_bench.sh can time it beside `spm_encode` and under
// /usr/bin/time -v whatever state the other stages' code is in.
//
//   data_prepare_bench train <text> <model_prefix> <vocab_size>
//   data_prepare_bench prepare <model> <output_dir> <workers> <inputs,comma-separated>
//                      [shard_input_bytes] [max_piece_bytes]
//
// `prepare` prints one line: "prepare_mb_per_s <MB/s> input_mb <MB> seconds <s> ...".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "data/prepare.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "train" && argc == 5) {
    gmlp::tokenizer::TrainOptions t;
    t.inputs = {argv[2]};
    t.model_prefix = argv[3];
    t.vocab_size = std::atoi(argv[4]);
    t.num_threads = 2;
    const absl::Status st = gmlp::tokenizer::Train(t);
    if (!st.ok()) {
      std::fprintf(stderr, "data_prepare_bench: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    return 0;
  }
  if (mode == "prepare" && argc >= 6) {
    gmlp::data::PrepareOptions o;
    o.tokenizer = argv[2];
    o.output = argv[3];
    o.workers = std::atoi(argv[4]);
    for (absl::string_view s : absl::StrSplit(argv[5], ',', absl::SkipEmpty())) {
      o.input.emplace_back(s);
    }
    if (argc > 6) o.shard_input_bytes = std::atoll(argv[6]);
    if (argc > 7) o.max_piece_bytes = std::atoll(argv[7]);
    o.progress = false;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<gmlp::data::PrepareResult> r = gmlp::data::Prepare(o);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.ok()) {
      std::fprintf(stderr, "data_prepare_bench: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    const double mb = r->manifest.input_bytes / 1e6;
    std::printf(
        "prepare_mb_per_s %.2f input_mb %.1f seconds %.2f train_sequences %lld valid_sequences "
        "%lld train_tokens %lld blocks %lld\n",
        mb / s, mb, s, static_cast<long long>(r->manifest.Totals("train").sequences),
        static_cast<long long>(r->manifest.Totals("valid").sequences),
        static_cast<long long>(r->manifest.Totals("train").tokens),
        static_cast<long long>(r->blocks_written + r->blocks_skipped));
    return 0;
  }
  std::fprintf(stderr,
               "usage: data_prepare_bench train <text> <model_prefix> <vocab_size>\n"
               "       data_prepare_bench prepare <model> <output_dir> <workers> <inputs> "
               "[shard_input_bytes] [max_piece_bytes]\n");
  return 1;
}
