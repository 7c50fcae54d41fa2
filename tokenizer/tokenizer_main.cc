// `gmlp tokenizer train|encode`: train a SentencePiece model with gmlp's fixed special ids, or
// encode text with one (see tokenizer/README.md). Flags only; the work is in gmlp::tokenizer.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "tokenizer/encode_file.h"
#include "tokenizer/tokenizer.h"

namespace {
const gmlp::tokenizer::TrainOptions kTrainDefaults;
// The default corpus, relative to the repository root (where the README's commands run).
constexpr char kDefaultCorpus[] = "../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz";
}  // namespace

// Both actions.
ABSL_DECLARE_FLAG(std::string, input);  // cli/shared_flags.cc
// train
ABSL_FLAG(std::string, model_prefix, "runs/tokenizer/spm",
          "train: writes PREFIX.model and PREFIX.vocab (directories are created).");
ABSL_DECLARE_FLAG(int32_t, vocab_size);  // cli/shared_flags.cc
ABSL_FLAG(std::string, model_type, kTrainDefaults.model_type, "train: unigram or bpe.");
ABSL_FLAG(double, character_coverage, kTrainDefaults.character_coverage,
          "train: fraction of the corpus's characters the vocabulary covers; rarer characters "
          "become byte pieces (or [UNK] without --byte_fallback).");
ABSL_FLAG(bool, byte_fallback, kTrainDefaults.byte_fallback,
          "train: spell characters outside the vocabulary as UTF-8 byte pieces instead of [UNK].");
ABSL_FLAG(int64_t, input_sentence_size, kTrainDefaults.input_sentence_size,
          "train: train on a uniform random sample of at most this many sentences (lines); "
          "0 = all. Bounds the trainer's memory on large corpora.");
ABSL_FLAG(int32_t, max_sentence_length, kTrainDefaults.max_sentence_length,
          "train: longer lines are cut at whitespace into sentences of at most this many bytes.");
ABSL_DECLARE_FLAG(uint64_t, seed);     // cli/shared_flags.cc
ABSL_DECLARE_FLAG(bool, strict_utf8);  // cli/shared_flags.cc
ABSL_FLAG(bool, verbose, kTrainDefaults.verbose, "train: show SentencePiece's training log.");
// encode
ABSL_DECLARE_FLAG(std::string, model);   // cli/shared_flags.cc
ABSL_DECLARE_FLAG(std::string, output);  // cli/shared_flags.cc
ABSL_FLAG(std::string, output_format, "id",
          "encode: id (space-separated ids) or piece (space-separated pieces).");

namespace gmlp::cli {
namespace {

constexpr char kUsage[] =
    "gmlp tokenizer train [--input=FILE[,FILE...]] [--model_prefix=runs/tokenizer/spm]\n"
    "                     [--vocab_size=8192] [--model_type=unigram|bpe]\n"
    "                     [--character_coverage=0.9995] [--byte_fallback]\n"
    "                     [--input_sentence_size=2000000] [--threads=N]\n"
    "gmlp tokenizer encode [--model=runs/tokenizer/spm.model] [--input=FILE|-] [--output=FILE|-]\n"
    "                      [--output_format=id|piece]\n\n"
    "train: trains a SentencePiece model (by default on the shared Wikipedia extract) whose\n"
    "special tokens have fixed ids:\n"
    "  [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4. --threads sets the trainer's threads.\n"
    "encode: one line of ids (or pieces) out per line of text in; no special tokens added.";

std::vector<std::string> SplitList(const std::string& s) {
  return absl::StrSplit(s, ',', absl::SkipWhitespace());
}

int Train(const char* subcommand) {
  tokenizer::TrainOptions options;
  options.inputs = SplitList(absl::GetFlag(FLAGS_input));
  if (options.inputs.empty()) options.inputs.push_back(kDefaultCorpus);
  options.model_prefix = absl::GetFlag(FLAGS_model_prefix);
  options.vocab_size = absl::GetFlag(FLAGS_vocab_size);
  options.model_type = absl::GetFlag(FLAGS_model_type);
  options.character_coverage = absl::GetFlag(FLAGS_character_coverage);
  options.byte_fallback = absl::GetFlag(FLAGS_byte_fallback);
  options.input_sentence_size = absl::GetFlag(FLAGS_input_sentence_size);
  options.max_sentence_length = absl::GetFlag(FLAGS_max_sentence_length);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.strict_utf8 = absl::GetFlag(FLAGS_strict_utf8);
  options.verbose = absl::GetFlag(FLAGS_verbose);
  options.num_threads = NumThreads();
  options.on_progress = [](absl::string_view message) {
    std::fprintf(stderr, "gmlp tokenizer: %s\n", std::string(message).c_str());
  };
  tokenizer::TrainStats stats;
  const absl::Status st = tokenizer::Train(options, &stats);
  if (!st.ok()) return Fail(subcommand, st);
  std::string skipped;
  if (stats.invalid_utf8_lines > 0) {
    skipped = absl::StrCat("; ", stats.invalid_utf8_lines, " invalid UTF-8 lines skipped");
  }
  std::fprintf(
      stderr, "%s\n",
      absl::StrFormat("gmlp tokenizer: trained a %s model of %d pieces on %d of %d "
                      "sentences (%d documents, %.1f MB in %d file%s%s) in %.1f s: "
                      "%s.model, %s.vocab",
                      options.model_type, options.vocab_size, stats.sampled_sentences,
                      stats.sentences, stats.documents, static_cast<double>(stats.bytes) / 1e6,
                      stats.files, stats.files == 1 ? "" : "s", skipped, stats.seconds,
                      options.model_prefix, options.model_prefix)
          .c_str());
  return 0;
}

int Encode(const char* subcommand) {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) {
    return Fail(subcommand, absl::InvalidArgumentError(
                                "--model is required: the PREFIX.model `gmlp tokenizer train` "
                                "wrote"));
  }
  absl::StatusOr<tokenizer::OutputFormat> format =
      tokenizer::ParseOutputFormat(absl::GetFlag(FLAGS_output_format));
  if (!format.ok()) return Fail(subcommand, format.status());
  std::vector<std::string> inputs = SplitList(absl::GetFlag(FLAGS_input));
  if (inputs.empty()) inputs.push_back("-");
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::Load(model);
  if (!tok.ok()) return Fail(subcommand, tok.status());
  const absl::Status st =
      tokenizer::EncodeFile(**tok, inputs, absl::GetFlag(FLAGS_output), *format);
  if (!st.ok()) return Fail(subcommand, st);
  return 0;
}

}  // namespace

int TokenizerMain(int argc, char** argv) {
  // Shared flags (cli/shared_flags.cc) take this subcommand's defaults.
  absl::SetFlag(&FLAGS_input, "");
  absl::SetFlag(&FLAGS_output, "-");
  absl::SetFlag(&FLAGS_model, "runs/tokenizer/spm.model");
  absl::SetFlag(&FLAGS_seed, kTrainDefaults.seed);
  absl::SetFlag(&FLAGS_strict_utf8, kTrainDefaults.strict_utf8);
  absl::SetFlag(&FLAGS_vocab_size, kTrainDefaults.vocab_size);
  const std::vector<std::string> args = ParseSubcommandFlags(
      argc, argv,
      {"tokenizer_main.cc", {"input", "model", "output", "seed", "strict_utf8", "vocab_size"}},
      kUsage);
  if (args.size() != 1 || (args[0] != "train" && args[0] != "encode")) {
    return Fail(argv[0],
                absl::InvalidArgumentError(absl::StrCat(
                    args.empty() ? "no action given"
                                 : absl::StrCat("unknown action '", absl::StrJoin(args, " "), "'"),
                    "; use `gmlp tokenizer train` or `gmlp tokenizer encode` (see "
                    "`gmlp tokenizer --help`)")));
  }
  return args[0] == "train" ? Train(argv[0]) : Encode(argv[0]);
}

}  // namespace gmlp::cli
