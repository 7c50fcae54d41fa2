// A stream of decompressed bytes from a file: plain, gzip (zlib), xz (liblzma) or zstd (libzstd),
// recognised by the file's magic bytes whatever its name. Corrupt or truncated compressed data is
// an error that names the file and the compressed byte offset. Compressions and archives gmlp does
// not read (bzip2, LZ4, zip, 7-Zip, compress, lzip, tar, Parquet) are refused naming what they are.
#ifndef GMLP_TOKENIZER_BYTE_SOURCE_H_
#define GMLP_TOKENIZER_BYTE_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gmlp::tokenizer {

class ByteSource {
 public:
  // Opens `path` ("-" is standard input). NotFound names a missing path. A name ending in .gz,
  // .xz or .zst whose contents lack that format's magic bytes is an error (a corrupt download,
  // usually).
  static absl::StatusOr<std::unique_ptr<ByteSource>> Open(const std::string& path);
  virtual ~ByteSource() = default;

  // Reads up to `n` decompressed bytes into `dst`. Returns 0 only at the end of the data.
  virtual absl::StatusOr<size_t> Read(char* dst, size_t n) = 0;
  // "plain", "gzip", "xz" or "zstd".
  virtual const char* format() const = 0;
};

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_BYTE_SOURCE_H_
