#include "tokenizer/corpus_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status.h"
#include "tokenizer/byte_source.h"
#include "tokenizer/utf8.h"

namespace gmlp::tokenizer {
namespace {

// Decompressed bytes fetched per refill, beyond room for one whole piece.
constexpr size_t kReadBlock = 1 << 20;
constexpr int64_t kMinPieceBytes = 16;

bool IsBlank(absl::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v') return false;
  }
  return true;
}

// `<doc>` or `<doc id=...>`: WikiExtractor's document header.
bool IsDocStart(absl::string_view line) {
  return line.size() >= 5 && line.substr(0, 4) == "<doc" && (line[4] == ' ' || line[4] == '>');
}

bool IsDocEnd(absl::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
  return line == "</doc>";
}

class CorpusReaderImpl : public CorpusReader {
 public:
  CorpusReaderImpl(std::string path, const CorpusOptions& options,
                   std::unique_ptr<ByteSource> source)
      : path_(std::move(path)),
        options_(options),
        max_piece_(static_cast<size_t>(options.max_piece_bytes)),
        source_(std::move(source)),
        buf_(max_piece_ + 1 + kReadBlock) {}

  absl::StatusOr<bool> Next(std::string* text, bool* new_document) override {
    for (;;) {
      absl::string_view seg;
      bool line_end = false;
      GMLP_ASSIGN_OR_RETURN(const bool got, NextSegment(&seg, &line_end));
      if (!got) return false;
      const bool starts_line = !in_line_;
      in_line_ = !line_end;
      if (starts_line) {
        ++stats_.lines;
        line_offset_ = 0;
        skip_line_ = false;
      }
      const int64_t seg_offset = line_offset_;
      line_offset_ += static_cast<int64_t>(consumed_);
      if (line_end && !seg.empty() && seg.back() == '\r') seg.remove_suffix(1);  // CRLF

      if (starts_line) {
        const bool whole = line_end;
        if (whole && IsBlank(seg)) {
          // Blank lines separate documents in plain text; inside WikiExtractor blocks they
          // only separate the title from the text.
          if (!doc_layout_) pending_new_document_ = true;
          continue;
        }
        if (!layout_known_) {
          layout_known_ = true;
          doc_layout_ = IsDocStart(seg);
        }
        if (IsDocStart(seg)) {
          pending_new_document_ = true;
          expect_title_ = true;
          skip_line_ = true;
          continue;
        }
        if (whole && IsDocEnd(seg)) {
          pending_new_document_ = true;
          expect_title_ = false;
          continue;
        }
        if (expect_title_) {
          expect_title_ = false;
          skip_line_ = true;
          continue;
        }
      }
      if (skip_line_ || IsBlank(seg)) continue;

      size_t bad = 0;
      if (!IsValidUtf8(seg.data(), seg.size(), &bad)) {
        if (options_.strict_utf8) {
          return absl::InvalidArgumentError(absl::StrCat(
              path_, ":", stats_.lines, ": invalid UTF-8 at byte ",
              seg_offset + static_cast<int64_t>(bad),
              " of the line; convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or "
              "drop --strict_utf8 to count and skip such lines"));
        }
        ++stats_.invalid_utf8_lines;
        skip_line_ = true;
        continue;
      }
      text->assign(seg.data(), seg.size());
      *new_document = pending_new_document_;
      if (pending_new_document_) {
        ++stats_.documents;
        pending_new_document_ = false;
      }
      return true;
    }
  }

  const CorpusStats& stats() const override { return stats_; }

 private:
  // The next line, or the next piece of a line longer than max_piece_ bytes (cut after the last
  // space or tab that fits, else at a UTF-8 character boundary). `*line_end` is false for a
  // piece that the line continues after.
  absl::StatusOr<bool> NextSegment(absl::string_view* seg, bool* line_end) {
    for (;;) {
      const size_t avail = end_ - pos_;
      char* p = buf_.data() + pos_;
      // A line of exactly max_piece_ bytes still fits: look one byte further for its newline.
      const auto* nl = static_cast<char*>(std::memchr(p, '\n', std::min(avail, max_piece_ + 1)));
      if (nl != nullptr) {
        *seg = absl::string_view(p, static_cast<size_t>(nl - p));
        *line_end = true;
        consumed_ = seg->size() + 1;
        pos_ += consumed_;
        return true;
      }
      if (avail > max_piece_) {
        const size_t cut = CutPoint(p);
        *seg = absl::string_view(p, cut);
        *line_end = false;
        consumed_ = cut;
        if (p[cut] == ' ' || p[cut] == '\t') ++consumed_;  // the whitespace cut at is dropped
        pos_ += consumed_;
        return true;
      }
      if (eof_) {
        if (avail == 0) return false;
        *seg = absl::string_view(p, avail);  // the last line has no newline
        *line_end = true;
        consumed_ = avail;
        pos_ = end_;
        return true;
      }
      GMLP_RETURN_IF_ERROR(Refill());
    }
  }

  // Where to cut a piece off the front of p[0, avail), avail > max_piece_.
  size_t CutPoint(const char* p) const {
    // p[max_piece_] exists, so a whitespace there makes a piece of exactly max_piece_ bytes.
    const void* ws = ::memrchr(p + 1, ' ', max_piece_);
    const void* tab = ::memrchr(p + 1, '\t', max_piece_);
    if (ws == nullptr || (tab != nullptr && tab > ws)) ws = tab;
    if (ws != nullptr) return static_cast<size_t>(static_cast<const char*>(ws) - p);
    // No whitespace: cut before a UTF-8 lead byte, so no character is split.
    size_t cut = max_piece_;
    while (cut > max_piece_ - 3 && (static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80) --cut;
    return cut;
  }

  absl::Status Refill() {
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    GMLP_ASSIGN_OR_RETURN(const size_t r, source_->Read(buf_.data() + end_, buf_.size() - end_));
    if (r == 0) eof_ = true;
    end_ += r;
    stats_.bytes += static_cast<int64_t>(r);
    return absl::OkStatus();
  }

  const std::string path_;
  const CorpusOptions options_;
  const size_t max_piece_;
  std::unique_ptr<ByteSource> source_;
  std::vector<char> buf_;
  size_t pos_ = 0;
  size_t end_ = 0;
  size_t consumed_ = 0;  // bytes the last segment took from the buffer
  bool eof_ = false;

  CorpusStats stats_;
  bool layout_known_ = false;
  bool doc_layout_ = false;           // the file starts with a WikiExtractor <doc> line
  bool pending_new_document_ = true;  // the next piece returned starts a document
  bool expect_title_ = false;         // the next non-blank line is a WikiExtractor title
  bool in_line_ = false;              // the last segment was a piece the line continues after
  bool skip_line_ = false;            // drop the rest of the current line
  int64_t line_offset_ = 0;           // bytes of the current line before the next segment
};

}  // namespace

absl::StatusOr<std::unique_ptr<CorpusReader>> CorpusReader::Open(const std::string& path,
                                                                 const CorpusOptions& options) {
  if (options.max_piece_bytes < kMinPieceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_piece_bytes is ", options.max_piece_bytes,
                                                   "; it must be at least ", kMinPieceBytes));
  }
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, ByteSource::Open(path));
  return std::unique_ptr<CorpusReader>(new CorpusReaderImpl(path, options, std::move(source)));
}

}  // namespace gmlp::tokenizer
