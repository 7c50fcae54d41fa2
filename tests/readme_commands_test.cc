// Every `gmlp ...` command line the documentation shows uses flags its subcommand has: each
// Markdown file of the tree (READMEs, bench/RESULTS.md, results/*/README.md), its fenced code
// blocks (lines joined at a trailing backslash) and its inline code spans. A renamed or removed
// flag fails here, naming the file, the line and the flag.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "tests/cli_test_util.h"
#include "tests/file_test_util.h"

namespace gmlp {
namespace {

// A command as the documentation wrote it: where, which subcommand, and what followed.
struct DocCommand {
  std::string where;  // file:line
  std::string subcommand;
  std::vector<std::string> args;
};

const std::set<std::string>& Subcommands() {
  static const std::set<std::string> kNames = {"tokenizer", "prepare", "pretrain", "finetune",
                                               "predict",   "export",  "study",    "probe"};
  return kNames;
}

// Shell words that end a command: what follows is another command, a redirect or a comment.
bool EndsCommand(absl::string_view word) {
  return word == "&&" || word == "||" || word == ";" || word == "|" || word == "&" || word == ")" ||
         absl::StartsWith(word, "#") || absl::StartsWith(word, ">") ||
         absl::StartsWith(word, "2>") || absl::StartsWith(word, "<");
}

// The `gmlp <subcommand> ...` commands of one piece of shell text ("build/gmlp", "gmlp"), if any.
void FindCommands(absl::string_view text, const std::string& where, std::vector<DocCommand>* out) {
  const std::vector<std::string> words =
      absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (!(w == "gmlp" || absl::EndsWith(w, "/gmlp")) || Subcommands().count(words[i + 1]) == 0) {
      continue;
    }
    DocCommand c{where, words[i + 1], {}};
    size_t j = i + 2;
    if (c.subcommand == "tokenizer" && j < words.size() &&
        (words[j] == "train" || words[j] == "encode")) {
      c.subcommand = absl::StrCat("tokenizer ", words[j++]);
    }
    for (; j < words.size() && !EndsCommand(words[j]); ++j) c.args.push_back(words[j]);
    out->push_back(std::move(c));
    i = j - 1;
  }
}

// Every command of one Markdown file.
std::vector<DocCommand> CommandsOf(const std::string& file, const std::string& name) {
  auto text = ReadFile(file);
  EXPECT_TRUE(text.ok()) << text.status();
  std::vector<DocCommand> out;
  if (!text.ok()) return out;
  const std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  bool fenced = false;
  std::string joined;
  size_t joined_from = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::string where = absl::StrCat(name, ":", i + 1);
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "```")) {
      fenced = !fenced;
      joined.clear();
      continue;
    }
    if (fenced) {
      if (joined.empty()) joined_from = i + 1;
      absl::string_view part = absl::StripTrailingAsciiWhitespace(line);
      if (absl::ConsumeSuffix(&part, "\\")) {
        absl::StrAppend(&joined, part, " ");
        continue;
      }
      absl::StrAppend(&joined, part);
      FindCommands(joined, absl::StrCat(name, ":", joined_from), &out);
      joined.clear();
      continue;
    }
    // Inline code spans: `...`.
    for (size_t open = line.find('`'); open != std::string::npos;) {
      const size_t close = line.find('`', open + 1);
      if (close == std::string::npos) break;
      FindCommands(absl::string_view(line).substr(open + 1, close - open - 1), where, &out);
      open = line.find('`', close + 1);
    }
  }
  return out;
}

// The Markdown files under `dir` (relative names), build and hidden folders aside. Not
// std::filesystem (tests/file_test_util.h says why).
void MarkdownFiles(const std::string& root, const std::string& rel, std::vector<std::string>* out) {
  for (const std::string& name : ListDir(JoinPath(root, rel))) {
    const std::string path = rel.empty() ? name : JoinPath(rel, name);
    if (IsDirectory(JoinPath(root, path))) {
      if (!absl::StartsWith(name, "build") && !absl::StartsWith(name, ".")) {
        MarkdownFiles(root, path, out);
      }
    } else if (absl::EndsWith(name, ".md")) {
      out->push_back(path);
    }
  }
}

// "--name=value", "--noname", "[--name=x|-]" -> the flag's name as its subcommand lists it.
std::string FlagName(absl::string_view arg, const std::map<std::string, std::string>& flags) {
  absl::ConsumePrefix(&arg, "[");
  absl::ConsumePrefix(&arg, "--");
  arg = arg.substr(0, arg.find_first_of("=]|"));
  std::string name(arg);
  if (flags.count(name) == 0 && absl::StartsWith(name, "no") && flags.count(name.substr(2)) > 0) {
    return name.substr(2);
  }
  return name;
}

TEST(ReadmeCommandsTest, EveryGmlpCommandUsesFlagsItsSubcommandHas) {
  std::map<std::string, std::map<std::string, std::string>> help;  // subcommand -> flags
  int commands = 0, flags_checked = 0;
  std::set<std::string> files_with_commands;
  std::vector<std::string> files;
  MarkdownFiles(GMLP_SOURCE_DIR, "", &files);
  for (const std::string& name : files) {
    for (const DocCommand& c : CommandsOf(JoinPath(GMLP_SOURCE_DIR, name), name)) {
      ++commands;
      files_with_commands.insert(name);
      if (help.count(c.subcommand) == 0) help[c.subcommand] = testing::HelpDefaults(c.subcommand);
      const auto& flags = help.at(c.subcommand);
      for (const std::string& arg : c.args) {
        if (!absl::StartsWith(arg, "--") && !absl::StartsWith(arg, "[--")) continue;
        if (arg == "--help") continue;  // every subcommand's
        ++flags_checked;
        const std::string flag = FlagName(arg, flags);
        EXPECT_EQ(flags.count(flag), 1u)
            << c.where << ": `gmlp " << c.subcommand << "` has no --" << flag << " (in `gmlp "
            << c.subcommand << " " << absl::StrJoin(c.args, " ") << "`)";
      }
    }
  }
  // The extraction itself: the top README's commands and flags were found.
  EXPECT_GT(commands, 50);
  EXPECT_GT(flags_checked, 100);
  EXPECT_EQ(files_with_commands.count("README.md"), 1u);
  EXPECT_EQ(help.count("pretrain"), 1u);
  EXPECT_EQ(help.count("tokenizer train"), 1u);
}

// The extraction on text written for it: continuation lines, two commands on a line, inline
// spans, subcommands of `gmlp tokenizer`, and words that end a command.
TEST(ReadmeCommandsTest, FindsCommandsAsAShellWouldSplitThem) {
  const std::string dir = testing::MakeTempDir("readme_commands");
  const std::string md = dir + "/doc.md";
  testing::WriteBytes(md,
                      "Run `gmlp study --smoke` first, then `build/gmlp probe --corpus=x`.\n"
                      "```\n"
                      "build/gmlp pretrain --a=1 \\\n"
                      "  --b=2 > log # --c\n"
                      "torchrun --nproc_per_node=2 build/gmlp pretrain --d && gmlp export --e\n"
                      "gmlp tokenizer train --f\n"
                      "```\n"
                      "Not code: gmlp pretrain --g\n");
  const std::vector<DocCommand> got = CommandsOf(md, "doc.md");
  testing::RemoveTempDir(dir);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].where, "doc.md:1");
  EXPECT_EQ(got[0].subcommand, "study");
  EXPECT_EQ(got[0].args, std::vector<std::string>{"--smoke"});
  EXPECT_EQ(got[1].subcommand, "probe");
  EXPECT_EQ(got[2].where, "doc.md:3");
  EXPECT_EQ(got[2].args, (std::vector<std::string>{"--a=1", "--b=2"}));
  EXPECT_EQ(got[3].args, std::vector<std::string>{"--d"});
  EXPECT_EQ(got[4].subcommand, "export");
  EXPECT_EQ(got[5].subcommand, "tokenizer train");
  EXPECT_EQ(got[5].args, std::vector<std::string>{"--f"});
  const std::map<std::string, std::string> flags = {{"bf16", ""}, {"input", ""}};
  EXPECT_EQ(FlagName("--nobf16", flags), "bf16");
  EXPECT_EQ(FlagName("[--input=file|-]", flags), "input");
  EXPECT_EQ(FlagName("--notaflag", flags), "notaflag");
}

}  // namespace
}  // namespace gmlp
