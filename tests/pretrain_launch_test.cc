// `gmlp pretrain` under the launchers users run it with, and through the interruptions they
// meet: PyTorch 2.11's own torchrun (one and two local ranks, two "nodes" on this machine,
// --standalone and the c10d rendezvous), a rank SIGKILLed under torchrun --max-restarts and
// under --nproc --max_restarts, SIGTERM preemption (one process, --nproc, torchrun), a full disk
// (RLIMIT_FSIZE) while checkpointing, and --resume's refusals. Every interrupted run must end
// with the same losses and bit-identical weights as an uninterrupted one. Synthetic shards, a
// one-layer encoder; the torchrun tests skip, naming why, where the torch 2.11 venv of
// `scripts/setup.sh --cuda` is missing.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "pretrain/checkpoint.h"
#include "pretrain/preempt.h"
#include "pretrain/run.h"
#include "tests/data_test_util.h"
#include "tests/pretrain_test_util.h"
#include "tests/subprocess_test_util.h"

namespace gmlp::pretrain {
namespace {

using gmlp::testing::ChildOptions;
using gmlp::testing::DescendantWithEnv;
using gmlp::testing::ExitCode;
using gmlp::testing::FreeTcpPort;
using gmlp::testing::kGmlpBinary;
using gmlp::testing::LastLoggedStep;
using gmlp::testing::LogTail;
using gmlp::testing::StartPretrain;
using gmlp::testing::StartProcess;
using gmlp::testing::TrainLosses;
using gmlp::testing::WaitAtMost;
using gmlp::testing::WaitStatus;
using Clock = std::chrono::steady_clock;

constexpr int64_t kSteps = 200;
constexpr auto kTimeout = std::chrono::seconds(240);

// torch 2.11's torchrun from the venv `scripts/setup.sh --cuda` makes; "" when absent.
std::string Torchrun() { return gmlp::testing::TorchVenvTool("torchrun"); }

std::string g_shards;                         // made once per process
std::map<int, std::string> g_reference_runs;  // world size -> an uninterrupted run

class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PathExists(kGmlpBinary)) GTEST_SKIP() << "gmlp binary not built at " << kGmlpBinary;
    if (g_shards.empty()) {
      g_shards = testing::FreshTempDir("launch_shards");
      data::testing::WriteSyntheticShards(g_shards, /*num_sequences=*/4000);
    }
  }

  // kSteps of a one-layer gMLP on 8 sequences a step, a checkpoint every 50 steps.
  static std::vector<std::string> Args(const std::string& out) {
    return {"--shard_dir=" + g_shards,
            "--out_dir=" + out,
            "--preset=gmlp-tiny",
            "--model_overrides=d_model=32,n_layers=1,d_ffn=64",
            "--steps=" + std::to_string(kSteps),
            "--micro_batch=4",
            "--global_batch=8",
            "--warmup_steps=10",
            "--log_every=1",
            "--eval_every=0",
            "--checkpoint_every=50",
            "--dist_timeout_s=30",
            "--peak_gflops=100",
            "--threads=1"};
  }

  // Runs `gmlp pretrain Args(out) extra...` to its end; its exit code.
  static int Run(const std::string& out, std::vector<std::string> extra = {},
                 ChildOptions options = {}) {
    std::vector<std::string> args = Args(out);
    args.insert(args.end(), extra.begin(), extra.end());
    if (options.log.empty()) options.log = out + ".log";
    const auto status = WaitAtMost(StartPretrain(args, options), kTimeout);
    return status ? ExitCode(*status) : -1;
  }

  // The uninterrupted run on `world` ranks (--nproc), made once.
  static const std::string& Reference(int world) {
    std::string& out = g_reference_runs[world];
    if (out.empty()) {
      out = testing::FreshTempDir(absl::StrCat("launch_reference_", world));
      EXPECT_EQ(Run(out, {absl::StrCat("--nproc=", world)}), 0) << LogTail(out + ".log");
    }
    return out;
  }

  // Same losses at every step and the same final weights, bit for bit.
  static void ExpectSameRun(const std::string& got, int world) {
    const std::string& want = Reference(world);
    const auto want_losses = TrainLosses(want), got_losses = TrainLosses(got);
    ASSERT_EQ(want_losses.size(), static_cast<size_t>(kSteps));
    ASSERT_EQ(got_losses.size(), static_cast<size_t>(kSteps)) << LogTail(got + ".log");
    for (const auto& [step, loss] : want_losses) {
      EXPECT_EQ(got_losses.at(step), loss) << "step " << step;
    }
    const std::string model = absl::StrCat("/checkpoints/", CheckpointName(kSteps), "/model.pt");
    auto a = ReadFile(want + model), b = ReadFile(got + model);
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    EXPECT_TRUE(*a == *b) << "final weights differ from the uninterrupted run's";
  }

  // Waits until `out` has logged step `step`; false when `pid` exits first or time runs out.
  static bool WaitForStep(const std::string& out, int64_t step, pid_t pid) {
    const auto start = Clock::now();
    while (LastLoggedStep(out) < step) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) return false;
      if (Clock::now() - start > kTimeout) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
};

class TorchrunTest : public LaunchTest {
 protected:
  void SetUp() override {
    LaunchTest::SetUp();
    if (IsSkipped()) return;
    torchrun_ = Torchrun();
    if (torchrun_.empty()) {
      GTEST_SKIP() << "no torch 2.11 torchrun (bash scripts/setup.sh --cuda installs it in "
                      "/var/cache/gmlp/torch-2.11.0, or set GMLP_TORCH_VENV)";
    }
  }

  // `torchrun <launcher...> --no_python gmlp pretrain Args(out)`, started. Unless the launcher
  // names its own endpoint, a free --master_port is added: torchrun's default, 29500, would be
  // shared by the tests ctest runs side by side (EADDRINUSE in the agent's store).
  pid_t StartTorchrun(const std::vector<std::string>& launcher, const std::string& out,
                      const std::string& log) const {
    std::vector<std::string> argv = {torchrun_};
    argv.insert(argv.end(), launcher.begin(), launcher.end());
    const bool has_endpoint = std::any_of(launcher.begin(), launcher.end(), [](const auto& a) {
      return absl::StartsWith(a, "--master_port") || absl::StartsWith(a, "--rdzv-endpoint") ||
             a == "--standalone";
    });
    if (!has_endpoint) argv.push_back(absl::StrCat("--master_port=", FreeTcpPort()));
    argv.insert(argv.end(), {"--no_python", kGmlpBinary, "pretrain"});
    for (const std::string& a : Args(out)) argv.push_back(a);
    return StartProcess(argv, {{"OMP_NUM_THREADS=1"}, log});
  }

  int RunTorchrun(const std::vector<std::string>& launcher, const std::string& out) const {
    const auto status = WaitAtMost(StartTorchrun(launcher, out, out + ".log"), kTimeout);
    return status ? ExitCode(*status) : -1;
  }

  std::string torchrun_;
};

TEST_F(TorchrunTest, OneAndTwoLocalRanks) {
  for (int world : {1, 2}) {
    const std::string out = testing::FreshTempDir(absl::StrCat("torchrun_local_", world));
    ASSERT_EQ(RunTorchrun({absl::StrCat("--nproc_per_node=", world)}, out), 0)
        << LogTail(out + ".log");
    ExpectSameRun(out, world);
  }
}

TEST_F(TorchrunTest, StandaloneAndC10dRendezvous) {
  const std::string standalone = testing::FreshTempDir("torchrun_standalone");
  ASSERT_EQ(RunTorchrun({"--standalone", "--nproc_per_node=2"}, standalone), 0)
      << LogTail(standalone + ".log");
  ExpectSameRun(standalone, 2);
  const std::string c10d = testing::FreshTempDir("torchrun_c10d");
  ASSERT_EQ(
      RunTorchrun({"--rdzv-backend=c10d", absl::StrCat("--rdzv-endpoint=127.0.0.1:", FreeTcpPort()),
                   "--nnodes=1", "--nproc_per_node=2"},
                  c10d),
      0)
      << LogTail(c10d + ".log");
  ExpectSameRun(c10d, 2);
}

// Two torchrun agents as two nodes of one rank each, as the README's multi-node line.
TEST_F(TorchrunTest, TwoNodesOnOneMachine) {
  const std::string out = testing::FreshTempDir("torchrun_nodes");
  const std::string port = absl::StrCat("--master_port=", FreeTcpPort());
  std::vector<pid_t> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(StartTorchrun({"--nnodes=2", absl::StrCat("--node_rank=", node),
                                   "--nproc_per_node=1", "--master_addr=127.0.0.1", port},
                                  out, absl::StrCat(out, ".node", node, ".log")));
  }
  for (int node = 0; node < 2; ++node) {
    const auto status = WaitAtMost(nodes[node], kTimeout);
    ASSERT_TRUE(status.has_value()) << "node " << node << " still running";
    EXPECT_EQ(ExitCode(*status), 0) << LogTail(absl::StrCat(out, ".node", node, ".log"));
  }
  ExpectSameRun(out, 2);
}

// A rank SIGKILLed mid-run: torchrun restarts the group, which continues from the last
// checkpoint (--resume=auto is the default) and ends as the uninterrupted run.
TEST_F(TorchrunTest, RestartsAfterARankIsKilled) {
  const std::string out = testing::FreshTempDir("torchrun_restart");
  const pid_t torchrun =
      StartTorchrun({"--nproc_per_node=2", "--max-restarts=3"}, out, out + ".log");
  ASSERT_TRUE(WaitForStep(out, 60, torchrun)) << LogTail(out + ".log");
  const pid_t rank1 = DescendantWithEnv(torchrun, "RANK=1");
  ASSERT_GT(rank1, 0) << "no worker of torchrun has RANK=1";
  ::kill(rank1, SIGKILL);
  const auto status = WaitAtMost(torchrun, kTimeout);
  ASSERT_TRUE(status.has_value()) << "torchrun still running";
  ASSERT_EQ(ExitCode(*status), 0) << LogTail(out + ".log");
  ExpectSameRun(out, 2);
}

// SIGTERM to torchrun (a preempted job): it forwards it, the ranks write a checkpoint together
// and exit with kExitPreempted; the same command continues.
TEST_F(TorchrunTest, SigtermCheckpointsAndTheSameCommandResumes) {
  const std::string out = testing::FreshTempDir("torchrun_sigterm");
  const pid_t torchrun = StartTorchrun({"--nproc_per_node=2"}, out, out + ".1.log");
  ASSERT_TRUE(WaitForStep(out, 60, torchrun)) << LogTail(out + ".1.log");
  ::kill(torchrun, SIGTERM);
  const auto status = WaitAtMost(torchrun, kTimeout);
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(ExitCode(*status), 0);
  const auto checkpoints = ListCheckpoints(out + "/checkpoints");
  ASSERT_FALSE(checkpoints.empty()) << LogTail(out + ".1.log");
  EXPECT_GE(checkpoints.back().first, 60) << LogTail(out + ".1.log");
  auto log = ReadFile(out + ".1.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("preempted (Terminated) after step"), std::string::npos) << *log;
  ASSERT_EQ(RunTorchrun({"--nproc_per_node=2"}, out), 0) << LogTail(out + ".log");
  ExpectSameRun(out, 2);
}

// The README's Slurm line: srun starts every task with SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID
// set, and the job script exports MASTER_ADDR/MASTER_PORT.
TEST_F(LaunchTest, SlurmVariablesAsSrunSetsThem) {
  const std::string out = testing::FreshTempDir("slurm");
  const std::string port = absl::StrCat("MASTER_PORT=", FreeTcpPort());
  std::vector<pid_t> tasks;
  for (int task = 0; task < 2; ++task) {
    tasks.push_back(StartPretrain(
        Args(out), {{absl::StrCat("SLURM_PROCID=", task), "SLURM_NTASKS=2",
                     absl::StrCat("SLURM_LOCALID=", task), "MASTER_ADDR=127.0.0.1", port},
                    absl::StrCat(out, ".task", task, ".log")}));
  }
  for (int task = 0; task < 2; ++task) {
    const auto status = WaitAtMost(tasks[task], kTimeout);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(ExitCode(*status), 0) << LogTail(absl::StrCat(out, ".task", task, ".log"));
  }
  ExpectSameRun(out, 2);
}

// --nproc --max_restarts: the same as torchrun --max-restarts, without Python.
TEST_F(LaunchTest, NprocRestartsAfterARankIsKilled) {
  const std::string out = testing::FreshTempDir("nproc_restart");
  std::vector<std::string> args = Args(out);
  args.insert(args.end(), {"--nproc=2", "--max_restarts=2"});
  const pid_t launcher = StartPretrain(args, {{}, out + ".log"});
  ASSERT_TRUE(WaitForStep(out, 60, launcher)) << LogTail(out + ".log");
  const pid_t rank1 = DescendantWithEnv(launcher, "RANK=1");
  ASSERT_GT(rank1, 0);
  ::kill(rank1, SIGKILL);
  const auto status = WaitAtMost(launcher, kTimeout);
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(ExitCode(*status), 0) << LogTail(out + ".log");
  auto log = ReadFile(out + ".log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("gmlp pretrain: rank 1 was killed by signal 9"), std::string::npos) << *log;
  EXPECT_NE(log->find("restarting the 2 ranks (restart 1 of --max_restarts=2)"), std::string::npos)
      << *log;
  ExpectSameRun(out, 2);
}

// SIGTERM to one process or to the --nproc launcher: exit 75 with a checkpoint of the step it
// stopped at; re-running the command gives the uninterrupted run's weights.
TEST_F(LaunchTest, SigtermCheckpointsExits75AndResumesBitwise) {
  for (int world : {1, 2}) {
    const std::string out = testing::FreshTempDir(absl::StrCat("sigterm_", world));
    std::vector<std::string> extra = {absl::StrCat("--nproc=", world)};
    std::vector<std::string> args = Args(out);
    args.insert(args.end(), extra.begin(), extra.end());
    const pid_t pid = StartPretrain(args, {{}, out + ".1.log"});
    ASSERT_TRUE(WaitForStep(out, 60, pid)) << LogTail(out + ".1.log");
    ::kill(pid, SIGTERM);
    const auto status = WaitAtMost(pid, kTimeout);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(ExitCode(*status), kExitPreempted) << LogTail(out + ".1.log");
    const auto checkpoints = ListCheckpoints(out + "/checkpoints");
    ASSERT_FALSE(checkpoints.empty());
    const int64_t stopped = checkpoints.back().first;
    EXPECT_GE(stopped, 60);
    EXPECT_LT(stopped, kSteps);
    EXPECT_EQ(LastLoggedStep(out), stopped) << "the ranks stopped at different steps";
    auto log = ReadFile(out + ".1.log");
    ASSERT_TRUE(log.ok());
    const std::string line =
        absl::StrCat("gmlp pretrain: preempted (Terminated) after step ", stopped, "; checkpoint ");
    EXPECT_NE(log->find(line), std::string::npos) << *log;
    EXPECT_EQ(log->find(line), log->rfind(line)) << "more than one rank printed it";
    ASSERT_EQ(Run(out, extra), 0) << LogTail(out + ".log");
    ExpectSameRun(out, world);
  }
}

// A checkpoint that cannot be written (a file-size limit, as a full disk) stops the run with one
// line naming the file and the error; the previous checkpoint stays loadable and a later run
// with room continues from it to the uninterrupted run's weights.
TEST_F(LaunchTest, FullDiskKeepsThePreviousCheckpoint) {
  const std::string out = testing::FreshTempDir("disk_full");
  const pid_t pid = StartPretrain(Args(out), {{}, out + ".1.log"});
  ASSERT_TRUE(WaitForStep(out, 20, pid)) << LogTail(out + ".1.log");
  ::kill(pid, SIGTERM);  // a checkpoint between the every-50 ones
  ASSERT_EQ(ExitCode(WaitStatus(pid)), kExitPreempted) << LogTail(out + ".1.log");
  const auto before = ListCheckpoints(out + "/checkpoints");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_LT(before[0].first, 50);
  auto model = ReadFile(before[0].second + "/model.pt");
  ASSERT_TRUE(model.ok());

  ChildOptions limited;
  limited.log = out + ".2.log";
  limited.max_file_bytes = static_cast<int64_t>(model->size() / 2);
  EXPECT_EQ(Run(out, {}, limited), 1) << LogTail(limited.log);
  auto log = ReadFile(limited.log);
  ASSERT_TRUE(log.ok());
  const std::string want = absl::StrCat(
      "gmlp pretrain: error: checkpoint at step 50 not written: ", out, "/checkpoints/");
  EXPECT_NE(log->find(want), std::string::npos) << *log;
  EXPECT_NE(log->find("File too large"), std::string::npos) << *log;
  EXPECT_NE(log->find(absl::StrCat("the previous checkpoint ", before[0].second, " is intact")),
            std::string::npos)
      << *log;
  const auto after = ListCheckpoints(out + "/checkpoints");
  ASSERT_EQ(after.size(), 1u) << "a partial checkpoint was left";
  auto model_after = ReadFile(after[0].second + "/model.pt");
  ASSERT_TRUE(model_after.ok());
  EXPECT_TRUE(*model == *model_after);

  ASSERT_EQ(Run(out), 0) << LogTail(out + ".log");
  ExpectSameRun(out, 1);
}

TEST_F(LaunchTest, ResumeRefusesAnotherConfigurationAndNeverRefusesARun) {
  const std::string& run = Reference(1);
  const std::string copy = testing::FreshTempDir("resume_refusals");
  // Only the config is read before the refusal: the reference run's directory stays untouched.
  struct Case {
    std::vector<std::string> extra;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {{"--lr=0.003"}, "has lr = 0.001, this command 0.003"},
           {{"--model_overrides=d_model=32,n_layers=2,d_ffn=64"},
            "has model.n_layers = 1, this command 2"},
           {{"--resume=never"}, "not empty, and --resume=never starts afresh only in an empty"},
       }) {
    std::vector<std::string> args = Args(run);
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const std::string log = copy + "/log";
    const auto status = WaitAtMost(StartPretrain(args, {{}, log}), kTimeout);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(ExitCode(*status), 1) << c.expect;
    auto text = ReadFile(log);
    ASSERT_TRUE(text.ok());
    EXPECT_NE(text->find("gmlp pretrain: error: "), std::string::npos) << *text;
    EXPECT_NE(text->find(c.expect), std::string::npos) << *text;
    EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), 1) << *text;
  }
  // A longer run of the same configuration is the same run: --steps may change.
  const std::string saved =
      absl::StrCat(run, "/checkpoints/", CheckpointName(kSteps), "/config.json");
  auto j = ReadFile(saved);
  ASSERT_TRUE(j.ok());
  nlohmann::json now = nlohmann::json::parse(*j);
  now["steps"] = 400;
  now["micro_batch"] = 2;
  EXPECT_TRUE(CheckSameRun(nlohmann::json::parse(*j), now, saved).ok());
  now["model"]["d_ffn"] = 128;
  const absl::Status st = CheckSameRun(nlohmann::json::parse(*j), now, saved);
  EXPECT_TRUE(absl::IsFailedPrecondition(st));
  EXPECT_NE(st.message().find("model.d_ffn = 64, this command 128"), std::string::npos) << st;
}

}  // namespace
}  // namespace gmlp::pretrain
