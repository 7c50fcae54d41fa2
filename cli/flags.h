// Flag handling shared by every `gmlp` subcommand: each subcommand's flags live in its own
// *_main.cc; ParseSubcommandFlags shows only those (plus the common ones) in --help and rejects
// flags that belong to another subcommand.
#ifndef GMLP_CLI_FLAGS_H_
#define GMLP_CLI_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gmlp::cli {

// Parses argv (argv[0] is the subcommand name, e.g. "pretrain") for the subcommand whose flags
// are defined in `main_file` (e.g. "pretrain_main.cc"), then applies the common flags (threads,
// allocator settings). Returns the positional arguments after argv[0]. Exits with status 1 and
// one line on a bad flag; --help prints `usage` and the subcommand's flags.
std::vector<std::string> ParseSubcommandFlags(int argc, char** argv, absl::string_view main_file,
                                              absl::string_view usage);

// Same, for a subcommand that also reads flags defined in other *_main.cc files (Abseil flag
// names are global to the binary, so a knob two subcommands share is one flag): flags of any of
// `flag_files` are accepted and listed in --help. Example: `gmlp study` reuses finetune's --lr.
std::vector<std::string> ParseSubcommandFlags(int argc, char** argv,
                                              const std::vector<std::string>& flag_files,
                                              absl::string_view usage);

// Prints "gmlp <subcommand>: error: <message>" to stderr and returns 1 (for `return Fail(...)`).
int Fail(absl::string_view subcommand, const absl::Status& status);

// Number of intra-op threads the common --threads flag resolved to.
int NumThreads();

}  // namespace gmlp::cli

#endif  // GMLP_CLI_FLAGS_H_
