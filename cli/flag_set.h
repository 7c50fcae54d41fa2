// FlagSet: the flags of one `gmlp` subcommand, each bound to a field of that subcommand's config
// struct. A flag's default is the field's value when it is added (so `--help` shows exactly
// what a run without the flag uses), and the parser records which flags the command line gave.
// Torch-free; the common --threads and the exit-on-error wrapper are in cli/flags.h.
//
// Syntax (as Abseil's): --name=value, --name value, -name=value; booleans also --name and
// --noname; "--" ends the flags. Lists are comma-separated.
#ifndef GMLP_CLI_FLAG_SET_H_
#define GMLP_CLI_FLAG_SET_H_

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace gmlp::cli {

// The field types a flag can be bound to: bool, int32_t, int64_t, uint64_t, double,
// std::string and comma-separated lists of strings, uint64_t or double.
template <typename T>
inline constexpr bool kIsFlagType =
    std::is_same_v<T, bool> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
    std::is_same_v<T, uint64_t> || std::is_same_v<T, double> || std::is_same_v<T, std::string> ||
    std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<uint64_t>> ||
    std::is_same_v<T, std::vector<double>>;

// How a field type reads from and prints to the command line (defined in flag_set.cc for each
// kIsFlagType). Print of a double gives the shortest text that reads back exactly.
template <typename T>
struct FlagCodec {
  static_assert(kIsFlagType<T>, "a flag cannot be bound to a field of this type");
  static bool Parse(absl::string_view text, T* out);
  static std::string Print(const T& value);
};

class FlagSet {
 public:
  // Sets `text` into the flag's field(s); false when the text is not a valid value.
  using Setter = std::function<bool(absl::string_view text)>;

  // `subcommand` names the subcommand in messages; `usage` heads the --help text.
  FlagSet(std::string subcommand, std::string usage);

  // Registers --name bound to *field, with the field's current value as the default.
  template <typename T>
  void Add(absl::string_view name, T* field, absl::string_view help) {
    AddCustom(name, help, FlagCodec<T>::Print(*field), std::is_same_v<T, bool>,
              [field](absl::string_view text) { return FlagCodec<T>::Parse(text, field); });
  }
  // Registers --name for every field of `config`'s field list: Config::ForEachField(config,
  // visit) calls visit(name, field, help) for each (see pretrain/train_config.h). `help_prefix`
  // goes before every help text (e.g. the action a flag is for).
  template <typename Config>
  void AddFields(Config& config, absl::string_view help_prefix = "") {
    Config::ForEachField(config, [&](const char* name, auto& field, const char* help) {
      Add(name, &field, absl::StrCat(help_prefix, help));
    });
  }
  // Registers a flag with its own setter (e.g. one flag that sets two fields).
  void AddCustom(absl::string_view name, absl::string_view help, std::string default_text,
                 bool is_bool, Setter set);
  // The default --help shows for an added --name, when the run derives it from other flags and
  // the field holds "" (e.g. "<out_dir>/tb").
  void SetDefaultText(absl::string_view name, std::string default_text);

  struct Parsed {
    bool help = false;                    // --help, -h, --helpfull or --helpshort was given
    std::vector<std::string> positional;  // arguments that are not flags, in order
  };
  // Parses argv (argv[0] is the subcommand name) into the bound fields. InvalidArgument names
  // an unknown flag or a bad value.
  absl::StatusOr<Parsed> Parse(int argc, char* const* argv);

  // Whether the command line gave --name (in any spelling, --noname included).
  bool Given(absl::string_view name) const;
  // Sets every flag the command line gave again, in command-line order: after the fields were
  // reset (to a preset, say), the command line still wins.
  absl::Status Reapply();

  // `usage`, then every flag (sorted by name) with its help and default.
  std::string Help() const;
  const std::string& subcommand() const { return subcommand_; }

 private:
  struct Flag {
    std::string name;
    std::string help;
    std::string default_text;
    bool is_bool = false;
    Setter set;
  };
  Flag* Find(absl::string_view name);
  absl::Status Set(Flag& flag, absl::string_view text);

  std::string subcommand_;
  std::string usage_;
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, std::string>> given_;  // (name, value text) in order
};

}  // namespace gmlp::cli

#endif  // GMLP_CLI_FLAG_SET_H_
