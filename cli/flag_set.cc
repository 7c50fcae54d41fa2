#include "cli/flag_set.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmlp::cli {
namespace {

bool IsHelpFlag(absl::string_view name) {
  return name == "help" || name == "helpfull" || name == "helpshort" || name == "h";
}

// "--name (help); default: X;" wrapped at 80 columns, as Abseil prints flags.
void AppendFlagHelp(absl::string_view name, absl::string_view help, absl::string_view default_text,
                    std::string* out) {
  const std::string text = absl::StrCat(
      "--", name, " (", help, "); default: ", default_text.empty() ? "\"\"" : default_text, ";");
  std::string line = "    ";
  bool first = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first && line.size() + 1 + word.size() > 80) {
      absl::StrAppend(out, line, "\n");
      line = "      ";
    } else if (!first) {
      line += ' ';
    }
    absl::StrAppend(&line, word);
    first = false;
  }
  absl::StrAppend(out, line, "\n");
}

bool ParseBool(absl::string_view text, bool* out) {
  const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (t == "true" || t == "1" || t == "yes" || t == "t" || t == "y") {
    *out = true;
    return true;
  }
  if (t == "false" || t == "0" || t == "no" || t == "f" || t == "n") {
    *out = false;
    return true;
  }
  return false;
}

// A comma-separated list of numbers, each as FlagCodec<T> reads one. Empty text is the empty list
// where `allow_empty` (an unset --lr_grid), an error where a flag needs at least one (--seeds).
template <typename T>
bool ParseNumberList(absl::string_view text, bool allow_empty, std::vector<T>* out) {
  std::vector<T> values;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    T v{};
    if (!FlagCodec<T>::Parse(part, &v)) return false;
    values.push_back(v);
  }
  if (values.empty() && !allow_empty) return false;
  *out = std::move(values);
  return true;
}

std::string PrintDouble(double value) {
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buf, &back) && back == value) break;
  }
  return buf;
}

}  // namespace

template <typename T>
bool FlagCodec<T>::Parse(absl::string_view text, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    return ParseBool(text, out);
  } else if constexpr (std::is_integral_v<T>) {
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(text), out);
  } else if constexpr (std::is_same_v<T, double>) {
    return absl::SimpleAtod(absl::StripAsciiWhitespace(text), out);
  } else if constexpr (std::is_same_v<T, std::string>) {
    *out = std::string(text);
    return true;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    *out = absl::StrSplit(text, ',', absl::SkipWhitespace());
    return true;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return ParseNumberList<double>(text, /*allow_empty=*/true, out);
  } else {
    return ParseNumberList<uint64_t>(text, /*allow_empty=*/false, out);
  }
}

template <typename T>
std::string FlagCodec<T>::Print(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    return absl::StrCat(value);
  } else if constexpr (std::is_same_v<T, double>) {
    return PrintDouble(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    return absl::StrJoin(value, ",",
                         [](std::string* out, double v) { absl::StrAppend(out, PrintDouble(v)); });
  } else {
    return absl::StrJoin(value, ",");
  }
}

// One codec per kIsFlagType (cli/flag_set.h).
template struct FlagCodec<bool>;
template struct FlagCodec<int32_t>;
template struct FlagCodec<int64_t>;
template struct FlagCodec<uint64_t>;
template struct FlagCodec<double>;
template struct FlagCodec<std::string>;
template struct FlagCodec<std::vector<std::string>>;
template struct FlagCodec<std::vector<uint64_t>>;
template struct FlagCodec<std::vector<double>>;

FlagSet::FlagSet(std::string subcommand, std::string usage)
    : subcommand_(std::move(subcommand)), usage_(std::move(usage)) {}

void FlagSet::AddCustom(absl::string_view name, absl::string_view help, std::string default_text,
                        bool is_bool, Setter set) {
  flags_.push_back(
      {std::string(name), std::string(help), std::move(default_text), is_bool, std::move(set)});
}

void FlagSet::SetDefaultText(absl::string_view name, std::string default_text) {
  Flag* flag = Find(name);
  if (flag != nullptr) flag->default_text = std::move(default_text);
}

FlagSet::Flag* FlagSet::Find(absl::string_view name) {
  for (Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status FlagSet::Set(Flag& flag, absl::string_view text) {
  if (!flag.set(text)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag.name, "=", text, ": not a valid value (default: ", flag.default_text,
        "); see `gmlp ", subcommand_, " --help`"));
  }
  return absl::OkStatus();
}

absl::StatusOr<FlagSet::Parsed> FlagSet::Parse(int argc, char* const* argv) {
  Parsed parsed;
  given_.clear();
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) parsed.positional.emplace_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-' ||
        (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-"))) {
      parsed.positional.emplace_back(argv[i]);
      continue;
    }
    const size_t eq = arg.find('=');
    const absl::string_view name = arg.substr(0, eq);
    if (IsHelpFlag(name)) {
      parsed.help = true;
      continue;
    }
    Flag* flag = Find(name);
    std::string value;
    if (flag == nullptr && eq == absl::string_view::npos && absl::StartsWith(name, "no")) {
      flag = Find(name.substr(2));
      if (flag != nullptr && !flag->is_bool) flag = nullptr;
      value = "false";
    } else if (flag != nullptr && eq != absl::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (flag != nullptr && flag->is_bool) {
      value = "true";
    } else if (flag != nullptr) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, " needs a value; see `gmlp ", subcommand_, " --help`"));
      }
      value = argv[++i];
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "; see `gmlp ", subcommand_, " --help`"));
    }
    if (absl::Status st = Set(*flag, value); !st.ok()) return st;
    given_.emplace_back(flag->name, value);
  }
  return parsed;
}

bool FlagSet::Given(absl::string_view name) const {
  return std::any_of(given_.begin(), given_.end(),
                     [name](const auto& g) { return g.first == name; });
}

absl::Status FlagSet::Reapply() {
  for (const auto& [name, value] : given_) {
    if (absl::Status st = Set(*Find(name), value); !st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string FlagSet::Help() const {
  std::string out = absl::StrCat(usage_, "\n\nFlags:\n");
  std::vector<const Flag*> sorted;
  for (const Flag& f : flags_) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const Flag* a, const Flag* b) { return a->name < b->name; });
  for (const Flag* f : sorted) AppendFlagHelp(f->name, f->help, f->default_text, &out);
  return out;
}

}  // namespace gmlp::cli
