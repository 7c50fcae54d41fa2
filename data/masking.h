// BERT's masked-language-model corruption (Devlin et al. 2019, Sec. 3.1 and Appendix A.1), applied
// per sequence: choose round(mask_rate * n) of the n maskable tokens, then replace 80% of the
// chosen by [MASK], 10% by a random non-special id and leave 10% unchanged. With whole-word
// masking, whole words (a SentencePiece word-start piece and the pieces that continue it) are
// chosen until the budget is met, as in BERT's whole-word-masking release.
#ifndef GMLP_DATA_MASKING_H_
#define GMLP_DATA_MASKING_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/loader.h"
#include "data/random.h"

namespace gmlp::data {

// [PAD], [CLS], [SEP] and [MASK] are never chosen; [UNK] and ordinary pieces may be.
bool IsMaskable(int32_t id);

// Checks rates are in [0, 1] and mask_token_frac + random_token_frac <= 1.
absl::Status ValidateMaskingOptions(const MaskingOptions& options);

// The context-free floor of the masked-token loss: the expected cross-entropy (nats per masked
// token) of the best predictor that sees only the token at a chosen position, [MASK], a random
// id or the original, and none of its neighbours. It believes the unigram frequencies
// `model_counts` (per id, each maskable id given one extra count so none is impossible) and is
// scored on chosen tokens distributed as `target_counts` (per id; only maskable ids count),
// with options' replacement fractions; the expectation over replacements is exact. On [MASK] it
// can only answer the unigram; on a visible id x it weighs "x was kept" against "x is a random
// replacement". A model whose held-out loss is not below this has learned nothing from context.
// Both vectors have one entry per vocabulary id (same size, > kNumSpecialIds); returns an
// error otherwise or when no maskable target was counted.
absl::StatusOr<double> ContextFreeMlmLoss(const std::vector<int64_t>& model_counts,
                                          const std::vector<int64_t>& target_counts,
                                          const MaskingOptions& options);

class Masker {
 public:
  // `word_starts[id]` says whether piece `id` begins a word; it is needed (size vocab_size) only
  // when options.whole_word is set. Random replacements are drawn from [kNumSpecialIds, vocab).
  Masker(const MaskingOptions& options, int64_t vocab_size, std::vector<bool> word_starts);

  // Masks ids[0, n) in place, drawing from `rng`. Appends the flat indices (flat_offset + i) of
  // the chosen positions, ascending, to `masked_index`, and their original ids to `masked_labels`.
  // Not thread-safe (keeps scratch buffers).
  void MaskSequence(int32_t* ids, int64_t n, int64_t flat_offset, Rng* rng,
                    std::vector<int64_t>* masked_index, std::vector<int32_t>* masked_labels);

 private:
  // Into chosen_: `budget` of the candidates, uniformly without replacement.
  void ChooseTokens(int64_t budget, Rng* rng);
  // Into chosen_: whole words (a piece the vocabulary marks as a word start begins one) drawn
  // in random order until `budget` pieces; a word that would overshoot it is skipped.
  void ChooseWholeWords(const int32_t* ids, int64_t budget, Rng* rng);

  MaskingOptions options_;
  int64_t vocab_size_;
  std::vector<bool> word_starts_;
  std::vector<int32_t> candidates_;                 // scratch: maskable positions
  std::vector<std::pair<int32_t, int32_t>> words_;  // scratch: (start, length) of words
  std::vector<int32_t> chosen_;                     // scratch
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_MASKING_H_
