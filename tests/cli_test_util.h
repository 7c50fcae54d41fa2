// `gmlp <subcommand> --help` read back as the flags it lists, for the cli tests.
#ifndef GMLP_TESTS_CLI_TEST_UTIL_H_
#define GMLP_TESTS_CLI_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gmlp::testing {

// `gmlp <subcommand> --help` (subcommand may be two words: "tokenizer train") as flag name ->
// default text.
inline std::map<std::string, std::string> HelpDefaults(const std::string& subcommand) {
  const std::string cmd = absl::StrCat(GMLP_BINARY_DIR, "/gmlp ", subcommand, " --help");
  std::FILE* p = ::popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = std::fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
  EXPECT_EQ(p != nullptr ? ::pclose(p) : -1, 0) << cmd;
  // One entry per flag: "    --name (help); default: X;" with continuation lines indented.
  std::vector<std::string> entries;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "    --")) {
      entries.emplace_back(absl::StripAsciiWhitespace(line));
    } else if (absl::StartsWith(line, "      ") && !entries.empty()) {
      absl::StrAppend(&entries.back(), " ", absl::StripAsciiWhitespace(line));
    }
  }
  std::map<std::string, std::string> defaults;
  for (const std::string& e : entries) {
    const std::string name = e.substr(2, e.find(' ') - 2);
    const size_t d = e.rfind("; default: ");
    std::string value = e.substr(d + 11, e.size() - (d + 11) - 1);
    if (value == "\"\"") value.clear();
    defaults[name] = value;
  }
  EXPECT_FALSE(defaults.empty()) << text;
  return defaults;
}

}  // namespace gmlp::testing

#endif  // GMLP_TESTS_CLI_TEST_UTIL_H_
