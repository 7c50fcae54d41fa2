#include "data/masking.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
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
  if (!options_.whole_word) {
    // Partial Fisher-Yates: the first `budget` slots become a uniform sample without replacement.
    const size_t m = candidates_.size();
    const size_t k = std::min<size_t>(static_cast<size_t>(budget), m);
    for (size_t i = 0; i < k; ++i) {
      const size_t j = i + static_cast<size_t>(rng->Uniform(m - i));
      std::swap(candidates_[i], candidates_[j]);
      chosen_.push_back(candidates_[i]);
    }
  } else {
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

}  // namespace gmlp::data
