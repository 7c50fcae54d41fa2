// The finetuning loop on synthetic id-level tasks (no tokenizer): a pair task that needs both
// sentences, a single-sentence task and a regression reach high scores from scratch; the best
// epoch is kept; a saved model predicts the same as the one in memory.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>

#include "absl/strings/match.h"
#include "common/file_util.h"
#include "finetune/encode.h"
#include "finetune/finetune.h"
#include "finetune/saved_model.h"
#include "finetune/trainer.h"
#include "model/config.h"
#include "model/encoder.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::finetune {
namespace {

constexpr int32_t kFirstWord = tokenizer::kNumSpecialIds;  // ids 5..5+kWords-1 are "words"
constexpr int32_t kWords = 12;

model::EncoderConfig TinyConfig(const std::string& arch) {
  auto c = model::Preset(arch + "-tiny");
  EXPECT_TRUE(c.ok()) << c.status();
  model::EncoderConfig config = *c;
  config.vocab_size = 32;
  config.max_seq_len = 16;
  config.d_model = 64;
  config.n_layers = 2;
  config.d_ffn = 128;
  config.dropout = 0.0;
  if (arch == "transformer") config.n_heads = 2;
  EXPECT_TRUE(config.Validate().ok()) << config.Validate();
  return config;
}

EncoderFactory Fresh(const model::EncoderConfig& config) {
  return [config]() -> absl::StatusOr<std::shared_ptr<model::EncoderImpl>> {
    return model::MakeEncoder(config);
  };
}

std::vector<int32_t> Words(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int32_t> w(kFirstWord, kFirstWord + kWords - 1);
  std::vector<int32_t> out(n);
  for (int32_t& x : out) x = w(rng);
  return out;
}

// Pair task: label 1 iff sentence 1 holds the marker word more often than sentence 2 (counts 0-2
// each, all 9 combinations equally often). Knowing one sentence caps accuracy at 7/9 = 0.78
// (the majority class alone gives 0.67), so >= 0.9 needs both sentences and which is which.
std::vector<EncodedExample> MoreMarkersInFirst(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<EncodedExample> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> a = Words(rng, 5), b = Words(rng, 5);
    for (int32_t& x : a) x = x == kFirstWord ? kFirstWord + 1 : x;
    for (int32_t& x : b) x = x == kFirstWord ? kFirstWord + 1 : x;
    const int count_a = i % 3, count_b = (i / 3) % 3;
    const int start_a = static_cast<int>(rng() % 5), start_b = static_cast<int>(rng() % 5);
    for (int k = 0; k < count_a; ++k) a[(start_a + 2 * k) % 5] = kFirstWord;
    for (int k = 0; k < count_b; ++k) b[(start_b + 2 * k) % 5] = kFirstWord;
    EncodedExample e = PackExample(a, b, /*pair=*/true, 16);
    e.label = count_a > count_b ? 1 : 0;
    out.push_back(std::move(e));
  }
  return out;
}

// Single-sentence task: label 1 iff word kFirstWord appears in the sentence.
std::vector<EncodedExample> ContainsWord(int n, uint32_t seed, bool regression = false) {
  std::mt19937 rng(seed);
  std::vector<EncodedExample> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> a = Words(rng, 6);
    for (int32_t& x : a) {
      if (x == kFirstWord) x = kFirstWord + 1;
    }
    const int count = regression ? i % 4 : i % 2;
    for (int k = 0; k < count; ++k) a[(k * 2 + i) % 6] = kFirstWord;
    EncodedExample e = PackExample(a, {}, /*pair=*/false, 16);
    e.label = count > 0 ? 1 : 0;
    e.score = count;
    out.push_back(std::move(e));
  }
  return out;
}

TaskSpec BinaryTask(bool pair) {
  TaskSpec t;
  t.name = pair ? "more-markers-in-first" : "contains-word";
  t.labels = {"no", "yes"};
  t.metrics = {"accuracy", "f1"};
  t.train.name = "train";
  t.train.file = "-";
  t.train.sentence1 = "a";
  if (pair) t.train.sentence2 = "b";
  t.train.label = "l";
  SplitSpec dev = t.train;
  dev.name = "dev";
  t.eval = {dev};
  EXPECT_TRUE(t.Validate().ok()) << t.Validate();
  return t;
}

FinetuneOptions Options(int epochs) {
  FinetuneOptions o;
  o.lr = 2e-3;
  o.batch_size = 16;
  o.epochs = epochs;
  o.warmup = 0.1;
  o.max_len = 16;
  o.weight_decay = 0.0;
  o.quiet = true;
  return o;
}

class TrainerTest : public ::testing::Test {
 protected:
  // These models are tiny: one thread avoids OpenMP overhead (and spinning on a busy machine).
  void SetUp() override { torch::set_num_threads(1); }
};

TEST_F(TrainerTest, PairTaskThatNeedsBothSentencesIsLearned) {
  const TaskSpec task = BinaryTask(true);
  const auto train = MoreMarkersInFirst(720, 1);
  const std::vector<EncodedSplit> dev = {{"dev", MoreMarkersInFirst(270, 2)}};
  for (const char* arch : {"gmlp", "transformer"}) {
    // Post-LN BERT from scratch wants a lower lr and more epochs than gMLP here.
    const bool bert = std::string(arch) == "transformer";
    FinetuneOptions o = Options(bert ? 20 : 10);
    if (bert) o.lr = 5e-4;
    auto run = FinetuneSeed(task, Fresh(TinyConfig(arch)), train, dev, {}, o, 7);
    ASSERT_TRUE(run.ok()) << run.status();
    const SeedResult& r = run->result;
    EXPECT_EQ(r.epochs.size(), static_cast<size_t>(o.epochs));
    EXPECT_GE(r.best.at("dev").at("accuracy"), 0.9) << arch;
    // The best epoch is the one with the highest dev accuracy, and its predictions are kept.
    double best = 0;
    for (const EpochResult& e : r.epochs) best = std::max(best, e.metrics.at("dev").at("accuracy"));
    EXPECT_DOUBLE_EQ(r.selection_score, best);
    EXPECT_EQ(r.predictions.at("dev").label.size(), 270u);
    // The restored classifier reproduces the best epoch's dev accuracy.
    SplitPredictions again = Predict(run->classifier, false, dev[0].examples, 64);
    auto m = Score(task, dev[0].examples, again);
    ASSERT_TRUE(m.ok());
    EXPECT_DOUBLE_EQ(m->at("accuracy"), best) << arch;
  }
}

TEST_F(TrainerTest, SingleSentenceTaskIsLearned) {
  const TaskSpec task = BinaryTask(false);
  auto run = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), ContainsWord(512, 3),
                          {{"dev", ContainsWord(200, 4)}}, {}, Options(6), 1);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_GE(run->result.best.at("dev").at("accuracy"), 0.95);
  EXPECT_GE(run->result.best.at("dev").at("f1"), 0.95);
}

TEST_F(TrainerTest, Bf16AutocastLearnsAndTracksFp32) {
  const TaskSpec task = BinaryTask(false);
  const auto train = ContainsWord(512, 3);
  const std::vector<EncodedSplit> dev = {{"dev", ContainsWord(200, 4)}};
  FinetuneOptions o = Options(6);
  auto fp32 = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), train, dev, {}, o, 1);
  o.bf16 = true;
  auto bf16 = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), train, dev, {}, o, 1);
  ASSERT_TRUE(fp32.ok() && bf16.ok());
  EXPECT_GE(bf16->result.best.at("dev").at("accuracy"), 0.95);
  // Same data order and init: the first epoch's mean loss differs only by bf16 rounding.
  EXPECT_NEAR(bf16->result.epochs[0].train_loss, fp32->result.epochs[0].train_loss, 0.02);
  EXPECT_NE(bf16->result.epochs[0].train_loss, fp32->result.epochs[0].train_loss);
}

TEST_F(TrainerTest, RegressionReachesHighCorrelation) {
  TaskSpec task = BinaryTask(false);
  task.name = "count-word";
  task.labels.clear();
  task.metrics = {"pearson", "spearman"};
  ASSERT_TRUE(task.Validate().ok());
  auto run = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), ContainsWord(512, 5, true),
                          {{"dev", ContainsWord(200, 6, true)}}, {}, Options(8), 1);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_GE(run->result.best.at("dev").at("pearson"), 0.9);
  EXPECT_GE(run->result.best.at("dev").at("spearman"), 0.85);
}

TEST_F(TrainerTest, SameSeedSameResult) {
  const TaskSpec task = BinaryTask(false);
  const auto train = ContainsWord(64, 3);
  const std::vector<EncodedSplit> dev = {{"dev", ContainsWord(32, 4)}};
  auto a = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), train, dev, {}, Options(1), 5);
  auto b = FinetuneSeed(task, Fresh(TinyConfig("gmlp")), train, dev, {}, Options(1), 5);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_DOUBLE_EQ(a->result.epochs[0].train_loss, b->result.epochs[0].train_loss);
}

TEST_F(TrainerTest, RejectsMaxLenBeyondEncoder) {
  FinetuneOptions o = Options(1);
  o.max_len = 64;
  auto run = FinetuneSeed(BinaryTask(false), Fresh(TinyConfig("gmlp")), ContainsWord(8, 1),
                          {{"dev", ContainsWord(8, 2)}}, {}, o, 1);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("max_seq_len"), std::string::npos);
}

// Each lr of --lr_grid is held to --lr's rule (finetune::IsValidLr), before any file is read.
TEST(RunFinetuneTest, RejectsAnLrGridEntryOutsideZeroToOne) {
  for (double bad : {0.0, -1e-3, 1.5}) {
    FinetuneJob job;
    job.lr_grid = {1e-3, bad};
    auto run = RunFinetune(job);
    ASSERT_FALSE(run.ok()) << bad;
    EXPECT_TRUE(absl::StartsWith(run.status().message(), "--lr_grid: ")) << run.status();
    EXPECT_NE(run.status().message().find("must be in (0, 1], like --lr"), std::string::npos)
        << run.status();
  }
  FinetuneJob job;
  job.lr_grid = {1e-3, 1.0};  // valid: fails later, on what the job does not name
  auto run = RunFinetune(job);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message().find("--lr_grid"), std::string::npos) << run.status();
}

TEST_F(TrainerTest, SeedSummaryHasEverySeedAndStatistics) {
  std::vector<SeedResult> seeds(3);
  const double acc[] = {0.7, 0.9, 0.8};
  for (int i = 0; i < 3; ++i) {
    seeds[i].seed = i + 1;
    seeds[i].best["dev"]["accuracy"] = acc[i];
  }
  nlohmann::json s = SummarizeSeeds(seeds);
  EXPECT_EQ(s["dev"]["accuracy"]["values"].size(), 3u);
  EXPECT_NEAR(s["dev"]["accuracy"]["median"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(s["dev"]["accuracy"]["mean"].get<double>(), 0.8, 1e-12);
  EXPECT_NEAR(s["dev"]["accuracy"]["std"].get<double>(), 0.1, 1e-12);
  auto parsed = ParseSeeds("1, 2,3");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, std::vector<uint64_t>({1, 2, 3}));
  EXPECT_FALSE(ParseSeeds("1,x").ok());
}

}  // namespace
}  // namespace gmlp::finetune

namespace gmlp::finetune {
namespace {

// Length grouping: a permutation of the epoch's examples, full batches of near-equal lengths in
// a random order, the partial batch last, and far less padding than the plain shuffle.
TEST(LengthGroupedOrderTest, PermutationWithLessPadding) {
  std::mt19937 gen(7);
  std::vector<EncodedExample> examples;
  for (int i = 0; i < 1000; ++i) {
    EncodedExample e;
    e.ids.assign(3 + gen() % 60, 5);
    e.segments.assign(e.ids.size(), 0);
    examples.push_back(std::move(e));
  }
  std::vector<int64_t> shuffled(examples.size());
  std::iota(shuffled.begin(), shuffled.end(), 0);
  std::mt19937_64 rng(3);
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  const std::vector<int64_t> grouped = LengthGroupedOrder(examples, shuffled, 16, rng);
  std::vector<int64_t> sorted = grouped;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(examples.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);  // every example once
  auto padding = [&](const std::vector<int64_t>& order) {
    int64_t positions = 0, real = 0;
    for (size_t b = 0; b < order.size(); b += 16) {
      const PaddedBatch batch = MakeBatch(examples, order, b, std::min(order.size(), b + 16));
      positions += batch.batch * batch.len;
      for (uint8_t m : batch.mask) real += m;
    }
    return 1.0 - static_cast<double>(real) / positions;
  };
  EXPECT_GT(padding(shuffled), 0.3);
  EXPECT_LT(padding(grouped), 0.1);
  // The last 1000 % 16 = 8 examples are the partial batch: the longest 8 of the last pool
  // (examples 800..999 of the shuffled order; pools hold 50 batches).
  std::vector<int64_t> last_pool(shuffled.begin() + 800, shuffled.end());
  std::stable_sort(last_pool.begin(), last_pool.end(), [&](int64_t a, int64_t b) {
    return examples[a].ids.size() < examples[b].ids.size();
  });
  EXPECT_EQ(std::vector<int64_t>(grouped.end() - 8, grouped.end()),
            std::vector<int64_t>(last_pool.end() - 8, last_pool.end()));
  // Batches are not in length order across the epoch (they were shuffled).
  bool increasing = true;
  for (size_t b = 16; b + 16 <= grouped.size(); b += 16) {
    increasing =
        increasing && examples[grouped[b]].ids.size() >= examples[grouped[b - 16]].ids.size();
  }
  EXPECT_FALSE(increasing);
}

}  // namespace
}  // namespace gmlp::finetune
