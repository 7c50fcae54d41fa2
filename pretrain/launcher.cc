#include "pretrain/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "pretrain/preempt.h"

namespace gmlp::pretrain {
namespace {

constexpr char kSpawnedEnv[] = "GMLP_SPAWNED_RANK";

// A TCP port that was free a moment ago (the kernel's pick for an ephemeral bind).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 29500;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::vector<std::string> OwnCommandLine() {
  std::vector<std::string> args;
  auto text = ReadFile("/proc/self/cmdline");
  if (!text.ok()) return args;
  std::string cur;
  for (char c : *text) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  return args;
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return "stopped";
}

// How one start of the group ended.
enum class GroupEnd { kDone, kPreempted, kFailed };

// In the forked child of rank r: the rank's variables, then gmlp itself again with `args`.
[[noreturn]] void ExecRank(const std::vector<std::string>& args, int r, int nproc,
                           const std::string& port, pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
  const std::string rank = std::to_string(r), world = std::to_string(nproc);
  ::setenv("RANK", rank.c_str(), 1);
  ::setenv("LOCAL_RANK", rank.c_str(), 1);
  ::setenv("WORLD_SIZE", world.c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", world.c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", port.c_str(), 1);
  ::setenv(kSpawnedEnv, rank.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execv("/proc/self/exe", argv.data());
  std::perror("gmlp pretrain: exec");
  ::_exit(127);
}

// Forks and execs the nproc ranks; empty when a fork failed (the ranks started are killed).
std::vector<pid_t> SpawnRanks(const std::vector<std::string>& args, int nproc) {
  const std::string port = std::to_string(FreePort());
  const pid_t parent = ::getpid();
  std::vector<pid_t> pids(nproc, -1);
  std::fflush(nullptr);
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("gmlp pretrain: fork");
      for (int k = 0; k < r; ++k) ::kill(pids[k], SIGKILL);
      for (int k = 0; k < r; ++k) ::waitpid(pids[k], nullptr, 0);
      return {};
    }
    if (pid == 0) ExecRank(args, r, nproc, port, parent);
    pids[r] = pid;
  }
  return pids;
}

// Waits for every rank: forwards a stop signal to all, and when one fails stops the others
// (SIGTERM, SIGKILL after a grace period).
GroupEnd SuperviseRanks(std::vector<pid_t> pids) {
  const int nproc = static_cast<int>(pids.size());
  using Clock = std::chrono::steady_clock;
  constexpr auto kGrace = std::chrono::seconds(10);
  std::optional<Clock::time_point> kill_at;  // set once a rank failed
  int alive = nproc;
  bool failed = false, preempted = false, forwarded = false;
  auto signal_all = [&](int signal) {
    for (pid_t p : pids) {
      if (p > 0) ::kill(p, signal);
    }
  };
  while (alive > 0) {
    if (const int sig = StopSignal(); sig != 0 && !forwarded) {
      signal_all(sig);
      forwarded = true;
    }
    if (kill_at && Clock::now() >= *kill_at) {
      signal_all(SIGKILL);
      kill_at.reset();
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (pid < 0) break;
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) continue;
    const int rank = static_cast<int>(it - pids.begin());
    *it = -1;
    --alive;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitPreempted) {
      preempted = true;
      continue;
    }
    if (!failed) {
      failed = true;
      std::fprintf(stderr, "gmlp pretrain: rank %d %s; stopping the other ranks\n", rank,
                   DescribeExit(status).c_str());
      signal_all(SIGTERM);
      kill_at = Clock::now() + kGrace;  // whoever has not gone by then is killed
    }
  }
  if (failed) return GroupEnd::kFailed;
  return preempted ? GroupEnd::kPreempted : GroupEnd::kDone;
}

// Forks `nproc` ranks running `args` with a fresh MASTER_PORT and waits for all of them. A rank
// that fails (a signal, or a status other than 0 and kExitPreempted) gets the others SIGTERMed
// and, after a grace period, SIGKILLed. A stop signal received here is passed on to every rank.
GroupEnd RunGroup(const std::vector<std::string>& args, int nproc) {
  std::vector<pid_t> pids = SpawnRanks(args, nproc);
  if (pids.empty()) return GroupEnd::kFailed;
  return SuperviseRanks(std::move(pids));
}

}  // namespace

bool IsSpawnedRank() {
  const char* v = std::getenv(kSpawnedEnv);
  return v != nullptr && *v != '\0';
}

int SpawnLocalRanks(int nproc, int max_restarts) {
  const std::vector<std::string> args = OwnCommandLine();
  if (args.empty()) {
    std::fprintf(stderr, "gmlp pretrain: error: cannot read /proc/self/cmdline to spawn ranks\n");
    return 1;
  }
  InstallStopSignalHandlers({SIGTERM, SIGUSR1, SIGINT});
  for (int restart = 0;; ++restart) {
    switch (RunGroup(args, nproc)) {
      case GroupEnd::kDone:
        return 0;
      case GroupEnd::kPreempted:
        return kExitPreempted;
      case GroupEnd::kFailed:
        break;
    }
    if (restart >= max_restarts || StopSignal() != 0) return 1;
    std::fprintf(stderr,
                 "gmlp pretrain: restarting the %d ranks (restart %d of --max_restarts=%d); they "
                 "continue from the last checkpoint\n",
                 nproc, restart + 1, max_restarts);
  }
}

}  // namespace gmlp::pretrain
