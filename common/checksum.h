// Content checksums for shards, manifests and tokenizer models: CRC-32 (zlib's, which runs at
// several GB/s) extended to 64 bits by pairing it with the length, printed as hex.
#ifndef GMLP_COMMON_CHECKSUM_H_
#define GMLP_COMMON_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp {

// Incremental CRC-32 (IEEE, as zlib computes it).
class Crc32 {
 public:
  void Update(const void* data, size_t size);
  void Update(absl::string_view s) { Update(s.data(), s.size()); }
  // Extends the checksum by `size` bytes whose own CRC-32 is `crc`, without reading them: the
  // value is then what Update with those bytes gives (zlib's crc32_combine, O(log size)).
  void Append(uint32_t crc, int64_t size);
  uint32_t value() const { return crc_; }
  // "crc32:xxxxxxxx".
  std::string Hex() const;

 private:
  uint32_t crc_ = 0;
};

uint32_t Crc32Of(absl::string_view data);
std::string Crc32Hex(uint32_t crc);

// Checksum of a whole file, as Crc32::Hex() prints it.
absl::StatusOr<std::string> FileChecksum(const std::string& path);

}  // namespace gmlp

#endif  // GMLP_COMMON_CHECKSUM_H_
