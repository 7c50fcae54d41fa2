// Metrics against values computed by hand (and cross-checked with sklearn/scipy formulas),
// degenerate cases included.
#include <gtest/gtest.h>

#include <cmath>

#include "finetune/metrics.h"

namespace gmlp::finetune {
namespace {

TEST(MetricsTest, Accuracy) {
  EXPECT_DOUBLE_EQ(Accuracy({1, 0, 1, 1}, {1, 1, 1, 0}), 0.5);
  EXPECT_DOUBLE_EQ(Accuracy({2, 0, 1}, {2, 0, 1}), 1.0);
  EXPECT_DOUBLE_EQ(Accuracy({}, {}), 0.0);
}

TEST(MetricsTest, F1ByHand) {
  // pred 1 1 1 0 0 0, gold 1 0 1 1 0 0: TP=2 FP=1 FN=1 -> P=2/3 R=2/3 F1=2/3.
  EXPECT_NEAR(F1({1, 1, 1, 0, 0, 0}, {1, 0, 1, 1, 0, 0}), 2.0 / 3.0, 1e-12);
  // TP=1 FP=0 FN=2 -> P=1, R=1/3, F1=0.5.
  EXPECT_NEAR(F1({1, 0, 0}, {1, 1, 1}), 0.5, 1e-12);
}

TEST(MetricsTest, F1Degenerate) {
  EXPECT_EQ(F1({0, 0, 0}, {1, 0, 1}), 0.0);  // nothing predicted positive
  EXPECT_EQ(F1({0, 0}, {0, 0}), 0.0);        // no positives at all
}

TEST(MetricsTest, MccBinaryByHand) {
  // TP=2 TN=2 FP=1 FN=1: (4 - 1) / sqrt(3*3*3*3) = 3/9.
  EXPECT_NEAR(Mcc({1, 1, 1, 0, 0, 0}, {1, 1, 0, 1, 0, 0}), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(Mcc({1, 0, 1, 0}, {1, 0, 1, 0}), 1.0, 1e-12);
  EXPECT_NEAR(Mcc({0, 1, 0, 1}, {1, 0, 1, 0}), -1.0, 1e-12);
  // TP=3 TN=1 FP=1 FN=0: (3 - 0) / sqrt(4*3*2*1) = 3/sqrt(24).
  EXPECT_NEAR(Mcc({1, 1, 1, 1, 0}, {1, 1, 1, 0, 0}), 3.0 / std::sqrt(24.0), 1e-12);
}

TEST(MetricsTest, MccOnePredictedClassIsZero) {
  EXPECT_EQ(Mcc({1, 1, 1, 1}, {1, 0, 1, 0}), 0.0);
  EXPECT_EQ(Mcc({0, 0, 0}, {0, 0, 0}), 0.0);
}

TEST(MetricsTest, MccMulticlassMatchesGorodkin) {
  // 3 classes: pred 0 1 2 0, gold 0 1 1 2. c=2, s=4, p=(2,1,1), t=(1,2,1):
  // (2*4 - (2+2+1)) / sqrt((16-6)(16-6)) = 3/10.
  EXPECT_NEAR(Mcc({0, 1, 2, 0}, {0, 1, 1, 2}), 0.3, 1e-12);
}

TEST(MetricsTest, PearsonByHand) {
  // x = 1 2 3, y = 1 3 2: means 2, 2; sxy = (-1)(-1) + 0 + (1)(0) = 1; sxx = syy = 2 -> 0.5.
  EXPECT_NEAR(Pearson({1, 2, 3}, {1, 3, 2}), 0.5, 1e-12);
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {2, 4, 6, 8}), 1.0, 1e-12);
  EXPECT_NEAR(Pearson({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0, 1e-12);
}

TEST(MetricsTest, ConstantPredictionsGiveZeroCorrelation) {
  EXPECT_EQ(Pearson({2.5, 2.5, 2.5}, {1, 2, 5}), 0.0);
  EXPECT_EQ(Spearman({2.5, 2.5, 2.5}, {1, 2, 5}), 0.0);
  EXPECT_FALSE(std::isnan(Pearson({1}, {1})));
}

TEST(MetricsTest, AverageRanksShareTies) {
  const std::vector<double> r = AverageRanks({10, 20, 20, 5});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0], 2);
  EXPECT_DOUBLE_EQ(r[1], 3.5);
  EXPECT_DOUBLE_EQ(r[2], 3.5);
  EXPECT_DOUBLE_EQ(r[3], 1);
}

TEST(MetricsTest, SpearmanByHand) {
  // Monotone but not linear: Spearman 1, Pearson below 1.
  EXPECT_NEAR(Spearman({1, 2, 3, 4}, {1, 4, 9, 100}), 1.0, 1e-12);
  EXPECT_LT(Pearson({1, 2, 3, 4}, {1, 4, 9, 100}), 0.99);
  // Ties: x ranks 1 2.5 2.5 4, y ranks 1 2 3 4. Pearson of those:
  // dx = -1.5 0 0 1.5; dy = -1.5 -0.5 0.5 1.5; sxy = 4.5; sxx = 4.5; syy = 5 -> 4.5/sqrt(22.5).
  EXPECT_NEAR(Spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5), 1e-12);
}

TEST(MetricsTest, ComputeMetricsByName) {
  Predictions p;
  p.pred = {1, 0, 1, 1};
  p.gold = {1, 0, 0, 1};
  auto m = ComputeMetrics({"accuracy", "f1", "mcc"}, p);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->at("accuracy"), 0.75);
  EXPECT_NEAR(m->at("f1"), 0.8, 1e-12);  // TP=2 FP=1 FN=0
  EXPECT_FALSE(ComputeMetrics({"bleu"}, p).ok());
}

TEST(MetricsTest, SummarizeSeeds) {
  SeedStats s = Summarize({0.8, 0.6, 0.7, 0.9});
  EXPECT_NEAR(s.mean, 0.75, 1e-12);
  EXPECT_NEAR(s.median, 0.75, 1e-12);
  // Sample std: deviations .05 .15 .05 .15 -> sum sq = 0.05; / 3 -> sqrt(0.016667).
  EXPECT_NEAR(s.std, std::sqrt(0.05 / 3), 1e-12);
  EXPECT_DOUBLE_EQ(s.min, 0.6);
  EXPECT_DOUBLE_EQ(s.max, 0.9);
  SeedStats one = Summarize({0.5});
  EXPECT_EQ(one.std, 0.0);
  EXPECT_EQ(one.median, 0.5);
  EXPECT_EQ(Summarize({0.1, 0.5, 0.3}).median, 0.3);
}

}  // namespace
}  // namespace gmlp::finetune
