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
  std::string line, text;
  std::vector<int32_t> ids;
  char num[16];
  auto emit_line = [&]() -> absl::Status {
    absl::string_view l(line);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    ids.clear();
    GMLP_RETURN_IF_ERROR(tokenizer.Encode(l, &ids));
    text.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) text += ' ';
      if (format == OutputFormat::kId) {
        const auto r = std::to_chars(num, num + sizeof(num), ids[i]);
        text.append(num, r.ptr);
      } else {
        text += tokenizer.IdToPiece(ids[i]);
      }
    }
    text += '\n';
    ++local.lines;
    local.ids += static_cast<int64_t>(ids.size());
    line.clear();
    return out->Write(text);
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
