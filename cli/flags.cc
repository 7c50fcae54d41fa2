#include "cli/flags.h"

#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/process.h"

ABSL_FLAG(int, threads, 0,
          "Intra-op (LibTorch) and worker threads; 0 = the CPUs this process may use, shared "
          "among the LOCAL_WORLD_SIZE ranks of the machine. LibTorch alone would start with one "
          "thread here.");

namespace gmlp::cli {
namespace {

bool IsHelpFlag(absl::string_view name) {
  return name == "help" || name == "helpfull" || name == "helpshort" || name == "h";
}

// Abseil's own flags, handled by absl::ParseCommandLine for every subcommand.
bool IsBuiltinFlag(absl::string_view name) {
  return name == "version" || name == "helpon" || name == "helpmatch" || name == "helppackage" ||
         name == "flagfile" || name == "fromenv" || name == "tryfromenv" || name == "undefok";
}

// "--name (help); default: X; currently: Y;" wrapped at 80 columns, as Abseil prints flags.
void PrintFlag(const absl::CommandLineFlag& flag, std::FILE* out) {
  std::string text =
      absl::StrCat("--", flag.Name(), " (", flag.Help(),
                   "); default: ", flag.DefaultValue().empty() ? "\"\"" : flag.DefaultValue(), ";");
  if (flag.CurrentValue() != flag.DefaultValue()) {
    absl::StrAppend(
        &text, " currently: ", flag.CurrentValue().empty() ? "\"\"" : flag.CurrentValue(), ";");
  }
  std::string line = "    ";
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first && line.size() + 1 + word.size() > 80) {
      std::fprintf(out, "%s\n", line.c_str());
      line = "      ";
    } else if (!first) {
      line += ' ';
    }
    absl::StrAppend(&line, word);
    first = false;
  }
  std::fprintf(out, "%s\n", line.c_str());
}

}  // namespace

bool SubcommandFlags::Accepts(const absl::CommandLineFlag& flag) const {
  if (absl::EndsWith(flag.Filename(), "/" + main_file) || flag.Filename() == main_file) {
    return true;
  }
  if (flag.Name() == "threads") return true;  // cli/flags.cc: every subcommand
  return std::find(borrowed.begin(), borrowed.end(), flag.Name()) != borrowed.end();
}

int NumThreads() {
  const int t = absl::GetFlag(FLAGS_threads);
  return t > 0 ? t : DefaultThreadCount();
}

void PrintSubcommandHelp(const SubcommandFlags& flags, absl::string_view usage, std::FILE* out) {
  std::fprintf(out, "%s\n\nFlags:\n", std::string(usage).c_str());
  std::vector<const absl::CommandLineFlag*> accepted;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flags.Accepts(*flag)) accepted.push_back(flag);
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  for (const absl::CommandLineFlag* flag : accepted) PrintFlag(*flag, out);
}

std::vector<std::string> ParseSubcommandFlags(int argc, char** argv, const SubcommandFlags& flags,
                                              absl::string_view usage) {
  absl::FlagsUsageConfig config;
  config.version_string = [] { return std::string("gmlp 0.1\n"); };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);

  const std::string subcommand = argc > 0 ? argv[0] : "gmlp";
  // Every flag of every subcommand parses as far as Abseil knows (flag names are global to the
  // binary); accept only this subcommand's, and print its own --help.
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) continue;
    const std::string name(arg.substr(0, arg.find('=')));
    if (IsHelpFlag(name)) {
      PrintSubcommandHelp(flags, usage, stdout);
      std::exit(0);
    }
    if (IsBuiltinFlag(name)) continue;
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
    }
    if (flag == nullptr || !flags.Accepts(*flag)) {
      std::fprintf(stderr, "gmlp %s: error: unknown flag --%s; see `gmlp %s --help`\n",
                   subcommand.c_str(), name.c_str(), subcommand.c_str());
      std::exit(1);
    }
  }

  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  std::vector<std::string> out;
  for (size_t i = 1; i < positional.size(); ++i) out.emplace_back(positional[i]);

  const int threads = NumThreads();
  torch::set_num_threads(threads);
  KeepFreedMemoryInProcess();
  return out;
}

int Fail(absl::string_view subcommand, const absl::Status& status) {
  std::fprintf(stderr, "gmlp %s: error: %s\n", std::string(subcommand).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace gmlp::cli
