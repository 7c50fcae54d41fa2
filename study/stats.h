// Intervals for study scores: a two-level bootstrap (resample finetuning seeds, then test
// examples within them) so that a gap's 95% interval carries both the seed spread and the
// sampling of the test set (issue 12, item 2). Torch-free and deterministic from its seed.
//
// One replicate of a group (one encoder's seeds on one task split) draws S of its S seeds with
// replacement and averages their scores on a resampled test set:
//   - with per-example correctness (predictions files), the test set is resampled once per
//     replicate and pairing key (task/split) and shared by every group with that key and the
//     same number of examples: all encoders and seeds saw the same test set, so its sampling
//     error is common to them (a paired bootstrap);
//   - with only a proportion (accuracy) and n, each seed's score is redrawn as Binomial(n, p)/n,
//     independently (unpaired: wider, never narrower than the paired form in expectation when
//     the encoders' errors correlate positively);
//   - any other metric without per-example data (MCC, F1, Pearson) is resampled over seeds only,
//     and the interval says so (`method`).
// A contrast sum_k w_k * mean_k over groups (a gap, a difference of gaps across tasks) gets the
// percentile interval of its replicates; its estimate is the contrast of the observed means.
#ifndef GMLP_STUDY_STATS_H_
#define GMLP_STUDY_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace gmlp::study {

struct BootstrapOptions {
  int64_t replicates = 2000;
  uint64_t seed = 12;  // fixed: the same table gives the same intervals
  double level = 0.95;
};

// One encoder's (or control's) runs on one task split: one entry per seed.
struct SeedRuns {
  std::vector<double> values;                 // the metric of each seed
  std::vector<int64_t> n_examples;            // examples each seed was scored on
  std::vector<std::vector<uint8_t>> correct;  // per seed, per example; empty = not available
  bool proportion = true;                     // the metric is a mean of 0/1 (accuracy)
  std::string pairing_key;                    // task/split: groups sharing it share a test set

  double Mean() const;  // mean over seeds
  bool has_examples() const { return !correct.empty(); }
};

struct Interval {
  double estimate = 0;
  double lo = 0;
  double hi = 0;
  std::string method;  // "seeds+examples (paired)", "seeds+examples (binomial)", "seeds only"
  bool ExcludesZero() const { return lo > 0 || hi < 0; }
  double width() const { return hi - lo; }
};

struct ContrastTerm {
  double weight = 1;
  const SeedRuns* runs = nullptr;
};

// The interval of sum_k weight_k * mean_k. A term without runs or seeds gives a default
// Interval (all zero, empty `method`): callers check for runs first.
Interval BootstrapContrast(const std::vector<ContrastTerm>& terms,
                           const BootstrapOptions& options = {});

// a - b.
Interval BootstrapGap(const SeedRuns& a, const SeedRuns& b, const BootstrapOptions& options = {});

}  // namespace gmlp::study

#endif  // GMLP_STUDY_STATS_H_
