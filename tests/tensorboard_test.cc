// TensorBoard event files (common/tensorboard.h): the record framing against a known CRC32C
// vector, and the files read back by TensorBoard's own reader (EventAccumulator, in the torch
// 2.11 venv that `bash scripts/python_env.sh` makes; skipped, naming it, where it is absent): a
// truncated file up to its last whole record, a restart marker, and the event files of a real
// `gmlp pretrain` (resumed) and `gmlp finetune` against metrics.jsonl and results.json, value for
// value.
#include "common/tensorboard.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "tests/file_test_util.h"
#include "tests/subprocess_test_util.h"

namespace gmlp {
namespace {

using testing::ChildOptions;
using testing::ExitCode;
using testing::kGmlpBinary;
using testing::StartProcess;
using testing::WaitAtMost;

const std::string kSource = GMLP_SOURCE_DIR;
const std::string kMoby = kSource + "/../shared/data/corpus/moby-dick/moby_dick.txt";
const std::string kSst2 = kSource + "/../shared/data/glue/SST-2";

// The torch 2.11 environment's python; "" when absent.
std::string VenvPython() { return gmlp::testing::TorchVenvTool("python"); }

// Runs argv with output to `log`; (exit code, log text).
std::pair<int, std::string> RunCommand(const std::vector<std::string>& argv,
                                       const std::string& log) {
  ChildOptions options;
  options.log = log;
  const auto status = WaitAtMost(StartProcess(argv, options), std::chrono::seconds(600));
  auto text = ReadFile(log);
  return {status ? ExitCode(*status) : -1, text.ok() ? *text : ""};
}

// tag -> step -> value, as TensorBoard reads `logdir` (tests/python/tensorboard_scalars.py); a
// (tag, step) read twice is counted in `duplicates`.
struct Read {
  std::map<std::string, std::map<int64_t, double>> tags;
  int duplicates = 0;
  double file_version = 0;
};
Read TensorBoardScalars(const std::string& python, const std::string& logdir,
                        const std::string& work) {
  Read r;
  const std::string out = JoinPath(work, "scalars.json");
  const auto [code, log] =
      RunCommand({python, kSource + "/tests/python/tensorboard_scalars.py", logdir, out},
                 JoinPath(work, "tensorboard.log"));
  EXPECT_EQ(code, 0) << log;
  auto text = ReadFile(out);
  if (!text.ok()) {
    ADD_FAILURE() << text.status();
    return r;
  }
  const nlohmann::json j = nlohmann::json::parse(*text);
  r.file_version = j.value("file_version", 0.0);
  for (const auto& [tag, points] : j.at("tags").items()) {
    for (const auto& p : points) {
      if (!r.tags[tag].emplace(p.at(0).get<int64_t>(), p.at(1).get<double>()).second) {
        ++r.duplicates;
      }
    }
  }
  return r;
}

// simple_value is a float: TensorBoard's value is the float nearest the logged double.
void ExpectScalar(const Read& r, const std::string& tag, int64_t step, double want) {
  auto t = r.tags.find(tag);
  ASSERT_NE(t, r.tags.end()) << "no tag " << tag;
  auto s = t->second.find(step);
  ASSERT_NE(s, t->second.end()) << tag << " has no step " << step;
  EXPECT_EQ(s->second, static_cast<double>(static_cast<float>(want))) << tag << " @ " << step;
}

size_t Count(const Read& r) {
  size_t n = 0;
  for (const auto& [tag, steps] : r.tags) n += steps.size();
  return n;
}

std::vector<std::string> EventFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& name : ListDir(dir)) {
    if (absl::StartsWith(name, "events.out.tfevents.")) out.push_back(JoinPath(dir, name));
  }
  return out;
}

uint32_t Le32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

TEST(TfRecordTest, Crc32cAndFraming) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c(""), 0u);
  // RFC 3720 (iSCSI) B.4: 32 bytes of zeros.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  const uint32_t crc = Crc32c("123456789");
  EXPECT_EQ(MaskedCrc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);

  const std::string data = "hello event";
  const std::string frame = TfRecordFrame(data);
  ASSERT_EQ(frame.size(), 8 + 4 + data.size() + 4);
  uint64_t length;
  std::memcpy(&length, frame.data(), 8);
  EXPECT_EQ(length, data.size());
  EXPECT_EQ(Le32(frame, 8), MaskedCrc32c(frame.substr(0, 8)));
  EXPECT_EQ(frame.substr(12, data.size()), data);
  EXPECT_EQ(Le32(frame, 12 + data.size()), MaskedCrc32c(data));
}

TEST(TfRecordTest, ScalarEventBytes) {
  // Event{wall_time: 1.5, step: 3, summary{value{tag: "a", simple_value: 2}}}, as protobuf
  // serializes it.
  const std::string want = std::string("\x09\x00\x00\x00\x00\x00\x00\xf8\x3f", 9) +
                           std::string("\x10\x03", 2) + std::string("\x2a\x0a\x0a\x08", 4) +
                           std::string("\x0a\x01\x61\x15\x00\x00\x00\x40", 8);
  EXPECT_EQ(ScalarsEvent(1.5, 3, {{"a", 2.0}}), want);
}

class EventFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = VenvPython();
    if (python_.empty()) GTEST_SKIP() << "no torch 2.11 venv: run `bash scripts/python_env.sh`";
    dir_ = testing::MakeTempDir("tensorboard");
  }
  void TearDown() override {
    if (!dir_.empty()) testing::RemoveTempDir(dir_);
  }
  std::string python_, dir_;
};

TEST_F(EventFileTest, TensorBoardReadsEveryScalarAndATruncatedFileUpToItsLastWholeRecord) {
  const std::string logdir = JoinPath(dir_, "whole");
  std::string path;
  {
    auto w = EventWriter::Open(logdir);
    ASSERT_TRUE(w.ok()) << w.status();
    path = (*w)->path();
    ASSERT_TRUE((*w)->WriteScalars(1, {{"loss", 7.25}, {"lr", 1e-3}}).ok());
    ASSERT_TRUE((*w)->WriteScalars(2, {{"loss", 6.1}, {"seed-1/dev/accuracy", 0.5}}).ok());
    ASSERT_TRUE((*w)->WriteScalars(int64_t{3} << 33, {{"loss", -1e-30}}).ok());
  }
  const Read r = TensorBoardScalars(python_, logdir, dir_);
  EXPECT_EQ(r.file_version, 2.0);
  EXPECT_EQ(Count(r), 5u);
  ExpectScalar(r, "loss", 1, 7.25);
  ExpectScalar(r, "lr", 1, 1e-3);
  ExpectScalar(r, "loss", 2, 6.1);
  ExpectScalar(r, "seed-1/dev/accuracy", 2, 0.5);
  ExpectScalar(r, "loss", int64_t{3} << 33, -1e-30);

  // A crash mid-append: every whole record before the torn one is read.
  const std::string bytes = testing::ReadBytes(path);
  const std::string last = TfRecordFrame(ScalarsEvent(0, int64_t{3} << 33, {{"loss", -1e-30}}));
  for (size_t cut : {size_t{3}, last.size() - 5, last.size() - 13}) {
    const std::string torn = JoinPath(dir_, absl::StrCat("torn", cut));
    ASSERT_TRUE(MakeDirs(torn).ok());
    testing::WriteBytes(JoinPath(torn, "events.out.tfevents.1.host"),
                        bytes.substr(0, bytes.size() - cut));
    const Read t = TensorBoardScalars(python_, torn, dir_);
    EXPECT_EQ(Count(t), 4u) << "cut " << cut;
    ExpectScalar(t, "loss", 2, 6.1);
    ExpectScalar(t, "seed-1/dev/accuracy", 2, 0.5);
  }
}

TEST_F(EventFileTest, ARestartMarkerDropsWhatEarlierFilesLoggedFromItsStep) {
  const std::string logdir = JoinPath(dir_, "run");
  std::string first;
  {
    auto w = EventWriter::Open(logdir);
    ASSERT_TRUE(w.ok()) << w.status();
    first = (*w)->path();
    ASSERT_TRUE((*w)->WriteStart(0).ok());
    for (int64_t s = 1; s <= 5; ++s) ASSERT_TRUE((*w)->WriteScalars(s, {{"x", s * 1.0}}).ok());
  }
  // The resumed run, at once (the same second): its file must sort after the first.
  auto w = EventWriter::Open(logdir);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_GT((*w)->path(), first);
  ASSERT_TRUE((*w)->WriteStart(3).ok());
  for (int64_t s = 3; s <= 4; ++s) ASSERT_TRUE((*w)->WriteScalars(s, {{"x", s * 10.0}}).ok());
  EXPECT_EQ(EventFiles(logdir).size(), 2u);
  const Read r = TensorBoardScalars(python_, logdir, dir_);
  EXPECT_EQ(r.duplicates, 0);
  ASSERT_EQ(r.tags.at("x").size(), 4u);
  ExpectScalar(r, "x", 1, 1);
  ExpectScalar(r, "x", 2, 2);
  ExpectScalar(r, "x", 3, 30);
  ExpectScalar(r, "x", 4, 40);
}

TEST(EventWriterTest, AnUnwritableDirectoryIsAnErrorNamingIt) {
  const std::string dir = testing::MakeTempDir("tensorboard_ro");
  testing::WriteBytes(JoinPath(dir, "file"), "x");
  auto w = EventWriter::Open(JoinPath(dir, "file/tb"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find(JoinPath(dir, "file")), absl::string_view::npos)
      << w.status();
  testing::RemoveTempDir(dir);
}

// In a child: appends events to a new file in `dir` under a 300-byte file-size limit (a full
// disk) until a write fails; 0 when the error names the file and the system's error.
int AppendUntilFull(const std::string& dir) {
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit limit{300, 300};
  ::setrlimit(RLIMIT_FSIZE, &limit);
  auto w = EventWriter::Open(dir);
  if (!w.ok()) return 2;
  absl::Status st;
  for (int64_t step = 1; st.ok() && step < 100; ++step) {
    st = (*w)->WriteScalars(step, {{"loss", 1.0}, {"accuracy", 0.5}});
  }
  std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
  return absl::StrContains(st.message(), (*w)->path()) &&
                 absl::StrContains(st.message(), "File too large")
             ? 0
             : 1;
}

TEST(EventWriterTest, AFullDiskIsAnErrorNamingTheFile) {
  const std::string dir = testing::MakeTempDir("tensorboard_full");
  EXPECT_EXIT(std::_Exit(AppendUntilFull(dir)), ::testing::ExitedWithCode(0),
              "events.out.tfevents");
  testing::RemoveTempDir(dir);
}

// The real commands: a tokenizer and shards from a slice of Moby-Dick, a short pretraining run
// (resumed once from an earlier checkpoint), and a two-seed finetuning run on SST-2.
class PipelineTest : public EventFileTest {
 protected:
  void SetUp() override {
    EventFileTest::SetUp();
    if (IsSkipped()) return;
    if (!PathExists(kGmlpBinary)) GTEST_SKIP() << "gmlp binary not built at " << kGmlpBinary;
    if (!PathExists(kMoby) || !PathExists(kSst2)) GTEST_SKIP() << "shared data not found";
  }

  int Gmlp(std::vector<std::string> args) {
    args.insert(args.begin(), kGmlpBinary);
    const auto [code, log] = RunCommand(args, JoinPath(dir_, "gmlp.log"));
    EXPECT_EQ(code, 0) << log;
    return code;
  }

  void MakeShards() {
    auto moby = ReadFile(kMoby);
    ASSERT_TRUE(moby.ok()) << moby.status();
    const std::string text = JoinPath(dir_, "corpus.txt");
    ASSERT_TRUE(WriteFileAtomic(text, moby->substr(0, 300000)).ok());
    ASSERT_EQ(Gmlp({"tokenizer", "train", "--input=" + text, "--model_prefix=" + dir_ + "/spm",
                    "--vocab_size=800", "--threads=2"}),
              0);
    ASSERT_EQ(Gmlp({"prepare", "--input=" + text, "--tokenizer=" + dir_ + "/spm.model",
                    "--output=" + dir_ + "/shards", "--seq_len=32", "--valid_fraction=0.1"}),
              0);
  }

  std::vector<std::string> PretrainArgs(const std::string& out, int64_t steps) {
    return {"pretrain",
            "--shard_dir=" + dir_ + "/shards",
            "--out_dir=" + out,
            "--preset=gmlp-tiny",
            "--model_overrides=d_model=32,n_layers=1,d_ffn=64",
            "--steps=" + std::to_string(steps),
            "--micro_batch=8",
            "--global_batch=8",
            "--warmup_steps=2",
            "--log_every=1",
            "--eval_every=3",
            "--eval_batches=2",
            "--checkpoint_every=3",
            "--peak_gflops=100",
            "--threads=2"};
  }
};

TEST_F(PipelineTest, PretrainAndFinetuneEventsHoldEveryLoggedScalar) {
  MakeShards();
  const std::string run = JoinPath(dir_, "run");
  ASSERT_EQ(Gmlp(PretrainArgs(run, 6)), 0);
  // A run that died after step 6 but before its last checkpoint: the same command resumes from
  // step 3, cuts metrics.jsonl back to it and logs 4..6 again, into a second event file.
  ASSERT_TRUE(RemoveTree(JoinPath(run, "checkpoints/step_000006")).ok());
  ASSERT_EQ(Gmlp(PretrainArgs(run, 6)), 0);
  EXPECT_EQ(EventFiles(JoinPath(run, "tb")).size(), 2u);

  Read r = TensorBoardScalars(python_, JoinPath(run, "tb"), dir_);
  EXPECT_EQ(r.duplicates, 0) << "the resumed steps must replace the earlier file's";
  size_t logged = 0;
  std::set<std::string> types;
  for (const nlohmann::json& j : testing::JsonRecords(JoinPath(run, "metrics.jsonl"))) {
    types.insert(j.at("type").get<std::string>());
    for (const auto& [key, value] : j.items()) {
      if (key == "step" || !value.is_number()) continue;
      ExpectScalar(r, key, j.at("step").get<int64_t>(), value.get<double>());
      ++logged;
    }
  }
  // "run" lines (what made the records, one per start) hold no scalar of their own.
  EXPECT_EQ(types, (std::set<std::string>{"run", "train", "eval"}));
  EXPECT_GT(logged, 6u * 9);
  EXPECT_EQ(Count(r), logged) << "TensorBoard holds a scalar metrics.jsonl does not";
  EXPECT_EQ(r.tags.at("loss").size(), 6u);
  EXPECT_EQ(r.tags.at("eval_loss").size(), 2u);

  const std::string ft = JoinPath(dir_, "ft");
  ASSERT_EQ(Gmlp({"finetune", "--task=SST-2", "--data_dir=" + kSst2, "--init=" + run,
                  "--output=" + ft, "--seeds=1,2", "--epochs=2", "--batch_size=16",
                  "--max_train_examples=64", "--max_eval_examples=32", "--max_len=32",
                  "--predict_test=false", "--save_model=false", "--threads=2"}),
            0);
  auto results = ReadFile(JoinPath(ft, "results.json"));
  ASSERT_TRUE(results.ok()) << results.status();
  const nlohmann::json res = nlohmann::json::parse(*results);
  r = TensorBoardScalars(python_, JoinPath(ft, "tb"), dir_);
  EXPECT_EQ(r.duplicates, 0);
  logged = 0;
  ASSERT_EQ(res.at("seeds").size(), 2u);
  for (const nlohmann::json& seed : res.at("seeds")) {
    const std::string s = absl::StrCat("seed-", seed.at("seed").get<uint64_t>());
    ASSERT_EQ(seed.at("epochs").size(), 2u);
    for (const nlohmann::json& e : seed.at("epochs")) {
      const int64_t epoch = e.at("epoch").get<int64_t>();
      ExpectScalar(r, s + "/train_loss", epoch, e.at("train_loss").get<double>());
      ExpectScalar(r, s + "/padding", epoch, e.at("padding").get<double>());
      logged += 2;
      for (const auto& [split, metrics] : e.at("metrics").items()) {
        for (const auto& [m, v] : metrics.items()) {
          ExpectScalar(r, s + "/" + split + "/" + m, epoch, v.get<double>());
          ++logged;
        }
      }
    }
    for (const auto& [split, metrics] : seed.at("best").items()) {
      for (const auto& [m, v] : metrics.items()) {
        ExpectScalar(r, s + "/best/" + split + "/" + m, seed.at("best_epoch").get<int64_t>(),
                     v.get<double>());
        ++logged;
      }
    }
  }
  EXPECT_TRUE(r.tags.count("seed-1/dev/accuracy")) << "SST-2's dev split, per epoch";
  EXPECT_EQ(Count(r), logged) << "TensorBoard holds a scalar results.json does not";

  // --tensorboard_dir=none: no event file, nor the directory.
  const std::string quiet = JoinPath(dir_, "quiet");
  ASSERT_EQ(Gmlp({"pretrain", "--shard_dir=" + dir_ + "/shards", "--out_dir=" + quiet,
                  "--model_overrides=d_model=32,n_layers=1,d_ffn=64", "--steps=2",
                  "--micro_batch=8", "--global_batch=8", "--warmup_steps=1", "--peak_gflops=100",
                  "--tensorboard_dir=none", "--threads=2"}),
            0);
  EXPECT_TRUE(PathExists(JoinPath(quiet, "metrics.jsonl")));
  EXPECT_FALSE(PathExists(JoinPath(quiet, "tb")));
  const std::string ft_quiet = JoinPath(dir_, "ft_quiet");
  ASSERT_EQ(Gmlp({"finetune", "--task=SST-2", "--data_dir=" + kSst2, "--init=" + quiet,
                  "--output=" + ft_quiet, "--epochs=1", "--max_train_examples=16",
                  "--max_eval_examples=16", "--max_len=32", "--predict_test=false",
                  "--save_model=false", "--tensorboard_dir=none", "--threads=2"}),
            0);
  EXPECT_TRUE(PathExists(JoinPath(ft_quiet, "results.json")));
  EXPECT_FALSE(PathExists(JoinPath(ft_quiet, "tb")));
}

}  // namespace
}  // namespace gmlp
