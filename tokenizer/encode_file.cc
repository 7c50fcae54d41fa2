#include "tokenizer/encode_file.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"
#include "tokenizer/byte_source.h"

namespace gmlp::tokenizer {
namespace {

constexpr size_t kReadBlock = 1 << 20;

// Buffered output to a file (written as <path>.tmp.<pid>, renamed by Commit) or stdout.
class Output {
 public:
  static absl::StatusOr<std::unique_ptr<Output>> Open(const std::string& path) {
    auto out = std::unique_ptr<Output>(new Output(path));
    if (path == "-") {
      out->file_ = stdout;
      return out;
    }
    out->tmp_ = absl::StrCat(path, ".tmp.", ::getpid());
    out->file_ = std::fopen(out->tmp_.c_str(), "wb");
    if (out->file_ == nullptr) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot create the output file: ", std::strerror(errno),
                       "; check that its directory exists and is writable"));
    }
    std::setvbuf(out->file_, nullptr, _IOFBF, 1 << 20);
    return out;
  }

  ~Output() {
    if (file_ != nullptr && file_ != stdout) {
      std::fclose(file_);
      ::unlink(tmp_.c_str());  // not committed: leave nothing behind
    }
  }

  absl::Status Write(absl::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) return WriteError();
    return absl::OkStatus();
  }

  absl::Status Commit() {
    if (std::fflush(file_) != 0) return WriteError();
    if (file_ == stdout) return absl::OkStatus();
    if (::fsync(fileno(file_)) != 0) return WriteError();
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) {
      ::unlink(tmp_.c_str());
      return WriteError();
    }
    absl::Status st = RenameAtomic(tmp_, path_);
    if (!st.ok()) ::unlink(tmp_.c_str());
    return st;
  }

 private:
  explicit Output(std::string path) : path_(std::move(path)) {}
  absl::Status WriteError() const {
    return absl::DataLossError(absl::StrCat(path_ == "-" ? "standard output" : path_,
                                            ": write failed: ", std::strerror(errno),
                                            errno == ENOSPC ? " (free some disk space)" : ""));
  }

  std::string path_;
  std::string tmp_;
  std::FILE* file_ = nullptr;
};

// Writes each line it is given as its ids (or pieces), space-separated, on a line of its own.
class LineEncoder {
 public:
  LineEncoder(const Tokenizer& tokenizer, OutputFormat format, Output* out, EncodeFileStats* stats)
      : tokenizer_(tokenizer), format_(format), out_(out), stats_(stats) {}

  absl::Status Encode(absl::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ids_.clear();
    GMLP_RETURN_IF_ERROR(tokenizer_.Encode(line, &ids_));
    text_.clear();
    for (size_t i = 0; i < ids_.size(); ++i) {
      if (i > 0) text_ += ' ';
      if (format_ == OutputFormat::kId) {
        char num[16];
        const auto r = std::to_chars(num, num + sizeof(num), ids_[i]);
        text_.append(num, r.ptr);
      } else {
        text_ += tokenizer_.IdToPiece(ids_[i]);
      }
    }
    text_ += '\n';
    ++stats_->lines;
    stats_->ids += static_cast<int64_t>(ids_.size());
    return out_->Write(text_);
  }

 private:
  const Tokenizer& tokenizer_;
  const OutputFormat format_;
  Output* const out_;
  EncodeFileStats* const stats_;
  std::vector<int32_t> ids_;  // reused from line to line
  std::string text_;
};

}  // namespace

absl::StatusOr<OutputFormat> ParseOutputFormat(absl::string_view name) {
  if (name == "id") return OutputFormat::kId;
  if (name == "piece") return OutputFormat::kPiece;
  return absl::InvalidArgumentError(absl::StrCat("output_format is '", name, "'; use id or piece"));
}

absl::Status EncodeFile(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                        const std::string& output, OutputFormat format, EncodeFileStats* stats) {
  // Open every input first: a missing one fails before any output exists.
  std::vector<std::unique_ptr<ByteSource>> sources;
  for (const std::string& input : inputs) {
    GMLP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, ByteSource::Open(input));
    sources.push_back(std::move(source));
  }
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<Output> out, Output::Open(output));
  EncodeFileStats local;
  std::vector<char> block(kReadBlock);
  LineEncoder encoder(tokenizer, format, out.get(), &local);
  std::string line;
  auto emit_line = [&]() -> absl::Status {
    const absl::Status st = encoder.Encode(line);
    line.clear();
    return st;
  };
  for (auto& source : sources) {
    bool partial = false;  // `line` holds the start of a line whose newline is not read yet
    for (;;) {
      GMLP_ASSIGN_OR_RETURN(const size_t n, source->Read(block.data(), block.size()));
      if (n == 0) break;
      local.bytes += static_cast<int64_t>(n);
      const char* p = block.data();
      const char* end = p + n;
      while (p < end) {
        const auto* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
        if (nl == nullptr) {
          line.append(p, end);
          partial = true;
          break;
        }
        line.append(p, nl);
        GMLP_RETURN_IF_ERROR(emit_line());
        partial = false;
        p = nl + 1;
      }
    }
    if (partial) GMLP_RETURN_IF_ERROR(emit_line());  // a last line without a newline
  }
  GMLP_RETURN_IF_ERROR(out->Commit());
  if (stats != nullptr) *stats = local;
  return absl::OkStatus();
}

}  // namespace gmlp::tokenizer
