#include "tokenizer/byte_source.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace gmlp::tokenizer {
namespace {

constexpr size_t kCompressedBlock = 1 << 20;

// A file descriptor plus the few bytes already read to sniff the format, served first.
class RawFile {
 public:
  RawFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~RawFile() {
    if (fd_ > 0) ::close(fd_);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  // Reads the first bytes (up to `n`) into `head` and keeps them to be served again by Read.
  absl::Status Peek(size_t n, std::string* head) {
    head->assign(n, '\0');
    size_t got = 0;
    while (got < n) {
      GMLP_ASSIGN_OR_RETURN(size_t r, ReadFd(&(*head)[got], n - got));
      if (r == 0) break;
      got += r;
    }
    head->resize(got);
    pending_ = *head;
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> Read(char* dst, size_t n) {
    if (pending_pos_ < pending_.size()) {
      const size_t k = std::min(n, pending_.size() - pending_pos_);
      std::memcpy(dst, pending_.data() + pending_pos_, k);
      pending_pos_ += k;
      return k;
    }
    return ReadFd(dst, n);
  }

  const std::string& path() const { return path_; }

 private:
  absl::StatusOr<size_t> ReadFd(char* dst, size_t n) {
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno == EINTR) continue;
      return absl::DataLossError(
          absl::StrCat(path_, ": read error: ", std::strerror(errno), "; check the disk"));
    }
  }

  std::string path_;
  int fd_;
  std::string pending_;
  size_t pending_pos_ = 0;
};

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(std::unique_ptr<RawFile> file) : file_(std::move(file)) {}
  absl::StatusOr<size_t> Read(char* dst, size_t n) override { return file_->Read(dst, n); }
  const char* format() const override { return "plain"; }

 private:
  std::unique_ptr<RawFile> file_;
};

class GzipSource : public ByteSource {
 public:
  explicit GzipSource(std::unique_ptr<RawFile> file)
      : file_(std::move(file)), in_(kCompressedBlock) {
    std::memset(&zs_, 0, sizeof(zs_));
    // 15 + 32: a zlib or gzip header, detected automatically.
    init_ok_ = ::inflateInit2(&zs_, 15 + 32) == Z_OK;
  }
  ~GzipSource() override { ::inflateEnd(&zs_); }

  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    if (!init_ok_) return absl::InternalError(absl::StrCat(file_->path(), ": zlib init failed"));
    if (done_ || n == 0) return 0;
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    const size_t want = std::min<size_t>(n, 1u << 30);  // zlib counts in uInt
    zs_.avail_out = static_cast<uInt>(want);
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !input_eof_) {
        GMLP_ASSIGN_OR_RETURN(size_t r,
                              file_->Read(reinterpret_cast<char*>(in_.data()), in_.size()));
        if (r == 0) input_eof_ = true;
        zs_.next_in = in_.data();
        zs_.avail_in = static_cast<uInt>(r);
        consumed_before_ += last_block_;
        last_block_ = r;
      }
      if (zs_.avail_in == 0 && input_eof_) {
        if (member_started_) {
          return absl::DataLossError(
              absl::StrCat(file_->path(), ": truncated gzip data at compressed byte offset ",
                           Offset(), "; the file is incomplete: re-create or re-download it"));
        }
        done_ = true;
        break;
      }
      member_started_ = true;
      const int rc = ::inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream of text.
        member_started_ = false;
        ::inflateReset(&zs_);
        continue;
      }
      if (rc == Z_BUF_ERROR) continue;  // needs more input; loop reads it
      if (rc != Z_OK) {
        return absl::DataLossError(absl::StrCat(
            file_->path(), ": corrupt gzip data at compressed byte offset ", Offset(), " (zlib: ",
            zs_.msg != nullptr ? zs_.msg : zError(rc), "); re-create or re-download the file"));
      }
    }
    return want - zs_.avail_out;
  }
  const char* format() const override { return "gzip"; }

 private:
  uint64_t Offset() const { return consumed_before_ + (last_block_ - zs_.avail_in); }

  std::unique_ptr<RawFile> file_;
  std::vector<Bytef> in_;
  z_stream zs_;
  bool init_ok_ = false;
  bool input_eof_ = false;
  bool member_started_ = false;
  bool done_ = false;
  uint64_t consumed_before_ = 0;
  size_t last_block_ = 0;
};

const char* LzmaMessage(lzma_ret rc) {
  switch (rc) {
    case LZMA_MEM_ERROR:
      return "out of memory";
    case LZMA_MEMLIMIT_ERROR:
      return "memory limit reached";
    case LZMA_FORMAT_ERROR:
      return "not in the xz format";
    case LZMA_OPTIONS_ERROR:
      return "unsupported compression options";
    case LZMA_DATA_ERROR:
      return "compressed data is corrupt";
    case LZMA_BUF_ERROR:
      return "compressed data is truncated";
    default:
      return "unknown liblzma error";
  }
}

class XzSource : public ByteSource {
 public:
  explicit XzSource(std::unique_ptr<RawFile> file) : file_(std::move(file)), in_(kCompressedBlock) {
    init_rc_ = ::lzma_stream_decoder(&strm_, UINT64_MAX, LZMA_CONCATENATED);
  }
  ~XzSource() override { ::lzma_end(&strm_); }

  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    if (init_rc_ != LZMA_OK) {
      return absl::InternalError(
          absl::StrCat(file_->path(), ": liblzma init failed: ", LzmaMessage(init_rc_)));
    }
    if (done_ || n == 0) return 0;
    strm_.next_out = reinterpret_cast<uint8_t*>(dst);
    strm_.avail_out = n;
    while (strm_.avail_out > 0) {
      if (strm_.avail_in == 0 && !input_eof_) {
        GMLP_ASSIGN_OR_RETURN(size_t r,
                              file_->Read(reinterpret_cast<char*>(in_.data()), in_.size()));
        if (r == 0) input_eof_ = true;
        strm_.next_in = in_.data();
        strm_.avail_in = r;
      }
      const lzma_ret rc = ::lzma_code(&strm_, input_eof_ ? LZMA_FINISH : LZMA_RUN);
      if (rc == LZMA_STREAM_END) {
        done_ = true;
        break;
      }
      if (rc != LZMA_OK) {
        const bool truncated = rc == LZMA_BUF_ERROR;
        return absl::DataLossError(
            absl::StrCat(file_->path(), ": ", truncated ? "truncated" : "corrupt",
                         " xz data at compressed byte offset ", strm_.total_in,
                         " (liblzma: ", LzmaMessage(rc), "); ",
                         truncated ? "the file is incomplete: re-create or re-download it"
                                   : "re-create or re-download the file (`xz -t FILE` checks it)"));
      }
    }
    return n - strm_.avail_out;
  }
  const char* format() const override { return "xz"; }

 private:
  std::unique_ptr<RawFile> file_;
  std::vector<uint8_t> in_;
  lzma_stream strm_ = LZMA_STREAM_INIT;
  lzma_ret init_rc_;
  bool input_eof_ = false;
  bool done_ = false;
};

class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(std::unique_ptr<RawFile> file)
      : file_(std::move(file)), in_(ZSTD_DStreamInSize()), ds_(ZSTD_createDStream()) {}
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }

  absl::StatusOr<size_t> Read(char* dst, size_t n) override {
    if (ds_ == nullptr) {
      return absl::InternalError(absl::StrCat(file_->path(), ": zstd init failed"));
    }
    if (done_ || n == 0) return 0;
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos < out.size) {
      if (input_.pos == input_.size && !input_eof_) {
        GMLP_ASSIGN_OR_RETURN(size_t r, file_->Read(in_.data(), in_.size()));
        if (r == 0) input_eof_ = true;
        input_ = ZSTD_inBuffer{in_.data(), r, 0};
      }
      const bool ended = input_.pos == input_.size && input_eof_;
      if (ended && !in_frame_) {  // concatenated frames are one stream; it may end between them
        done_ = true;
        break;
      }
      const size_t in_before = input_.pos;
      const size_t out_before = out.pos;
      const size_t rc = ZSTD_decompressStream(ds_, &out, &input_);
      consumed_ += input_.pos - in_before;
      if (ZSTD_isError(rc)) {
        return absl::DataLossError(
            absl::StrCat(file_->path(), ": corrupt zstd data near compressed byte offset ",
                         consumed_, " (libzstd: ", ZSTD_getErrorName(rc),
                         "); re-create or re-download the file (`zstd -t FILE` checks it)"));
      }
      in_frame_ = rc != 0;  // 0: a frame just ended and is flushed
      if (ended && in_frame_ && out.pos == out_before) {
        return absl::DataLossError(absl::StrCat(
            file_->path(), ": truncated zstd data at compressed byte offset ", consumed_,
            "; the file is incomplete: re-create or re-download it (`zstd -t FILE` checks it)"));
      }
    }
    return out.pos;
  }
  const char* format() const override { return "zstd"; }

 private:
  std::unique_ptr<RawFile> file_;
  std::vector<char> in_;
  ZSTD_DStream* ds_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  bool input_eof_ = false;
  bool in_frame_ = false;
  bool done_ = false;
  uint64_t consumed_ = 0;
};

// Formats gmlp recognises but does not read: what the file is and what to do instead.
const char* UnreadFormat(const std::string& head) {
  auto starts = [&head](const char* magic, size_t n) {
    return head.size() >= n && std::memcmp(head.data(), magic, n) == 0;
  };
  // Magic numbers that text could begin with are checked further (bzip2's block or end-of-stream
  // magic, lzip's version byte, a Parquet page header), so prose starting "BZh" or "PAR1" reads.
  if (head.size() >= 10 && starts("BZh", 3) && head[3] >= '1' && head[3] <= '9' &&
      (std::memcmp(head.data() + 4, "1AY&SY", 6) == 0 ||
       std::memcmp(head.data() + 4, "\x17rE8P\x90", 6) == 0)) {
    return "bzip2 data; decompress it (`bunzip2 -k FILE`) or recompress it";
  }
  if (starts("\x04\x22\x4D\x18", 4)) {
    return "LZ4 data; decompress it (`lz4 -d FILE`) or recompress it";
  }
  if (starts("PK\x03\x04", 4)) {
    return "a zip archive; extract its files (`unzip FILE`) and pass them";
  }
  if (starts("7z\xBC\xAF\x27\x1C", 6)) {
    return "a 7-Zip archive; extract its files (`7z x FILE`) and pass them";
  }
  if (starts("\x1F\x9D", 2)) {
    return "compress (.Z) data; decompress it (`uncompress FILE`) or recompress it";
  }
  if (starts("LZIP\x01", 5)) return "lzip data; decompress it (`lzip -d FILE`) or recompress it";
  if (starts("PAR1\x15", 5)) {
    return "a Parquet file; convert it to JSON lines first (scripts/parquet_to_jsonl.py)";
  }
  if (head.size() >= 262 && std::memcmp(head.data() + 257, "ustar", 5) == 0) {
    return "a tar archive; extract its files (`tar xf FILE`) and pass them";
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ByteSource>> ByteSource::Open(const std::string& path) {
  int fd = 0;
  if (path != "-") {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == ENOENT) {
        return absl::NotFoundError(absl::StrCat(path, ": no such file; check the path"));
      }
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot open for reading: ", std::strerror(err)));
    }
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": is a directory; pass the text files in it (a glob like DIR/*)"));
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  auto file = std::make_unique<RawFile>(path, fd);
  std::string head;
  GMLP_RETURN_IF_ERROR(file->Peek(262, &head));
  auto starts = [&head](const char* magic, size_t n) {
    return head.size() >= n && std::memcmp(head.data(), magic, n) == 0;
  };
  const bool gzip = starts("\x1F\x8B", 2);
  const bool xz = starts(
      "\xFD"
      "7zXZ\0",
      6);
  // A zstd frame, or a skippable frame (magic 0x184D2A50..5F, little-endian) that one may start.
  const bool zstd = starts("\x28\xB5\x2F\xFD", 4) ||
                    (head.size() >= 4 && (static_cast<unsigned char>(head[0]) & 0xF0) == 0x50 &&
                     std::memcmp(head.data() + 1, "\x2A\x4D\x18", 3) == 0);
  if (gzip) return std::unique_ptr<ByteSource>(new GzipSource(std::move(file)));
  if (xz) return std::unique_ptr<ByteSource>(new XzSource(std::move(file)));
  if (zstd) return std::unique_ptr<ByteSource>(new ZstdSource(std::move(file)));
  if (const char* what = UnreadFormat(head)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is ", what,
                     " (gmlp reads plain text, gzip, xz and zstd, recognised by their "
                     "first bytes)"));
  }
  for (const char* ext : {".gz", ".xz", ".zst"}) {
    if (!absl::EndsWith(path, ext)) continue;
    return absl::DataLossError(absl::StrCat(
        path, ": corrupt ", ext + 1,
        " data at compressed byte offset 0 (the file does not start with the format's magic "
        "bytes); re-create or re-download it, or rename it if it is plain text"));
  }
  return std::unique_ptr<ByteSource>(new PlainSource(std::move(file)));
}

}  // namespace gmlp::tokenizer
