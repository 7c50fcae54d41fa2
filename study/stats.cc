#include "study/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/mix64.h"
#include "common/rng.h"

namespace gmlp::study {
namespace {

using Rng = SplitMix64Rng;

// The q-quantile of sorted values, interpolated linearly between order statistics.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[j] - sorted[i]);
}

// The test-set resampling shared by the groups of one pairing key and example count.
struct SharedExamples {
  int64_t n = 0;
  std::vector<uint32_t> multiplicity;  // this replicate's draw
};

}  // namespace

double SeedRuns::Mean() const {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

namespace {

// Groups each term with per-example data under the shared draw of its (pairing key, n):
// `term_shared[k]` is term k's draw, null without examples. Returns the interval's method.
std::string ShareExamples(const std::vector<ContrastTerm>& terms,
                          std::map<std::pair<std::string, int64_t>, SharedExamples>* shared,
                          std::vector<SharedExamples*>* term_shared) {
  bool any_binomial = false, any_seeds_only = false;
  term_shared->assign(terms.size(), nullptr);
  for (size_t k = 0; k < terms.size(); ++k) {
    const SeedRuns& r = *terms[k].runs;
    if (r.has_examples()) {
      const int64_t n = static_cast<int64_t>(r.correct.front().size());
      SharedExamples& s = (*shared)[{r.pairing_key, n}];
      s.n = n;
      (*term_shared)[k] = &s;
    } else if (r.proportion) {
      any_binomial = true;
    } else {
      any_seeds_only = true;
    }
  }
  return any_seeds_only ? "seeds only (no per-example data for a non-accuracy metric)"
         : any_binomial ? "seeds+examples (binomial)"
                        : "seeds+examples (paired)";
}

// One replicate of a group's mean over its seeds: seeds drawn with replacement, each scored on
// the shared test-set draw when it has per-example data, else on a binomial draw of its
// accuracy, else as it is.
double DrawSeedMean(const SeedRuns& r, const SharedExamples* shared, Rng& rng) {
  const size_t seeds = r.values.size();
  double sum = 0;
  for (size_t d = 0; d < seeds; ++d) {
    const size_t s = rng.Uniform(seeds);
    if (shared != nullptr && s < r.correct.size() &&
        static_cast<int64_t>(r.correct[s].size()) == shared->n) {
      const std::vector<uint32_t>& m = shared->multiplicity;
      int64_t hits = 0;
      for (size_t j = 0; j < m.size(); ++j) hits += r.correct[s][j] ? m[j] : 0;
      sum += m.empty() ? 0 : static_cast<double>(hits) / static_cast<double>(m.size());
    } else if (r.proportion && s < r.n_examples.size() && r.n_examples[s] > 0) {
      const int64_t n = r.n_examples[s];
      const double p = std::clamp(r.values[s], 0.0, 1.0);
      int64_t hits = 0;
      for (int64_t i = 0; i < n; ++i) hits += rng.Unit() < p;
      sum += static_cast<double>(hits) / static_cast<double>(n);
    } else {
      sum += r.values[s];
    }
  }
  return sum / static_cast<double>(seeds);
}

}  // namespace

Interval BootstrapContrast(const std::vector<ContrastTerm>& terms,
                           const BootstrapOptions& options) {
  Interval out;
  for (const ContrastTerm& t : terms) {
    if (t.runs == nullptr || t.runs->values.empty()) return out;
    out.estimate += t.weight * t.runs->Mean();
  }
  std::map<std::pair<std::string, int64_t>, SharedExamples> shared;
  std::vector<SharedExamples*> term_shared;
  out.method = ShareExamples(terms, &shared, &term_shared);

  Rng rng(SplitMix64(options.seed));
  std::vector<double> reps;
  reps.reserve(static_cast<size_t>(options.replicates));
  for (int64_t rep = 0; rep < options.replicates; ++rep) {
    for (auto& [key, s] : shared) {
      s.multiplicity.assign(static_cast<size_t>(s.n), 0);
      for (int64_t i = 0; i < s.n; ++i) ++s.multiplicity[rng.Uniform(s.n)];
    }
    double value = 0;
    for (size_t k = 0; k < terms.size(); ++k) {
      value += terms[k].weight * DrawSeedMean(*terms[k].runs, term_shared[k], rng);
    }
    reps.push_back(value);
  }
  std::sort(reps.begin(), reps.end());
  const double tail = (1 - options.level) / 2;
  out.lo = Quantile(reps, tail);
  out.hi = Quantile(reps, 1 - tail);
  return out;
}

Interval BootstrapGap(const SeedRuns& a, const SeedRuns& b, const BootstrapOptions& options) {
  return BootstrapContrast({{1, &a}, {-1, &b}}, options);
}

}  // namespace gmlp::study
