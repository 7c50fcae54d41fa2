// A full disk (a file-size limit, RLIMIT_FSIZE: no mounts or privileges needed) while `gmlp
// prepare` writes shards and while `gmlp finetune` writes its results: one error line naming the
// file and the system's error, a non-zero exit, no partial file under a final name, and the same
// command with room afterwards finishing as if nothing had happened. (Checkpoints under a full
// disk: LaunchTest.FullDiskKeepsThePreviousCheckpoint in tests/pretrain_launch_test.cc.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "tests/file_test_util.h"
#include "tests/subprocess_test_util.h"

namespace gmlp::cli {
namespace {

using gmlp::testing::ChildOptions;
using gmlp::testing::ExitCode;
using gmlp::testing::kGmlpBinary;
using gmlp::testing::StartProcess;
using gmlp::testing::WaitAtMost;

const std::string kMoby = GMLP_SOURCE_DIR "/../shared/data/corpus/moby-dick/moby_dick.txt";
const std::string kSst2 = GMLP_SOURCE_DIR "/../shared/data/glue/SST-2";

class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PathExists(kGmlpBinary)) GTEST_SKIP() << "gmlp binary not built at " << kGmlpBinary;
    if (!PathExists(kMoby) || !PathExists(kSst2)) GTEST_SKIP() << "shared data not found";
    dir_ = gmlp::testing::MakeTempDir("full_disk");
  }
  void TearDown() override {
    if (!dir_.empty()) gmlp::testing::RemoveTempDir(dir_);
  }

  // `gmlp <args>` with at most `max_file_bytes` per file (-1: no limit); (exit code, log).
  std::pair<int, std::string> Gmlp(std::vector<std::string> args, int64_t max_file_bytes = -1) {
    args.insert(args.begin(), kGmlpBinary);
    ChildOptions options;
    options.log = dir_ + "/log";
    options.max_file_bytes = max_file_bytes;
    const auto status = WaitAtMost(StartProcess(args, options), std::chrono::seconds(300));
    auto log = ReadFile(options.log);
    return {status ? ExitCode(*status) : -1, log.ok() ? *log : ""};
  }

  // The lines of `log` that start with "gmlp <subcommand>: error: ".
  static std::vector<std::string> Errors(const std::string& log, const std::string& subcommand) {
    std::vector<std::string> out;
    for (absl::string_view line : absl::StrSplit(log, '\n')) {
      if (absl::StartsWith(line, "gmlp " + subcommand + ": error: ")) out.emplace_back(line);
    }
    return out;
  }

  std::string dir_;
};

TEST_F(FullDiskTest, PrepareAndFinetuneNameTheFileAndFinishWithRoom) {
  const std::string spm = dir_ + "/spm";
  ASSERT_EQ(
      Gmlp({"tokenizer", "train", "--input=" + kMoby, "--model_prefix=" + spm, "--vocab_size=1000"})
          .first,
      0);
  const std::vector<std::string> prepare = {"prepare",
                                            "--input=" + kMoby,
                                            "--tokenizer=" + spm + ".model",
                                            "--output=" + dir_ + "/shards",
                                            "--seq_len=64",
                                            "--workers=2"};
  // The train shard is ~0.9 MB: a 64 KiB limit stops it part-way.
  auto [code, log] = Gmlp(prepare, 64 << 10);
  EXPECT_EQ(code, 1) << log;
  std::vector<std::string> errors = Errors(log, "prepare");
  ASSERT_EQ(errors.size(), 1u) << log;
  EXPECT_NE(errors[0].find(dir_ + "/shards/"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("File too large"), std::string::npos) << errors[0];
  for (const std::string& name : ListDir(dir_ + "/shards")) {
    EXPECT_FALSE(absl::EndsWith(name, ".bin")) << "a partial shard under its final name: " << name;
  }
  EXPECT_FALSE(PathExists(dir_ + "/shards/manifest.json"));
  ASSERT_EQ(Gmlp(prepare).first, 0);
  ASSERT_TRUE(PathExists(dir_ + "/shards/manifest.json"));

  const std::vector<std::string> pretrain = {"pretrain",
                                             "--shard_dir=" + dir_ + "/shards",
                                             "--out_dir=" + dir_ + "/run",
                                             "--model_overrides=d_model=32,n_layers=1,d_ffn=64",
                                             "--steps=4",
                                             "--warmup_steps=1",
                                             "--micro_batch=8",
                                             "--global_batch=8",
                                             "--eval_every=0",
                                             "--peak_gflops=100",
                                             "--threads=1"};
  ASSERT_EQ(Gmlp(pretrain).first, 0);

  const std::vector<std::string> finetune = {"finetune",
                                             "--task=SST-2",
                                             "--data_dir=" + kSst2,
                                             "--init=" + dir_ + "/run",
                                             "--seeds=1",
                                             "--epochs=1",
                                             "--max_train_examples=64",
                                             "--max_eval_examples=64",
                                             "--max_len=64",
                                             "--output=" + dir_ + "/ft",
                                             "--threads=1"};
  std::tie(code, log) = Gmlp(finetune, 1024);
  EXPECT_EQ(code, 1) << log;
  errors = Errors(log, "finetune");
  ASSERT_EQ(errors.size(), 1u) << log;
  EXPECT_NE(errors[0].find(dir_ + "/ft/"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("File too large"), std::string::npos) << errors[0];
  EXPECT_FALSE(PathExists(dir_ + "/ft/results.json"));
  std::tie(code, log) = Gmlp(finetune);
  ASSERT_EQ(code, 0) << log;
  EXPECT_TRUE(PathExists(dir_ + "/ft/results.json"));
}

}  // namespace
}  // namespace gmlp::cli
