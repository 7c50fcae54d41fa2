// Streams a raw text corpus as pieces of documents: plain text, .gz, .xz or .zst (recognised by
// their magic bytes), in WikiExtractor's `<doc ...>` ... `</doc>` layout (title line dropped), as
// plain text with blank lines between documents, or as JSON lines (one document per line, its text
// in a string field). Memory stays bounded whatever the file or line size.
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
  // "text" (plain text or WikiExtractor), "jsonl" (one JSON object per line; `text_field` holds
  // the document's text), or "auto": jsonl when the first non-blank line starts with `{`, else
  // text. In JSONL, a line that is not a JSON object, lacks the field or whose field is not a
  // string is an error naming file:line; invalid UTF-8 lines follow strict_utf8.
  std::string format = "auto";
  // The field with the text: a dotted path into nested objects (`meta.body`).
  std::string text_field = "text";
};

// InvalidArgument naming the flag unless `format` is auto|text|jsonl and `text_field` is a
// dotted path of non-empty keys.
absl::Status ValidateCorpusFormat(const std::string& format, const std::string& text_field);

struct CorpusStats {
  int64_t lines = 0;  // lines of the (decompressed) file, JSON lines included
  int64_t documents = 0;
  int64_t bytes = 0;               // decompressed bytes read
  int64_t invalid_utf8_lines = 0;  // skipped
};

class CorpusReader {
 public:
  static absl::StatusOr<std::unique_ptr<CorpusReader>> Open(const std::string& path,
                                                            const CorpusOptions& options = {});
  virtual ~CorpusReader() = default;

  // Reads the next non-empty piece of text (a line, or part of a very long line; in JSONL a line
  // of a document's text, which is split as a plain-text document's lines are) into `text`
  // (no trailing newline). `*new_document` is true when the piece starts a new document.
  // Returns false at the end of the file.
  virtual absl::StatusOr<bool> Next(std::string* text, bool* new_document) = 0;
  virtual const CorpusStats& stats() const = 0;
};

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_CORPUS_READER_H_
