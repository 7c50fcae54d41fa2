// Running `gmlp` (or a launcher such as torchrun) as a child process in the end-to-end tests:
// start with extra environment and a resource limit, wait with a deadline, find a rank among a
// launcher's children, and read back the run's metrics.jsonl.
#ifndef GMLP_TESTS_SUBPROCESS_TEST_UTIL_H_
#define GMLP_TESTS_SUBPROCESS_TEST_UTIL_H_

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"

namespace gmlp::testing {

inline const std::string kGmlpBinary = GMLP_BINARY_DIR "/gmlp";

// The torch 2.11 venv that `scripts/setup.sh --cuda` makes (scripts/python_env.sh adds the
// readers: safetensors, transformers, tensorboard): $GMLP_TORCH_VENV, else
// /var/cache/gmlp/torch-2.11.0.
inline std::string TorchVenvDir() {
  const char* venv = std::getenv("GMLP_TORCH_VENV");
  return venv != nullptr && *venv != '\0' ? venv : "/var/cache/gmlp/torch-2.11.0";
}

// That venv's bin/<tool> (python, torchrun), or "" when it has none.
inline std::string TorchVenvTool(const std::string& tool) {
  const std::string path = JoinPath(TorchVenvDir(), "bin/" + tool);
  return PathExists(path) ? path : "";
}

struct ChildOptions {
  std::vector<std::string> env;  // "NAME=value" added to (or replacing in) the environment
  std::string log;               // stdout and stderr go here
  int64_t max_file_bytes = -1;   // RLIMIT_FSIZE (a full disk), -1 = unlimited
};

// Starts `argv` (argv[0] is the executable's path) as a child in its own process group.
inline pid_t StartProcess(const std::vector<std::string>& argv, const ChildOptions& options) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    for (const std::string& e : options.env) ::putenv(const_cast<char*>(e.c_str()));
    if (options.max_file_bytes >= 0) {
      const rlimit limit{static_cast<rlim_t>(options.max_file_bytes),
                         static_cast<rlim_t>(options.max_file_bytes)};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    if (!options.log.empty()) {
      std::freopen(options.log.c_str(), "w", stderr);
      std::freopen(options.log.c_str(), "a", stdout);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(argv[0].c_str(), args.data());
    ::_exit(127);
  }
  return pid;
}

// `gmlp pretrain <args>`.
inline pid_t StartPretrain(const std::vector<std::string>& args, const ChildOptions& options) {
  std::vector<std::string> all = {kGmlpBinary, "pretrain"};
  all.insert(all.end(), args.begin(), args.end());
  return StartProcess(all, options);
}

inline int WaitStatus(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// The exit code, or 128 + the signal that ended it.
inline int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The exit status of `pid` once it exits, or nullopt (after SIGKILLing its process group) when
// it is still running after `timeout`.
inline std::optional<int> WaitAtMost(pid_t pid, std::chrono::seconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() - start > timeout) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      WaitStatus(pid);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return status;
}

// A TCP port nobody listens on now (the kernel's pick), for MASTER_PORT.
inline int FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// A descendant of `ancestor` (its child, or a child of that child: torchrun's workers) whose
// environment holds `var` (e.g. "RANK=1") and whose executable is gmlp; -1 when none does.
inline pid_t DescendantWithEnv(pid_t ancestor, const std::string& var) {
  std::map<pid_t, pid_t> parent;
  std::unique_ptr<DIR, int (*)(DIR*)> proc(::opendir("/proc"), &::closedir);
  while (dirent* e = proc != nullptr ? ::readdir(proc.get()) : nullptr) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    auto stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));  // "pid (comm) state ppid ..."
    if (!stat.ok() || stat->rfind(')') == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat->substr(stat->rfind(')') + 2), ' ');
    int ppid = 0;
    if (fields.size() >= 2 && absl::SimpleAtoi(fields[1], &ppid)) parent[pid] = ppid;
  }
  for (const auto& [pid, ppid] : parent) {
    bool below = false;
    for (pid_t p = ppid, hops = 0; p > 1 && hops < 4 && !below; p = parent[p], ++hops) {
      below = p == ancestor;
    }
    if (!below) continue;
    auto env = ReadFile(absl::StrCat("/proc/", pid, "/environ"));  // NUL-separated
    auto cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (!env.ok() || !cmdline.ok() || cmdline->find("gmlp") == std::string::npos) continue;
    for (absl::string_view v : absl::StrSplit(*env, '\0')) {
      if (v == var) return pid;
    }
  }
  return -1;
}

// The JSON records of a .jsonl file (unparsable lines skipped).
inline std::vector<nlohmann::json> JsonRecords(const std::string& path) {
  std::vector<nlohmann::json> out;
  auto text = ReadFile(path);
  if (!text.ok()) return out;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(j);
  }
  return out;
}

// step -> training loss, from a run's metrics.jsonl.
inline std::map<int64_t, double> TrainLosses(const std::string& out_dir) {
  std::map<int64_t, double> out;
  for (const auto& j : JsonRecords(out_dir + "/metrics.jsonl")) {
    if (j.value("type", "") == "train") out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

// The highest step metrics.jsonl has reached (0 before the first record).
inline int64_t LastLoggedStep(const std::string& out_dir) {
  int64_t last = 0;
  for (const auto& j : JsonRecords(out_dir + "/metrics.jsonl"))
    last = std::max(last, j.value("step", int64_t{0}));
  return last;
}

// The last 3000 bytes of a log, for failure messages.
inline std::string LogTail(const std::string& log) {
  auto text = ReadFile(log);
  return text.ok() ? text->substr(text->size() > 3000 ? text->size() - 3000 : 0) : "(no log)";
}

}  // namespace gmlp::testing

#endif  // GMLP_TESTS_SUBPROCESS_TEST_UTIL_H_
