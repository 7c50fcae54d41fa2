#include "tokenizer/corpus_reader.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/json_file.h"
#include "common/status.h"
#include "tokenizer/byte_source.h"
#include "tokenizer/utf8.h"

namespace gmlp::tokenizer {
namespace {

// Decompressed bytes fetched per refill, beyond room for one whole piece.
constexpr size_t kReadBlock = 1 << 20;
constexpr int64_t kMinPieceBytes = 16;
// A JSON line is parsed whole; longer ones are an error rather than unbounded memory.
constexpr size_t kMaxJsonLineBytes = size_t{256} << 20;

// "a number", "an array", "null": a JSON value's type for a message.
std::string TypeWords(const nlohmann::json& j) {
  const std::string t = j.type_name();
  if (j.is_null()) return t;
  return absl::StrCat(t[0] == 'a' || t[0] == 'o' ? "an " : "a ", t);
}

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
        buf_(max_piece_ + 1 + kReadBlock),
        text_path_(absl::StrSplit(options.text_field, '.')) {}

  absl::StatusOr<bool> Next(std::string* text, bool* new_document) override {
    if (!format_known_) GMLP_RETURN_IF_ERROR(DecideFormat());
    return jsonl_ ? NextJsonl(text, new_document) : NextText(text, new_document);
  }

  const CorpusStats& stats() const override { return stats_; }

 private:
  // "auto": JSONL when the first non-blank byte of the file is `{`.
  absl::Status DecideFormat() {
    format_known_ = true;
    if (options_.format != "auto") {
      jsonl_ = options_.format == "jsonl";
      return absl::OkStatus();
    }
    for (;;) {
      for (size_t i = pos_; i < end_; ++i) {
        const char c = buf_[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') continue;
        jsonl_ = c == '{';
        return absl::OkStatus();
      }
      if (eof_ || (pos_ == 0 && end_ == buf_.size())) return absl::OkStatus();  // blank: text
      GMLP_RETURN_IF_ERROR(Refill());
    }
  }

  // At the start of a line: whether it is layout rather than text (a blank line between plain
  // text documents, a WikiExtractor <doc ...> or </doc> line, or a document's title line),
  // noting the document boundary it makes. `whole`: the segment is the whole line.
  bool IsMarkupLine(absl::string_view seg, bool whole) {
    if (whole && IsBlank(seg)) {
      // Blank lines separate documents in plain text; inside WikiExtractor blocks they
      // only separate the title from the text.
      if (!doc_layout_) pending_new_document_ = true;
      return true;
    }
    if (!layout_known_) {
      layout_known_ = true;
      doc_layout_ = IsDocStart(seg);
    }
    if (IsDocStart(seg)) {
      pending_new_document_ = true;
      expect_title_ = true;
      skip_line_ = true;
      return true;
    }
    if (whole && IsDocEnd(seg)) {
      pending_new_document_ = true;
      expect_title_ = false;
      return true;
    }
    if (expect_title_) {
      expect_title_ = false;
      skip_line_ = true;
      return true;
    }
    return false;
  }

  // False (and the rest of the line skipped, counted) when `seg`, at byte seg_offset of its
  // line, is not valid UTF-8; an error naming the file, line and byte with --strict_utf8.
  absl::StatusOr<bool> CheckUtf8(absl::string_view seg, int64_t seg_offset) {
    size_t bad = 0;
    if (IsValidUtf8(seg.data(), seg.size(), &bad)) return true;
    if (options_.strict_utf8) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ":", stats_.lines, ": invalid UTF-8 at byte ",
          seg_offset + static_cast<int64_t>(bad),
          " of the line; convert the file to UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or "
          "drop --strict_utf8 to count and skip such lines"));
    }
    ++stats_.invalid_utf8_lines;
    skip_line_ = true;
    return false;
  }

  absl::StatusOr<bool> NextText(std::string* text, bool* new_document) {
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

      if (starts_line && IsMarkupLine(seg, /*whole=*/line_end)) continue;
      if (skip_line_ || IsBlank(seg)) continue;

      GMLP_ASSIGN_OR_RETURN(const bool valid, CheckUtf8(seg, seg_offset));
      if (!valid) continue;
      text->assign(seg.data(), seg.size());
      *new_document = pending_new_document_;
      if (pending_new_document_) {
        ++stats_.documents;
        pending_new_document_ = false;
      }
      return true;
    }
  }

  // JSON lines: each non-blank line is one document, the string at text_path_; its text is cut
  // into lines and pieces exactly as a plain-text document's would be.
  absl::StatusOr<bool> NextJsonl(std::string* text, bool* new_document) {
    for (;;) {
      if (doc_pos_ < doc_.size()) {
        absl::string_view seg;
        bool line_end = false;
        const char* p = doc_.data() + doc_pos_;
        Split(p, doc_.size() - doc_pos_, /*eof=*/true, &seg, &line_end);
        doc_pos_ += consumed_;
        if (line_end && !seg.empty() && seg.back() == '\r') seg.remove_suffix(1);  // CRLF
        if (IsBlank(seg)) continue;
        text->assign(seg.data(), seg.size());
        *new_document = pending_new_document_;
        if (pending_new_document_) {
          ++stats_.documents;
          pending_new_document_ = false;
        }
        return true;
      }
      GMLP_ASSIGN_OR_RETURN(const bool got, NextRawLine());
      if (!got) return false;
      ++stats_.lines;
      if (IsBlank(line_)) continue;
      size_t bad = 0;
      if (!IsValidUtf8(line_.data(), line_.size(), &bad)) {
        if (options_.strict_utf8) {
          return absl::InvalidArgumentError(absl::StrCat(
              path_, ":", stats_.lines, ": invalid UTF-8 at byte ", bad,
              " of the line; convert the file to UTF-8, or drop --strict_utf8 to count and skip "
              "such lines"));
        }
        ++stats_.invalid_utf8_lines;
        continue;
      }
      GMLP_RETURN_IF_ERROR(ExtractText());
      doc_pos_ = 0;
      pending_new_document_ = true;
    }
  }

  // Parses line_ and puts the string at text_path_ into doc_.
  absl::Status ExtractText() {
    // Built only for an error: this runs once per document.
    auto where = [this] { return absl::StrCat(path_, ":", stats_.lines, ": "); };
    const char* how = options_.format == "auto"
                          ? " (read as JSON lines because the file's first line starts with `{`)"
                          : "";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line_);
    } catch (const nlohmann::json::parse_error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "not a JSON object: syntax error at byte ", e.byte, " of the line", how,
          "; fix or remove the line, or pass --format=text to read the file as plain text"));
    } catch (const nlohmann::json::exception& e) {
      // A number beyond a double's range (out_of_range.406) is not a parse_error.
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "not a JSON object: ", e.what(), how,
                       "; fix or remove the line, or pass --format=text to read the file as "
                       "plain text"));
    }
    if (const size_t nul = NulAfterJson(line_); nul != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "bytes after the JSON object (a NUL at byte ", nul, " of the line)",
                       how, "; fix or remove the line"));
    }
    if (!j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), "not a JSON object but ", TypeWords(j), how,
                       "; each line must be an object like {\"", options_.text_field,
                       "\": \"...\"}, or pass --format=text to read the file as plain text"));
    }
    nlohmann::json* v = &j;
    for (size_t i = 0; i < text_path_.size(); ++i) {
      auto prefix = [&] { return absl::StrJoin(text_path_.begin(), text_path_.begin() + i, "."); };
      if (!v->is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(), "field \"", prefix(), "\" is ", TypeWords(*v),
                         ", not an object, so it has no \"", options_.text_field,
                         "\" (--text_field); pass --text_field=<the dotted path of the text>"));
      }
      auto it = v->find(text_path_[i]);
      if (it == v->end()) {
        std::vector<std::string> keys;
        for (auto k = v->begin(); k != v->end() && keys.size() < 8; ++k) keys.push_back(k.key());
        return absl::InvalidArgumentError(absl::StrCat(
            where(), "no field \"", options_.text_field, "\" (--text_field)",
            i > 0 ? absl::StrCat("; \"", prefix(), "\" has keys: ") : "; the line's keys: ",
            keys.empty() ? "(none)" : absl::StrJoin(keys, ", "),
            "; pass --text_field=<the dotted path of the text, e.g. meta.body>"));
      }
      v = &*it;
    }
    if (!v->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), "field \"", options_.text_field, "\" is ", TypeWords(*v),
          ", not a string; pass --text_field naming the field that holds the document text"));
    }
    doc_ = std::move(v->get_ref<std::string&>());  // j is discarded
    return absl::OkStatus();
  }

  // The next whole line of the file (no newline, no trailing \r) into line_; false at the end.
  absl::StatusOr<bool> NextRawLine() {
    line_.clear();
    bool any = false;
    for (;;) {
      const size_t avail = end_ - pos_;
      const char* p = buf_.data() + pos_;
      const auto* nl = static_cast<const char*>(std::memchr(p, '\n', avail));
      if (nl != nullptr) {
        line_.append(p, static_cast<size_t>(nl - p));
        pos_ += static_cast<size_t>(nl - p) + 1;
        break;
      }
      if (eof_) {
        if (avail == 0 && !any) return false;
        line_.append(p, avail);
        pos_ = end_;
        break;
      }
      line_.append(p, avail);
      pos_ = end_;
      any = any || avail > 0;
      if (line_.size() > kMaxJsonLineBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat(path_, ":", stats_.lines + 1, ": a JSON line longer than ",
                         kMaxJsonLineBytes >> 20, " MiB; split the document into several lines"));
      }
      GMLP_RETURN_IF_ERROR(Refill());
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    return true;
  }

  // Cuts the next segment off the front of p[0, avail): a line, or a piece of a line longer than
  // max_piece_ bytes (cut after the last space or tab that fits, else at a UTF-8 character
  // boundary). Sets consumed_. False when more data is needed (only when !eof).
  bool Split(const char* p, size_t avail, bool eof, absl::string_view* seg, bool* line_end) {
    // A line of exactly max_piece_ bytes still fits: look one byte further for its newline.
    const auto* nl =
        static_cast<const char*>(std::memchr(p, '\n', std::min(avail, max_piece_ + 1)));
    if (nl != nullptr) {
      *seg = absl::string_view(p, static_cast<size_t>(nl - p));
      *line_end = true;
      consumed_ = seg->size() + 1;
      return true;
    }
    if (avail > max_piece_) {
      const size_t cut = CutPoint(p);
      *seg = absl::string_view(p, cut);
      *line_end = false;
      consumed_ = cut;
      if (p[cut] == ' ' || p[cut] == '\t') ++consumed_;  // the whitespace cut at is dropped
      return true;
    }
    if (!eof) return false;
    *seg = absl::string_view(p, avail);  // the last line has no newline
    *line_end = true;
    consumed_ = avail;
    return true;
  }

  // The next line, or the next piece of a line longer than max_piece_ bytes (cut after the last
  // space or tab that fits, else at a UTF-8 character boundary). `*line_end` is false for a
  // piece that the line continues after.
  absl::StatusOr<bool> NextSegment(absl::string_view* seg, bool* line_end) {
    for (;;) {
      if (eof_ && pos_ == end_) return false;
      if (Split(buf_.data() + pos_, end_ - pos_, eof_, seg, line_end)) {
        pos_ += consumed_;
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

  const std::vector<std::string> text_path_;  // text_field split at dots
  bool format_known_ = false;
  bool jsonl_ = false;
  std::string line_;  // JSONL: the current raw line
  std::string doc_;   // JSONL: the current document's text
  size_t doc_pos_ = 0;
};

}  // namespace

absl::Status ValidateCorpusFormat(const std::string& format, const std::string& text_field) {
  if (format != "auto" && format != "text" && format != "jsonl") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", format, ": must be auto, text or jsonl"));
  }
  for (absl::string_view key : absl::StrSplit(text_field, '.')) {
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--text_field=", text_field, ": must be a field name or a dotted path like meta.body"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CorpusReader>> CorpusReader::Open(const std::string& path,
                                                                 const CorpusOptions& options) {
  if (options.max_piece_bytes < kMinPieceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("max_piece_bytes is ", options.max_piece_bytes,
                                                   "; it must be at least ", kMinPieceBytes));
  }
  GMLP_RETURN_IF_ERROR(ValidateCorpusFormat(options.format, options.text_field));
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, ByteSource::Open(path));
  return std::unique_ptr<CorpusReader>(new CorpusReaderImpl(path, options, std::move(source)));
}

}  // namespace gmlp::tokenizer
