#include "data/shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::data {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "shards are little-endian; a big-endian host needs byte swaps in shard.cc");

constexpr size_t kChecksumField = 32;
constexpr size_t kHeaderCrcOffset = 124;

// Appended to every corruption error: prepare rewrites a shard whose checksum does not match its
// block record, so re-running is the whole fix.
constexpr char kRewriteHint[] =
    "re-run `gmlp prepare` with the same flags to rewrite damaged shards (finished ones are kept)";

template <typename T>
void Put(std::string* buf, size_t offset, T value) {
  std::memcpy(&(*buf)[offset], &value, sizeof(T));
}

template <typename T>
T Get(const uint8_t* p, size_t offset) {
  T value;
  std::memcpy(&value, p + offset, sizeof(T));
  return value;
}

// "<listed_in>.<field>", naming the manifest field an expectation came from.
std::string ListedField(const ShardExpectations& expect, absl::string_view field) {
  return expect.listed_in.empty() ? absl::StrCat("the manifest's ", field)
                                  : absl::StrCat(expect.listed_in, ".", field);
}

int64_t NumChunks(int64_t payload_bytes) {
  return (payload_bytes + kShardChunkBytes - 1) / kShardChunkBytes;
}

}  // namespace

int64_t TokenBytesForVocab(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

absl::StatusOr<std::string> WriteShard(const std::string& path, const ShardMeta& meta,
                                       const std::vector<int32_t>& ids) {
  const int64_t token_bytes = TokenBytesForVocab(meta.vocab_size);
  if (meta.seq_len <= 0 || meta.num_sequences < 0 ||
      static_cast<int64_t>(ids.size()) != meta.num_sequences * meta.seq_len) {
    return absl::InternalError(absl::StrCat(path, ": WriteShard got ", ids.size(), " ids for ",
                                            meta.num_sequences, " sequences of ", meta.seq_len));
  }
  if (meta.tokenizer_checksum.size() >= kChecksumField) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": tokenizer checksum '", meta.tokenizer_checksum, "' is too long"));
  }
  const int64_t payload_bytes = meta.num_sequences * meta.seq_len * token_bytes;
  const int64_t num_chunks = NumChunks(payload_bytes);
  const size_t table_offset = kShardHeaderBytes;
  const size_t payload_offset = table_offset + 4 * num_chunks;
  std::string buf(payload_offset + payload_bytes, '\0');

  uint8_t* payload = reinterpret_cast<uint8_t*>(&buf[payload_offset]);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= meta.vocab_size) {
      return absl::InternalError(absl::StrCat(path, ": id ", id, " at position ", i,
                                              " is outside the vocabulary of ", meta.vocab_size));
    }
    if (token_bytes == 2) {
      const uint16_t v = static_cast<uint16_t>(id);
      std::memcpy(payload + 2 * i, &v, 2);
    } else {
      const uint32_t v = static_cast<uint32_t>(id);
      std::memcpy(payload + 4 * i, &v, 4);
    }
  }
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t begin = c * kShardChunkBytes;
    const int64_t size = std::min(kShardChunkBytes, payload_bytes - begin);
    Crc32 crc;
    crc.Update(payload + begin, static_cast<size_t>(size));
    Put<uint32_t>(&buf, table_offset + 4 * c, crc.value());
  }

  std::memcpy(&buf[0], kShardMagic, sizeof(kShardMagic));
  Put<uint32_t>(&buf, 8, kShardFormatVersion);
  Put<uint32_t>(&buf, 12, static_cast<uint32_t>(kShardHeaderBytes));
  Put<uint32_t>(&buf, 16, static_cast<uint32_t>(meta.seq_len));
  Put<uint32_t>(&buf, 20, static_cast<uint32_t>(token_bytes));
  Put<uint64_t>(&buf, 24, static_cast<uint64_t>(meta.num_sequences));
  Put<uint32_t>(&buf, 32, static_cast<uint32_t>(meta.vocab_size));
  Put<uint32_t>(&buf, 36, static_cast<uint32_t>(kShardChunkBytes));
  Put<uint32_t>(&buf, 40, static_cast<uint32_t>(num_chunks));
  Crc32 table_crc;
  table_crc.Update(&buf[table_offset], 4 * num_chunks);
  Put<uint32_t>(&buf, 44, table_crc.value());
  std::memcpy(&buf[48], meta.tokenizer_checksum.data(), meta.tokenizer_checksum.size());
  Put<uint32_t>(&buf, kHeaderCrcOffset, Crc32Of(absl::string_view(buf.data(), kHeaderCrcOffset)));

  GMLP_RETURN_IF_ERROR(WriteFileAtomic(path, buf));
  return Crc32Hex(Crc32Of(buf));
}

namespace {

// The shard file mapped read-only: (start, bytes). The file must hold at least a header.
absl::StatusOr<std::pair<const uint8_t*, size_t>> MapShard(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          path,
          ": shard listed in the manifest is missing; re-run `gmlp prepare` with the same "
          "flags to rewrite it"));
    }
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot open shard: ", std::strerror(err)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::UnknownError(absl::StrCat(path, ": cannot stat shard"));
  }
  const int64_t file_bytes = st.st_size;
  if (file_bytes < kShardHeaderBytes) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": truncated shard: ", file_bytes,
                                            " bytes, shorter than the ", kShardHeaderBytes,
                                            "-byte header; ", kRewriteHint));
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(file_bytes), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::UnknownError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
  }
  return std::make_pair(static_cast<const uint8_t*>(map), static_cast<size_t>(file_bytes));
}

// Where the header says the chunk table and the payload are.
struct ShardLayout {
  int64_t num_chunks = 0;
  uint32_t table_crc = 0;
  int64_t payload_offset = 0;
  int64_t payload_bytes = 0;
};

// The header of the mapped shard `p` (file_bytes long): magic, checksum, version, fields, and
// the size they promise. Fills `meta`.
absl::StatusOr<ShardLayout> ReadHeader(const std::string& path, const uint8_t* p,
                                       int64_t file_bytes, ShardMeta& meta) {
  if (std::memcmp(p, kShardMagic, sizeof(kShardMagic)) != 0) {
    return absl::DataLossError(absl::StrCat(
        path,
        ": byte offset 0: not a gmlp shard (bad magic); point --shard_dir at a directory "
        "written by `gmlp prepare`, or ",
        kRewriteHint));
  }
  const uint32_t header_crc = Get<uint32_t>(p, kHeaderCrcOffset);
  if (Crc32Of(absl::string_view(reinterpret_cast<const char*>(p), kHeaderCrcOffset)) !=
      header_crc) {
    return absl::DataLossError(absl::StrCat(path, ": byte offset 0..", kShardHeaderBytes,
                                            ": header checksum mismatch (corrupt shard); ",
                                            kRewriteHint));
  }
  const uint32_t version = Get<uint32_t>(p, 8);
  if (version != kShardFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": byte offset 8: shard format version ", version, ", this gmlp reads ",
                     kShardFormatVersion, "; re-run `gmlp prepare` with this gmlp"));
  }
  meta.seq_len = Get<uint32_t>(p, 16);
  meta.token_bytes = Get<uint32_t>(p, 20);
  meta.num_sequences = static_cast<int64_t>(Get<uint64_t>(p, 24));
  meta.vocab_size = Get<uint32_t>(p, 32);
  const int64_t chunk_bytes = Get<uint32_t>(p, 36);
  ShardLayout layout;
  layout.num_chunks = Get<uint32_t>(p, 40);
  layout.table_crc = Get<uint32_t>(p, 44);
  const char* checksum_field = reinterpret_cast<const char*>(p + 48);
  meta.tokenizer_checksum.assign(checksum_field, strnlen(checksum_field, kChecksumField));
  if (Get<uint32_t>(p, 12) != kShardHeaderBytes || meta.seq_len <= 0 ||
      (meta.token_bytes != 2 && meta.token_bytes != 4) || chunk_bytes != kShardChunkBytes ||
      meta.num_sequences < 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": byte offset 12..48: inconsistent header fields; ", kRewriteHint));
  }
  layout.payload_bytes = meta.num_sequences * meta.seq_len * meta.token_bytes;
  layout.payload_offset = kShardHeaderBytes + 4 * layout.num_chunks;
  const int64_t expected_bytes = layout.payload_offset + layout.payload_bytes;
  if (layout.num_chunks != NumChunks(layout.payload_bytes) || file_bytes != expected_bytes) {
    return absl::DataLossError(absl::StrCat(
        path, file_bytes < expected_bytes ? ": truncated shard: " : ": oversized shard: ",
        "the header promises ", meta.num_sequences, " sequences of ", meta.seq_len, " ids (",
        expected_bytes, " bytes) but the file has ", file_bytes, " bytes; ", kRewriteHint));
  }
  return layout;
}

// Every chunk's checksum and the chunk table's; with expect.checksum, the whole file's (the
// manifest's record of it).
absl::Status VerifyContent(const std::string& path, const uint8_t* p, const ShardLayout& layout,
                           const ShardExpectations& expect) {
  const int64_t num_chunks = layout.num_chunks, payload_offset = layout.payload_offset;
  const int64_t payload_bytes = layout.payload_bytes;
  const uint8_t* payload = p + payload_offset;
  if (Crc32Of(absl::string_view(reinterpret_cast<const char*>(p + kShardHeaderBytes),
                                4 * num_chunks)) != layout.table_crc) {
    return absl::DataLossError(absl::StrCat(path, ": byte offset ", kShardHeaderBytes, "..",
                                            payload_offset,
                                            ": chunk table checksum mismatch "
                                            "(corrupt shard); ",
                                            kRewriteHint));
  }
  Crc32 whole_file;
  whole_file.Update(p, static_cast<size_t>(payload_offset));
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t begin = c * kShardChunkBytes;
    const int64_t size = std::min(kShardChunkBytes, payload_bytes - begin);
    Crc32 crc;
    crc.Update(payload + begin, static_cast<size_t>(size));
    if (crc.value() != Get<uint32_t>(p, kShardHeaderBytes + 4 * c)) {
      return absl::DataLossError(absl::StrCat(
          path, ": byte offset ", payload_offset + begin, "..", payload_offset + begin + size,
          ": content checksum mismatch (corrupt shard); ", kRewriteHint));
    }
    whole_file.Append(crc.value(), size);
  }
  // Every part matches its own checksum, so the file is one prepare wrote: a different whole
  // is another run's shard, or an edited manifest.
  if (!expect.checksum.empty() && whole_file.Hex() != expect.checksum) {
    return absl::DataLossError(absl::StrCat(
        path, ": file checksum is ", whole_file.Hex(), " but ", ListedField(expect, "checksum"),
        " says ", expect.checksum,
        "; the directory mixes outputs of different runs, or the manifest was edited; ",
        kRewriteHint));
  }
  return absl::OkStatus();
}

// What the caller requires of the shard (seq_len, vocabulary, tokenizer, sequence count).
absl::Status CheckExpectations(const std::string& path, const ShardMeta& meta,
                               const ShardExpectations& expect) {
  if (expect.seq_len > 0 && meta.seq_len != expect.seq_len) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": byte offset 16: shard has seq_len ", meta.seq_len, " but ",
                     expect.seq_len, " is required; prepare shards with --seq_len=", expect.seq_len,
                     " or train with the shards' seq_len"));
  }
  if (expect.vocab_size > 0 && meta.vocab_size != expect.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": byte offset 32: shard has vocab_size ", meta.vocab_size,
                     " but the manifest says ", expect.vocab_size,
                     "; the directory mixes outputs of different runs, re-run `gmlp prepare` "
                     "into an empty --output"));
  }
  if (!expect.tokenizer_checksum.empty() && meta.tokenizer_checksum != expect.tokenizer_checksum) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": byte offset 48: shard was made with tokenizer ",
                     meta.tokenizer_checksum, " but ", expect.tokenizer_checksum,
                     " is required; re-run `gmlp prepare` with the same tokenizer you train with"));
  }
  if (expect.num_sequences >= 0 && meta.num_sequences != expect.num_sequences) {
    return absl::DataLossError(
        absl::StrCat(path, ": byte offset 24: shard has ", meta.num_sequences, " sequences but ",
                     ListedField(expect, "num_sequences"), " says ", expect.num_sequences,
                     "; the directory mixes outputs of different runs, ", kRewriteHint));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardReader>> ShardReader::Open(const std::string& path,
                                                               const ShardExpectations& expect) {
  GMLP_ASSIGN_OR_RETURN(const auto mapped, MapShard(path));
  std::unique_ptr<ShardReader> reader(new ShardReader());
  reader->path_ = path;
  reader->map_ = mapped.first;
  reader->map_bytes_ = mapped.second;
  const uint8_t* p = reader->map_;
  GMLP_ASSIGN_OR_RETURN(const ShardLayout layout,
                        ReadHeader(path, p, static_cast<int64_t>(mapped.second), reader->meta_));
  reader->payload_ = p + layout.payload_offset;
  if (expect.verify_content) GMLP_RETURN_IF_ERROR(VerifyContent(path, p, layout, expect));
  GMLP_RETURN_IF_ERROR(CheckExpectations(path, reader->meta_, expect));
  return reader;
}

ShardReader::~ShardReader() {
  if (map_ != nullptr) ::munmap(const_cast<uint8_t*>(map_), map_bytes_);
}

void ShardReader::CopySequence(int64_t i, int32_t* out) const {
  const int64_t n = meta_.seq_len;
  if (meta_.token_bytes == 2) {
    const uint8_t* src = payload_ + i * n * 2;
    for (int64_t t = 0; t < n; ++t) {
      uint16_t v;
      std::memcpy(&v, src + 2 * t, 2);
      out[t] = v;
    }
  } else {
    std::memcpy(out, payload_ + i * n * 4, static_cast<size_t>(n) * 4);
  }
}

}  // namespace gmlp::data
