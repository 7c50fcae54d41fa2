// `gmlp tokenizer train|encode` run as a process: end to end, and the one-line errors with
// exit code 1 for bad input. Runs tokenizer_cli (the same subcommand code, built with this test)
// and, once it is built, the real `gmlp` too.
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::tokenizer {
namespace {

using testing::MakeTempDir;
using testing::ReadBytes;
using testing::WriteBytes;

struct Result {
  int exit_code;
  std::string out;
  std::string err;
};

class TokenizerCliTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not built";
  }

  Result Run(const std::string& args, const std::string& stdin_path = "/dev/null") {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const std::string cmd =
        absl::StrCat(GetParam(), " tokenizer ", args, " < ", stdin_path, " > ", out, " 2> ", err);
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadBytes(out), ReadBytes(err)};
  }

  // Trains a small model through the command line once per binary.
  std::string TrainedModel() {
    const std::string prefix = dir_ + "/spm";
    if (::access((prefix + ".model").c_str(), R_OK) == 0) return prefix + ".model";
    WriteBytes(dir_ + "/corpus.txt", testing::GeneratedCorpus(3000));
    const Result r = Run(absl::StrCat("train --input=", dir_, "/corpus.txt --model_prefix=", prefix,
                                      " --vocab_size=400 --threads=2"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, "trained a unigram model of 400 pieces")) << r.err;
    return prefix + ".model";
  }

  void TearDown() override { testing::RemoveTempDir(dir_); }
  const std::string dir_ = MakeTempDir("tokenizer_cli_test");
};

void ExpectOneErrorLine(const Result& r, absl::string_view mentions) {
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(r.err, "gmlp tokenizer: error: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, mentions)) << r.err;
}

TEST_P(TokenizerCliTest, TrainWithMissingInputFailsWithOneLineNamingIt) {
  const Result r = Run(absl::StrCat("train --input=", dir_,
                                    "/no_such_corpus.txt --model_prefix=", dir_, "/out/spm"));
  ExpectOneErrorLine(r, dir_ + "/no_such_corpus.txt");
  EXPECT_FALSE(::access((dir_ + "/out/spm.model").c_str(), F_OK) == 0);
}

TEST_P(TokenizerCliTest, TrainWithEmptyCorpusFails) {
  WriteBytes(dir_ + "/empty.txt", "\n\n");
  ExpectOneErrorLine(
      Run(absl::StrCat("train --input=", dir_, "/empty.txt --model_prefix=", dir_, "/m")),
      "has no text");
}

TEST_P(TokenizerCliTest, BadActionsAndFlagsFailWithOneLine) {
  ExpectOneErrorLine(Run("tokenise"), "unknown action 'tokenise'");
  ExpectOneErrorLine(Run(""), "no action given");
  ExpectOneErrorLine(Run("encode --model="), "--model is required");
  ExpectOneErrorLine(Run(absl::StrCat("encode --model=", dir_, "/none.model")),
                     dir_ + "/none.model");
  ExpectOneErrorLine(Run(absl::StrCat("encode --model=", TrainedModel(), " --output_format=xml")),
                     "output_format is 'xml'");
  ExpectOneErrorLine(
      Run(absl::StrCat("encode --model=", TrainedModel(), " --input=", dir_, "/missing.txt")),
      dir_ + "/missing.txt");
  ExpectOneErrorLine(Run("train --input=x --model_prefix=y --vocab_size=10"), "vocab_size is 10");
}

TEST_P(TokenizerCliTest, MissingShimIsOneLineSayingWhatToDo) {
  const std::string model = TrainedModel();
  const std::string cmd = absl::StrCat("GMLP_SPM_SHIM=", dir_, "/no/libgmlp_spm_shim.so ",
                                       GetParam(), " tokenizer encode --model=", model,
                                       " < /dev/null > /dev/null 2> ", dir_, "/stderr");
  const int status = std::system(cmd.c_str());
  ExpectOneErrorLine(
      {WIFEXITED(status) ? WEXITSTATUS(status) : -1, "", ReadBytes(dir_ + "/stderr")},
      "GMLP_SPM_SHIM=" + dir_ + "/no/libgmlp_spm_shim.so: no such file");
}

TEST_P(TokenizerCliTest, HelpListsTheTokenizerFlags) {
  const Result r = Run("--help");
  const std::string all = r.out + r.err;
  for (const char* flag : {"--input", "--model_prefix", "--vocab_size", "--model_type",
                           "--character_coverage", "--byte_fallback", "--input_sentence_size",
                           "--model", "--output", "--output_format", "--threads"}) {
    EXPECT_TRUE(absl::StrContains(all, flag)) << flag << " missing from:\n" << all;
  }
}

TEST_P(TokenizerCliTest, EncodeGivesOneLineOfIdsPerLineMatchingTheLibrary) {
  const std::string model = TrainedModel();
  auto tok = Tokenizer::Load(model);
  ASSERT_TRUE(tok.ok()) << tok.status();
  const std::vector<std::string> lines = {"the anting ofer is at the re.", "",
                                          "caf\xC3\xA9 and more", "last line, no newline"};
  WriteBytes(dir_ + "/in.txt", absl::StrJoin(lines, "\n"));

  const Result ids = Run(absl::StrCat("encode --model=", model, " --input=", dir_,
                                      "/in.txt --output=", dir_, "/ids.txt"));
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  const std::vector<std::string> id_lines = absl::StrSplit(ReadBytes(dir_ + "/ids.txt"), '\n');
  ASSERT_EQ(id_lines.size(), lines.size() + 1);  // every line ends in '\n'
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(id_lines[i], absl::StrJoin((*tok)->Encode(lines[i]), " ")) << lines[i];
  }

  // Pieces, from standard input to standard output.
  const Result pieces =
      Run(absl::StrCat("encode --model=", model, " --output_format=piece"), dir_ + "/in.txt");
  ASSERT_EQ(pieces.exit_code, 0) << pieces.err;
  const std::vector<std::string> piece_lines = absl::StrSplit(pieces.out, '\n');
  ASSERT_EQ(piece_lines.size(), lines.size() + 1);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> expected;
    for (int32_t id : (*tok)->Encode(lines[i])) expected.push_back((*tok)->IdToPiece(id));
    EXPECT_EQ(piece_lines[i], absl::StrJoin(expected, " "));
  }
}

INSTANTIATE_TEST_SUITE_P(Binaries, TokenizerCliTest,
                         ::testing::Values(GMLP_BINARY_DIR "/tokenizer_cli",
                                           GMLP_BINARY_DIR "/gmlp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.index == 0 ? std::string("tokenizer_cli")
                                                  : std::string("gmlp");
                         });

}  // namespace
}  // namespace gmlp::tokenizer
