#include "common/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp {
namespace {

std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

void PutFixed32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutFixed64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
// Protobuf field keys: (field number << 3) | wire type (0 varint, 1 fixed64, 2 length-delimited,
// 5 fixed32).
void PutKey(int field, int wire_type, std::string* out) {
  PutVarint(static_cast<uint64_t>(field) << 3 | wire_type, out);
}
void PutBytes(int field, absl::string_view bytes, std::string* out) {
  PutKey(field, 2, out);
  PutVarint(bytes.size(), out);
  out->append(bytes.data(), bytes.size());
}
void PutDouble(int field, double v, std::string* out) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(field, 1, out);
  PutFixed64(bits, out);
}
void PutFloat(int field, float v, std::string* out) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  PutKey(field, 5, out);
  PutFixed32(bits, out);
}

// Event { double wall_time = 1; int64 step = 2; oneof what { string file_version = 3;
// Summary summary = 5; SessionLog session_log = 7; } }
std::string EventHead(double wall_time, int64_t step) {
  std::string e;
  PutDouble(1, wall_time, &e);
  if (step != 0) {
    PutKey(2, 0, &e);
    PutVarint(static_cast<uint64_t>(step), &e);  // int64: two's complement, as protobuf does
  }
  return e;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> table = MakeCrc32cTable();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(absl::string_view data) {
  const uint32_t crc = Crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string TfRecordFrame(absl::string_view data) {
  std::string length;
  PutFixed64(data.size(), &length);
  std::string frame = length;
  PutFixed32(MaskedCrc32c(length), &frame);
  frame.append(data.data(), data.size());
  PutFixed32(MaskedCrc32c(data), &frame);
  return frame;
}

std::string FileVersionEvent(double wall_time) {
  std::string e = EventHead(wall_time, 0);
  PutBytes(3, "brain.Event:2", &e);
  return e;
}

std::string ScalarsEvent(double wall_time, int64_t step, const Scalars& scalars) {
  // Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
  std::string summary;
  for (const auto& [tag, v] : scalars) {
    std::string value;
    PutBytes(1, tag, &value);
    PutFloat(2, static_cast<float>(v), &value);
    PutBytes(1, value, &summary);
  }
  std::string e = EventHead(wall_time, step);
  PutBytes(5, summary, &e);
  return e;
}

std::string StartEvent(double wall_time, int64_t step) {
  // SessionLog { SessionStatus status = 1; }  START = 1.
  std::string session_log;
  PutKey(1, 0, &session_log);
  PutVarint(1, &session_log);
  std::string e = EventHead(wall_time, step);
  PutBytes(7, session_log, &e);
  return e;
}

absl::StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(const std::string& dir) {
  GMLP_RETURN_IF_ERROR(MakeDirs(dir));
  constexpr absl::string_view kPrefix = "events.out.tfevents.";
  int64_t t = static_cast<int64_t>(Now());
  for (const std::string& name : ListDir(dir)) {
    if (!absl::StartsWith(name, kPrefix)) continue;
    const int64_t existing = std::strtoll(name.c_str() + kPrefix.size(), nullptr, 10);
    if (existing >= t) t = existing + 1;
  }
  char host[256] = "localhost";
  if (::gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "localhost");
  host[sizeof host - 1] = '\0';
  const std::string path =
      JoinPath(dir, absl::StrCat(kPrefix, t, ".", host, ".", static_cast<int64_t>(::getpid())));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("create", path);
  std::unique_ptr<EventWriter> w(new EventWriter(path, fd));
  GMLP_RETURN_IF_ERROR(w->Append(FileVersionEvent(Now())));
  return w;
}

EventWriter::~EventWriter() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status EventWriter::WriteScalars(int64_t step, const Scalars& scalars) {
  return Append(ScalarsEvent(Now(), step, scalars));
}

absl::Status EventWriter::WriteStart(int64_t step) { return Append(StartEvent(Now(), step)); }

absl::Status EventWriter::Append(absl::string_view event) {
  const std::string frame = TfRecordFrame(event);
  const char* p = frame.data();
  size_t left = frame.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path_);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace gmlp
