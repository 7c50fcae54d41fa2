// The client of torch 2's TCPStore (pretrain/agent_store.h) against the real thing: a
// torch.distributed.TCPStore served by the torch 2.11 venv's python, with the libuv backend that
// torchrun's agent uses and the older socket backend. Each side reads what the other wrote.
// Skips, naming why, where the venv is missing.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "pretrain/agent_store.h"
#include "tests/pretrain_test_util.h"
#include "tests/subprocess_test_util.h"

namespace gmlp::pretrain {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Serves a store on a free port, writes the port to <dir>/port, then checks what gmlp's client
// wrote and waits for it to say goodbye.
constexpr char kServer[] = R"(import datetime, os, sys
import torch.distributed as dist
out, libuv = sys.argv[1], sys.argv[2] == "libuv"
store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=60),
                      wait_for_workers=False, use_libuv=libuv)
assert store.libuvBackend == libuv
store.set("from_python", b"py")
with open(out + "/port.tmp", "w") as f:
    f.write(str(store.port))
os.rename(out + "/port.tmp", out + "/port")
store.wait(["from_gmlp"])
assert store.get("from_gmlp") == b"cc", store.get("from_gmlp")
assert store.add("counter", 0) == 5, store.add("counter", 0)
assert not store.check(["deleted"])
store.set("ack", b"ok")
store.wait(["bye"])
print("python side: ok")
)";

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string Str(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

class AgentStoreTest : public ::testing::TestWithParam<const char*> {};

TEST_P(AgentStoreTest, SpeaksTorch2sProtocolBothWays) {
  const std::string python = gmlp::testing::TorchVenvTool("python");
  if (python.empty()) {
    GTEST_SKIP() << "no torch 2.11 venv at " << gmlp::testing::TorchVenvDir()
                 << " (bash scripts/setup.sh --cuda makes it; or set GMLP_TORCH_VENV)";
  }
  const std::string dir = testing::FreshTempDir(absl::StrCat("agent_store_", GetParam()));
  ASSERT_TRUE(WriteFileAtomic(JoinPath(dir, "server.py"), kServer).ok());
  const std::string log = JoinPath(dir, "server.log");
  const pid_t server =
      gmlp::testing::StartProcess({python, JoinPath(dir, "server.py"), dir, GetParam()}, {{}, log});
  int port = 0;
  for (const auto start = Clock::now(); port == 0 && Clock::now() - start < 120s;) {
    auto text = ReadFile(JoinPath(dir, "port"));
    if (text.ok()) {
      ASSERT_TRUE(absl::SimpleAtoi(*text, &port)) << *text;
    }
    int status = 0;
    ASSERT_NE(::waitpid(server, &status, WNOHANG), server) << gmlp::testing::LogTail(log);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(port, 0) << "the python store never wrote its port";

  auto store = ConnectAgentStore("127.0.0.1", port, 30s);
  EXPECT_EQ(Str(store->get("from_python")), "py");
  EXPECT_EQ(store->add("counter", 2), 2);
  EXPECT_EQ(store->add("counter", 3), 5);
  EXPECT_TRUE(store->check({"from_python"}));
  EXPECT_FALSE(store->check({"from_python", "missing"}));
  // Set when absent; a stale expectation returns the value in place and changes nothing.
  EXPECT_EQ(Str(store->compareSet("cas", {}, Bytes("v1"))), "v1");
  EXPECT_EQ(Str(store->compareSet("cas", Bytes("stale"), Bytes("v2"))), "v1");
  EXPECT_EQ(Str(store->compareSet("cas", Bytes("v1"), Bytes("v3"))), "v3");
  store->set("deleted", Bytes("x"));
  EXPECT_TRUE(store->deleteKey("deleted"));
  EXPECT_FALSE(store->deleteKey("deleted"));
  EXPECT_GE(store->getNumKeys(), 3);
  // A wait that times out is cancelled on the server, and the connection goes on working.
  const auto before = Clock::now();
  EXPECT_THROW(store->wait({"missing"}, 300ms), std::runtime_error);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - before);
  EXPECT_GE(waited.count(), 300);
  EXPECT_EQ(Str(store->get("cas")), "v3");
  // A key another client sets later ends a wait.
  std::thread late([&] {
    std::this_thread::sleep_for(200ms);
    ConnectAgentStore("127.0.0.1", port, 30s)->set("late", Bytes("here"));
  });
  EXPECT_EQ(Str(store->get("late")), "here");
  late.join();
  store->set("from_gmlp", Bytes("cc"));
  EXPECT_EQ(Str(store->get("ack")), "ok");
  store->set("bye", Bytes("1"));
  const auto status = gmlp::testing::WaitAtMost(server, 60s);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(gmlp::testing::ExitCode(*status), 0) << gmlp::testing::LogTail(log);
}

INSTANTIATE_TEST_SUITE_P(Backends, AgentStoreTest, ::testing::Values("libuv", "socket"),
                         [](const auto& info) { return std::string(info.param); });

TEST(AgentStoreErrorsTest, NothingListeningNamesTheAddress) {
  const int port = gmlp::testing::FreeTcpPort();
  try {
    ConnectAgentStore("127.0.0.1", port, 500ms);
    FAIL() << "connected to a port nobody listens on";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(absl::StrCat("127.0.0.1:", port)), std::string::npos)
        << e.what();
  }
}

// A listener that accepts and never answers (as LibTorch 1.x's store, which reads torch 2's
// validation as a truncated request) is refused, naming what to start gmlp with instead.
TEST(AgentStoreErrorsTest, APeerThatIsNoTorch2StoreIsRefused) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  try {
    ConnectAgentStore("127.0.0.1", ntohs(addr.sin_port), 500ms);
    FAIL() << "a silent listener passed for a store";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no torch >= 2 TCPStore"), std::string::npos) << e.what();
  }
  ::close(fd);
}

}  // namespace
}  // namespace gmlp::pretrain
