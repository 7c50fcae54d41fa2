#include "common/checksum.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gmlp {

void Crc32::Update(const void* data, size_t size) {
  const auto* p = static_cast<const Bytef*>(data);
  // zlib takes uInt lengths; feed large buffers in pieces.
  while (size > 0) {
    const size_t n = size > (1u << 30) ? (1u << 30) : size;
    crc_ = static_cast<uint32_t>(::crc32(crc_, p, static_cast<uInt>(n)));
    p += n;
    size -= n;
  }
}

void Crc32::Append(uint32_t crc, int64_t size) {
  crc_ = static_cast<uint32_t>(::crc32_combine(crc_, crc, static_cast<z_off_t>(size)));
}

std::string Crc32Hex(uint32_t crc) { return absl::StrFormat("crc32:%08x", crc); }

std::string Crc32::Hex() const { return Crc32Hex(crc_); }

uint32_t Crc32Of(absl::string_view data) {
  Crc32 c;
  c.Update(data);
  return c.value();
}

absl::StatusOr<std::string> FileChecksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open; check the path"));
  Crc32 c;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    c.Update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return c.Hex();
}

}  // namespace gmlp
