// The trainer on one rank with the fake loader and tiny model: gradient accumulation,
// checkpoints (atomic, pruned, failure-safe), exact resume, NaN handling, metrics.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "pretrain/checkpoint.h"
#include "pretrain/checkpoint_state.h"
#include "pretrain/config.h"
#include "pretrain/metrics.h"
#include "pretrain/trainer.h"
#include "tests/pretrain_test_util.h"

namespace gmlp::pretrain {
namespace {

using testing::FakeLoader;
using testing::TinyMlm;

constexpr int64_t kVocab = 40;

struct RunParts {
  TinyMlm model{nullptr};
  std::unique_ptr<FakeLoader> loader;
  std::unique_ptr<FakeLoader> valid;
  std::unique_ptr<Dist> dist;
  std::unique_ptr<Trainer> trainer;
};

TrainConfig BaseConfig(const std::string& out_dir) {
  TrainConfig c;
  c.out_dir = out_dir;
  c.micro_batch = 8;
  c.global_batch = 8;
  c.steps = 8;
  c.lr = 5e-3;
  c.warmup_steps = 2;
  c.log_every = 1;
  c.eval_every = 4;
  c.eval_batches = 2;
  c.checkpoint_every = 4;
  return c;
}

// model_seed differs between runs that must end up equal through a checkpoint.
RunParts MakeRun(const TrainConfig& c, uint64_t model_seed, double dropout = 0.1,
                 TrainerOptions extra = TrainerOptions()) {
  RunParts r;
  torch::manual_seed(model_seed);
  r.model = TinyMlm(kVocab, 16, dropout);
  r.loader = std::make_unique<FakeLoader>(kVocab, 10, c.micro_batch);
  r.valid = std::make_unique<FakeLoader>(kVocab, 10, c.micro_batch, 0, 1, /*seed=*/99);
  r.dist = *Dist::Connect(DistEnv{}, std::chrono::seconds(5));
  extra.config = c;
  extra.config_json = c.ToJson();
  extra.quiet = true;
  r.trainer = std::make_unique<Trainer>(extra, r.model.ptr(), testing::ForwardOf(r.model),
                                        r.loader.get(), r.valid.get(), r.dist.get());
  return r;
}

// step -> loss of the train records in a metrics file.
std::map<int64_t, double> TrainLosses(const std::string& path) {
  std::map<int64_t, double> out;
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    if (j["type"] == "train") out[j["step"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

TEST(TrainerTest, AccumulationMatchesOneLargeBatch) {
  const std::string dir = testing::FreshTempDir("accum");
  TrainConfig big = BaseConfig(dir + "/big");
  big.micro_batch = 8;
  TrainConfig small = BaseConfig(dir + "/small");
  small.micro_batch = 4;  // 2 accumulation steps
  RunParts a = MakeRun(big, 1, /*dropout=*/0.0);
  RunParts b = MakeRun(small, 1, /*dropout=*/0.0);
  ASSERT_TRUE(a.trainer->Init().ok());
  ASSERT_TRUE(b.trainer->Init().ok());
  EXPECT_EQ(b.trainer->accumulation_steps(), 2);
  for (int s = 0; s < 4; ++s) {
    auto sa = a.trainer->TrainStep();
    auto sb = b.trainer->TrainStep();
    ASSERT_TRUE(sa.ok() && sb.ok());
    EXPECT_NEAR(sa->loss, sb->loss, 1e-6);
    EXPECT_NEAR(sa->grad_norm, sb->grad_norm, 1e-5);
    EXPECT_EQ(sa->masked_tokens, sb->masked_tokens);
  }
  for (size_t i = 0; i < a.trainer->params().size(); ++i) {
    EXPECT_TRUE(torch::allclose(a.trainer->params()[i], b.trainer->params()[i], 1e-5, 1e-6));
  }
}

TEST(TrainerTest, LossFallsOnALearnablePattern) {
  const std::string dir = testing::FreshTempDir("learn");
  TrainConfig c = BaseConfig(dir);
  c.steps = 150;
  c.lr = 1e-2;
  c.warmup_steps = 10;
  c.checkpoint_every = 0;
  c.eval_every = 0;
  RunParts r = MakeRun(c, 3, 0.0);
  ASSERT_TRUE(r.trainer->Init().ok());
  double first = 0, last = 0;
  for (int s = 0; s < c.steps; ++s) {
    auto st = r.trainer->TrainStep();
    ASSERT_TRUE(st.ok());
    if (s < 5) first += st->loss / 5;
    if (s >= c.steps - 5) last += st->loss / 5;
  }
  EXPECT_LT(last, first - 1.0);
  EXPECT_LT(last, std::log(kVocab) - 1.0);  // the "previous id + 1" pattern is learnt
}

// bf16 autocast: the same steps from the same weights give losses within bf16 rounding of fp32
// (not equal: the GEMMs did run in bf16), and the pattern is still learnt.
TEST(TrainerTest, Bf16AutocastTracksFp32AndLearns) {
  const std::string dir = testing::FreshTempDir("bf16");
  TrainConfig c = BaseConfig(dir + "/fp32");
  c.steps = 150;
  c.lr = 1e-2;
  c.warmup_steps = 10;
  c.checkpoint_every = 0;
  c.eval_every = 0;
  TrainConfig h = c;
  h.out_dir = dir + "/bf16";
  h.bf16 = true;
  RunParts a = MakeRun(c, 3, 0.0);
  RunParts b = MakeRun(h, 3, 0.0);
  ASSERT_TRUE(a.trainer->Init().ok());
  ASSERT_TRUE(b.trainer->Init().ok());
  double last = 0;
  for (int s = 0; s < c.steps; ++s) {
    auto sa = a.trainer->TrainStep();
    auto sb = b.trainer->TrainStep();
    ASSERT_TRUE(sa.ok() && sb.ok());
    if (s == 0) {
      EXPECT_NEAR(sb->loss, sa->loss, 0.02 * sa->loss);
      EXPECT_NE(sb->loss, sa->loss);
    }
    if (s >= c.steps - 5) last += sb->loss / 5;
  }
  EXPECT_LT(last, std::log(kVocab) - 1.0);
}

// Train 8 steps straight; separately train 4 (+1 lost step, a crash after the checkpoint) and
// resume a freshly initialised model from the checkpoint: the per-step losses in metrics.jsonl
// and the final weights are bitwise equal (dropout on).
TEST(TrainerTest, ResumeIsBitwiseExact) {
  const std::string dir = testing::FreshTempDir("resume");
  TrainConfig c = BaseConfig(dir + "/straight");
  RunParts straight = MakeRun(c, 1);
  ASSERT_TRUE(straight.trainer->Init().ok());
  ASSERT_TRUE(straight.trainer->Run().ok());

  TrainConfig c2 = BaseConfig(dir + "/interrupted");
  {
    // The same run, crashing inside step 6 (after the checkpoint at step 4 and step 5's log).
    RunParts first = MakeRun(c2, 1);
    int calls = 0;
    TinyMlm m = first.model;
    MlmForwardFn crashing = [&calls, m](const model::EncoderInput& in,
                                        const torch::Tensor& idx) mutable {
      if (m->is_training()) TORCH_CHECK(++calls <= 5, "simulated crash");
      return m->forward(in, idx);
    };
    TrainerOptions o;
    o.config = c2;
    o.config_json = c2.ToJson();
    o.quiet = true;
    Trainer trainer(o, m.ptr(), crashing, first.loader.get(), first.valid.get(), first.dist.get());
    ASSERT_TRUE(trainer.Init().ok());
    absl::Status st = trainer.Run();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("simulated crash"), std::string::npos) << st;
  }
  // A metrics file as a SIGKILL may leave it: a torn last line.
  {
    std::FILE* f = std::fopen((c2.out_dir + "/metrics.jsonl").c_str(), "a");
    std::fputs("{\"type\":\"tra", f);
    std::fclose(f);
  }
  EXPECT_EQ(TrainLosses(c2.out_dir + "/metrics.jsonl").size(), 5u);
  RunParts resumed = MakeRun(c2, /*model_seed=*/12345);
  absl::Status init = resumed.trainer->Init(c2.out_dir);
  ASSERT_TRUE(init.ok()) << init;
  EXPECT_EQ(resumed.trainer->step(), 4);
  ASSERT_TRUE(resumed.trainer->Run().ok());

  const auto want = TrainLosses(c.out_dir + "/metrics.jsonl");
  const auto got = TrainLosses(c2.out_dir + "/metrics.jsonl");
  ASSERT_EQ(want.size(), 8u);
  ASSERT_EQ(got.size(), 8u);
  for (const auto& [step, loss] : want) EXPECT_EQ(got.at(step), loss) << "step " << step;
  for (size_t i = 0; i < straight.trainer->params().size(); ++i) {
    EXPECT_TRUE(torch::equal(straight.trainer->params()[i], resumed.trainer->params()[i]));
  }
}

TEST(TrainerTest, KeepsTheNewestCheckpointsAndRefusesToOverwriteARun) {
  const std::string dir = testing::FreshTempDir("keep");
  TrainConfig c = BaseConfig(dir);
  c.steps = 5;
  c.checkpoint_every = 1;
  c.keep_checkpoints = 2;
  {
    RunParts r = MakeRun(c, 1);
    ASSERT_TRUE(r.trainer->Init().ok());
    ASSERT_TRUE(r.trainer->Run().ok());
  }
  const auto list = ListCheckpoints(dir + "/checkpoints");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].first, 4);
  EXPECT_EQ(list[1].first, 5);
  for (const char* f : {kConfigFile, kModelFile, kOptimizerFile, kStateFile}) {
    EXPECT_TRUE(PathExists(JoinPath(list[1].second, f))) << f;
  }
  auto resolved = ResolveCheckpoint(dir);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, list[1].second);
  RunParts again = MakeRun(c, 1);
  absl::Status st = again.trainer->Init();
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(st.message().find("--resume"), std::string::npos) << st;
}

// A write failure in the middle of a checkpoint (the disk filling up) stops the run with an
// error and leaves the previous checkpoint complete and no partial one.
TEST(TrainerTest, FailedCheckpointWriteLeavesThePreviousIntact) {
  const std::string dir = testing::FreshTempDir("diskfull");
  TrainConfig c = BaseConfig(dir);
  c.checkpoint_every = 2;
  c.eval_every = 0;
  TrainerOptions extra;
  int checkpoints_started = 0;
  extra.before_checkpoint_write = [&](const std::string& file) -> absl::Status {
    if (file == kConfigFile) ++checkpoints_started;
    if (checkpoints_started == 2 && file == kOptimizerFile) {
      return absl::ResourceExhaustedError("optimizer.pt: write: No space left on device");
    }
    return absl::OkStatus();
  };
  RunParts r = MakeRun(c, 1, 0.1, extra);
  ASSERT_TRUE(r.trainer->Init().ok());
  absl::Status st = r.trainer->Run();
  ASSERT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
  EXPECT_NE(st.message().find("step_000002 is intact"), std::string::npos) << st;
  const auto list = ListCheckpoints(dir + "/checkpoints");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].first, 2);
  int entries = 0;
  for (const auto& p : {std::string("step_000002")})
    entries += PathExists(dir + "/checkpoints/" + p);
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(PathExists(dir + "/checkpoints/step_000004"));
  // Nothing half-written is left beside it.
  auto again = MakeRun(c, 7);
  absl::Status init = again.trainer->Init(dir);
  ASSERT_TRUE(init.ok()) << init;
  EXPECT_EQ(again.trainer->step(), 2);
}

// A TinyMlm run whose third forward pass returns NaN logits (step 3, one micro-batch per step),
// checkpointing every 2 steps; Run() stops it.
struct NanAtStep3 {
  explicit NanAtStep3(const TrainConfig& config) : model(kVocab, 16, 0.0), loader(kVocab, 10, 8) {
    dist = *Dist::Connect(DistEnv{}, std::chrono::seconds(5));
    MlmForwardFn forward = [this](const model::EncoderInput& in, const torch::Tensor& idx) {
      torch::Tensor logits = model->forward(in, idx);
      return ++calls == 3 ? logits * std::nan("") : logits;
    };
    TrainerOptions o;
    o.config = config;
    o.quiet = true;
    trainer = std::make_unique<Trainer>(o, model.ptr(), forward, &loader, nullptr, dist.get());
  }
  // The weights equal those of the checkpoint directory `checkpoint`.
  void ExpectWeightsOf(const std::string& checkpoint) {
    TinyMlm check(kVocab, 16, 0.0);
    absl::Status load = LoadNamedTensors(*check, checkpoint + "/model.pt");
    ASSERT_TRUE(load.ok()) << load;
    auto a = UniqueParameters(*model), b = UniqueParameters(*check);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  }

  int calls = 0;
  TinyMlm model;
  FakeLoader loader;
  std::unique_ptr<Dist> dist;
  std::unique_ptr<Trainer> trainer;
};

TEST(TrainerTest, NonFiniteLossStopsAndKeepsTheLastCheckpoint) {
  const std::string dir = testing::FreshTempDir("nan");
  TrainConfig c = BaseConfig(dir);  // logs every step: every step syncs
  c.checkpoint_every = 2;
  c.eval_every = 0;
  torch::manual_seed(1);
  NanAtStep3 run(c);
  ASSERT_TRUE(run.trainer->Init().ok());
  absl::Status st = run.trainer->Run();
  ASSERT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("step 3"), std::string::npos) << st;
  EXPECT_NE(st.message().find("not finite"), std::string::npos) << st;
  EXPECT_NE(st.message().find("step_000002"), std::string::npos) << st;
  EXPECT_EQ(run.trainer->step(), 2);
  // The weights were not touched by the bad step: they equal the checkpoint's.
  run.ExpectWeightsOf(dir + "/checkpoints/step_000002");
}

// A step between two sync points is not checked when it runs: its non-finite loss is found at
// the next log, evaluation or checkpoint step, which stops before its own update, so no
// checkpoint ever holds the bad weights.
TEST(TrainerTest, NonFiniteStepBetweenSyncPointsIsCaughtBeforeTheNextCheckpoint) {
  const std::string dir = testing::FreshTempDir("nan_deferred");
  TrainConfig c = BaseConfig(dir);
  c.checkpoint_every = 2;
  c.log_every = 5;
  c.eval_every = 0;
  torch::manual_seed(1);
  NanAtStep3 run(c);
  ASSERT_TRUE(run.trainer->Init().ok());
  absl::Status st = run.trainer->Run();
  ASSERT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("step 3:"), std::string::npos) << st;
  EXPECT_NE(st.message().find("not finite"), std::string::npos) << st;
  EXPECT_NE(st.message().find("step_000002"), std::string::npos) << st;
  EXPECT_EQ(run.trainer->step(), 3);  // step 4 (a checkpoint step) stopped before its update
  const auto list = ListCheckpoints(dir + "/checkpoints");
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].first, 2);
  if (Optimizer({torch::zeros({1})}, OptimizerOptions{}).SkipsOnDevice()) {
    // The fused AdamW skipped step 3's update on the device: the weights are step 2's.
    run.ExpectWeightsOf(dir + "/checkpoints/step_000002");
  }
}

// step -> the train record logged at that step.
std::map<int64_t, nlohmann::json> TrainRecords(const std::string& path) {
  std::map<int64_t, nlohmann::json> out;
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "train") out[j["step"].get<int64_t>()] = j;
  }
  return out;
}

// Step statistics stay on the device between log lines: logging every step or every third step
// writes the same numbers at the steps both log, and they equal what TrainStep (which reads
// them back every step) returns. The golden loss pins the whole computation for refactors.
TEST(TrainerTest, LoggedNumbersDoNotDependOnHowOftenTheHostSyncs) {
  const std::string dir = testing::FreshTempDir("sync_every");
  std::map<int64_t, nlohmann::json> logged[2];
  for (int k = 0; k < 2; ++k) {
    TrainConfig c = BaseConfig(absl::StrCat(dir, "/", k));
    c.steps = 6;
    c.log_every = k == 0 ? 1 : 3;
    c.eval_every = 0;
    c.checkpoint_every = 0;
    RunParts r = MakeRun(c, 1);
    ASSERT_TRUE(r.trainer->Init().ok());
    ASSERT_TRUE(r.trainer->Run().ok());
    logged[k] = TrainRecords(absl::StrCat(dir, "/", k, "/metrics.jsonl"));
  }
  ASSERT_EQ(logged[0].size(), 6u);
  ASSERT_EQ(logged[1].size(), 2u);

  TrainConfig c = BaseConfig(dir + "/manual");
  c.steps = 6;
  RunParts m = MakeRun(c, 1);
  ASSERT_TRUE(m.trainer->Init().ok());
  std::map<int64_t, StepStats> manual;
  for (int s = 1; s <= 6; ++s) {
    auto st = m.trainer->TrainStep();
    ASSERT_TRUE(st.ok()) << st.status();
    manual[s] = *st;
  }
  for (const int64_t step : {3, 6}) {
    SCOPED_TRACE(step);
    for (const char* key : {"loss", "accuracy", "grad_norm", "lr", "masked_tokens"}) {
      EXPECT_EQ(logged[0][step][key], logged[1][step][key]) << key;
    }
    EXPECT_EQ(logged[1][step]["loss"].get<double>(), manual[step].loss);
    EXPECT_EQ(logged[1][step]["grad_norm"].get<double>(), manual[step].grad_norm);
    EXPECT_EQ(logged[1][step]["accuracy"].get<double>(), manual[step].accuracy);
  }
  // Golden losses of this seeded run (recorded 2026-12-01, LibTorch 1.13 + OpenBLAS; MKL in the
  // 2.11 build rounds differently). A refactor that keeps the arithmetic keeps them.
  EXPECT_NEAR(manual[1].loss, 4.4199497, 1e-4);
  EXPECT_NEAR(manual[6].loss, 3.4595054, 1e-4);
}

// "elapsed_s" (metrics records and checkpoint state) counts the wall time of every invocation
// that led to a step, so a run resumed after a kill still reports how long it took. The time
// before the resume comes from the checkpoint's state, or, for a checkpoint written before the
// state kept it, from the metrics record kept at the checkpoint's step.
TEST(TrainerTest, ElapsedSecondsAddUpAcrossResumes) {
  for (const bool from_state : {true, false}) {
    const std::string dir = testing::FreshTempDir(absl::StrCat("elapsed", from_state));
    TrainConfig c = BaseConfig(dir);
    c.steps = 4;
    {
      RunParts first = MakeRun(c, 1);
      ASSERT_TRUE(first.trainer->Init().ok());
      ASSERT_TRUE(first.trainer->Run().ok());
    }
    // Make the first invocation look as if it took 1000 s (well above this test's own run).
    const std::string state_path =
        JoinPath(JoinPath(JoinPath(dir, kCheckpointsSubdir), CheckpointName(4)), kStateFile);
    auto state = ReadJsonFile(state_path, "");
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_TRUE(state->contains("elapsed_s"));
    EXPECT_GE((*state)["elapsed_s"].get<double>(), 0);
    if (from_state) {
      (*state)["elapsed_s"] = 1000.0;
    } else {
      state->erase("elapsed_s");
    }
    ASSERT_TRUE(WriteFileAtomic(state_path, state->dump()).ok());
    auto text = ReadFile(JoinPath(dir, "metrics.jsonl"));
    ASSERT_TRUE(text.ok());
    std::string edited;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      auto j = nlohmann::json::parse(line);
      if (j.contains("elapsed_s")) j["elapsed_s"] = from_state ? 5.0 : 1000.0;
      absl::StrAppend(&edited, j.dump(), "\n");
    }
    ASSERT_TRUE(WriteFileAtomic(JoinPath(dir, "metrics.jsonl"), edited).ok());

    c.steps = 8;
    RunParts resumed = MakeRun(c, 2);
    ASSERT_TRUE(resumed.trainer->Init(dir).ok());
    ASSERT_TRUE(resumed.trainer->Run().ok());
    auto after = ReadFile(JoinPath(dir, "metrics.jsonl"));
    ASSERT_TRUE(after.ok());
    int resumed_records = 0;
    for (absl::string_view line : absl::StrSplit(*after, '\n', absl::SkipEmpty())) {
      auto j = nlohmann::json::parse(line);
      if (j["type"] != "train" || j["step"].get<int64_t>() <= 4) continue;
      ++resumed_records;
      const double elapsed = j["elapsed_s"].get<double>();
      EXPECT_GE(elapsed, 1000.0) << "step " << j["step"] << (from_state ? " (state)" : " (log)");
      EXPECT_LT(elapsed, 1300.0) << "step " << j["step"];
    }
    EXPECT_EQ(resumed_records, 4);
    auto final_state = ReadJsonFile(
        JoinPath(JoinPath(JoinPath(dir, kCheckpointsSubdir), CheckpointName(8)), kStateFile), "");
    ASSERT_TRUE(final_state.ok());
    EXPECT_GE((*final_state)["elapsed_s"].get<double>(), 1000.0);
  }
}

TEST(TrainerTest, MetricsRecordsAndEvaluation) {
  const std::string dir = testing::FreshTempDir("metrics");
  TrainConfig c = BaseConfig(dir);
  c.log_every = 2;
  RunParts r = MakeRun(c, 1);
  TrainerOptions unused;
  ASSERT_TRUE(r.trainer->Init().ok());
  ASSERT_TRUE(r.trainer->Run().ok());
  auto text = ReadFile(dir + "/metrics.jsonl");
  ASSERT_TRUE(text.ok());
  int run = 0, train = 0, eval = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "run") {  // the first line: what made the records
      ++run;
      EXPECT_EQ(train + eval, 0);
      EXPECT_EQ(j["step"], 0);
      EXPECT_FALSE(j["made_by"]["gmlp"].get<std::string>().empty());
      EXPECT_EQ(j["made_by"]["world_size"], 1);
    } else if (j["type"] == "train") {
      ++train;
      for (const char* k : {"loss", "lr", "grad_norm", "tokens_per_s", "mfu", "data_wait_frac"}) {
        EXPECT_TRUE(j.contains(k)) << k;
      }
      EXPECT_GT(j["tokens_per_s"].get<double>(), 0);
      EXPECT_GE(j["data_wait_frac"].get<double>(), 0);
      EXPECT_LE(j["data_wait_frac"].get<double>(), 1);
    } else {
      ++eval;
      EXPECT_EQ(j["type"], "eval");
      EXPECT_NEAR(j["eval_perplexity"].get<double>(), std::exp(j["eval_loss"].get<double>()), 1e-9);
      EXPECT_GE(j["eval_accuracy"].get<double>(), 0);
    }
  }
  EXPECT_EQ(run, 1);
  EXPECT_EQ(train, 4);  // steps 2, 4, 6, 8
  EXPECT_EQ(eval, 2);   // steps 4, 8
  EXPECT_TRUE(PathExists(dir + "/config.json"));
}

// The logged tokens/s counts every step since the last log line over those steps' training
// time: evaluations (and checkpoints) in between are left out of the time, not the step count.
// Evaluating after every step (50 batches each, far longer than a step) must not raise the
// logged rate above that of the same run without evaluation; when the interval restarted at each
// evaluation, 8 steps were divided by the time of one (8x). Best of 2 interleaved runs each.
TEST(TrainerTest, LoggedRateLeavesOutEvaluationTime) {
  auto logged_rate = [](bool eval_each_step, int run) {
    const std::string dir = testing::FreshTempDir(absl::StrCat("rate", eval_each_step, run));
    TrainConfig c = BaseConfig(dir);
    c.micro_batch = c.global_batch = 32;
    c.steps = 16;
    c.log_every = 8;
    c.eval_every = eval_each_step ? 1 : 0;
    c.eval_batches = 50;
    c.checkpoint_every = 1000;
    RunParts r = MakeRun(c, 1);
    EXPECT_TRUE(r.trainer->Init().ok());
    EXPECT_TRUE(r.trainer->Run().ok());
    auto text = ReadFile(dir + "/metrics.jsonl");
    EXPECT_TRUE(text.ok());
    double tokens_per_s = 0;
    for (absl::string_view line : absl::StrSplit(text.ok() ? *text : "", '\n', absl::SkipEmpty())) {
      auto j = nlohmann::json::parse(line);
      if (j["type"] == "train")
        tokens_per_s = std::max(tokens_per_s, j["tokens_per_s"].get<double>());
    }
    return tokens_per_s;
  };
  double plain = 0, with_eval = 0;
  for (int run = 0; run < 2; ++run) {
    plain = std::max(plain, logged_rate(false, run));
    with_eval = std::max(with_eval, logged_rate(true, run));
  }
  ASSERT_GT(plain, 0);
  EXPECT_LT(with_eval / plain, 3.0)
      << "with evaluation " << with_eval << " tok/s, without " << plain;
}

// state.json with a field missing, of the wrong type or out of range: DataLoss naming the file and
// the key (a string step made nlohmann throw type_error from Trainer::Init and
// LoadPretrainedEncoder).
TEST(CheckpointTest, StateFieldsAreCheckedNamingTheKey) {
  const nlohmann::json good = {{"step", 30},
                               {"loader", {{"epoch", 1}, {"position", 60}}},
                               {"world_size", 2},
                               {"elapsed_s", 1.5}};
  auto s = ParseCheckpointState(good, "state.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->step, 30);
  EXPECT_EQ(s->loader_epoch, 1);
  EXPECT_EQ(s->loader_position, 60);
  EXPECT_EQ(s->world_size, 2);
  EXPECT_EQ(s->elapsed_s, 1.5);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::array(), "\"\" must be a JSON object"},
      {{{"loader", good["loader"]}}, "\"step\" must be an integer >= 0, found nothing"},
      {{{"step", "30"}, {"loader", good["loader"]}},
       "\"step\" must be an integer >= 0, found \"30\""},
      {{{"step", -1}, {"loader", good["loader"]}}, "\"step\" must be an integer >= 0, found -1"},
      {{{"step", 1.5}, {"loader", good["loader"]}}, "\"step\" must be an integer >= 0, found 1.5"},
      {{{"step", 18446744073709551615ull}, {"loader", good["loader"]}}, "\"step\" must be"},
      {{{"step", 3}}, "\"loader\" must be an object"},
      {{{"step", 3}, {"loader", {{"position", "x"}}}}, "\"loader.position\" must be"},
      {{{"step", 3}, {"loader", good["loader"]}, {"world_size", 0}}, "\"world_size\" must be"},
      {{{"step", 3}, {"loader", good["loader"]}, {"elapsed_s", "1"}}, "\"elapsed_s\" must be"},
  };
  for (const auto& [j, says] : bad) {
    auto r = ParseCheckpointState(j, "dir/state.json");
    ASSERT_FALSE(r.ok()) << j.dump();
    EXPECT_TRUE(absl::IsDataLoss(r.status()));
    EXPECT_NE(r.status().message().find("dir/state.json: malformed checkpoint state: " + says),
              std::string::npos)
        << r.status();
  }
}

TEST(CheckpointTest, NamesAndResolution) {
  EXPECT_EQ(CheckpointName(42), "step_000042");
  const std::string dir = testing::FreshTempDir("resolve");
  EXPECT_EQ(ResolveCheckpoint(dir + "/nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveCheckpoint(dir).status().code(), absl::StatusCode::kNotFound);
  // A directory without state.json (a crash before the rename would not even leave one) is not
  // a checkpoint.
  ASSERT_TRUE(MakeDirs(dir + "/checkpoints/step_000010").ok());
  EXPECT_TRUE(ListCheckpoints(dir + "/checkpoints").empty());
}

// A config file's preset and model section are checked, the error naming the file and the key.
TEST(PretrainConfigTest, UnknownPresetOrModelValueIsRefusedNamingTheFile) {
  const std::string dir = testing::FreshTempDir("config");
  const std::string path = dir + "/config.json";
  auto refused = [&](const nlohmann::json& j, const std::string& says) {
    ASSERT_TRUE(WriteFileAtomic(path, j.dump()).ok());
    ConfigSources sources;
    sources.config_file = path;
    auto c = ResolveConfig(sources);
    ASSERT_FALSE(c.ok()) << j.dump();
    EXPECT_NE(c.status().message().find(path + ": " + says), std::string::npos) << c.status();
  };
  const nlohmann::json tiny = model::Preset("gmlp-tiny")->ToJson();
  refused({{"preset", "gmlp-huge"}, {"model", tiny}},
          "\"preset\": unknown encoder preset 'gmlp-huge'; known: transformer-tiny");
  nlohmann::json bogus = tiny;
  bogus["position"] = "bogus";
  refused({{"preset", "gmlp-tiny"}, {"model", bogus}},
          "\"model\": encoder config: position must be one of alibi|learned");
  ASSERT_TRUE(
      WriteFileAtomic(path, nlohmann::json{{"preset", "gmlp-tiny"}, {"model", tiny}}.dump()).ok());
  ConfigSources sources;
  sources.config_file = path;
  auto ok = ResolveConfig(sources);
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// A bad training value names where it was set: the config file and its key, or the flag (which
// wins over the file); a value of the wrong type or out of an integer's range names the key and
// what it takes.
TEST(PretrainConfigTest, BadValuesNameTheFileAndKeyOrTheFlag) {
  const std::string dir = testing::FreshTempDir("config_values");
  const std::string path = dir + "/config.json";
  auto resolve = [&](const std::string& file_text, const nlohmann::json& flags) {
    EXPECT_TRUE(WriteFileAtomic(path, file_text).ok());
    ConfigSources sources;
    sources.config_file = path;
    sources.train_flags = flags;
    return ResolveConfig(sources);
  };
  auto refused = [&](const std::string& file_text, const nlohmann::json& flags,
                     const std::string& says) {
    auto c = resolve(file_text, flags);
    ASSERT_FALSE(c.ok()) << file_text;
    EXPECT_EQ(c.status().message(), says) << file_text;
  };
  const nlohmann::json no_flags = nlohmann::json::object();
  refused(R"({"mask_rate": -0.15})", no_flags, path + ": \"mask_rate\" -0.15 must be in (0, 1)");
  refused("{}", {{"mask_rate", -0.15}}, "--mask_rate=-0.15 must be in (0, 1)");
  refused(R"({"mask_rate": 0.2})", {{"mask_rate", -0.15}}, "--mask_rate=-0.15 must be in (0, 1)");
  EXPECT_TRUE(resolve(R"({"mask_rate": -0.15})", {{"mask_rate", 0.2}}).ok());
  refused(R"({"lr": 1e300})", no_flags, path + ": \"lr\" 1e+300 must be in (0, 1]");
  refused(R"({"optimizer": "sgd"})", no_flags,
          path + ": \"optimizer\" \"sgd\" is not one of adamw, lamb");
  refused(R"({"warmup_steps": 5000})", no_flags,
          path + ": \"warmup_steps\" 5000 must be in [0, --steps=1000]");
  refused(R"({"warmup_steps": 5000, "steps": 100})", no_flags,
          path + ": \"warmup_steps\" 5000 must be in [0, \"steps\" 100 (" + path + ")]");
  refused(R"({"mask_rate": "0.15"})", no_flags,
          path + ": \"mask_rate\" is \"0.15\"; expected a number");
  refused(R"({"eval_every": 9223372036854775808})", no_flags,
          path +
              ": \"eval_every\" is 9223372036854775808, out of range for an integer "
              "(-9223372036854775808 to 9223372036854775807)");
  refused(R"({"steps": 1.5})", no_flags, path + ": \"steps\" is 1.5; expected an integer");
  refused(R"({"seed": -1})", no_flags, path + ": \"seed\" is -1; expected a whole number >= 0");
  nlohmann::json amlp = model::Preset("amlp-tiny")->ToJson();
  amlp["attn_size"] = int64_t{1} << 62;
  refused(nlohmann::json{{"preset", "amlp-tiny"}, {"model", amlp}}.dump(), no_flags,
          path + ": \"model\": encoder config: attn_size must be in [1, 1048576] (2^20), got " +
              "4611686018427387904");
  // A batch that does not divide among the ranks, found after resolving: named as it was set.
  auto batches = resolve(R"({"global_batch": 100, "micro_batch": 32})", no_flags);
  ASSERT_TRUE(batches.ok()) << batches.status();
  EXPECT_EQ(AccumulationSteps(batches->train, 2, batches->origins).status().message(),
            path + ": \"global_batch\" 100 is not a multiple of \"micro_batch\" 32 (" + path +
                ") x world size 2; change one of them");
  batches = resolve(R"({"global_batch": 100})", {{"micro_batch", 32}});
  ASSERT_TRUE(batches.ok()) << batches.status();
  EXPECT_EQ(AccumulationSteps(batches->train, 1, batches->origins).status().message(),
            path +
                ": \"global_batch\" 100 is not a multiple of --micro_batch=32 x world size 1; "
                "change one of them");
}

// A bad --model_overrides value is named as the flag, whichever check finds it.
TEST(PretrainConfigTest, ModelOverridesErrorsNameTheFlag) {
  ConfigSources sources;
  sources.preset = "gmlp-tiny";
  sources.model_overrides = "d_model=-4";
  auto c = ResolveConfig(sources);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StartsWith(c.status().message(), "--model_overrides=d_model=-4: "))
      << c.status();
  sources.model_overrides = "d_model";
  c = ResolveConfig(sources);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StartsWith(c.status().message(), "--model_overrides: ")) << c.status();
}

// Found by tests/fuzz/pretrain_config_fuzz.cc: a value that is not UTF-8 (command lines may hold
// any bytes) made a later error's JSON text throw instead of being reported.
TEST(PretrainConfigTest, ModelOverrideBytesThatAreNotUtf8AreReported) {
  const model::EncoderConfig base = *model::Preset("gmlp-tiny");
  auto c = ApplyModelOverrides(base, "sgu=a\xff,bogus=1");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "unknown encoder config key \"bogus\""))
      << c.status();
  c = ApplyModelOverrides(base, "sgu=a\xff");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "sgu")) << c.status();
}

TEST(MetricsTest, FormatDuration) {
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(192), "3m12s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
  EXPECT_GT(MeasureGemmPeakGflops(false, 0.05), 1.0);
}

}  // namespace
}  // namespace gmlp::pretrain
