#include "pretrain/agent_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <torch/version.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gmlp::pretrain {
namespace {

using Clock = std::chrono::steady_clock;

// The wire protocol of torch >= 2.1 (torch/csrc/distributed/c10d/TCPStoreBackend.hpp): a command
// byte, then native-endian fixed-width values, strings and payloads as a uint64 length and their
// bytes. A connection counts only after kValidate with the magic number.
enum class Command : uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kGetNumKeys = 7,
  kDeleteKey = 8,
  kCancelWait = 12,
};
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kStopWaiting = 0;
constexpr uint8_t kWaitCanceled = 1;
// c10d::TCPStore's client prefixes every key so.
constexpr char kKeyPrefix[] = "/";

// One request, built up and sent whole.
class Request {
 public:
  explicit Request(Command command) { bytes_.push_back(static_cast<char>(command)); }
  template <typename T>
  Request& Value(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  Request& Bytes(const char* data, size_t size) {
    Value<uint64_t>(size);
    bytes_.append(data, size);
    return *this;
  }
  Request& Key(const std::string& key) {
    const std::string full = kKeyPrefix + key;
    return Bytes(full.data(), full.size());
  }
  Request& Keys(const std::vector<std::string>& keys) {
    Value<uint64_t>(keys.size());
    for (const std::string& key : keys) Key(key);
    return *this;
  }
  Request& Payload(const std::vector<uint8_t>& value) {
    return Bytes(reinterpret_cast<const char*>(value.data()), value.size());
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

Clock::time_point DeadlineAfter(std::chrono::milliseconds timeout) {
  return timeout == c10d::Store::kNoTimeout ? Clock::time_point::max() : Clock::now() + timeout;
}

// Milliseconds left for poll(): -1 (no limit) for time_point::max().
int PollMillis(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), 1 << 30)));
}

// A connected TCP socket to one of host's addresses, or -1 with `error` set.
int TryConnect(const std::string& host, int port, Clock::time_point deadline, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    *error = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = ETIMEDOUT;
      socklen_t len = sizeof(err);
      if (::poll(&p, 1, std::min(PollMillis(deadline), 5000)) == 1) {
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
      errno = err;
      rc = err == 0 ? 0 : -1;
    }
    if (rc != 0) {
      *error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

class AgentStore : public c10d::Store {
 public:
  AgentStore(std::string host, int port, std::chrono::milliseconds timeout)
      : c10d::Store(timeout), host_(std::move(host)), port_(port) {
    Connect();
  }
  ~AgentStore() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kSet).Key(key).Payload(value));
  }

  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kCompareSet).Key(key).Payload(expected).Payload(desired));
    return ReceivePayload(DeadlineAfter(timeout_));
  }

  std::vector<uint8_t> get(const std::string& key) override {
    wait({key});
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kGet).Key(key));
    return ReceivePayload(DeadlineAfter(timeout_));
  }

  int64_t add(const std::string& key, int64_t value) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kAdd).Key(key).Value(value));
    return ReceiveValue<int64_t>(DeadlineAfter(timeout_));
  }

  bool deleteKey(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kDeleteKey).Key(key));
    return ReceiveValue<int64_t>(DeadlineAfter(timeout_)) > 0;
  }

  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kCheck).Keys(keys));
    return ReceiveValue<uint8_t>(DeadlineAfter(timeout_)) == kCheckReady;
  }

  int64_t getNumKeys() override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kGetNumKeys));
    return ReceiveValue<int64_t>(DeadlineAfter(timeout_));
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  // As c10d::TCPStore: the server answers once every key exists; when time runs out first the
  // wait is cancelled, so the connection stays usable, and this throws.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    Send(Request(Command::kWait).Keys(keys));
    if (Readable(DeadlineAfter(timeout))) {
      ExpectByte(kStopWaiting, "wait");
      return;
    }
    Send(Request(Command::kCancelWait));
    uint8_t reply = ReceiveValue<uint8_t>(DeadlineAfter(timeout_));
    if (reply == kStopWaiting) reply = ReceiveValue<uint8_t>(DeadlineAfter(timeout_));
    if (reply != kWaitCanceled) Fail("answered a cancelled wait with an unknown reply");
    throw std::runtime_error(absl::StrCat("store ", Where(), ": wait timeout after ",
                                          timeout.count(), " ms for keys ",
                                          absl::StrJoin(keys, ", ")));
  }

#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Store> clone() override {
    return c10::make_intrusive<AgentStore>(host_, port_, timeout_);
  }
#endif

 private:
  std::string Where() const { return absl::StrCat(host_, ":", port_); }

  [[noreturn]] void Fail(const std::string& what) {
    broken_ = true;
    throw std::runtime_error(absl::StrCat("store ", Where(), ": ", what));
  }

  // Connects (retrying while nothing listens yet: ranks may start before the agent's store),
  // validates, and asks for the key count: a torch 2 store answers with 8 bytes.
  void Connect() {
    const Clock::time_point deadline = DeadlineAfter(timeout_);
    std::string error;
    while ((fd_ = TryConnect(host_, port_, deadline, &error)) < 0) {
      if (Clock::now() >= deadline) {
        throw std::runtime_error(absl::StrCat("cannot connect to torchrun's store at ", Where(),
                                              " within ", timeout_.count(), " ms: ", error));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Send(Request(Command::kValidate).Value(kValidationMagic));
    Send(Request(Command::kGetNumKeys));
    const auto probe =
        std::min<Clock::time_point>(deadline, Clock::now() + std::chrono::seconds(30));
    try {
      ReceiveValue<int64_t>(probe);
    } catch (const std::exception& e) {
      ::close(fd_);  // no destructor runs for a constructor that throws
      fd_ = -1;
      throw std::runtime_error(absl::StrCat(
          e.what(),
          " (TORCHELASTIC_USE_AGENT_STORE=True, but this is no torch >= 2 TCPStore: "
          "start gmlp with torch 2's torchrun, such as the venv of scripts/setup.sh --cuda)"));
    }
  }

  void Send(const Request& request) {
    if (broken_) Fail("the connection was lost before");
    const std::string& bytes = request.bytes();
    size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) Fail(absl::StrCat("send failed: ", std::strerror(errno)));
      sent += static_cast<size_t>(n);
    }
  }

  // True when a byte is ready before `deadline`.
  bool Readable(Clock::time_point deadline) {
    while (true) {
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, PollMillis(deadline));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0) Fail(absl::StrCat("poll failed: ", std::strerror(errno)));
      if (rc == 0 && Clock::now() < deadline) continue;  // woke early
      return rc == 1;
    }
  }

  void Receive(void* out, size_t size, Clock::time_point deadline) {
    auto* bytes = static_cast<char*>(out);
    while (size > 0) {
      if (!Readable(deadline)) Fail("no reply within the store timeout");
      const ssize_t n = ::recv(fd_, bytes, size, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) Fail("the store closed the connection");
      if (n < 0) Fail(absl::StrCat("recv failed: ", std::strerror(errno)));
      bytes += n;
      size -= static_cast<size_t>(n);
    }
  }

  template <typename T>
  T ReceiveValue(Clock::time_point deadline) {
    T value{};
    Receive(&value, sizeof(T), deadline);
    return value;
  }

  std::vector<uint8_t> ReceivePayload(Clock::time_point deadline) {
    const auto size = ReceiveValue<uint64_t>(deadline);
    if (size > (uint64_t{1} << 32)) Fail(absl::StrCat("a reply of ", size, " bytes"));
    std::vector<uint8_t> value(size);
    Receive(value.data(), value.size(), deadline);
    return value;
  }

  void ExpectByte(uint8_t want, const char* what) {
    if (ReceiveValue<uint8_t>(DeadlineAfter(timeout_)) != want) {
      Fail(absl::StrCat("an unknown reply to ", what));
    }
  }

  const std::string host_;
  const int port_;
  int fd_ = -1;
  bool broken_ = false;
  std::mutex mu_;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> ConnectAgentStore(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout) {
  return c10::make_intrusive<AgentStore>(host, port, timeout);
}

}  // namespace gmlp::pretrain
