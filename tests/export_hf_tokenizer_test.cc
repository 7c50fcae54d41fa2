// WriteHfTokenizerFiles against the real thing: unigram and BPE models trained on a slice of the
// shared Wikipedia extract, exported, loaded by transformers' AutoTokenizer in torch 2.11's venv
// (tests/python/hf_tokenizer_check.py), and every id compared with gmlp's own (Tokenizer::Encode
// and finetune::PackExample) on SST-2 dev sentences, NLI pairs and hard cases. Also: the files
// themselves, malformed and refused models.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "export/hf_tokenizer.h"
#include "finetune/encode.h"
#include "gtest/gtest.h"
#include "tests/file_test_util.h"
#include "tests/subprocess_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::exporter {
namespace {

using gmlp::testing::MakeTempDir;
using gmlp::testing::ReadBytes;
using gmlp::testing::RemoveTempDir;
using gmlp::testing::WriteBytes;
using nlohmann::json;

const std::string kData = GMLP_SOURCE_DIR "/../shared/data";
const std::string kWiki = kData + "/corpus/wikipedia-en/enwiki_extract.txt.xz";
const std::string kCheckScript = GMLP_SOURCE_DIR "/tests/python/hf_tokenizer_check.py";

// Hard cases for the normalizer, the Metaspace emulation and byte fallback.
const char* const kHardCases[] = {
    "",
    " ",
    "   ",
    "\t",
    "a",
    "  leading  and   repeated   spaces  ",
    "trailing space ",
    "tab\tseparated\twords and a trailing tab\t",
    "\ttab first",
    "new\nline and\r\nwindows line end",
    "no\xC2\xA0"
    "break\xC2\xA0spaces (NBSP)",
    "zero\xE2\x80\x8Bwidth space \xE2\x80\x8B alone",
    "\xCC\x81"
    "combining accent at the start, and e\xCC\x81 composed",
    "caf\xC3\xA9 na\xC3\xAFve \xC3\x86r\xC3\xB8sk\xC3\xB8"
    "bing Stra\xC3\x9F"
    "e",
    // Full-width letters and punctuation, the ideographic space: NFKC makes them ASCII.
    "\xEF\xBC\xA6\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C width ASCII\xEF\xBC\x81",
    "\xEF\xBC\xA8\xEF\xBD\x85\xEF\xBD\x8C\xEF\xBD\x8C\xEF\xBD\x8F\xE3\x80\x80\xEF\xBC\xB7\xEF\xBD"
    "\x8F",
    // Ligatures (fi, ff, ffl, st) and compatibility characters: NFKC splits them.
    "\xEF\xAC\x81nance of\xEF\xAC\x81"
    "ce \xEF\xAC\x80 \xEF\xAC\x84 \xEF\xAC\x86",
    "\xE2\x91\xA0\xE2\x91\xA1 \xE3\x88\xB1 \xC2\xBD x\xC2\xB2 \xE3\x8D\xBF \xE2\x84\xA2",
    // CJK and emoji: characters no 1000-piece model has, so byte pieces.
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83"
    "\x88 "
    "\xE4\xB8\xAD\xE6\x96\x87",
    "emoji \xF0\x9F\x98\x80\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD \xF0\x9F\x87\xA9\xF0\x9F\x87\xAA and "
    "\xE2\x9D\xA4\xEF\xB8\x8F",
    "\xE2\x96\x81literal word-boundary mark\xE2\x96\x81 in text",
    "\xE2\x96\x81",
    "\xE2\x96\x81\xE2\x96\x81x",
    "soft\xC2\xADhyphen, BOM x\xEF\xBB\xBFy, line\xE2\x80\xA8separator",
    "symbols: $5.00, 100%, #tag, @user, <html>, {json}, ~tilde~ `code`",
    "the the the the the the the the the the the the the the the the the",
    "a-very-long-hyphenated-word-that-is-longer-than-thirty-two-bytes",
};

// Text that spells a special token or a byte piece: the classes the header documents (see
// SpelledSpecialTokensAndBytePieces), kept out of the id comparison.
bool SpellsSpecialOrBytePiece(const std::string& s) {
  for (const char* p : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<0x"}) {
    if (s.find(p) != std::string::npos) return true;
  }
  return false;
}

// The texts: SST-2 dev sentences, NLI pairs (XNLI-en dev, the MNLI and SNLI subsets' dev), the
// hard cases alone and in pairs.
struct Inputs {
  std::vector<std::string> single;  // the last std::size(kSpelled) are kSpelled
  std::vector<std::pair<std::string, std::string>> pairs;
};

// Text spelling special tokens or a byte piece (SpelledSpecialTokensAndBytePieces).
const char* const kSpelled[] = {"Paris is the [MASK] of France.", "[CLS] a [SEP] b [PAD][UNK]",
                                "a byte piece: <0x41> and <0xE6>"};

Inputs ReadInputs() {
  Inputs in;
  // SST-2: `sentence<TAB>label`, the sentence with GLUE's trailing space.
  const std::vector<std::string> sst =
      absl::StrSplit(ReadBytes(kData + "/glue/SST-2/dev.tsv"), '\n', absl::SkipEmpty());
  for (size_t i = 1; i < sst.size(); ++i) {
    in.single.push_back(std::vector<std::string>(absl::StrSplit(sst[i], '\t'))[0]);
  }
  // XNLI-en: `genre<TAB>label<TAB>sentence1<TAB>sentence2`.
  const std::vector<std::string> xnli =
      absl::StrSplit(ReadBytes(kData + "/nli/XNLI-en/dev.tsv"), '\n', absl::SkipEmpty());
  for (size_t i = 1; i < xnli.size() && i <= 200; ++i) {
    const std::vector<std::string> f = absl::StrSplit(xnli[i], '\t');
    if (f.size() >= 4) in.pairs.emplace_back(f[2], f[3]);
  }
  for (const char* subset : {"MNLI-subset", "SNLI-subset"}) {
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(
        ReadBytes(kData + "/nli/" + subset + "/dev.json"), nullptr, /*allow_exceptions=*/false);
    int n = 0;
    for (const auto& [key, ex] : j.items()) {
      if (n++ == 150) break;
      in.pairs.emplace_back(ex.value("text_a", ""), ex.value("text_b", ""));
    }
  }
  constexpr size_t kNumHard = std::size(kHardCases);
  for (size_t i = 0; i < kNumHard; ++i) {
    in.single.push_back(kHardCases[i]);
    in.pairs.emplace_back(kHardCases[i], kHardCases[(i + 1) % kNumHard]);  // "" on both sides
    in.pairs.emplace_back("A plain premise.", kHardCases[i]);
  }
  for (const char* s : kSpelled) in.single.push_back(s);
  return in;
}

// One trained model of each type, its exported folder, and transformers' encodings of Inputs.
struct Exported {
  std::string type;  // unigram | bpe
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::string hf_dir;
  std::vector<float> scores;  // by id, from the exported tokenizer.json (unigram)
  std::vector<json> hf;       // the script's lines after its header: singles, then pairs
  json header;
};

class HfTokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir("export_hf_tokenizer"));
    if (!PathExists(kWiki)) return;  // the tests skip, naming the file
    inputs_ = new Inputs(ReadInputs());
    for (const char* type : {"unigram", "bpe"}) {
      auto* e = new Exported;
      e->type = type;
      (*type == 'u' ? unigram_ : bpe_) = e;
      // 1000 pieces from 5,000 of the extract's lines (about 0.5 MB).
      tokenizer::TrainOptions t;
      t.inputs = {kWiki};
      t.model_prefix = JoinPath(*dir_, type);
      t.model_type = type;
      t.vocab_size = 1000;
      t.input_sentence_size = 5000;
      t.num_threads = 2;
      const absl::Status trained = tokenizer::Train(t);
      ASSERT_TRUE(trained.ok()) << trained;
      auto tok = tokenizer::Tokenizer::Load(t.model_prefix + ".model");
      ASSERT_TRUE(tok.ok()) << tok.status();
      e->tok = std::move(*tok);
      e->hf_dir = JoinPath(*dir_, absl::StrCat("hf_", type));
      ASSERT_TRUE(MakeDirs(e->hf_dir).ok());
      const absl::Status written = WriteHfTokenizerFiles(t.model_prefix + ".model", e->hf_dir, 256);
      ASSERT_TRUE(written.ok()) << written;
      const json tj = json::parse(ReadBytes(JoinPath(e->hf_dir, "tokenizer.json")));
      if (tj["model"]["type"] == "Unigram") {
        for (const json& v : tj["model"]["vocab"]) e->scores.push_back(v[1].get<float>());
      }
    }
  }
  static void TearDownTestSuite() {
    delete unigram_;
    delete bpe_;
    delete inputs_;
    RemoveTempDir(*dir_);
    delete dir_;
  }

  void SetUp() override {
    if (!PathExists(kWiki)) GTEST_SKIP() << "no shared data: " << kWiki << " is missing";
    ASSERT_NE(bpe_, nullptr) << "training or exporting the suite's models failed";
    ASSERT_NE(bpe_->tok, nullptr) << "training or exporting the suite's models failed";
  }

  // Runs hf_tokenizer_check.py on `e`'s folder with the suite's inputs (once per model).
  static void RunTransformers(Exported* e) {
    if (!e->hf.empty()) return;
    const std::string python = gmlp::testing::TorchVenvTool("python");
    if (python.empty()) {
      GTEST_SKIP() << "no torch 2.11 venv at " << gmlp::testing::TorchVenvDir()
                   << " (bash scripts/setup.sh --cuda makes it, bash scripts/python_env.sh adds "
                      "transformers; or set GMLP_TORCH_VENV)";
    }
    json input = {{"single", inputs_->single}, {"pairs", json::array()}};
    for (const auto& [a, b] : inputs_->pairs) input["pairs"].push_back({a, b});
    const std::string in = JoinPath(*dir_, e->type + "_in.json");
    const std::string out = JoinPath(*dir_, e->type + "_out.jsonl");
    const std::string log = JoinPath(*dir_, e->type + "_python.log");
    WriteBytes(in, input.dump());
    gmlp::testing::ChildOptions options;
    options.log = log;
    const pid_t pid =
        gmlp::testing::StartProcess({python, kCheckScript, e->hf_dir, in, out}, options);
    const std::optional<int> status = gmlp::testing::WaitAtMost(pid, std::chrono::seconds(300));
    ASSERT_TRUE(status.has_value()) << "hf_tokenizer_check.py ran over 300 s";
    ASSERT_EQ(gmlp::testing::ExitCode(*status), 0)
        << "hf_tokenizer_check.py failed (is transformers installed in "
        << gmlp::testing::TorchVenvDir() << "? bash scripts/python_env.sh):\n"
        << gmlp::testing::LogTail(log);
    std::vector<json> lines = gmlp::testing::JsonRecords(out);
    ASSERT_EQ(lines.size(), 1 + inputs_->single.size() + inputs_->pairs.size());
    e->header = lines[0];
    e->hf.assign(lines.begin() + 1, lines.end());
  }

  static std::string* dir_;
  static Inputs* inputs_;
  static Exported* unigram_;
  static Exported* bpe_;
};
std::string* HfTokenizerTest::dir_ = nullptr;
Inputs* HfTokenizerTest::inputs_ = nullptr;
Exported* HfTokenizerTest::unigram_ = nullptr;
Exported* HfTokenizerTest::bpe_ = nullptr;

// The pieces of `ids`, space-separated, for failure messages.
std::string Pieces(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::vector<std::string> pieces;
  for (int32_t id : ids) pieces.push_back(tok.IdToPiece(id));
  return absl::StrJoin(pieces, " ");
}

// A Unigram tie (the header's first class): both segmentations spell the same text and score the
// same up to float32 rounding of SentencePiece's running sum (each addition off by at most 2^-24
// of the sum, on either path). Exact ties (the usual case) differ by 0: these float scores add up
// exactly in double.
bool IsUnigramTie(const Exported& e, const std::vector<int32_t>& gmlp,
                  const std::vector<int32_t>& hf) {
  if (e.scores.empty()) return false;
  std::string text_gmlp, text_hf;
  double score_gmlp = 0, score_hf = 0;
  for (int32_t id : gmlp) {
    text_gmlp += e.tok->IdToPiece(id);
    score_gmlp += e.scores.at(id);
  }
  for (int32_t id : hf) {
    if (id < 0 || id >= static_cast<int32_t>(e.scores.size())) return false;
    text_hf += e.tok->IdToPiece(id);
    score_hf += e.scores.at(id);
  }
  const double bound = 2.0 * static_cast<double>(std::max(gmlp.size(), hf.size())) *
                       std::abs(score_gmlp) * std::ldexp(1.0, -24);
  return text_gmlp == text_hf && std::abs(score_gmlp - score_hf) <= bound;
}

// Compares transformers' encodings with gmlp's: every id and type id, or a Unigram tie.
void ExpectSameIds(const Exported& e, const Inputs& in) {
  int64_t compared = 0, ties = 0, skipped = 0;
  auto check = [&](const json& hf, const std::string& a, const std::string* b,
                   const std::string& what) {
    if (SpellsSpecialOrBytePiece(a) || (b != nullptr && SpellsSpecialOrBytePiece(*b))) {
      ++skipped;
      return;
    }
    ++compared;
    const std::vector<int32_t> ids_a = e.tok->Encode(a);
    const std::vector<int32_t> ids_b = b != nullptr ? e.tok->Encode(*b) : std::vector<int32_t>{};
    const finetune::EncodedExample want =
        finetune::PackExample(ids_a, ids_b, b != nullptr, /*max_len=*/1 << 30);
    const auto got_ids = hf["input_ids"].get<std::vector<int32_t>>();
    const auto got_types = hf["token_type_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(hf["attention_mask"], json(std::vector<int>(got_ids.size(), 1))) << what;
    if (got_ids == want.ids && got_types == want.segments) {
      if (b == nullptr) {
        EXPECT_EQ(hf["decoded"].get<std::string>(), e.tok->Decode(ids_a)) << what;
      }
      return;
    }
    // A tie inside a or b: the layout (specials, type ids) must still be gmlp's.
    const size_t sep =
        std::find(got_ids.begin() + 1, got_ids.end(), tokenizer::kSepId) - got_ids.begin();
    const std::vector<int32_t> got_a(got_ids.begin() + 1, got_ids.begin() + sep);
    const std::vector<int32_t> got_b(got_ids.begin() + std::min(sep + 1, got_ids.size()),
                                     got_ids.end() - (b != nullptr ? 1 : 0));
    std::vector<int32_t> got_types_want(sep + 1, 0);
    if (b != nullptr) got_types_want.resize(got_ids.size(), 1);
    const bool tie = got_ids.front() == tokenizer::kClsId && got_ids.back() == tokenizer::kSepId &&
                     got_types == got_types_want &&
                     (got_a == ids_a || IsUnigramTie(e, ids_a, got_a)) &&
                     (got_b == ids_b || IsUnigramTie(e, ids_b, got_b));
    if (tie) {
      if (++ties <= 5) {
        std::printf("%s tie in %s\n  gmlp: %s\n  hf:   %s\n", e.type.c_str(), what.c_str(),
                    Pieces(*e.tok, want.ids).c_str(), Pieces(*e.tok, got_ids).c_str());
      }
      return;
    }
    ADD_FAILURE() << e.type << " " << what
                  << ": transformers' ids differ from gmlp's\n  gmlp: " << Pieces(*e.tok, want.ids)
                  << "\n  hf:   " << Pieces(*e.tok, got_ids)
                  << "\n  type ids: " << json(want.segments) << " vs " << json(got_types);
  };
  for (size_t i = 0; i < in.single.size(); ++i) {
    check(e.hf[i], in.single[i], nullptr, absl::StrCat("sentence ", i, " '", in.single[i], "'"));
  }
  for (size_t i = 0; i < in.pairs.size(); ++i) {
    const auto& [a, b] = in.pairs[i];
    check(e.hf[in.single.size() + i], a, &b, absl::StrCat("pair ", i, " '", a, "' / '", b, "'"));
  }
  std::printf(
      "%s: %lld sentences and pairs compared (%zu sentences, %zu pairs), %lld Unigram "
      "ties, %lld spelling a special token or byte piece left out\n",
      e.type.c_str(), static_cast<long long>(compared), in.single.size(), in.pairs.size(),
      static_cast<long long>(ties), static_cast<long long>(skipped));
  ::testing::Test::RecordProperty(e.type + "_compared", static_cast<int>(compared));
  ::testing::Test::RecordProperty(e.type + "_ties", static_cast<int>(ties));
  EXPECT_GE(compared, 1000);
  EXPECT_LE(ties * 100, compared) << "over 1% ties: more than float rounding at work";
  if (e.type == "bpe") {
    EXPECT_EQ(ties, 0) << "BPE has no ties";
  }
}

TEST_F(HfTokenizerTest, UnigramGivesGmlpsIdsInTransformers) {
  RunTransformers(unigram_);
  if (IsSkipped() || HasFatalFailure()) return;
  EXPECT_EQ(unigram_->header["is_fast"], true) << unigram_->header;
  std::printf("%s\n", unigram_->header.dump().c_str());
  ExpectSameIds(*unigram_, *inputs_);
}

TEST_F(HfTokenizerTest, BpeGivesGmlpsIdsInTransformers) {
  RunTransformers(bpe_);
  if (IsSkipped() || HasFatalFailure()) return;
  ExpectSameIds(*bpe_, *inputs_);
}

// The header's second class, pinned down: transformers makes a text's "[MASK]" (and the other
// specials) the special token, as for any BERT tokenizer there, where gmlp encodes the
// characters; the stretches around it are encoded each on its own, as gmlp would. A byte piece
// spelled out is that piece in the Unigram model only.
TEST_F(HfTokenizerTest, SpelledSpecialTokensAndBytePieces) {
  for (Exported* e : {unigram_, bpe_}) {
    RunTransformers(e);
    if (IsSkipped() || HasFatalFailure()) return;
    const size_t first = inputs_->single.size() - std::size(kSpelled);
    auto hf_ids = [&](size_t k) {
      return e->hf[first + k]["input_ids"].get<std::vector<int32_t>>();
    };
    auto enc = [&](const char* s) { return e->tok->Encode(s); };
    std::vector<int32_t> want = {tokenizer::kClsId};
    for (const auto& part : {enc("Paris is the "), std::vector<int32_t>{tokenizer::kMaskId},
                             enc(" of France."), std::vector<int32_t>{tokenizer::kSepId}}) {
      want.insert(want.end(), part.begin(), part.end());
    }
    EXPECT_EQ(hf_ids(0), want) << e->type;
    for (int32_t id : e->tok->Encode(kSpelled[0])) EXPECT_GE(id, tokenizer::kNumSpecialIds);

    want = {tokenizer::kClsId, tokenizer::kClsId};
    for (const auto& part :
         {enc(" a "), std::vector<int32_t>{tokenizer::kSepId}, enc(" b "),
          std::vector<int32_t>{tokenizer::kPadId, tokenizer::kUnkId, tokenizer::kSepId}}) {
      want.insert(want.end(), part.begin(), part.end());
    }
    EXPECT_EQ(hf_ids(1), want) << e->type;

    const std::vector<int32_t> bytes = hf_ids(2);
    const int32_t byte_0x41 = tokenizer::kNumSpecialIds + 0x41;  // <0x41>: 256 byte pieces follow
    ASSERT_EQ(e->tok->IdToPiece(byte_0x41), "<0x41>");
    std::vector<int32_t> gmlp = enc(kSpelled[2]);
    gmlp.insert(gmlp.begin(), tokenizer::kClsId);
    gmlp.push_back(tokenizer::kSepId);
    if (e->type == "bpe") {
      EXPECT_EQ(bytes, gmlp) << "BPE makes byte pieces only for characters it lacks";
    } else {
      EXPECT_NE(std::find(bytes.begin(), bytes.end(), byte_0x41), bytes.end());
      EXPECT_EQ(std::find(gmlp.begin(), gmlp.end(), byte_0x41), gmlp.end());
    }
  }
}

TEST_F(HfTokenizerTest, FilesHoldTheModelAndTheConfiguration) {
  for (const Exported* e : {unigram_, bpe_}) {
    EXPECT_EQ(ListDir(e->hf_dir),
              (std::vector<std::string>{"special_tokens_map.json", "tokenizer.json",
                                        "tokenizer_config.json"}))
        << "no temporaries left";
    const json tj = json::parse(ReadBytes(JoinPath(e->hf_dir, "tokenizer.json")));
    const json& model = tj["model"];
    EXPECT_EQ(model["type"], e->type == "bpe" ? "BPE" : "Unigram");
    EXPECT_EQ(model["byte_fallback"], true);
    ASSERT_EQ(model["vocab"].size(), 1000u);
    // The .vocab beside the .model: piece TAB score (6 digits) by id.
    std::string vocab_path = e->tok->model_path();
    vocab_path.replace(vocab_path.size() - 6, 6, ".vocab");
    const std::vector<std::string> vocab =
        absl::StrSplit(ReadBytes(vocab_path), '\n', absl::SkipEmpty());
    ASSERT_EQ(vocab.size(), 1000u);
    for (int32_t id = 0; id < 1000; ++id) {
      const std::string piece = e->tok->IdToPiece(id);
      if (e->type == "bpe") {
        EXPECT_EQ(model["vocab"][piece], id);
      } else {
        EXPECT_EQ(model["vocab"][id][0], piece);
        const double score = std::stod(vocab[id].substr(vocab[id].find('\t') + 1));
        EXPECT_NEAR(model["vocab"][id][1].get<double>(), score, 1e-5 * (1 + std::abs(score)));
      }
    }
    if (e->type == "bpe") {
      EXPECT_GT(model["merges"].size(), 500u);
      EXPECT_EQ(model["unk_token"], "[UNK]");
    } else {
      EXPECT_EQ(model["unk_id"], tokenizer::kUnkId);
    }
    ASSERT_EQ(tj["added_tokens"].size(), 5u);
    for (int32_t id = 0; id < 5; ++id) {
      const json& t = tj["added_tokens"][id];
      EXPECT_EQ(t["id"], id);
      EXPECT_EQ(t["content"], e->tok->IdToPiece(id));
      EXPECT_EQ(t["special"], true);
      EXPECT_EQ(t["normalized"], false);
    }
    const json config = json::parse(ReadBytes(JoinPath(e->hf_dir, "tokenizer_config.json")));
    EXPECT_EQ(config["tokenizer_class"], "PreTrainedTokenizerFast");
    EXPECT_EQ(config["model_max_length"], 256);
    EXPECT_EQ(config["mask_token"], "[MASK]");
    const json map = json::parse(ReadBytes(JoinPath(e->hf_dir, "special_tokens_map.json")));
    EXPECT_EQ(map, (json{{"pad_token", "[PAD]"},
                         {"unk_token", "[UNK]"},
                         {"cls_token", "[CLS]"},
                         {"sep_token", "[SEP]"},
                         {"mask_token", "[MASK]"}}));
  }
  // Writing again replaces the files with the same bytes.
  const std::string before = ReadBytes(JoinPath(unigram_->hf_dir, "tokenizer.json"));
  ASSERT_TRUE(WriteHfTokenizerFiles(unigram_->tok->model_path(), unigram_->hf_dir, 256).ok());
  EXPECT_TRUE(ReadBytes(JoinPath(unigram_->hf_dir, "tokenizer.json")) == before);
  EXPECT_EQ(ListDir(unigram_->hf_dir).size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Bad input: no model trained needed.

// Protobuf bytes: a varint, and a field with its key.
std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>(0x80 | (v & 0x7F));
  return out + static_cast<char>(v);
}
std::string Bytes(int field, const std::string& payload) {
  return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(payload.size()) + payload;
}
std::string VarintField(int field, uint64_t v) {
  return Varint(static_cast<uint64_t>(field) << 3) + Varint(v);
}
// A piece message: piece, score, type.
std::string Piece(const std::string& piece, int type) {
  return Bytes(
      1, Bytes(1, piece) + std::string("\x15\x00\x00\x00\x00", 5) + Varint(3 << 3) + Varint(type));
}
// The smallest model the export takes: the five specials and two normal pieces.
std::string TinyModel() {
  return Piece("[PAD]", 3) + Piece("[UNK]", 2) + Piece("[CLS]", 3) + Piece("[SEP]", 3) +
         Piece("[MASK]", 3) + Piece("\xE2\x96\x81", 1) + Piece("a", 1) +
         Bytes(2, Varint(40 << 3) + Varint(1));  // trainer_spec { unk_id: 1 }
}

class HfTokenizerErrorTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir("export_hf_tokenizer_errors"); }
  void TearDown() override { RemoveTempDir(dir_); }

  // WriteHfTokenizerFiles on a .model holding `bytes`.
  absl::Status Export(const std::string& bytes) {
    path_ = JoinPath(dir_, "m.model");
    WriteBytes(path_, bytes);
    return WriteHfTokenizerFiles(path_, dir_);
  }

  std::string dir_, path_;
};

TEST_F(HfTokenizerErrorTest, TheSmallestModelIsExported) {
  const absl::Status st = Export(TinyModel());
  ASSERT_TRUE(st.ok()) << st;
  const json tj = json::parse(ReadBytes(JoinPath(dir_, "tokenizer.json")));
  EXPECT_EQ(tj["model"]["vocab"].size(), 7u);
  EXPECT_EQ(tj["model"]["byte_fallback"], false);
  // No charsmap in the model: no Precompiled step, the whitespace steps all there.
  EXPECT_EQ(tj["normalizer"]["normalizers"].size(), 4u);
  EXPECT_EQ(tj["normalizer"]["normalizers"][0]["type"], "Replace");
}

// One line naming the file and what is wrong with it, at which byte.
TEST_F(HfTokenizerErrorTest, MalformedFilesAreOneLineErrorsNamingTheFile) {
  struct Case {
    std::string bytes, message;
  };
  const std::vector<Case> cases = {
      {"\x0a", "truncated varint at byte 1"},
      {"\x08\xff\xff", "truncated varint at byte 1"},
      {"\x0a\x05"
       "ab",
       "length 5 of field 1 runs past the end of its message (2 bytes left) at "
       "byte 1"},
      {"\x0b", "unsupported wire type 3 of field 1 at byte 0"},
      {"\x08\x01", "ModelProto.pieces (field 1) has wire type 0, not 2, at byte 0"},
      {Bytes(1, "\x15\x01"), "truncated 4-byte value at byte 3"},
      {Bytes(1, Bytes(1, "\xff\xfe")) + TinyModel(), "piece 0 is not valid UTF-8"},
      {std::string(11, '\xff'), "varint longer than 10 bytes at byte 0"},
      // Sound protobuf, but not a model.
      {"", "only 0 pieces"},
      {Bytes(1, Bytes(1, "")) + TinyModel(), "piece 0 is empty"},
  };
  for (const Case& c : cases) {
    const absl::Status st = Export(c.bytes);
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
    EXPECT_EQ(st.message(), absl::StrCat(path_, ": not a SentencePiece model (", c.message, ", ",
                                         c.bytes.size(), "-byte file)"))
        << st;
  }
  absl::Status st;
  // A real model cut short anywhere, and garbage: DataLoss, one line, naming the file.
  const std::string model = TinyModel();
  std::mt19937 rng(1);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  std::vector<std::string> bad = {garbage, "this is not a model\n"};
  for (size_t cut : {size_t{1}, size_t{3}, size_t{10}, model.size() / 2, model.size() - 1}) {
    bad.push_back(model.substr(0, cut));
  }
  for (const std::string& bytes : bad) {
    st = Export(bytes);
    EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
    EXPECT_EQ(std::string(st.message()).rfind(path_ + ": ", 0), 0u) << st;
    EXPECT_EQ(std::string(st.message()).find('\n'), std::string::npos) << st;
  }
  EXPECT_EQ(ListDir(dir_), std::vector<std::string>{"m.model"}) << "nothing written";
}

TEST_F(HfTokenizerErrorTest, ModelsTheExportDoesNotReproduceAreRefused) {
  struct Case {
    std::string bytes, message;
  };
  // Fields given again are merged into the message by protobuf: later scalars win.
  const std::vector<Case> cases = {
      {TinyModel() + Bytes(2, VarintField(3, 3)),
       "its model_type is 3 (3 = word, 4 = char); only unigram and bpe models are exported"},
      {TinyModel() + Bytes(2, VarintField(40, 0)), "its unk_id is 0, not 1 ([UNK])"},
      {TinyModel() + Bytes(3, VarintField(5, 0)),
       "it does not mark a word's start with U+2581 (escape_whitespaces off or "
       "treat_whitespace_as_suffix on); the Metaspace pre-tokenizer cannot reproduce that"},
      {Piece("<unk>", 2) + Piece("<s>", 3) + Piece("</s>", 3) + Piece("a", 1) + Piece("b", 1),
       "id 0 is '<unk>' of type 2, not [PAD] of type 3; only models `gmlp tokenizer train` "
       "writes are exported"},
      {TinyModel() + Piece("<user>", 4),
       "piece 7 '<user>' is user-defined, which `gmlp tokenizer train` never writes and this "
       "export does not reproduce"},
  };
  for (const Case& c : cases) {
    const absl::Status st = Export(c.bytes);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    EXPECT_EQ(st.message(), absl::StrCat(path_, ": ", c.message)) << st;
  }
}

TEST_F(HfTokenizerErrorTest, MissingFilesAndDirectoriesAreNamed) {
  absl::Status st = WriteHfTokenizerFiles(JoinPath(dir_, "none.model"), dir_);
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(std::string(st.message()).find("none.model"), std::string::npos) << st;
  WriteBytes(JoinPath(dir_, "m.model"), TinyModel());
  st = WriteHfTokenizerFiles(JoinPath(dir_, "m.model"), JoinPath(dir_, "no_dir"));
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_NE(std::string(st.message()).find("no_dir"), std::string::npos) << st;
  st = WriteHfTokenizerFiles(JoinPath(dir_, "m.model"), dir_, 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
}

}  // namespace
}  // namespace gmlp::exporter
