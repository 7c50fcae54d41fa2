#include "finetune/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gmlp::finetune {

double Accuracy(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold) {
  const size_t n = std::min(pred.size(), gold.size());
  if (n == 0) return 0;
  size_t hit = 0;
  for (size_t i = 0; i < n; ++i) hit += pred[i] == gold[i];
  return static_cast<double>(hit) / static_cast<double>(n);
}

double F1(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold, int64_t positive) {
  const size_t n = std::min(pred.size(), gold.size());
  double tp = 0, fp = 0, fn = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool p = pred[i] == positive, g = gold[i] == positive;
    tp += p && g;
    fp += p && !g;
    fn += !p && g;
  }
  if (tp == 0) return 0;
  return 2 * tp / (2 * tp + fp + fn);
}

double Mcc(const std::vector<int64_t>& pred, const std::vector<int64_t>& gold) {
  const size_t n = std::min(pred.size(), gold.size());
  if (n == 0) return 0;
  int64_t k = 0;
  for (size_t i = 0; i < n; ++i) k = std::max({k, pred[i] + 1, gold[i] + 1});
  // Gorodkin's R_K from the confusion matrix: (c*s - sum_k p_k t_k) /
  // sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2)), c = correct, s = samples.
  std::vector<double> p_k(k, 0), t_k(k, 0);
  double c = 0;
  for (size_t i = 0; i < n; ++i) {
    p_k[pred[i]] += 1;
    t_k[gold[i]] += 1;
    c += pred[i] == gold[i];
  }
  const double s = static_cast<double>(n);
  double pt = 0, pp = 0, tt = 0;
  for (int64_t j = 0; j < k; ++j) {
    pt += p_k[j] * t_k[j];
    pp += p_k[j] * p_k[j];
    tt += t_k[j] * t_k[j];
  }
  const double denom = std::sqrt((s * s - pp) * (s * s - tt));
  if (denom == 0) return 0;
  return (c * s - pt) / denom;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return 0;
  const double mx = std::accumulate(x.begin(), x.begin() + n, 0.0) / n;
  const double my = std::accumulate(y.begin(), y.begin() + n, 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

std::vector<double> AverageRanks(const std::vector<double>& x) {
  const size_t n = x.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && x[order[j + 1]] == x[order[i]]) ++j;
    const double avg = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t t = i; t <= j; ++t) rank[order[t]] = avg;
    i = j + 1;
  }
  return rank;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  return Pearson(AverageRanks(std::vector<double>(x.begin(), x.begin() + n)),
                 AverageRanks(std::vector<double>(y.begin(), y.begin() + n)));
}

absl::StatusOr<std::map<std::string, double>> ComputeMetrics(
    const std::vector<std::string>& metrics, const Predictions& p) {
  std::map<std::string, double> out;
  for (const std::string& m : metrics) {
    if (m == "accuracy") {
      out[m] = Accuracy(p.pred, p.gold);
    } else if (m == "f1") {
      out[m] = F1(p.pred, p.gold, 1);
    } else if (m == "mcc") {
      out[m] = Mcc(p.pred, p.gold);
    } else if (m == "pearson") {
      out[m] = Pearson(p.pred_score, p.gold_score);
    } else if (m == "spearman") {
      out[m] = Spearman(p.pred_score, p.gold_score);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown metric '", m, "'; use accuracy, f1, mcc, pearson or spearman"));
    }
  }
  return out;
}

SeedStats Summarize(const std::vector<double>& values) {
  SeedStats s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(ss / (n - 1));
  }
  return s;
}

}  // namespace gmlp::finetune
