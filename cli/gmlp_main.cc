// `gmlp`: one executable, git-style subcommands. This file only dispatches; every subcommand
// lives in its stage's *_main.cc.
#include <c10/util/Exception.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/subcommands.h"

namespace {

struct Subcommand {
  const char* name;
  int (*main)(int, char**);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"tokenizer", gmlp::cli::TokenizerMain,
     "train a SentencePiece model (`tokenizer train`) or encode text (`tokenizer encode`)"},
    {"prepare", gmlp::cli::PrepareMain, "turn raw text into checked binary shards + manifest"},
    {"pretrain", gmlp::cli::PretrainMain, "MLM-pretrain an encoder on shards (1..N ranks)"},
    {"finetune", gmlp::cli::FinetuneMain, "finetune a pretrained encoder on a GLUE-style task"},
    {"predict", gmlp::cli::PredictMain, "label sentences with a finetuned model"},
    {"export", gmlp::cli::ExportMain,
     "write a model as safetensors + config + tokenizer (gmlp layout or Hugging Face BERT)"},
    {"study", gmlp::cli::StudyMain, "run the accuracy-vs-parameters study end to end"},
    {"probe", gmlp::cli::ProbeMain,
     "write the alignment probe (aligned and shifted pair tasks) from a held-out corpus slice"},
};

void PrintUsage(std::FILE* out) {
  std::fprintf(out,
               "usage: gmlp <subcommand> [flags]\n\n"
               "MLM pretraining and GLUE finetuning of gMLP, aMLP, Transformer and token-mixing "
               "MLP encoders.\n\nsubcommands:\n");
  for (const Subcommand& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
  std::fprintf(out, "\n`gmlp <subcommand> --help` lists a subcommand's flags.\n");
}

}  // namespace

int main(int argc, char** argv) {
  // A write past a file-size limit (RLIMIT_FSIZE, a quota) then fails with EFBIG and is reported
  // with the file's name like a full disk, instead of killing the process silently.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  for (const Subcommand& s : kSubcommands) {
    if (std::strcmp(argv[1], s.name) != 0) continue;
    try {
      return s.main(argc - 1, argv + 1);
    } catch (const c10::Error& e) {
      std::fprintf(stderr, "gmlp %s: error: %s\n", s.name, e.what_without_backtrace());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gmlp %s: error: %s\n", s.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "gmlp: unknown subcommand '%s'; run `gmlp --help` for the list\n", argv[1]);
  return 1;
}
