// The data stage's building blocks: randomness, packing, the shard format and the manifest.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "data/manifest.h"
#include "data/packer.h"
#include "data/random.h"
#include "data/shard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data {
namespace {

using ::gmlp::data::testing::FlipByte;
using ::gmlp::data::testing::ReadBytes;
using ::gmlp::data::testing::TempDirs;
using ::gmlp::data::testing::WriteBytes;
using ::testing::HasSubstr;

constexpr int32_t C = tokenizer::kClsId;
constexpr int32_t S = tokenizer::kSepId;
constexpr int32_t P = tokenizer::kPadId;

TEST(Permutation, IsABijectionForManySizes) {
  for (uint64_t n : {1u, 2u, 3u, 5u, 16u, 17u, 100u, 1000u, 4097u, 65536u}) {
    const Permutation perm(n, 42);
    std::vector<bool> seen(n, false);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t j = perm(i);
      ASSERT_LT(j, n) << "n=" << n;
      ASSERT_FALSE(seen[j]) << "n=" << n << " value " << j << " twice";
      seen[j] = true;
    }
  }
}

TEST(Permutation, KeyChangesTheOrderAndShuffles) {
  const uint64_t n = 1000;
  const Permutation a(n, 1), b(n, 2);
  int same = 0, fixed = 0;
  for (uint64_t i = 0; i < n; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
  }
  // A uniform random permutation agrees with another, or fixes a point, about once.
  EXPECT_LT(same, 10);
  EXPECT_LT(fixed, 10);
}

TEST(Rng, UniformIsInRangeAndRoughlyFlat) {
  Rng rng(7);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng.Uniform(10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.UniformDouble();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(Rng, SameSeedSameStreamAndKeysDiffer) {
  Rng a(99), b(99);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Next(), b.Next());
  EXPECT_NE(HashKey(1, 2), HashKey(2, 1));
  EXPECT_NE(HashKey(1, 2, 3, 4), HashKey(1, 2, 3, 5));
}

TEST(SequencePacker, PacksDocumentsWithClsSepAndPadding) {
  SequencePacker packer(6);
  const std::vector<int32_t> a = {10, 11, 12, 13, 14, 15, 16};  // longer than one sequence
  const std::vector<int32_t> b = {20, 21};
  const std::vector<int32_t> c = {30};
  packer.StartDocument();
  packer.Add(a.data(), a.size());
  packer.StartDocument();  // an empty document leaves no trace
  packer.StartDocument();
  packer.Add(b.data(), b.size());
  packer.StartDocument();
  packer.Add(c.data(), c.size());
  packer.Finish();
  const std::vector<int32_t> expected = {C, 10, 11, 12, 13, 14,  //
                                         C, 15, 16, S,  20, 21,  //
                                         C, 30, P,  P,  P,  P};  // b ended the sequence: no [SEP]
  EXPECT_EQ(packer.ids(), expected);
  EXPECT_EQ(packer.num_sequences(), 3);
  EXPECT_EQ(packer.num_tokens(), 14);
}

TEST(SequencePacker, NoSeparatorRightAfterCls) {
  SequencePacker packer(4);
  const std::vector<int32_t> a = {10, 11, 12};  // fills the first sequence exactly
  const std::vector<int32_t> b = {20};
  packer.StartDocument();
  packer.Add(a.data(), a.size());
  packer.StartDocument();
  packer.Add(b.data(), b.size());
  packer.Finish();
  const std::vector<int32_t> expected = {C, 10, 11, 12, C, 20, P, P};
  EXPECT_EQ(packer.ids(), expected);
}

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_.Make("data_shard"); }

  // 3 sequences of 8 over `vocab`; returns the path.
  std::string Write(int64_t vocab, std::vector<int32_t>* ids_out = nullptr) {
    ShardMeta meta;
    meta.seq_len = 8;
    meta.num_sequences = 3;
    meta.vocab_size = vocab;
    meta.tokenizer_checksum = "crc32:12345678";
    std::vector<int32_t> ids;
    for (int i = 0; i < 24; ++i) ids.push_back(static_cast<int32_t>((i * 7919) % vocab));
    const std::string path = dir_ + "/s.bin";
    absl::StatusOr<std::string> checksum = WriteShard(path, meta, ids);
    EXPECT_TRUE(checksum.ok()) << checksum.status();
    EXPECT_EQ(*checksum, *FileChecksum(path));
    if (ids_out != nullptr) *ids_out = ids;
    return path;
  }

  TempDirs temp_;
  std::string dir_;
};

TEST_F(ShardTest, RoundTripsUint16AndUint32) {
  for (int64_t vocab : {1000, 70000}) {
    std::vector<int32_t> ids;
    const std::string path = Write(vocab, &ids);
    absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->meta().token_bytes, vocab <= 65536 ? 2 : 4);
    EXPECT_EQ((*r)->meta().seq_len, 8);
    EXPECT_EQ((*r)->meta().num_sequences, 3);
    EXPECT_EQ((*r)->meta().tokenizer_checksum, "crc32:12345678");
    std::vector<int32_t> back(24);
    for (int s = 0; s < 3; ++s) (*r)->CopySequence(s, back.data() + 8 * s);
    EXPECT_EQ(back, ids);
    // 128-byte header + one chunk checksum + payload.
    EXPECT_EQ(*FileSize(path), 128 + 4 + 24 * (vocab <= 65536 ? 2 : 4));
  }
}

TEST_F(ShardTest, TruncatedShardIsNamedWithSizes) {
  const std::string path = Write(1000);
  std::string bytes = ReadBytes(path);
  WriteBytes(path, bytes.substr(0, bytes.size() - 5));
  absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("truncated shard"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("re-run `gmlp prepare`"));
  WriteBytes(path, bytes.substr(0, 50));
  r = ShardReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("truncated shard"));
}

TEST_F(ShardTest, FlippedPayloadByteIsFoundWithItsOffset) {
  const std::string path = Write(1000);
  FlipByte(path, 128 + 4 + 10);
  absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(path + ": byte offset 132..180: content checksum mismatch"));
  // Without content verification the header is still fine.
  ShardExpectations no_verify;
  no_verify.verify_content = false;
  EXPECT_TRUE(ShardReader::Open(path, no_verify).ok());
}

TEST_F(ShardTest, FlippedHeaderOrTableByteIsCaught) {
  for (int64_t offset : {0, 9, 17, 30, 60, 126, 129}) {
    const std::string path = Write(1000);
    FlipByte(path, offset);
    absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path);
    ASSERT_FALSE(r.ok()) << "offset " << offset;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(path)) << offset;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("byte offset")) << offset;
  }
}

TEST_F(ShardTest, LargePayloadFlipNamesTheMegabyteChunk) {
  ShardMeta meta;
  meta.seq_len = 1024;
  meta.num_sequences = 1500;  // 3 MB of uint16: 3 chunks
  meta.vocab_size = 8000;
  meta.tokenizer_checksum = "crc32:12345678";
  std::vector<int32_t> ids(static_cast<size_t>(meta.seq_len * meta.num_sequences), 7);
  const std::string path = dir_ + "/big.bin";
  ASSERT_TRUE(WriteShard(path, meta, ids).ok());
  const int64_t payload = 128 + 3 * 4;
  FlipByte(path, payload + (2 << 20) + 5);
  absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(absl::StrCat("byte offset ", payload + (2 << 20), "..", payload + 3072000,
                                     ": content checksum mismatch")));
}

TEST_F(ShardTest, ExpectationsAreChecked) {
  const std::string path = Write(1000);
  ShardExpectations e;
  e.seq_len = 16;
  absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path, e);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--seq_len=16"));
  e = ShardExpectations();
  e.tokenizer_checksum = "crc32:aaaaaaaa";
  r = ShardReader::Open(path, e);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("made with tokenizer crc32:12345678"));
  e = ShardExpectations();
  e.num_sequences = 4;
  EXPECT_FALSE(ShardReader::Open(path, e).ok());
  EXPECT_FALSE(ShardReader::Open(dir_ + "/missing.bin").ok());
  WriteBytes(dir_ + "/junk.bin", std::string(300, 'x'));
  r = ShardReader::Open(dir_ + "/junk.bin");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("not a gmlp shard"));
}

TEST_F(ShardTest, WholeFileChecksumIsComparedWithTheManifests) {
  const std::string path = Write(70000);  // 4-byte ids
  ShardExpectations e;
  e.checksum = *FileChecksum(path);
  EXPECT_TRUE(ShardReader::Open(path, e).ok());
  e.checksum = "crc32:00000000";
  e.listed_in = "m.json: shards[3]";
  absl::StatusOr<std::unique_ptr<ShardReader>> r = ShardReader::Open(path, e);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr(absl::StrCat(path, ": file checksum is ", *FileChecksum(path),
                                     " but m.json: shards[3].checksum says crc32:00000000")));
  // A shard of several chunks: the chunk checksums combine to the whole file's.
  ShardMeta meta;
  meta.seq_len = 1000;
  meta.num_sequences = 1100;  // 2.2 MB of uint16: 3 chunks
  meta.vocab_size = 8000;
  std::vector<int32_t> ids(static_cast<size_t>(meta.seq_len * meta.num_sequences));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i % 7919);
  const std::string big = dir_ + "/big.bin";
  absl::StatusOr<std::string> checksum = WriteShard(big, meta, ids);
  ASSERT_TRUE(checksum.ok());
  e.checksum = *checksum;
  EXPECT_TRUE(ShardReader::Open(big, e).ok());
}

// A valid manifest's JSON (two train shards) for the tests to damage.
nlohmann::json ValidManifestJson() {
  Manifest m;
  m.tokenizer = "t.model";
  m.tokenizer_checksum = "crc32:00000001";
  m.vocab_size = 1000;
  m.seq_len = 8;
  m.token_bytes = 2;
  m.word_starts.assign(1000, false);
  m.shards.push_back({"train-00000-00000.bin", "train", 10, 70, "crc32:0000000a"});
  m.shards.push_back({"train-00000-00001.bin", "train", 5, 40, "crc32:0000000b"});
  return m.ToJson();
}

TEST(Manifest, BadShardEntriesAreRefusedNamingTheField) {
  TempDirs temp;
  const std::string path = temp.Make("data_manifest_fields") + "/manifest.json";
  auto refused = [&](const nlohmann::json& j) -> std::string {
    WriteBytes(path, j.dump());
    absl::StatusOr<Manifest> m = ReadManifest(path);
    EXPECT_FALSE(m.ok()) << j.dump();
    return m.ok() ? "" : std::string(m.status().message());
  };
  nlohmann::json j = ValidManifestJson();
  WriteBytes(path, j.dump());
  ASSERT_TRUE(ReadManifest(path).ok());

  j = ValidManifestJson();
  j["shards"][1]["file"] = "train-00000-00000.bin";
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[1].file \"train-00000-00000.bin\" is listed "
                                           "already, as shards[0]"));
  for (const char* file : {"../train-00000-00001.bin", "/tmp/x.bin", "sub/x.bin", ".."}) {
    j = ValidManifestJson();
    j["shards"][1]["file"] = file;
    EXPECT_THAT(refused(j),
                HasSubstr(absl::StrCat(path, ": shards[1].file \"", file,
                                       "\" is not a file name in the shard directory")));
  }
  j = ValidManifestJson();
  j["shards"][1]["num_tokens"] = -5;
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[1].num_tokens is -5"));
  j["shards"][1]["num_tokens"] = 41;  // 5 sequences of 8
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[1].num_tokens is 41"));
  j = ValidManifestJson();
  j["shards"][0]["num_sequences"] = -1;
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[0].num_sequences is -1"));
  j = ValidManifestJson();
  j["shards"][0]["checksum"] = "";
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[0].checksum is \"\""));
  j = ValidManifestJson();
  j["shards"][0]["split"] = "test";
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[0].split is \"test\""));
  j = ValidManifestJson();
  j["shards"][1].erase("checksum");
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[1] is malformed"));
  // Numbers an int64 cannot hold, or with a fraction: get<int64_t> converted them (3e120 is
  // undefined behaviour; found by tests/fuzz/manifest_fuzz).
  j = ValidManifestJson();
  j["vocab_size"] = 3e120;
  EXPECT_THAT(refused(j), HasSubstr(path + ": malformed manifest (\"vocab_size\" is 3e+120, out "
                                           "of range for an integer"));
  j = ValidManifestJson();
  j["seq_len"] = 8.5;
  EXPECT_THAT(refused(j), HasSubstr("\"seq_len\" is 8.5; expected an integer"));
  j = ValidManifestJson();
  j["shards"][0]["num_tokens"] = 1e30;
  EXPECT_THAT(refused(j), HasSubstr(path + ": shards[0] is malformed (\"num_tokens\" is 1e+30, out "
                                           "of range"));
  j = ValidManifestJson();
  j["token_bytes"] = 4;
  EXPECT_THAT(refused(j),
              HasSubstr(path + ": token_bytes is 4 but shards of vocab_size 1000 hold 2-byte ids"));
}

TEST(Manifest, RoundTripsThroughJson) {
  TempDirs temp;
  const std::string dir = temp.Make("data_manifest");
  Manifest m;
  m.tokenizer = "t.model";
  m.tokenizer_checksum = "crc32:00000001";
  m.vocab_size = 13;
  m.seq_len = 64;
  m.token_bytes = 2;
  m.word_starts = {false, false, false, false, false, true, false,
                   true,  true,  false, false, true,  true};
  m.flags = {{"seq_len", 64}};
  m.shards.push_back({"train-00000-00000.bin", "train", 10, 600, "crc32:0000000a"});
  m.shards.push_back({"valid-00000-00000.bin", "valid", 2, 100, "crc32:0000000b"});
  m.shards.push_back({"train-00000-00001.bin", "train", 5, 300, "crc32:0000000c"});
  m.documents = 30;
  m.valid_documents = 3;
  m.input_bytes = 12345;
  m.invalid_utf8_lines = 2;
  ASSERT_TRUE(WriteManifest(dir + "/manifest.json", m).ok());
  absl::StatusOr<Manifest> back = ReadManifest(dir + "/manifest.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), m.ToJson());
  EXPECT_EQ(back->word_starts, m.word_starts);
  EXPECT_EQ(back->Totals("train").sequences, 15);
  EXPECT_EQ(back->Totals("train").shards, 2);
  EXPECT_EQ(back->Totals("valid").tokens, 100);
}

TEST(Manifest, MalformedOrMissingIsOneClearError) {
  TempDirs temp;
  const std::string dir = temp.Make("data_manifest_bad");
  absl::StatusOr<Manifest> m = ReadManifest(dir + "/manifest.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("run `gmlp prepare"));
  WriteBytes(dir + "/manifest.json", "{\"format_version\": 1, \"tokeni");
  m = ReadManifest(dir + "/manifest.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("not valid JSON"));
  WriteBytes(dir + "/manifest.json", "{\"format_version\": 1}");
  m = ReadManifest(dir + "/manifest.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("malformed manifest"));
  WriteBytes(dir + "/manifest.json", "{\"format_version\": 7}");
  m = ReadManifest(dir + "/manifest.json");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("format_version 7"));
}

}  // namespace
}  // namespace gmlp::data
