#include "data/masking.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::data {

using tokenizer::kClsId;
using tokenizer::kMaskId;
using tokenizer::kNumSpecialIds;
using tokenizer::kPadId;
using tokenizer::kSepId;

bool IsMaskable(int32_t id) {
  return id != kPadId && id != kClsId && id != kSepId && id != kMaskId;
}

absl::Status ValidateMaskingOptions(const MaskingOptions& o) {
  auto in_unit = [](double x) { return x >= 0.0 && x <= 1.0; };
  if (!in_unit(o.mask_rate) || !in_unit(o.mask_token_frac) || !in_unit(o.random_token_frac) ||
      o.mask_token_frac + o.random_token_frac > 1.0 + 1e-12) {
    return absl::InvalidArgumentError(
        absl::StrCat("masking: mask_rate (", o.mask_rate, "), mask_token_frac (", o.mask_token_frac,
                     ") and random_token_frac (", o.random_token_frac,
                     ") must lie in [0, 1], with mask_token_frac + random_token_frac <= 1"));
  }
  return absl::OkStatus();
}

Masker::Masker(const MaskingOptions& options, int64_t vocab_size, std::vector<bool> word_starts)
    : options_(options), vocab_size_(vocab_size), word_starts_(std::move(word_starts)) {}

void Masker::ChooseTokens(int64_t budget, Rng* rng) {
  // Partial Fisher-Yates: the first `budget` slots become a uniform sample without replacement.
  const size_t m = candidates_.size();
  const size_t k = std::min<size_t>(static_cast<size_t>(budget), m);
  for (size_t i = 0; i < k; ++i) {
    const size_t j = i + static_cast<size_t>(rng->Uniform(m - i));
    std::swap(candidates_[i], candidates_[j]);
    chosen_.push_back(candidates_[i]);
  }
}

void Masker::ChooseWholeWords(const int32_t* ids, int64_t budget, Rng* rng) {
  words_.clear();
  for (int32_t pos : candidates_) {
    const int32_t id = ids[pos];
    const bool starts = words_.empty() || words_.back().first + words_.back().second != pos ||
                        (id >= 0 && static_cast<size_t>(id) < word_starts_.size() &&
                         word_starts_[static_cast<size_t>(id)]);
    if (starts) {
      words_.emplace_back(pos, 1);
    } else {
      ++words_.back().second;
    }
  }
  int64_t total = 0;
  const size_t m = words_.size();
  for (size_t i = 0; i < m && total < budget; ++i) {
    const size_t j = i + static_cast<size_t>(rng->Uniform(m - i));
    std::swap(words_[i], words_[j]);
    const auto [start, len] = words_[i];
    // As BERT does: a word that would overshoot the budget is skipped, not cut.
    if (total + len > budget) continue;
    for (int32_t p = start; p < start + len; ++p) chosen_.push_back(p);
    total += len;
  }
}

void Masker::MaskSequence(int32_t* ids, int64_t n, int64_t flat_offset, Rng* rng,
                          std::vector<int64_t>* masked_index, std::vector<int32_t>* masked_labels) {
  candidates_.clear();
  for (int64_t i = 0; i < n; ++i) {
    if (IsMaskable(ids[i])) candidates_.push_back(static_cast<int32_t>(i));
  }
  if (candidates_.empty() || options_.mask_rate <= 0.0) return;
  // BERT rounds and masks at least one token per sequence.
  const int64_t budget = std::max<int64_t>(
      1, std::llround(options_.mask_rate * static_cast<double>(candidates_.size())));

  chosen_.clear();
  if (options_.whole_word) {
    ChooseWholeWords(ids, budget, rng);
  } else {
    ChooseTokens(budget, rng);
  }
  std::sort(chosen_.begin(), chosen_.end());

  const double mask_frac = options_.mask_token_frac;
  const double replace_frac = mask_frac + options_.random_token_frac;
  const uint64_t num_normal = static_cast<uint64_t>(vocab_size_ - kNumSpecialIds);
  for (int32_t pos : chosen_) {
    masked_index->push_back(flat_offset + pos);
    masked_labels->push_back(ids[pos]);
    const double u = rng->UniformDouble();
    if (u < mask_frac) {
      ids[pos] = kMaskId;
    } else if (u < replace_frac && num_normal > 0) {
      ids[pos] = kNumSpecialIds + static_cast<int32_t>(rng->Uniform(num_normal));
    }
  }
}

absl::StatusOr<double> ContextFreeMlmLoss(const std::vector<int64_t>& model_counts,
                                          const std::vector<int64_t>& target_counts,
                                          const MaskingOptions& options) {
  GMLP_RETURN_IF_ERROR(ValidateMaskingOptions(options));
  const int64_t V = static_cast<int64_t>(model_counts.size());
  if (V <= kNumSpecialIds || static_cast<int64_t>(target_counts.size()) != V) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context-free loss: need one count per vocabulary id (more than ", kNumSpecialIds,
        "), got ", model_counts.size(), " model and ", target_counts.size(), " target counts"));
  }
  std::vector<double> q(V, 0.0), p(V, 0.0);
  double q_sum = 0, p_sum = 0;
  for (int64_t y = 0; y < V; ++y) {
    if (!IsMaskable(static_cast<int32_t>(y))) continue;
    q[y] = static_cast<double>(model_counts[y]) + 1.0;
    p[y] = static_cast<double>(target_counts[y]);
    q_sum += q[y];
    p_sum += p[y];
  }
  if (p_sum <= 0) {
    return absl::InvalidArgumentError("context-free loss: no maskable target token was counted");
  }
  for (int64_t y = 0; y < V; ++y) {
    q[y] /= q_sum;
    p[y] /= p_sum;
  }
  // What the predictor sees at a chosen position: [MASK] (m), a uniform random id from
  // U = [kNumSpecialIds, V) (r, K ids), or the original (k).
  const double m = options.mask_token_frac, r = options.random_token_frac;
  const double k = std::max(0.0, 1.0 - m - r);
  const double K = static_cast<double>(V - kNumSpecialIds);
  auto in_u = [](int64_t x) { return x >= kNumSpecialIds ? 1.0 : 0.0; };
  // P(visible = x) / P(x is what the predictor believes), and the posterior that a visible x is
  // the original: (k q(x) + (r/K) q(x) [x in U]) / (k q(x) + (r/K) [x in U]).
  auto z = [&](int64_t x) { return k * q[x] + r / K * in_u(x); };
  auto self = [&](int64_t y) { return (k * q[y] + r / K * q[y] * in_u(y)) / z(y); };
  double sum_log_z = 0;  // sum over x in U of log z(x)
  if (r > 0) {
    for (int64_t x = kNumSpecialIds; x < V; ++x) sum_log_z += std::log(z(x));
  }
  double loss = 0;
  for (int64_t y = 0; y < V; ++y) {
    if (p[y] <= 0) continue;
    double l = 0;
    if (m > 0) l += m * -std::log(q[y]);
    if (k > 0) l += k * -std::log(self(y));
    if (r > 0) {
      // Mean over the K random ids x of -log P(y | x): x = y is the kept case's posterior; any
      // other x says nothing about y but through its own z(x).
      const double u = in_u(y);
      double sum = (K - u) * -std::log(r / K * q[y]) + sum_log_z;
      if (u > 0) sum += -std::log(self(y)) - std::log(z(y));
      l += r * sum / K;
    }
    loss += p[y] * l;
  }
  return loss;
}

}  // namespace gmlp::data
