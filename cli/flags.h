// What every `gmlp` subcommand's main does with its FlagSet (cli/flag_set.h): add the common
// --threads, parse, answer --help, report a bad flag in one line, apply the thread count.
#ifndef GMLP_CLI_FLAGS_H_
#define GMLP_CLI_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/flag_set.h"

namespace gmlp::cli {

// Adds --threads to `flags` and parses argv (argv[0] is the subcommand name) into it. --help
// (-h, --helpfull, --helpshort) prints flags.Help() to stdout and exits 0; an unknown flag or a
// bad value prints "gmlp <subcommand>: error: ..." and exits 1. Then sets LibTorch's intra-op
// threads and the allocator settings. Returns the positional arguments.
std::vector<std::string> ParseSubcommandFlags(FlagSet& flags, int argc, char** argv);

// Prints "gmlp <subcommand>: error: <message>" to stderr and returns 1 (for `return Fail(...)`).
int Fail(absl::string_view subcommand, const absl::Status& status);

// Number of intra-op threads the common --threads flag resolved to.
int NumThreads();

}  // namespace gmlp::cli

#endif  // GMLP_CLI_FLAGS_H_
