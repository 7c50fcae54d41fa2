// Streams a raw text corpus as pieces of documents: plain text, .gz or .xz, in WikiExtractor's
// `<doc ...>` ... `</doc>` layout (title line dropped) or as plain text with blank lines between
// documents. Memory stays bounded whatever the file or line size.
#ifndef GMLP_TOKENIZER_CORPUS_READER_H_
#define GMLP_TOKENIZER_CORPUS_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::tokenizer {

struct CorpusOptions {
  // Invalid UTF-8: by default the offending line is counted and skipped; strict makes it an
  // error naming the file and line.
  bool strict_utf8 = false;
  // Lines longer than this are cut into pieces at whitespace (or UTF-8 character) boundaries.
  int64_t max_piece_bytes = 1 << 20;
};

struct CorpusStats {
  int64_t lines = 0;
  int64_t documents = 0;
  int64_t bytes = 0;               // decompressed bytes read
  int64_t invalid_utf8_lines = 0;  // skipped
};

class CorpusReader {
 public:
  static absl::StatusOr<std::unique_ptr<CorpusReader>> Open(const std::string& path,
                                                            const CorpusOptions& options = {});
  virtual ~CorpusReader() = default;

  // Reads the next non-empty piece of text (a line, or part of a very long line) into `text`
  // (no trailing newline). `*new_document` is true when the piece starts a new document.
  // Returns false at the end of the file.
  virtual absl::StatusOr<bool> Next(std::string* text, bool* new_document) = 0;
  virtual const CorpusStats& stats() const = 0;
};

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_CORPUS_READER_H_
