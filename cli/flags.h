// Flag handling shared by every `gmlp` subcommand: each subcommand's flags live in its own
// *_main.cc (plus a few shared ones it names); ParseSubcommandFlags shows only those in --help
// and rejects any other flag.
#ifndef GMLP_CLI_FLAGS_H_
#define GMLP_CLI_FLAGS_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gmlp::cli {

// The flags one subcommand reads: every flag defined in its `main_file` (e.g.
// "pretrain_main.cc"), the common --threads, and `borrowed`: flags it reads that are defined
// elsewhere, in cli/shared_flags.cc or in another subcommand's *_main.cc (Abseil flag names are
// global to the binary, so a knob two subcommands share is one flag; e.g. `gmlp study` reuses
// finetune's --lr).
struct SubcommandFlags {
  std::string main_file;
  std::vector<std::string> borrowed;

  bool Accepts(const absl::CommandLineFlag& flag) const;
};

// Parses argv (argv[0] is the subcommand name, e.g. "pretrain") for the subcommand, then applies
// the common settings (threads, allocator). Returns the positional arguments after argv[0].
// Exits with status 1 and one line on a flag the subcommand does not read; --help (-h,
// --helpfull, --helpshort) prints `usage` and exactly the subcommand's flags, then exits 0.
std::vector<std::string> ParseSubcommandFlags(int argc, char** argv, const SubcommandFlags& flags,
                                              absl::string_view usage);

// The --help text: `usage`, then each flag the subcommand accepts with its help, default and,
// when a subcommand set its own default, current value.
void PrintSubcommandHelp(const SubcommandFlags& flags, absl::string_view usage, std::FILE* out);

// Prints "gmlp <subcommand>: error: <message>" to stderr and returns 1 (for `return Fail(...)`).
int Fail(absl::string_view subcommand, const absl::Status& status);

// Number of intra-op threads the common --threads flag resolved to.
int NumThreads();

}  // namespace gmlp::cli

#endif  // GMLP_CLI_FLAGS_H_
