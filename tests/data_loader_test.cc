// The MLM loader on synthetic shards: rank sharding, shuffling, masking statistics, whole-word
// masking, prefetch equivalence, exact resume, and its refusals of bad shard directories.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/masking.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data {
namespace {

using ::gmlp::data::testing::FlipByte;
using ::gmlp::data::testing::ReadBytes;
using ::gmlp::data::testing::SequenceIdOf;
using ::gmlp::data::testing::TempDirs;
using ::gmlp::data::testing::WriteBytes;
using ::gmlp::data::testing::WriteSyntheticShards;
using ::testing::HasSubstr;

std::unique_ptr<MlmLoader> OpenOrDie(const LoaderOptions& o) {
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(o);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.ok() ? std::move(*l) : nullptr;
}

MlmBatch NextOrDie(MlmLoader* loader) {
  absl::StatusOr<MlmBatch> b = loader->Next();
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? std::move(*b) : MlmBatch();
}

// The batch's rows before masking.
std::vector<std::vector<int32_t>> Originals(const MlmBatch& b) {
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(b.batch_size));
  for (int64_t r = 0; r < b.batch_size; ++r) {
    rows[r].assign(b.input_ids.begin() + r * b.seq_len, b.input_ids.begin() + (r + 1) * b.seq_len);
  }
  for (size_t k = 0; k < b.masked_index.size(); ++k) {
    const int64_t flat = b.masked_index[k];
    rows[flat / b.seq_len][flat % b.seq_len] = b.masked_labels[k];
  }
  return rows;
}

bool SameBatch(const MlmBatch& a, const MlmBatch& b) {
  return a.batch_size == b.batch_size && a.seq_len == b.seq_len && a.input_ids == b.input_ids &&
         a.masked_index == b.masked_index && a.masked_labels == b.masked_labels;
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.Make("data_loader");
    manifest_ = WriteSyntheticShards(dir_, /*num_sequences=*/230, /*seq_len=*/32,
                                     /*per_shard=*/50);
  }
  LoaderOptions Options() const {
    LoaderOptions o;
    o.shard_dir = dir_;
    o.batch_size = 8;
    o.seed = 5;
    o.prefetch = 0;
    return o;
  }
  TempDirs temp_;
  std::string dir_;
  Manifest manifest_;
};

TEST_F(LoaderTest, EachSequenceGoesToExactlyOneRankPerEpoch) {
  const int world = 3;
  std::vector<std::unique_ptr<MlmLoader>> ranks;
  for (int r = 0; r < world; ++r) {
    LoaderOptions o = Options();
    o.rank = r;
    o.world_size = world;
    ranks.push_back(OpenOrDie(o));
  }
  // 230 sequences, global batch 24: 9 steps, 14 dropped.
  ASSERT_EQ(ranks[0]->batches_per_epoch(), 9);
  EXPECT_EQ(ranks[0]->num_sequences(), 230);
  std::map<int64_t, int> seen;
  for (int64_t step = 0; step < 9; ++step) {
    for (int r = 0; r < world; ++r) {
      for (const auto& row : Originals(NextOrDie(ranks[r].get()))) ++seen[SequenceIdOf(row)];
    }
  }
  EXPECT_EQ(seen.size(), 216u);
  for (const auto& [id, count] : seen) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 230);
    EXPECT_EQ(count, 1) << "sequence " << id;
  }
  // The next epoch is another order.
  const LoaderState s = ranks[0]->state();
  EXPECT_EQ(s.epoch, 1);
  EXPECT_EQ(s.position, 0);
}

TEST_F(LoaderTest, EpochsAndSeedsReshuffleDeterministically) {
  auto first_ids = [&](uint64_t seed, int64_t epoch) {
    LoaderOptions o = Options();
    o.seed = seed;
    std::unique_ptr<MlmLoader> l = OpenOrDie(o);
    LoaderState s;
    s.epoch = epoch;
    EXPECT_TRUE(l->Restore(s).ok());
    std::vector<int64_t> ids;
    for (const auto& row : Originals(NextOrDie(l.get()))) ids.push_back(SequenceIdOf(row));
    return ids;
  };
  EXPECT_EQ(first_ids(5, 0), first_ids(5, 0));
  EXPECT_NE(first_ids(5, 0), first_ids(5, 1));
  EXPECT_NE(first_ids(5, 0), first_ids(6, 0));
}

TEST_F(LoaderTest, UnshuffledValidationReadsInOrder) {
  const std::string dir = temp_.Make("data_loader_valid");
  WriteSyntheticShards(dir, 40, 32, 15, 1000, "valid");
  LoaderOptions o = Options();
  o.shard_dir = dir;
  o.split = "valid";
  o.shuffle = false;
  o.batch_size = 10;
  std::unique_ptr<MlmLoader> l = OpenOrDie(o);
  ASSERT_EQ(l->batches_per_epoch(), 4);
  int64_t expected = 0;
  for (int b = 0; b < 4; ++b) {
    for (const auto& row : Originals(NextOrDie(l.get()))) EXPECT_EQ(SequenceIdOf(row), expected++);
  }
  // The train split of that directory is empty.
  o.split = "train";
  absl::StatusOr<std::unique_ptr<MlmLoader>> train = MlmLoader::Open(o);
  ASSERT_FALSE(train.ok());
  EXPECT_THAT(std::string(train.status().message()), HasSubstr("fewer than one global batch"));
}

TEST_F(LoaderTest, MaskingFollowsBertRates) {
  LoaderOptions o = Options();
  o.batch_size = 32;
  std::unique_ptr<MlmLoader> l = OpenOrDie(o);
  int64_t maskable = 0, chosen = 0, to_mask = 0, to_random = 0, unchanged = 0;
  for (int step = 0; step < 40; ++step) {
    const MlmBatch b = NextOrDie(l.get());
    const auto rows = Originals(b);
    ASSERT_TRUE(std::is_sorted(b.masked_index.begin(), b.masked_index.end()));
    ASSERT_EQ(b.masked_index.size(), b.masked_labels.size());
    std::vector<int> per_row(static_cast<size_t>(b.batch_size), 0);
    for (size_t k = 0; k < b.masked_index.size(); ++k) {
      const int64_t flat = b.masked_index[k];
      const int32_t label = b.masked_labels[k];
      const int32_t now = b.input_ids[flat];
      ASSERT_TRUE(IsMaskable(label)) << "special id " << label << " was chosen";
      ++per_row[flat / b.seq_len];
      if (now == tokenizer::kMaskId) {
        ++to_mask;
      } else if (now == label) {
        ++unchanged;
      } else {
        ASSERT_GE(now, tokenizer::kNumSpecialIds) << "random replacement drew a special id";
        ASSERT_LT(now, 1000);
        ++to_random;
      }
    }
    for (int64_t r = 0; r < b.batch_size; ++r) {
      int64_t n = 0;
      for (int32_t id : rows[r]) n += IsMaskable(id);
      maskable += n;
      // Exactly round(15%) per sequence, at least one.
      EXPECT_EQ(per_row[r], std::max<int64_t>(1, std::llround(0.15 * n)));
    }
    chosen += static_cast<int64_t>(b.masked_index.size());
    // Unmasked positions keep their ids, so [PAD]/[CLS]/[SEP] survive.
    for (int64_t r = 0; r < b.batch_size; ++r) {
      EXPECT_EQ(rows[r][0], tokenizer::kClsId);
      EXPECT_EQ(b.input_ids[r * b.seq_len], tokenizer::kClsId);
    }
  }
  EXPECT_NEAR(static_cast<double>(chosen) / maskable, 0.15, 0.01);
  // A random replacement equal to the original counts as unchanged (1 in 995).
  EXPECT_NEAR(static_cast<double>(to_mask) / chosen, 0.8, 0.03);
  EXPECT_NEAR(static_cast<double>(to_random) / chosen, 0.1, 0.02);
  EXPECT_NEAR(static_cast<double>(unchanged) / chosen, 0.1, 0.02);
}

TEST_F(LoaderTest, WholeWordMaskingTakesWholeWords) {
  LoaderOptions o = Options();
  o.batch_size = 32;
  o.masking.whole_word = true;
  o.masking.mask_rate = 0.3;
  std::unique_ptr<MlmLoader> l = OpenOrDie(o);
  int64_t chosen = 0, maskable = 0;
  for (int step = 0; step < 10; ++step) {
    const MlmBatch b = NextOrDie(l.get());
    const auto rows = Originals(b);
    std::set<int64_t> picked(b.masked_index.begin(), b.masked_index.end());
    chosen += static_cast<int64_t>(picked.size());
    for (int64_t r = 0; r < b.batch_size; ++r) {
      const auto& row = rows[r];
      auto word_start = [&](int64_t i) {
        return !IsMaskable(row[i - 1]) || manifest_.word_starts[static_cast<size_t>(row[i])];
      };
      for (int64_t i = 1; i < b.seq_len; ++i) {
        if (!IsMaskable(row[i])) {
          EXPECT_EQ(picked.count(r * b.seq_len + i), 0u);
          continue;
        }
        ++maskable;
        // Inside a word, a position is chosen exactly when the one before it is.
        if (!word_start(i)) {
          EXPECT_EQ(picked.count(r * b.seq_len + i), picked.count(r * b.seq_len + i - 1))
              << "row " << r << " pos " << i;
        }
      }
    }
  }
  // Words are skipped when they overshoot, so the rate lands at or a little under 30%.
  EXPECT_GT(static_cast<double>(chosen) / maskable, 0.25);
  EXPECT_LE(static_cast<double>(chosen) / maskable, 0.31);
}

TEST_F(LoaderTest, PrefetchServesTheSameBatchesAsSynchronous) {
  LoaderOptions o = Options();
  std::unique_ptr<MlmLoader> sync = OpenOrDie(o);
  o.prefetch = 3;
  std::unique_ptr<MlmLoader> ahead = OpenOrDie(o);
  for (int i = 0; i < 70; ++i) {  // across 2 epoch boundaries (28 batches per epoch)
    ASSERT_TRUE(SameBatch(NextOrDie(sync.get()), NextOrDie(ahead.get()))) << "batch " << i;
    ASSERT_EQ(sync->state().epoch, ahead->state().epoch);
    ASSERT_EQ(sync->state().position, ahead->state().position);
  }
}

TEST_F(LoaderTest, ResumeIsExactWithoutReplay) {
  for (int prefetch : {0, 4}) {
    LoaderOptions o = Options();
    o.prefetch = prefetch;
    o.rank = 1;
    o.world_size = 2;
    std::unique_ptr<MlmLoader> uninterrupted = OpenOrDie(o);
    const int64_t per_epoch = uninterrupted->batches_per_epoch();
    ASSERT_EQ(per_epoch, 14);
    for (int i = 0; i < 11; ++i) NextOrDie(uninterrupted.get());
    // Saved mid-epoch, then restored from JSON in a new loader.
    const nlohmann::json saved = uninterrupted->state().ToJson();
    absl::StatusOr<LoaderState> state = LoaderState::FromJson(nlohmann::json::parse(saved.dump()));
    ASSERT_TRUE(state.ok()) << state.status();
    EXPECT_EQ(state->position, 11);
    std::unique_ptr<MlmLoader> resumed = OpenOrDie(o);
    ASSERT_TRUE(resumed->Restore(*state).ok());
    for (int i = 0; i < 20; ++i) {  // crosses into epoch 1
      ASSERT_TRUE(SameBatch(NextOrDie(uninterrupted.get()), NextOrDie(resumed.get())))
          << "prefetch " << prefetch << " batch " << i;
    }
    // Restoring an already-running loader repositions it too.
    LoaderState back;
    back.epoch = 0;
    back.position = 3;
    ASSERT_TRUE(resumed->Restore(back).ok());
    std::unique_ptr<MlmLoader> fresh = OpenOrDie(o);
    for (int i = 0; i < 3; ++i) NextOrDie(fresh.get());
    ASSERT_TRUE(SameBatch(NextOrDie(fresh.get()), NextOrDie(resumed.get())));
  }
}

TEST_F(LoaderTest, RestoreRefusesAnotherRunsState) {
  std::unique_ptr<MlmLoader> l = OpenOrDie(Options());
  LoaderState s = l->state();
  s.seed = 99;
  absl::Status st = l->Restore(s);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("same seed"));
  s = l->state();
  s.position = 1000;
  EXPECT_FALSE(l->Restore(s).ok());
  EXPECT_FALSE(LoaderState::FromJson(nlohmann::json{{"epoch", -1}, {"position", 0}}).ok());
  EXPECT_FALSE(LoaderState::FromJson(nlohmann::json{{"epoch", "x"}}).ok());
}

TEST_F(LoaderTest, RefusesAnotherTokenizerOrSequenceLength) {
  LoaderOptions o = Options();
  o.expected_tokenizer_checksum = "crc32:deadbeef";
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr("shards were made with tokenizer fake.model (crc32:fake0001)"));
  o = Options();
  o.expected_tokenizer_checksum = "crc32:fake0001";
  o.expected_seq_len = 128;
  l = MlmLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("--seq_len=128"));
  o.expected_seq_len = 32;
  EXPECT_TRUE(MlmLoader::Open(o).ok());
}

TEST_F(LoaderTest, RefusesDamagedShardsBeforeServing) {
  const std::string shard = dir_ + "/train-00000-2.bin";
  const std::string pristine = ReadBytes(shard);
  FlipByte(shard, 1000);
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr(shard + ": byte offset 132..3332: content checksum mismatch"));
  WriteBytes(shard, pristine.substr(0, 2000));
  l = MlmLoader::Open(Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr(shard + ": truncated shard"));
  ::unlink(shard.c_str());
  l = MlmLoader::Open(Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("missing"));
}

// Every shard is intact, but the manifest lists another checksum for one: refused, naming the
// manifest entry.
TEST_F(LoaderTest, RefusesAShardWhoseChecksumIsNotTheManifests) {
  Manifest edited = manifest_;
  edited.shards[2].checksum = "crc32:00000000";
  ASSERT_TRUE(WriteManifest(dir_ + "/" + kManifestFile, edited).ok());
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(Options());
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()),
              HasSubstr(absl::StrCat(dir_, "/train-00000-2.bin: file checksum is ",
                                     manifest_.shards[2].checksum, " but ", dir_, "/",
                                     kManifestFile, ": shards[2].checksum says crc32:00000000")));
}

TEST_F(LoaderTest, RefusesBadOptionsAndMissingDirectories) {
  LoaderOptions o = Options();
  o.rank = 2;
  o.world_size = 2;
  EXPECT_FALSE(MlmLoader::Open(o).ok());
  o = Options();
  o.masking.mask_token_frac = 0.95;
  EXPECT_FALSE(MlmLoader::Open(o).ok());
  o = Options();
  o.split = "test";
  EXPECT_FALSE(MlmLoader::Open(o).ok());
  o = Options();
  o.shard_dir = dir_ + "/nope";
  absl::StatusOr<std::unique_ptr<MlmLoader>> l = MlmLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(std::string(l.status().message()), HasSubstr("gmlp prepare"));
}

TEST(Masker, FullRateWithoutReplacementMasksEveryMaskableToken) {
  MaskingOptions m;
  m.mask_rate = 1.0;
  m.mask_token_frac = 1.0;
  m.random_token_frac = 0.0;
  Masker masker(m, 100, {});
  std::vector<int32_t> ids = {tokenizer::kClsId, 10, 11, tokenizer::kSepId, tokenizer::kUnkId, 12,
                              tokenizer::kPadId};
  const std::vector<int32_t> original = ids;
  std::vector<int64_t> index;
  std::vector<int32_t> labels;
  Rng rng(1);
  masker.MaskSequence(ids.data(), static_cast<int64_t>(ids.size()), 100, &rng, &index, &labels);
  EXPECT_EQ(index, (std::vector<int64_t>{101, 102, 104, 105}));
  EXPECT_EQ(labels, (std::vector<int32_t>{10, 11, tokenizer::kUnkId, 12}));
  EXPECT_EQ(ids, (std::vector<int32_t>{tokenizer::kClsId, 4, 4, tokenizer::kSepId, 4, 4,
                                       tokenizer::kPadId}));
  EXPECT_EQ(original[0], ids[0]);
}

// The context-free floor by brute force: every original id y (weight p), every visible token v
// the masking recipe can show for it, and the predictor's posterior P(y | v) from Bayes' rule
// over all ids under the smoothed unigram q.
double BruteForceContextFreeLoss(const std::vector<int64_t>& model_counts,
                                 const std::vector<int64_t>& target_counts,
                                 const MaskingOptions& o) {
  const int V = static_cast<int>(model_counts.size());
  const int S = tokenizer::kNumSpecialIds, K = V - S;
  std::vector<double> q(V, 0), p(V, 0);
  double qs = 0, ps = 0;
  for (int y = 0; y < V; ++y) {
    if (!IsMaskable(y)) continue;
    q[y] = model_counts[y] + 1.0;
    p[y] = static_cast<double>(target_counts[y]);
    qs += q[y];
    ps += p[y];
  }
  const double m = o.mask_token_frac, r = o.random_token_frac, k = 1 - m - r;
  // P(visible v | original y); v = -1 stands for [MASK].
  auto likelihood = [&](int v, int y) {
    if (v < 0) return m;
    return (v == y ? k : 0.0) + (v >= S ? r / K : 0.0);
  };
  double loss = 0;
  for (int y = 0; y < V; ++y) {
    if (p[y] == 0) continue;
    for (int v = -1; v < V; ++v) {
      const double pv = likelihood(v, y);
      if (pv == 0) continue;
      double evidence = 0;
      for (int z = 0; z < V; ++z) evidence += q[z] / qs * likelihood(v, z);
      loss += p[y] / ps * pv * -std::log(q[y] / qs * pv / evidence);
    }
  }
  return loss;
}

TEST(ContextFreeMlmLoss, MatchesBruteForceBayes) {
  // 11 ids: 5 specials ([UNK] maskable but never drawn as a random id), 6 ordinary ones.
  const std::vector<int64_t> model = {0, 3, 0, 0, 0, 50, 20, 9, 0, 14, 2};
  const std::vector<int64_t> target = {7, 1, 7, 7, 7, 40, 25, 5, 3, 0, 6};  // specials ignored
  for (auto [mask, random] : std::vector<std::pair<double, double>>{
           {0.8, 0.1}, {0.5, 0.3}, {0.0, 1.0}, {1.0, 0.0}, {0.0, 0.0}, {0.6, 0.0}}) {
    MaskingOptions o;
    o.mask_token_frac = mask;
    o.random_token_frac = random;
    absl::StatusOr<double> loss = ContextFreeMlmLoss(model, target, o);
    ASSERT_TRUE(loss.ok()) << loss.status();
    EXPECT_NEAR(*loss, BruteForceContextFreeLoss(model, target, o), 1e-12)
        << "mask " << mask << " random " << random;
  }
}

TEST(ContextFreeMlmLoss, IsTheUnigramCrossEntropyWhenEveryChosenTokenIsMasked) {
  const std::vector<int64_t> model = {0, 0, 0, 0, 0, 3, 1};  // smoothed: 4/7 and 2/7 (+[UNK] 1/7)
  const std::vector<int64_t> target = {0, 0, 0, 0, 0, 1, 1};
  MaskingOptions o;
  o.mask_token_frac = 1.0;
  o.random_token_frac = 0.0;
  EXPECT_NEAR(*ContextFreeMlmLoss(model, target, o),
              -0.5 * std::log(4.0 / 7) - 0.5 * std::log(2.0 / 7), 1e-12);
  // BERT's 80/10/10: seeing the original 10% of the time makes the floor lower.
  EXPECT_LT(*ContextFreeMlmLoss(model, target, MaskingOptions()),
            *ContextFreeMlmLoss(model, target, o));
}

// The formula against what the Masker does: mask sequences drawn from a known unigram, score
// the Bayes predictor (brute-force posteriors) on every chosen position, and compare the mean
// loss with the floor (5 standard errors).
TEST(ContextFreeMlmLoss, MatchesTheMaskerOnSampledSequences) {
  const int V = 12;
  const std::vector<int64_t> counts = {0, 2, 0, 0, 0, 60, 30, 15, 8, 4, 2, 1};
  // Sequences are drawn from the predictor's own smoothed unigram: counts + 1 on maskable ids.
  std::vector<double> cdf(V);
  double total = 0;
  for (int id = 0; id < V; ++id) {
    if (IsMaskable(id)) total += counts[id] + 1.0;
    cdf[id] = total;
  }
  const MaskingOptions o;  // 15%, 80/10/10
  Masker masker(o, V, {});
  Rng rng(7);
  std::vector<int64_t> chosen_counts(V, 0);
  double sum = 0, sum_sq = 0;
  int64_t n = 0;
  const int S = tokenizer::kNumSpecialIds, K = V - S;
  const double m = o.mask_token_frac, r = o.random_token_frac, k = 1 - m - r;
  auto likelihood = [&](int v, int y) {
    if (v == tokenizer::kMaskId) return m;
    return (v == y ? k : 0.0) + (v >= S ? r / K : 0.0);
  };
  for (int s = 0; s < 20000; ++s) {
    std::vector<int32_t> ids(40);
    for (int32_t& id : ids) {
      const double u = rng.UniformDouble() * total;
      id = static_cast<int32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    }
    const std::vector<int32_t> original = ids;
    std::vector<int64_t> index;
    std::vector<int32_t> labels;
    masker.MaskSequence(ids.data(), 40, 0, &rng, &index, &labels);
    for (size_t i = 0; i < index.size(); ++i) {
      const int y = labels[i], v = ids[index[i]];
      double evidence = 0;
      for (int z = 0; z < V; ++z) {
        if (IsMaskable(z)) evidence += (counts[z] + 1.0) / total * likelihood(v, z);
      }
      const double l = -std::log((counts[y] + 1.0) / total * likelihood(v, y) / evidence);
      sum += l;
      sum_sq += l * l;
      ++n;
      ++chosen_counts[y];
    }
  }
  const double mean = sum / n, se = std::sqrt((sum_sq / n - mean * mean) / n);
  absl::StatusOr<double> floor = ContextFreeMlmLoss(counts, chosen_counts, o);
  ASSERT_TRUE(floor.ok()) << floor.status();
  EXPECT_NEAR(mean, *floor, 5 * se) << "n " << n;
  EXPECT_GT(n, 100000);
}

TEST(ContextFreeMlmLoss, RefusesMismatchedOrEmptyCounts) {
  const std::vector<int64_t> six = {0, 0, 0, 0, 0, 1};
  EXPECT_FALSE(ContextFreeMlmLoss(six, {0, 0, 0, 0, 0, 1, 1}, MaskingOptions()).ok());
  EXPECT_FALSE(ContextFreeMlmLoss({0, 0, 0}, {0, 0, 0}, MaskingOptions()).ok());
  absl::StatusOr<double> none = ContextFreeMlmLoss(six, {9, 0, 9, 9, 9, 0}, MaskingOptions());
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no maskable target"));
}

}  // namespace
}  // namespace gmlp::data
