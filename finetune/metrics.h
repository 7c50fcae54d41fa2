// GLUE's official metrics: accuracy, binary F1, Matthews correlation (CoLA), Pearson and
// Spearman correlation (STS-B), plus the seed statistics reported over k finetuning runs.
// Torch-free. Degenerate inputs have a defined value (documented per function), never NaN, so
// that means and medians over seeds stay usable.
#ifndef GMLP_FINETUNE_METRICS_H_
#define GMLP_FINETUNE_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gmlp::finetune {

// Fraction of pred[i] == gold[i]; 0 for empty input.
double Accuracy(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold);

// Binary F1 of class `positive`: 2PR / (P + R). 0 when there are no true positives (this covers
// "nothing predicted positive" and "no positive gold", where precision or recall is 0/0).
double F1(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold, int64_t positive = 1);

// Matthews correlation coefficient, the multiclass form (Gorodkin 2004; equals the binary
// (TP*TN - FP*FN) / sqrt(...) for two classes, as sklearn computes it). 0 when the denominator
// is 0, e.g. when every prediction is the same class.
double Mcc(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold);

// Pearson correlation. 0 when either side is constant (the correlation is undefined there; a
// constant predictor carries no information, and 0 keeps seed averages finite).
double Pearson(const std::vector<double>& x, const std::vector<double>& y);

// Spearman correlation: Pearson on ranks, tied values sharing their average rank. 0 when either
// side is constant (as Pearson).
double Spearman(const std::vector<double>& x, const std::vector<double>& y);

// Ranks 1..n with ties averaged (1, 2.5, 2.5, 4). Exposed for tests.
std::vector<double> AverageRanks(const std::vector<double>& x);

// Computes the named metrics (accuracy | f1 | mcc for classes, pearson | spearman for
// regression) on one split. For classification `pred`/`gold` are class indices; for regression
// `pred_score`/`gold_score` are used. Returns name -> value (values in [0, 1] or [-1, 1]).
struct Predictions {
  std::vector<int64_t> pred;
  std::vector<int64_t> gold;
  std::vector<double> pred_score;
  std::vector<double> gold_score;
};
absl::StatusOr<std::map<std::string, double>> ComputeMetrics(
    const std::vector<std::string>& metrics, const Predictions& p);

// Summary of one quantity over seeds.
struct SeedStats {
  double mean = 0;
  double median = 0;
  double std = 0;  // sample standard deviation (n - 1); 0 for one seed
  double min = 0;
  double max = 0;
  int64_t n = 0;
};
SeedStats Summarize(const std::vector<double>& values);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_METRICS_H_
