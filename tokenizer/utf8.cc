#include "tokenizer/utf8.h"

#include <cstdint>
#include <cstring>

namespace gmlp::tokenizer {

bool IsValidUtf8(const char* data, size_t size, size_t* bad_offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  size_t i = 0;
  while (i < size) {
    // Skip ASCII a word at a time.
    while (i + 8 <= size) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) != 0) break;
      i += 8;
    }
    if (i >= size) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      if (bad_offset != nullptr) *bad_offset = i;
      return false;
    }
    if (i + len > size || p[i + 1] < lo || p[i + 1] > hi) {
      if (bad_offset != nullptr) *bad_offset = i;
      return false;
    }
    for (size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) {
        if (bad_offset != nullptr) *bad_offset = i;
        return false;
      }
    }
    i += len;
  }
  return true;
}

}  // namespace gmlp::tokenizer
