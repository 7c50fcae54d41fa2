// The binary shard format written by `gmlp prepare` and read by the loader, and its writer and
// memory-mapped reader.
//
// A shard holds `num_sequences` sequences of exactly `seq_len` token ids, little-endian, 2 bytes
// per id when the vocabulary fits in 16 bits, else 4. Layout:
//
//   offset 0    header, 128 bytes:
//                 0  char[8]  magic "GMLPSHRD"
//                 8  u32      format_version (kShardFormatVersion)
//                12  u32      header_bytes (128)
//                16  u32      seq_len
//                20  u32      token_bytes (2 | 4)
//                24  u64      num_sequences
//                32  u32      vocab_size
//                36  u32      chunk_bytes (payload bytes per checksummed chunk)
//                40  u32      num_chunks
//                44  u32      CRC-32 of the chunk table
//                48  char[32] tokenizer checksum ("crc32:xxxxxxxx", NUL-padded)
//                80  zeros
//               124  u32      CRC-32 of bytes [0, 124)
//   offset 128  chunk table: num_chunks u32, the CRC-32 of each chunk of the payload
//   then        payload: num_sequences * seq_len ids
//
// Per-chunk checksums let the reader name the byte range of a corrupt region, not just the file.
#ifndef GMLP_DATA_SHARD_H_
#define GMLP_DATA_SHARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::data {

inline constexpr char kShardMagic[8] = {'G', 'M', 'L', 'P', 'S', 'H', 'R', 'D'};
inline constexpr uint32_t kShardFormatVersion = 1;
inline constexpr int64_t kShardHeaderBytes = 128;
inline constexpr int64_t kShardChunkBytes = 1 << 20;

// What a shard's header says about its contents.
struct ShardMeta {
  int64_t seq_len = 0;
  int64_t num_sequences = 0;
  int64_t vocab_size = 0;
  std::string tokenizer_checksum;
  // 2 or 4; TokenBytesForVocab(vocab_size) when written by WriteShard.
  int64_t token_bytes = 0;
};

// 2 when every id of a vocabulary of this size fits in uint16, else 4.
int64_t TokenBytesForVocab(int64_t vocab_size);

// Writes `ids` (num_sequences * seq_len of them, each in [0, vocab_size)) as a shard at `path`,
// atomically (temporary name, fsync, rename). Returns the checksum of the whole file as
// common/checksum.h FileChecksum would compute it, for the manifest.
absl::StatusOr<std::string> WriteShard(const std::string& path, const ShardMeta& meta,
                                       const std::vector<int32_t>& ids);

// What a reader requires of a shard beyond a valid header; zero/empty fields are not checked.
struct ShardExpectations {
  int64_t seq_len = 0;
  int64_t vocab_size = 0;
  int64_t num_sequences = -1;
  std::string tokenizer_checksum;
  // Of the whole file, as the manifest lists it (common/checksum.h FileChecksum); compared when
  // verify_content is set, at no extra pass (combined from the chunk checksums).
  std::string checksum;
  // Names where the expectations come from in errors, e.g. "<dir>/manifest.json: shards[3]"
  // ("the manifest" when empty).
  std::string listed_in;
  // Verify every chunk's checksum at open (about 1 ms per MB).
  bool verify_content = true;
};

// A read-only memory-mapped shard. Open checks the magic, version, header checksum, size, content
// checksums and the expectations, and names the file, the byte offset and the fix on failure.
class ShardReader {
 public:
  static absl::StatusOr<std::unique_ptr<ShardReader>> Open(const std::string& path,
                                                           const ShardExpectations& expect = {});
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  const ShardMeta& meta() const { return meta_; }
  const std::string& path() const { return path_; }
  // Copies sequence `i` (0 <= i < num_sequences) into out[0, seq_len), widening to int32.
  void CopySequence(int64_t i, int32_t* out) const;

 private:
  ShardReader() = default;

  std::string path_;
  ShardMeta meta_;
  const uint8_t* map_ = nullptr;
  size_t map_bytes_ = 0;
  const uint8_t* payload_ = nullptr;
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_SHARD_H_
