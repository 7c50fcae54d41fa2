#include "cli/flags.h"

#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>

#include "common/process.h"

namespace gmlp::cli {
namespace {

int threads_flag = 0;  // --threads; 0 = DefaultThreadCount()

}  // namespace

int NumThreads() { return threads_flag > 0 ? threads_flag : DefaultThreadCount(); }

std::vector<std::string> ParseSubcommandFlags(FlagSet& flags, int argc, char** argv) {
  flags.Add("threads", &threads_flag,
            "Intra-op (LibTorch) and worker threads; 0 = the CPUs this process may use, shared "
            "among the LOCAL_WORLD_SIZE ranks of the machine. LibTorch alone would start with one "
            "thread here.");
  absl::StatusOr<FlagSet::Parsed> parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) std::exit(Fail(flags.subcommand(), parsed.status()));
  if (parsed->help) {
    std::fputs(flags.Help().c_str(), stdout);
    std::exit(0);
  }
  torch::set_num_threads(NumThreads());
  KeepFreedMemoryInProcess();
  return parsed->positional;
}

int Fail(absl::string_view subcommand, const absl::Status& status) {
  std::fprintf(stderr, "gmlp %s: error: %s\n", std::string(subcommand).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace gmlp::cli
