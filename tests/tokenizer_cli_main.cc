// tokenizer_cli: `gmlp` with only the tokenizer subcommand, so that the command's flags, messages
// and exit codes are tested even while other stages' parts of `gmlp` are being built.
#include <cstdio>
#include <cstring>

#include "cli/subcommands.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "tokenizer") != 0) {
    std::fprintf(stderr, "usage: tokenizer_cli tokenizer train|encode [flags]\n");
    return 2;
  }
  return gmlp::cli::TokenizerMain(argc - 1, argv + 1);  // argv[0] = "tokenizer", as gmlp passes
}
