// UTF-8 validation fast enough to sit in the corpus reader's inner loop (ASCII, the bulk of
// Wikipedia, is checked 8 bytes at a time).
#ifndef GMLP_TOKENIZER_UTF8_H_
#define GMLP_TOKENIZER_UTF8_H_

#include <cstddef>

namespace gmlp::tokenizer {

// True if data[0, size) is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF). Otherwise false, with the offset of the first bad byte in *bad_offset (if not
// null).
bool IsValidUtf8(const char* data, size_t size, size_t* bad_offset = nullptr);

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_UTF8_H_
