// `gmlp prepare` end to end through the library: packing of real documents, the validation split,
// byte-identical output whatever the workers or parts, resumption, bounded memory on a huge line,
// JSON lines and zstd giving the plain text's shards, bad input, and (when ../shared/data is
// present) a real SentencePiece model read by the loader.
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data {
namespace {

using ::gmlp::data::testing::FakeEncoder;
using ::gmlp::data::testing::FlipByte;
using ::gmlp::data::testing::ReadBytes;
using ::gmlp::data::testing::ReadDir;
using ::gmlp::data::testing::TempDirs;
using ::gmlp::data::testing::WriteBytes;
using ::testing::HasSubstr;

// Plain text, documents separated by blank lines. Document d (global index `first + i`) has
// 1 + (d * 37) % 150 words "w<d>", over up to 3 lines, so every id names its document.
std::string MakeCorpus(int first, int count, std::map<int, int>* words_per_doc) {
  std::string text;
  for (int d = first; d < first + count; ++d) {
    const int words = 1 + (d * 37) % 150;
    (*words_per_doc)[d] = words;
    for (int w = 0; w < words; ++w) {
      absl::StrAppend(&text, "w", d, (w % 60 == 59 || w == words - 1) ? "\n" : " ");
    }
    text += "\n";
  }
  return text;
}

// Reads every shard of `split` in manifest order: the ids of each sequence.
std::vector<std::vector<int32_t>> ReadSplit(const std::string& dir, const Manifest& m,
                                            const std::string& split) {
  std::vector<std::vector<int32_t>> out;
  for (const ShardEntry& e : m.shards) {
    if (e.split != split) continue;
    absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(dir + "/" + e.file);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) continue;
    for (int64_t s = 0; s < (*r)->meta().num_sequences; ++s) {
      std::vector<int32_t> seq(static_cast<size_t>(m.seq_len));
      (*r)->CopySequence(s, seq.data());
      out.push_back(std::move(seq));
    }
  }
  return out;
}

class PrepareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = temp_.Make("data_prepare_in");
    for (int f = 0; f < 3; ++f) {
      files_.push_back(absl::StrCat(in_, "/part", f, ".txt"));
      WriteBytes(files_.back(), MakeCorpus(f * 300, 300, &words_));
    }
  }
  PrepareOptions Options(const std::string& out) const {
    PrepareOptions o;
    o.input = {in_ + "/part*.txt"};
    o.tokenizer = "fake.model";
    o.output = out;
    o.seq_len = 64;
    o.workers = 2;
    o.valid_fraction = 0.1;
    o.shard_input_bytes = 16 << 10;  // several blocks per file
    o.progress = false;
    return o;
  }
  PrepareResult RunOrDie(const PrepareOptions& o) {
    absl::StatusOr<PrepareResult> r = Prepare(o, encoder_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : PrepareResult();
  }

  TempDirs temp_;
  FakeEncoder encoder_;
  std::string in_;
  std::vector<std::string> files_;
  std::map<int, int> words_;  // document -> words
};

TEST_F(PrepareTest, PacksEveryDocumentIntoExactlyOneSplit) {
  const std::string out = temp_.Make("data_prepare_out");
  const PrepareResult r = RunOrDie(Options(out));
  const Manifest& m = r.manifest;
  EXPECT_EQ(m.documents, 900);
  EXPECT_GT(r.blocks_written, 3);
  EXPECT_EQ(r.manifest_path, out + "/manifest.json");
  EXPECT_EQ(m.tokenizer_checksum, "crc32:fake0001");
  EXPECT_EQ(m.token_bytes, 2);
  EXPECT_TRUE(m.word_starts[6]);
  EXPECT_FALSE(m.word_starts[7]);
  EXPECT_EQ(ReadManifest(out + "/manifest.json")->ToJson(), m.ToJson());

  std::map<int, int> tokens_seen[2];  // per split: document -> tokens
  for (int split = 0; split < 2; ++split) {
    const auto seqs = ReadSplit(out, m, split == 0 ? "train" : "valid");
    EXPECT_EQ(static_cast<int64_t>(seqs.size()),
              m.Totals(split == 0 ? "train" : "valid").sequences);
    for (const auto& seq : seqs) {
      ASSERT_EQ(seq[0], tokenizer::kClsId);
      bool padding = false;
      for (size_t i = 1; i < seq.size(); ++i) {
        if (seq[i] == tokenizer::kPadId) padding = true;
        if (padding) {
          ASSERT_EQ(seq[i], tokenizer::kPadId) << "ids after [PAD]";
          continue;
        }
        if (seq[i] == tokenizer::kSepId) {
          ASSERT_NE(seq[i - 1], tokenizer::kClsId) << "[SEP] right after [CLS]";
          ASSERT_NE(seq[i - 1], tokenizer::kSepId);
          continue;
        }
        ASSERT_GE(seq[i], tokenizer::kNumSpecialIds);
        // Within a sequence, a document change is always marked by [SEP].
        if (seq[i - 1] >= tokenizer::kNumSpecialIds) {
          ASSERT_EQ(seq[i], seq[i - 1]);
        }
        ++tokens_seen[split][seq[i] - tokenizer::kNumSpecialIds];
      }
    }
  }
  int valid_docs = 0;
  for (const auto& [doc, words] : words_) {
    const int in_train = tokens_seen[0].count(doc) ? tokens_seen[0][doc] : 0;
    const int in_valid = tokens_seen[1].count(doc) ? tokens_seen[1][doc] : 0;
    EXPECT_TRUE(in_train == 0 || in_valid == 0) << "document " << doc << " is in both splits";
    EXPECT_EQ(in_train + in_valid, words) << "document " << doc;
    valid_docs += in_valid > 0;
  }
  EXPECT_EQ(valid_docs, m.valid_documents);
  EXPECT_NEAR(valid_docs, 90, 30);
}

TEST_F(PrepareTest, OutputIsByteIdenticalWhateverTheWorkers) {
  std::map<std::string, std::string> reference;
  for (int workers : {1, 2, 3}) {
    PrepareOptions o = Options(temp_.Make("data_prepare_workers"));
    o.workers = workers;
    RunOrDie(o);
    const auto files = ReadDir(o.output);
    if (reference.empty()) {
      reference = files;
      EXPECT_GT(reference.size(), 10u);
    } else {
      EXPECT_TRUE(files == reference) << "workers=" << workers << " differs from workers=1";
    }
  }
}

TEST_F(PrepareTest, PartsMergeIntoTheSingleRunOutput) {
  const std::string single = temp_.Make("data_prepare_single");
  RunOrDie(Options(single));
  // 3 files: 2 parts split by file. 1 file: 3 parts split by block.
  for (const auto& [inputs, parts] : std::vector<std::pair<std::vector<std::string>, int>>{
           {{in_ + "/part*.txt"}, 2}, {{files_[1]}, 3}}) {
    PrepareOptions base = Options(temp_.Make("data_prepare_parts"));
    base.input = inputs;
    std::string reference_dir = single;
    if (inputs.size() == 1 && inputs[0] == files_[1]) {
      reference_dir = temp_.Make("data_prepare_single1");
      PrepareOptions one = base;
      one.output = reference_dir;
      RunOrDie(one);
    }
    const auto reference = ReadDir(reference_dir);
    for (int i = 0; i < parts; ++i) {
      PrepareOptions o = base;
      o.part = absl::StrCat(i, "/", parts);
      const PrepareResult r = RunOrDie(o);
      EXPECT_EQ(r.merged, i == parts - 1) << "part " << i;
      EXPECT_EQ(r.manifest.part.empty(), i == parts - 1);
      EXPECT_GT(r.blocks_written, 0) << "part " << i << " got no work";
    }
    const auto merged = ReadDir(base.output);
    for (const auto& [name, bytes] : reference) {
      ASSERT_TRUE(merged.count(name)) << name << " missing after merging " << parts << " parts";
      EXPECT_TRUE(merged.at(name) == bytes) << name << " differs";
    }
    // An explicit merge gives the same manifest again.
    absl::StatusOr<Manifest> again = MergeParts(base.output);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(ReadBytes(base.output + "/manifest.json"), reference.at("manifest.json"));
  }
}

TEST_F(PrepareTest, MergeNamesMissingParts) {
  PrepareOptions o = Options(temp_.Make("data_prepare_missing"));
  o.part = "1/3";
  const PrepareResult r = RunOrDie(o);
  EXPECT_FALSE(r.merged);
  absl::StatusOr<Manifest> m = MergeParts(o.output);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("parts 0/3, 2/3 have not finished"));
  EXPECT_FALSE(PathExists(o.output + "/manifest.json"));
  // The loader says what to do.
  LoaderOptions lo;
  lo.shard_dir = o.output;
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(lo);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("gmlp prepare --merge"));
}

TEST_F(PrepareTest, MergeRefusesPartsMadeWithOtherFlags) {
  PrepareOptions o = Options(temp_.Make("data_prepare_mixed"));
  o.part = "0/2";
  RunOrDie(o);
  o.part = "1/2";
  o.seq_len = 32;
  absl::StatusOr<PrepareResult> r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("manifest.part-1-of-2.json: made with other flags"));
  EXPECT_FALSE(PathExists(o.output + "/manifest.json"));
}

TEST_F(PrepareTest, RerunSkipsFinishedBlocksAndRepairsDamagedOnes) {
  const PrepareOptions o = Options(temp_.Make("data_prepare_resume"));
  const PrepareResult first = RunOrDie(o);
  const auto files = ReadDir(o.output);
  const PrepareResult second = RunOrDie(o);
  EXPECT_EQ(second.blocks_written, 0);
  EXPECT_EQ(second.blocks_skipped, first.blocks_written);
  EXPECT_EQ(second.manifest.ToJson(), first.manifest.ToJson());

  // A flipped byte in one shard, a lost record for another block: exactly those are redone.
  FlipByte(o.output + "/train-00001-00002.bin", 300);
  ASSERT_EQ(::unlink((o.output + "/block-00002-00000.json").c_str()), 0);
  const PrepareResult third = RunOrDie(o);
  EXPECT_EQ(third.blocks_written, 2);
  EXPECT_TRUE(ReadDir(o.output) == files);

  // Other settings make every block stale.
  PrepareOptions other = o;
  other.seq_len = 32;
  const PrepareResult fourth = RunOrDie(other);
  EXPECT_EQ(fourth.blocks_skipped, 0);
  EXPECT_EQ(fourth.manifest.seq_len, 32);
}

int64_t PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

bool ResetPeakRss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  return static_cast<bool>(f);
}

TEST_F(PrepareTest, OneHugeLineIsPreparedInBoundedMemory) {
  // 64 MiB on a single line; the reader cuts it into 256 KiB pieces and prepare into ~1 MiB
  // blocks, so 2 * workers + 1 blocks at most are held (bench/data_prepare_bench.sh runs ~300 MB).
  const std::string path = in_ + "/huge.txt";
  int64_t written = 0;
  int64_t words = 0;
  {
    std::ofstream f(path, std::ios::binary);
    std::string chunk;
    for (int i = 0; i < 200000; ++i) absl::StrAppend(&chunk, "w", i % 900, " ");
    while (written < (64 << 20)) {
      f << chunk;
      written += static_cast<int64_t>(chunk.size());
      words += 200000;
    }
  }
  PrepareOptions o = Options(temp_.Make("data_prepare_huge"));
  o.input = {path};
  o.shard_input_bytes = 1 << 20;
  o.max_piece_bytes = 256 << 10;
  const bool can_measure = ResetPeakRss();
  const int64_t before_kb = PeakRssKb();
  const PrepareResult r = RunOrDie(o);
  const int64_t growth_mb = (PeakRssKb() - before_kb) / 1024;
  EXPECT_EQ(r.manifest.documents, 1);
  EXPECT_EQ(r.manifest.input_bytes, written);
  // Cuts drop the space they fall on, so blocks hold a few bytes under 5 pieces.
  EXPECT_GE(r.blocks_written, 50);
  // Every word arrives once; the rest is one [CLS] per sequence (a single document: no [SEP]).
  const SplitTotals train = r.manifest.Totals("train");
  EXPECT_EQ(r.manifest.Totals("valid").sequences, 0);
  EXPECT_EQ(train.tokens, words + train.sequences);
  if (can_measure) {
    std::fprintf(stderr, "huge line: peak RSS grew by %lld MB for a %lld MB line\n",
                 static_cast<long long>(growth_mb), static_cast<long long>(written >> 20));
    EXPECT_LT(growth_mb, 40) << "prepare held too much of a 64 MB line";
  }
  ::unlink(path.c_str());
}

TEST_F(PrepareTest, BadInputGetsOneClearError) {
  PrepareOptions o = Options(temp_.Make("data_prepare_bad"));
  o.input = {in_ + "/nothing_here.txt"};
  absl::StatusOr<PrepareResult> r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(in_ + "/nothing_here.txt"));

  WriteBytes(in_ + "/empty.txt", "\n\n   \n");
  o.input = {in_ + "/empty.txt"};
  r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("empty corpus"));

  WriteBytes(in_ + "/latin1.txt", "w1 w2\nw3 caf\xe9 w4\n\nw5 w6\n");
  o.input = {in_ + "/latin1.txt"};
  r = Prepare(o, encoder_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->manifest.invalid_utf8_lines, 1);
  o.strict_utf8 = true;
  r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(in_ + "/latin1.txt:2: invalid UTF-8"));

  o = Options(temp_.Make("data_prepare_bad2"));
  o.input = {files_[0]};
  o.valid_fraction = 0.999999;
  r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("lower --valid_fraction"));

  o = Options(temp_.Make("data_prepare_bad3"));
  o.part = "3/3";
  EXPECT_THAT(std::string(Prepare(o, encoder_).status().message()), HasSubstr("--part='3/3'"));
  o.part = "0/1";
  o.seq_len = 1;
  EXPECT_THAT(std::string(Prepare(o, encoder_).status().message()), HasSubstr("--seq_len=1"));
  o.seq_len = 64;
  o.tokenizer = in_ + "/no.model";
  r = Prepare(o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(in_ + "/no.model"));
}

std::string Zstd(absl::string_view text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// Blank-line-separated plain text as JSON lines: one object per document, its lines joined by
// newlines in "text" (after an "id", as real corpora have).
std::string ToJsonl(const std::string& plain) {
  std::string out;
  int id = 0;
  for (absl::string_view doc : absl::StrSplit(plain, "\n\n", absl::SkipWhitespace())) {
    nlohmann::json j;
    j["id"] = id++;
    j["text"] = std::string(doc);
    out += j.dump() + "\n";
  }
  return out;
}

TEST_F(PrepareTest, JsonlZstdGivesTheSameShardsAsPlainText) {
  const std::string text_out = temp_.Make("data_prepare_text");
  const PrepareResult text = RunOrDie(Options(text_out));
  const std::string jsonl_in = temp_.Make("data_prepare_jsonl_in");
  for (size_t f = 0; f < files_.size(); ++f) {
    WriteBytes(absl::StrCat(jsonl_in, "/part", f, ".jsonl.zst"),
               Zstd(ToJsonl(ReadBytes(files_[f]))));
  }
  PrepareOptions o = Options(temp_.Make("data_prepare_jsonl"));
  o.input = {jsonl_in + "/part*.jsonl.zst"};
  const PrepareResult jsonl = RunOrDie(o);
  ASSERT_FALSE(text.manifest.shards.empty());
  ASSERT_EQ(jsonl.manifest.shards.size(), text.manifest.shards.size());
  for (size_t i = 0; i < text.manifest.shards.size(); ++i) {
    const ShardEntry& a = text.manifest.shards[i];
    const ShardEntry& b = jsonl.manifest.shards[i];
    EXPECT_EQ(b.file, a.file);
    EXPECT_EQ(b.checksum, a.checksum) << a.file;
    EXPECT_EQ(b.num_sequences, a.num_sequences) << a.file;
    EXPECT_TRUE(ReadBytes(o.output + "/" + b.file) == ReadBytes(text_out + "/" + a.file)) << a.file;
  }
  EXPECT_EQ(jsonl.manifest.documents, text.manifest.documents);
  EXPECT_EQ(jsonl.manifest.valid_documents, text.manifest.valid_documents);
  EXPECT_EQ(jsonl.text_bytes, text.text_bytes);

  // A zstd file named .txt is read as zstd, never as text: the plain text's shards again.
  const std::string misnamed_in = temp_.Make("data_prepare_misnamed_in");
  for (size_t f = 0; f < files_.size(); ++f) {
    WriteBytes(absl::StrCat(misnamed_in, "/part", f, ".txt"), Zstd(ReadBytes(files_[f])));
  }
  o = Options(temp_.Make("data_prepare_misnamed"));
  o.input = {misnamed_in + "/part*.txt"};
  const PrepareResult misnamed = RunOrDie(o);
  ASSERT_EQ(misnamed.manifest.shards.size(), text.manifest.shards.size());
  for (size_t i = 0; i < text.manifest.shards.size(); ++i) {
    EXPECT_EQ(misnamed.manifest.shards[i].checksum, text.manifest.shards[i].checksum);
  }
  EXPECT_EQ(misnamed.manifest.invalid_utf8_lines, 0);
}

TEST_F(PrepareTest, UnreadableCorporaAreOneLineErrorsNamingTheFile) {
  PrepareOptions o = Options(temp_.Make("data_prepare_unread"));
  WriteBytes(in_ + "/corpus.txt.bz2", "BZh91AY&SY binary");
  o.input = {in_ + "/corpus.txt.bz2"};
  absl::StatusOr<PrepareResult> r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(in_ + "/corpus.txt.bz2: is bzip2 data; decompress it"));

  const std::string zst = Zstd(ToJsonl(ReadBytes(files_[0])));
  WriteBytes(in_ + "/cut.jsonl.zst", zst.substr(0, zst.size() * 2 / 3));
  o.input = {in_ + "/cut.jsonl.zst"};
  r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(in_ + "/cut.jsonl.zst: truncated zstd data"));
  EXPECT_FALSE(PathExists(o.output + "/manifest.json"));

  WriteBytes(in_ + "/fields.jsonl", "{\"text\": \"w1 w2\"}\n{\"body\": \"w3\"}\n");
  o.input = {in_ + "/fields.jsonl"};
  r = Prepare(o, encoder_);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(in_ + "/fields.jsonl:2: no field \"text\" (--text_field)"));
  EXPECT_FALSE(PathExists(o.output + "/manifest.json"));
  o.text_field = "";
  EXPECT_THAT(std::string(Prepare(o, encoder_).status().message()), HasSubstr("--text_field="));
  o.text_field = "text";
  o.format = "csv";
  EXPECT_THAT(std::string(Prepare(o, encoder_).status().message()), HasSubstr("--format=csv"));
}

// A real SentencePiece model on real text (skipped without ../shared/data).
TEST(PrepareRealData, MobyDickThroughSentencePieceAndTheLoader) {
  const std::string book = GMLP_SOURCE_DIR "/../shared/data/corpus/moby-dick/moby_dick.txt";
  if (!PathExists(book)) GTEST_SKIP() << book << " not present";
  TempDirs temp;
  const std::string dir = temp.Make("data_prepare_real");
  tokenizer::TrainOptions t;
  t.inputs = {book};
  t.model_prefix = dir + "/spm";
  t.vocab_size = 2000;
  t.num_threads = 2;
  ASSERT_TRUE(tokenizer::Train(t).ok());
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok =
      tokenizer::Tokenizer::Load(dir + "/spm.model");
  ASSERT_TRUE(tok.ok()) << tok.status();

  std::map<std::string, std::string> reference;
  std::string shard_dir;
  for (int workers : {1, 2}) {
    PrepareOptions o;
    o.input = {book};
    o.tokenizer = dir + "/spm.model";
    o.output = shard_dir = temp.Make("data_prepare_real_shards");
    o.seq_len = 128;
    o.workers = workers;
    o.valid_fraction = 0.05;
    o.shard_input_bytes = 256 << 10;
    o.progress = false;
    absl::StatusOr<PrepareResult> r = Prepare(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->manifest.tokenizer_checksum, (*tok)->checksum());
    EXPECT_GT(r->manifest.Totals("train").sequences, 1500);
    EXPECT_GT(r->manifest.Totals("valid").sequences, 10);
    auto files = ReadDir(o.output);
    if (workers == 1) {
      reference = files;
    } else {
      EXPECT_TRUE(files == reference) << "real tokenizer: 2 workers differ from 1";
    }
  }

  LoaderOptions lo;
  lo.shard_dir = shard_dir;  // written by 2 workers
  lo.split = "valid";
  lo.shuffle = false;
  lo.batch_size = 4;
  lo.masking.mask_rate = 0;
  lo.masking.whole_word = true;
  lo.expected_tokenizer_checksum = (*tok)->checksum();
  lo.expected_seq_len = 128;
  absl::StatusOr<std::unique_ptr<MlmLoader>> loader = MlmLoader::Open(lo);
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ((*loader)->vocab_size(), 2000);
  absl::StatusOr<MlmBatch> batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok());
  EXPECT_TRUE(batch->masked_index.empty());
  // The first sequence decodes to words of the book (whitespace aside: lines are encoded one by
  // one, and the decoder joins them with spaces).
  std::vector<int32_t> ids(batch->input_ids.begin() + 1, batch->input_ids.begin() + 40);
  auto squeeze = [](absl::string_view s) {
    std::string out;
    for (char c : s) {
      const bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
      if (space && (out.empty() || out.back() == ' ')) continue;
      out.push_back(space ? ' ' : c);
    }
    return out;
  };
  const std::string text = squeeze((*tok)->Decode(ids));
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  ASSERT_GE(words.size(), 5u) << text;
  const std::string probe = absl::StrJoin(words.begin(), words.begin() + 4, " ");
  EXPECT_NE(squeeze(ReadBytes(book)).find(probe), std::string::npos) << "decoded '" << text << "'";
}

}  // namespace
}  // namespace gmlp::data
