// Tokenizer and Train through the SentencePiece shim: special ids, round trips, word starts,
// checksums, spm_encode parity, sampling, thread safety and the errors for bad models and corpora.
#include "tokenizer/tokenizer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "gtest/gtest.h"
#include "tests/tokenizer_test_util.h"

namespace gmlp::tokenizer {
namespace {

using testing::GeneratedCorpus;
using testing::MakeTempDir;
using testing::ReadBytes;
using testing::WriteBytes;
using testing::XzCompress;

const char* const kSamples[] = {
    "the anting ofer is at the re.",
    "Hello world, this is a test of the tokenizer.",
    "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC z\xC3\xBC"
    "rich 42",  // unseen characters: byte fallback
    "a",
};

// One unigram model trained once for the whole suite (a few seconds).
class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("tokenizer_test"));
    corpus_ = new std::string(*dir_ + "/corpus.txt");
    WriteBytes(*corpus_, GeneratedCorpus(6000));
    TrainOptions options;
    options.inputs = {*corpus_};
    options.model_prefix = *dir_ + "/models/uni";
    options.vocab_size = 600;
    options.num_threads = 2;
    stats_ = new TrainStats;
    const absl::Status st = Train(options, stats_);
    ASSERT_TRUE(st.ok()) << st;
    auto tok = Tokenizer::Load(options.model_prefix + ".model");
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = tok->release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
    testing::RemoveTempDir(*dir_);
  }
  void SetUp() override { ASSERT_NE(tok_, nullptr) << "training the suite's model failed"; }

  static std::string* dir_;
  static std::string* corpus_;
  static TrainStats* stats_;
  static Tokenizer* tok_;
};
std::string* TokenizerTest::dir_ = nullptr;
std::string* TokenizerTest::corpus_ = nullptr;
TrainStats* TokenizerTest::stats_ = nullptr;
Tokenizer* TokenizerTest::tok_ = nullptr;

TEST_F(TokenizerTest, TrainWritesModelAndVocabAndNoTemporaries) {
  EXPECT_TRUE(PathExists(*dir_ + "/models/uni.model"));
  EXPECT_TRUE(PathExists(*dir_ + "/models/uni.vocab"));
  auto files = ExpandGlobs({*dir_ + "/models/*"});
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 2u);
  EXPECT_EQ(stats_->files, 1);
  EXPECT_EQ(stats_->sentences, 6000);
  EXPECT_EQ(stats_->sampled_sentences, 6000);
  EXPECT_EQ(stats_->documents, 1200);
  // The .vocab lists the pieces in id order, special tokens first.
  const std::vector<std::string> vocab_lines =
      absl::StrSplit(ReadBytes(*dir_ + "/models/uni.vocab"), '\n', absl::SkipEmpty());
  ASSERT_EQ(vocab_lines.size(), 600u);
  EXPECT_EQ(vocab_lines[0].substr(0, 6), "[PAD]\t");
  EXPECT_EQ(vocab_lines[4].substr(0, 7), "[MASK]\t");
}

TEST_F(TokenizerTest, SpecialTokensHaveTheirFixedIds) {
  EXPECT_EQ(tok_->vocab_size(), 600);
  EXPECT_EQ(tok_->IdToPiece(kPadId), "[PAD]");
  EXPECT_EQ(tok_->IdToPiece(kUnkId), "[UNK]");
  EXPECT_EQ(tok_->IdToPiece(kClsId), "[CLS]");
  EXPECT_EQ(tok_->IdToPiece(kSepId), "[SEP]");
  EXPECT_EQ(tok_->IdToPiece(kMaskId), "[MASK]");
  // Control symbols never come out of text, even when the text spells them.
  for (int32_t id : tok_->Encode("[CLS] a [MASK] b [SEP] [PAD]")) {
    EXPECT_GE(id, kNumSpecialIds) << tok_->IdToPiece(id);
  }
  // Byte fallback is on by default: unseen characters become byte pieces, never [UNK].
  for (int32_t id : tok_->Encode(kSamples[2])) EXPECT_NE(id, kUnkId);
}

TEST_F(TokenizerTest, EncodeDecodeRoundTrips) {
  for (const char* s : kSamples) {
    const std::vector<int32_t> ids = tok_->Encode(s);
    ASSERT_FALSE(ids.empty()) << s;
    for (int32_t id : ids) {
      EXPECT_GE(id, 0);
      EXPECT_LT(id, tok_->vocab_size());
    }
    EXPECT_EQ(tok_->Decode(ids), s);
  }
  // Encode appends; special ids decode to nothing.
  std::vector<int32_t> ids = {kClsId};
  ASSERT_TRUE(tok_->Encode("the re", &ids).ok());
  EXPECT_EQ(ids.front(), kClsId);
  ids.push_back(kSepId);
  EXPECT_EQ(tok_->Decode(ids), "the re");
  EXPECT_TRUE(tok_->Encode("").empty());
}

TEST_F(TokenizerTest, WordStartsMarkEachWordsFirstPiece) {
  const std::string text = "the anting ofer tiveco ststst is ring";  // 7 words
  const std::vector<int32_t> ids = tok_->Encode(text);
  int starts = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool marked = tok_->IdToPiece(ids[i]).rfind("\xE2\x96\x81", 0) == 0;
    EXPECT_EQ(tok_->IsWordStart(ids[i]), marked) << tok_->IdToPiece(ids[i]);
    starts += tok_->IsWordStart(ids[i]);
  }
  EXPECT_EQ(starts, 7);
  EXPECT_TRUE(tok_->IsWordStart(ids[0]));
  for (int32_t id = 0; id < kNumSpecialIds; ++id) EXPECT_FALSE(tok_->IsWordStart(id));
  EXPECT_FALSE(tok_->IsWordStart(-1));
  EXPECT_FALSE(tok_->IsWordStart(tok_->vocab_size()));
}

TEST_F(TokenizerTest, ChecksumIsTheModelFilesAndStable) {
  auto expected = FileChecksum(tok_->model_path());
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(tok_->checksum(), *expected);
  EXPECT_EQ(tok_->checksum().rfind("crc32:", 0), 0u);
  auto again = Tokenizer::Load(tok_->model_path());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->checksum(), tok_->checksum());
}

TEST_F(TokenizerTest, TrainingIsDeterministicWhereverTheModelIsWritten) {
  TrainOptions options;
  options.inputs = {*corpus_};
  options.model_prefix = *dir_ + "/again/other_name";
  options.vocab_size = 600;
  options.num_threads = 2;
  ASSERT_TRUE(Train(options).ok());
  EXPECT_TRUE(ReadBytes(options.model_prefix + ".model") == ReadBytes(tok_->model_path()));
  EXPECT_EQ(ReadBytes(options.model_prefix + ".vocab"), ReadBytes(*dir_ + "/models/uni.vocab"));
}

// Lines where SentencePiece's normalizer or the word cache could go wrong.
const char* const kTrickyLines[] = {
    "  leading  and   repeated   spaces  ",
    "tab\tseparated\twords and a trailing tab\t",
    // A hex escape runs on through every hex digit ("\xA0b" is one escape): the literals are split
    // where a letter a-f follows one.
    "no\xC2\xA0"
    "break\xC2\xA0"
    "spaces (NBSP) between words",
    "zero\xE2\x80\x8Bwidth space \xE2\x80\x8B alone",
    "\xCC\x81"
    "combining accent at the start, and e\xCC\x81 composed",
    "\xEF\xBC\xA6\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C width ASCII\xEF\xBC\x81 NFKC maps",
    "ideographic\xE3\x80\x80space and \xE3\x8D\xBF ligature",
    "the the the the the the the the the the the the the the the the the",
    "a-very-long-hyphenated-word-that-is-longer-than-thirty-two-bytes and short ones",
    "symbols: $5.00, 100%, #tag, @user, <html>, {json}, [brackets], ~tilde~",
    "\xE2\x96\x81literal word-boundary mark\xE2\x96\x81 in text",
    "[MASK] [CLS] [SEP] [PAD] [UNK] spelled out",
    // Repeated characters: several arrangements of the same pieces score alike (ties).
    "at 1.666\xC2\xA0"
    "AU, 1.666 AU, 0.000, T111, aaaa, tititi, 6666666, 121212 and ststst",
    "",
    " ",
};

// The text to compare on: the samples, the tricky lines, the suite's corpus and, when the shared
// data is present, Moby-Dick (many characters this model lacks: byte fallback everywhere).
std::string ParityText(const std::string& corpus) {
  std::string input;
  for (const char* s : kSamples) absl::StrAppend(&input, s, "\n");
  for (const char* s : kTrickyLines) absl::StrAppend(&input, s, "\n");
  const std::string head = ReadBytes(corpus).substr(0, 20000);
  input += head.substr(0, head.rfind('\n') + 1);
  input += ReadBytes(GMLP_SOURCE_DIR "/../shared/data/corpus/moby-dick/moby_dick.txt");
  if (!input.empty() && input.back() != '\n') input += '\n';
  return input;
}

TEST_F(TokenizerTest, CachedEncodeGivesSentencePiecesIds) {
  const std::vector<std::string> lines = absl::StrSplit(ParityText(*corpus_), '\n');
  int64_t differing = 0, ids = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the second pass is served mostly from the cache
    for (const std::string& line : lines) {
      std::vector<int32_t> cached, direct;
      ASSERT_TRUE(tok_->Encode(line, &cached).ok());
      ASSERT_TRUE(tok_->EncodeUncached(line, &direct).ok());
      ids += static_cast<int64_t>(direct.size());
      if (cached != direct) {
        ++differing;
        ADD_FAILURE() << "line: " << line;
      }
      if (differing > 5) return;
    }
  }
  EXPECT_GT(ids, 1000);
}

TEST_F(TokenizerTest, MatchesSpmEncode) {
  if (::access("/usr/bin/spm_encode", X_OK) != 0) GTEST_SKIP() << "spm_encode is not installed";
  std::string input = ParityText(*corpus_);
  const std::string in_path = *dir_ + "/parity_in.txt", out_path = *dir_ + "/parity_out.txt";
  WriteBytes(in_path, input);
  const std::string cmd = absl::StrCat("/usr/bin/spm_encode --model=", tok_->model_path(),
                                       " --output_format=id < ", in_path, " > ", out_path);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::vector<std::string> in_lines = absl::StrSplit(input, '\n');
  const std::vector<std::string> out_lines = absl::StrSplit(ReadBytes(out_path), '\n');
  ASSERT_EQ(in_lines.size(), out_lines.size());
  int compared = 0, mismatches = 0;
  for (size_t i = 0; i < in_lines.size(); ++i) {
    std::vector<std::string> ours;
    for (int32_t id : tok_->Encode(in_lines[i])) ours.push_back(absl::StrCat(id));
    if (absl::StrJoin(ours, " ") != out_lines[i]) {
      ADD_FAILURE() << "line " << i << ": " << in_lines[i]
                    << "\n ours: " << absl::StrJoin(ours, " ") << "\n spm_encode: " << out_lines[i];
      if (++mismatches > 5) break;
    }
    ++compared;
  }
  EXPECT_GT(compared, 100);
}

TEST_F(TokenizerTest, ConcurrentEncodesAgree) {
  const std::string text = ReadBytes(*corpus_).substr(0, 50000);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  std::vector<std::vector<int32_t>> expected;
  for (const std::string& l : lines) expected.push_back(tok_->Encode(l));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < lines.size(); ++i) {
          if (tok_->Encode(lines[i]) != expected[i]) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST_F(TokenizerTest, BpeModelHasTheSameSpecialIds) {
  TrainOptions options;
  options.inputs = {*corpus_};
  options.model_prefix = *dir_ + "/bpe/m";
  options.model_type = "bpe";
  options.vocab_size = 400;
  options.byte_fallback = false;
  options.num_threads = 2;
  ASSERT_TRUE(Train(options).ok());
  auto tok = Tokenizer::Load(options.model_prefix + ".model");
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->vocab_size(), 400);
  for (int32_t id = 0; id < kNumSpecialIds; ++id)
    EXPECT_EQ((*tok)->IdToPiece(id), tok_->IdToPiece(id));
  EXPECT_EQ((*tok)->Decode((*tok)->Encode(kSamples[0])), kSamples[0]);
  // Without byte fallback an unseen character is [UNK].
  const std::vector<int32_t> ids = (*tok)->Encode("\xE6\x97\xA5");
  EXPECT_NE(std::find(ids.begin(), ids.end(), kUnkId), ids.end());
}

TEST_F(TokenizerTest, SamplesInputSentenceSizeFromCompressedWikiExtractorInput) {
  // The same corpus as WikiExtractor documents in an .xz file: titles must not be trained on.
  std::string wiki;
  const std::vector<std::string> lines =
      absl::StrSplit(ReadBytes(*corpus_), '\n', absl::SkipEmpty());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i % 10 == 0) {
      if (i > 0) wiki += "</doc>\n";
      absl::StrAppend(&wiki, "<doc id=\"", i, "\" title=\"QQQZ", i, "\">\nQQQZ", i, "\n\n");
    }
    absl::StrAppend(&wiki, lines[i], "\n");
  }
  wiki += "</doc>\n";
  const std::string path = *dir_ + "/wiki.xz";
  WriteBytes(path, XzCompress(wiki));
  TrainOptions options;
  options.inputs = {path};
  options.model_prefix = *dir_ + "/wiki/m";
  options.vocab_size = 500;
  options.input_sentence_size = 3000;
  options.num_threads = 2;
  TrainStats stats;
  const absl::Status st = Train(options, &stats);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(stats.sentences, 6000);
  EXPECT_EQ(stats.sampled_sentences, 3000);
  EXPECT_EQ(stats.documents, 600);
  auto tok = Tokenizer::Load(options.model_prefix + ".model");
  ASSERT_TRUE(tok.ok());
  // 'Q' appears only in titles: had they been trained on, it would be a piece of its own.
  for (int32_t id = kNumSpecialIds; id < (*tok)->vocab_size(); ++id) {
    EXPECT_EQ((*tok)->IdToPiece(id).find('Q'), std::string::npos) << (*tok)->IdToPiece(id);
  }
}

TEST(TokenizerErrors, MissingModelIsNotFoundNamingIt) {
  auto tok = Tokenizer::Load("/nonexistent/dir/m.model");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("/nonexistent/dir/m.model"), absl::string_view::npos);
}

TEST(TokenizerErrors, GarbageModelIsInvalidArgument) {
  const std::string dir = MakeTempDir("tokenizer_errors");
  WriteBytes(dir + "/bad.model", "this is not a protobuf");
  auto tok = Tokenizer::Load(dir + "/bad.model");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument) << tok.status();
  EXPECT_NE(tok.status().message().find(dir + "/bad.model"), absl::string_view::npos);
  testing::RemoveTempDir(dir);
}

TEST(TokenizerErrors, ModelWithOtherSpecialIdsIsRejected) {
  if (::access("/usr/bin/spm_train", X_OK) != 0) GTEST_SKIP() << "spm_train is not installed";
  const std::string dir = MakeTempDir("tokenizer_errors");
  WriteBytes(dir + "/c.txt", GeneratedCorpus(500));
  const std::string cmd =
      absl::StrCat("/usr/bin/spm_train --input=", dir, "/c.txt --model_prefix=", dir,
                   "/plain --vocab_size=200 --minloglevel=2 2>/dev/null");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto tok = Tokenizer::Load(dir + "/plain.model");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(tok.status().message().find("id 0 is '<unk>'"), absl::string_view::npos)
      << tok.status();
  testing::RemoveTempDir(dir);
}

TEST(TrainErrors, BadOptionsAndInputsFailWithoutLeavingFiles) {
  const std::string dir = MakeTempDir("train_errors");
  WriteBytes(dir + "/empty.txt", "\n\n<doc id=\"1\">\ntitle only\n</doc>\n");
  WriteBytes(dir + "/tiny.txt", "just a few words here\n");
  TrainOptions base;
  base.model_prefix = dir + "/out/m";
  base.num_threads = 1;

  TrainOptions missing = base;
  missing.inputs = {dir + "/missing.txt"};
  absl::Status st = Train(missing);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find(dir + "/missing.txt"), absl::string_view::npos) << st;

  TrainOptions empty = base;
  empty.inputs = {dir + "/empty.txt"};
  st = Train(empty);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("has no text"), absl::string_view::npos) << st;

  TrainOptions small_vocab = base;
  small_vocab.inputs = {dir + "/tiny.txt"};
  small_vocab.vocab_size = 100;  // < 5 + 256 with byte fallback
  st = Train(small_vocab);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_NE(st.message().find("vocab_size"), absl::string_view::npos) << st;

  TrainOptions bad_type = base;
  bad_type.inputs = {dir + "/tiny.txt"};
  bad_type.model_type = "word";
  EXPECT_EQ(Train(bad_type).code(), absl::StatusCode::kInvalidArgument);

  // Too large a vocabulary for four words: SentencePiece itself refuses.
  TrainOptions too_big = base;
  too_big.inputs = {dir + "/tiny.txt"};
  too_big.vocab_size = 5000;
  st = Train(too_big);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("vocab_size"), absl::string_view::npos) << st;

  // Nothing half-written anywhere.
  auto left = ExpandGlobs({dir + "/out/*"});
  EXPECT_FALSE(left.ok() && !left->empty()) << (left.ok() ? absl::StrJoin(*left, ", ") : "");
  testing::RemoveTempDir(dir);
}

}  // namespace
}  // namespace gmlp::tokenizer
