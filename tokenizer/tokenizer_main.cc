// `gmlp tokenizer train|encode`: train a SentencePiece model with gmlp's fixed special ids, or
// encode text with one (see tokenizer/README.md). Flags only; the work is in gmlp::tokenizer.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "tokenizer/encode_file.h"
#include "tokenizer/tokenizer.h"

namespace {
// The default corpus, relative to the repository root (where the README's commands run).
constexpr char kDefaultCorpus[] = "../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz";
}  // namespace

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

// What the flags set: training options and the encode action's own.
struct TokenizerFlags {
  std::vector<std::string> inputs;  // empty: the default corpus (train) or stdin (encode)
  tokenizer::TrainOptions train;
  std::string model = "runs/tokenizer/spm.model";
  std::string output = "-";
  std::string output_format = "id";
};

void AddFlags(TokenizerFlags* f, FlagSet* flags) {
  flags->Add("input", &f->inputs,
             "Text files or globs, comma-separated; plain, .gz, .xz or .zst (train: text or JSON "
             "lines, default the shared Wikipedia extract; encode: line by line, default '-' = "
             "stdin).");
  flags->AddFields(f->train, "train: ");
  flags->Add("model", &f->model, "encode: the SentencePiece .model to encode with.");
  flags->Add("output", &f->output, "encode: output file ('-' = stdout).");
  flags->Add("output_format", &f->output_format,
             "encode: id (space-separated ids) or piece (space-separated pieces).");
}

int Train(const char* subcommand, TokenizerFlags f) {
  tokenizer::TrainOptions options = std::move(f.train);
  options.inputs = std::move(f.inputs);
  if (options.inputs.empty()) options.inputs.push_back(kDefaultCorpus);
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

int Encode(const char* subcommand, const TokenizerFlags& f) {
  const std::string& model = f.model;
  if (model.empty()) {
    return Fail(subcommand, absl::InvalidArgumentError(
                                "--model is required: the PREFIX.model `gmlp tokenizer train` "
                                "wrote"));
  }
  absl::StatusOr<tokenizer::OutputFormat> format = tokenizer::ParseOutputFormat(f.output_format);
  if (!format.ok()) return Fail(subcommand, format.status());
  std::vector<std::string> inputs = f.inputs;
  if (inputs.empty()) inputs.push_back("-");
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = tokenizer::Tokenizer::Load(model);
  if (!tok.ok()) return Fail(subcommand, tok.status());
  const absl::Status st = tokenizer::EncodeFile(**tok, inputs, f.output, *format);
  if (!st.ok()) return Fail(subcommand, st);
  return 0;
}

}  // namespace

int TokenizerMain(int argc, char** argv) {
  TokenizerFlags f;
  f.train.model_prefix = "runs/tokenizer/spm";
  FlagSet flags(argv[0], kUsage);
  AddFlags(&f, &flags);
  const std::vector<std::string> args = ParseSubcommandFlags(flags, argc, argv);
  if (args.size() != 1 || (args[0] != "train" && args[0] != "encode")) {
    return Fail(argv[0],
                absl::InvalidArgumentError(absl::StrCat(
                    args.empty() ? "no action given"
                                 : absl::StrCat("unknown action '", absl::StrJoin(args, " "), "'"),
                    "; use `gmlp tokenizer train` or `gmlp tokenizer encode` (see "
                    "`gmlp tokenizer --help`)")));
  }
  return args[0] == "train" ? Train(argv[0], std::move(f)) : Encode(argv[0], f);
}

}  // namespace gmlp::cli
