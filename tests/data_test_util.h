// Fixtures shared by the data-stage tests: temporary directories, byte-level file edits, a fake
// whitespace tokenizer, and synthetic shard directories written straight from token ids.
#ifndef GMLP_TESTS_DATA_TEST_UTIL_H_
#define GMLP_TESTS_DATA_TEST_UTIL_H_

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "data/manifest.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "gtest/gtest.h"
#include "tests/file_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data::testing {

using gmlp::testing::MakeTempDir;
using gmlp::testing::ReadBytes;
using gmlp::testing::WriteBytes;

// Removes a directory of plain files (what the tests create), then the directory.
inline void RemoveFlatDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
  ::rmdir(dir.c_str());
}

// Temporary directories removed when the object goes out of scope (keeps /tmp clean in CI).
class TempDirs {
 public:
  ~TempDirs() {
    for (const std::string& d : dirs_) RemoveFlatDir(d);
  }
  std::string Make(const char* name) {
    dirs_.push_back(MakeTempDir(name));
    return dirs_.back();
  }

 private:
  std::vector<std::string> dirs_;
};

// Flips the bits of the byte at `offset`.
inline void FlipByte(const std::string& path, int64_t offset) {
  std::string bytes = ReadBytes(path);
  ASSERT_LT(offset, static_cast<int64_t>(bytes.size()));
  bytes[static_cast<size_t>(offset)] = static_cast<char>(~bytes[static_cast<size_t>(offset)]);
  WriteBytes(path, bytes);
}

// Every regular file in `dir` (name -> bytes).
inline std::map<std::string, std::string> ReadDir(const std::string& dir) {
  std::map<std::string, std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    out[name] = ReadBytes(dir + "/" + name);
  }
  ::closedir(d);
  return out;
}

// Tokenizes on spaces; word "wN" (N a number) becomes id kNumSpecialIds + N % (vocab - 5), any
// other word a hash of it. Word-start ids are the even ones, so whole-word tests have structure.
class FakeEncoder : public TextEncoder {
 public:
  explicit FakeEncoder(int64_t vocab = 1000, std::string checksum = "crc32:fake0001")
      : vocab_(vocab), checksum_(std::move(checksum)) {}
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const override {
    const int64_t normal = vocab_ - tokenizer::kNumSpecialIds;
    for (absl::string_view w : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
      int64_t n = 0;
      if (w.size() > 1 && w[0] == 'w' && absl::SimpleAtoi(w.substr(1), &n)) {
        out->push_back(static_cast<int32_t>(tokenizer::kNumSpecialIds + n % normal));
      } else {
        out->push_back(static_cast<int32_t>(tokenizer::kNumSpecialIds +
                                            std::hash<std::string>()(std::string(w)) % normal));
      }
    }
    return absl::OkStatus();
  }
  int64_t vocab_size() const override { return vocab_; }
  bool IsWordStart(int32_t id) const override {
    return id >= tokenizer::kNumSpecialIds && id % 2 == 0;
  }
  std::string checksum() const override { return checksum_; }

 private:
  int64_t vocab_;
  std::string checksum_;
};

// Writes a shard directory whose train split holds `num_sequences` sequences in shards of at most
// `per_shard`; sequence s is [CLS] then ids derived from s (so a test can tell sequences apart:
// position 1 holds 5 + s % (vocab - 5), position 2 holds 5 + s / (vocab - 5)), some word starts,
// a [SEP] in the middle and [PAD] in the last quarter of every third sequence.
inline Manifest WriteSyntheticShards(const std::string& dir, int64_t num_sequences,
                                     int64_t seq_len = 32, int64_t per_shard = 50,
                                     int64_t vocab = 1000, const std::string& split = "train",
                                     const std::string& tokenizer_checksum = "crc32:fake0001") {
  Manifest m;
  m.tokenizer = "fake.model";
  m.tokenizer_checksum = tokenizer_checksum;
  m.vocab_size = vocab;
  m.seq_len = seq_len;
  m.token_bytes = TokenBytesForVocab(vocab);
  m.word_starts.resize(static_cast<size_t>(vocab));
  for (int64_t id = tokenizer::kNumSpecialIds; id < vocab; id += 2) {
    m.word_starts[static_cast<size_t>(id)] = true;
  }
  const int64_t normal = vocab - tokenizer::kNumSpecialIds;
  for (int64_t first = 0, shard = 0; first < num_sequences; first += per_shard, ++shard) {
    const int64_t count = std::min(per_shard, num_sequences - first);
    std::vector<int32_t> ids;
    int64_t tokens = 0;
    for (int64_t s = first; s < first + count; ++s) {
      std::vector<int32_t> seq(static_cast<size_t>(seq_len), tokenizer::kPadId);
      const int64_t used = s % 3 == 0 ? seq_len * 3 / 4 : seq_len;
      for (int64_t i = 0; i < used; ++i) {
        int32_t id;
        if (i == 0) {
          id = tokenizer::kClsId;
        } else if (i == 1) {
          id = static_cast<int32_t>(tokenizer::kNumSpecialIds + s % normal);
        } else if (i == 2) {
          id = static_cast<int32_t>(tokenizer::kNumSpecialIds + s / normal);
        } else if (i == seq_len / 2) {
          id = tokenizer::kSepId;
        } else {
          id = static_cast<int32_t>(tokenizer::kNumSpecialIds + (s * 7 + i * 13) % normal);
        }
        seq[static_cast<size_t>(i)] = id;
      }
      tokens += used;
      ids.insert(ids.end(), seq.begin(), seq.end());
    }
    ShardMeta meta;
    meta.seq_len = seq_len;
    meta.num_sequences = count;
    meta.vocab_size = vocab;
    meta.tokenizer_checksum = tokenizer_checksum;
    ShardEntry e;
    e.file = absl::StrCat(split, "-00000-", shard, ".bin");
    e.split = split;
    e.num_sequences = count;
    e.num_tokens = tokens;
    absl::StatusOr<std::string> checksum = WriteShard(dir + "/" + e.file, meta, ids);
    EXPECT_TRUE(checksum.ok()) << checksum.status();
    e.checksum = checksum.ok() ? *checksum : "";
    m.shards.push_back(e);
  }
  m.documents = num_sequences;
  EXPECT_TRUE(WriteManifest(dir + "/" + kManifestFile, m).ok());
  return m;
}

// Recovers which synthetic sequence a (possibly masked) row came from, from its positions 1 and 2
// (restoring masked ones from the labels). -1 when they cannot be read.
inline int64_t SequenceIdOf(const std::vector<int32_t>& original_row, int64_t vocab = 1000) {
  const int64_t normal = vocab - tokenizer::kNumSpecialIds;
  return (original_row[1] - tokenizer::kNumSpecialIds) +
         (original_row[2] - tokenizer::kNumSpecialIds) * normal;
}

}  // namespace gmlp::data::testing

#endif  // GMLP_TESTS_DATA_TEST_UTIL_H_
