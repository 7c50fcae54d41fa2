// Stub: replaced by the stage's real entry point.
#include "cli/flags.h"
#include "cli/subcommands.h"

namespace gmlp::cli {
int FinetuneMain(int argc, char** argv) {
  ParseSubcommandFlags(argc, argv, "finetune_main.cc", "not implemented yet");
  return Fail(argv[0], absl::UnimplementedError("not implemented yet"));
}
}  // namespace gmlp::cli
