// Line-by-line encoding of text files, as `gmlp tokenizer encode` and `spm_encode` do it: one
// line of ids (or pieces) out for every line in, empty lines included.
#ifndef GMLP_TOKENIZER_ENCODE_FILE_H_
#define GMLP_TOKENIZER_ENCODE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::tokenizer {

enum class OutputFormat { kId, kPiece };

// "id" or "piece"; InvalidArgument otherwise.
absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view name);

struct EncodeFileStats {
  int64_t lines = 0;
  int64_t ids = 0;
  int64_t bytes = 0;  // decompressed input bytes
};

// Encodes every line of each input (plain, .gz or .xz; "-" is standard input) and writes one
// line of space-separated ids or pieces per input line to `output` ("-" is standard output; a
// file is written under a temporary name and renamed into place when complete). A trailing
// '\r' (CRLF) is dropped. No special tokens are added.
absl::Status EncodeFile(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                        const std::string& output, OutputFormat format,
                        EncodeFileStats* stats = nullptr);

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_ENCODE_FILE_H_
