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
#include "data/loader.h"
#include "data/random.h"

namespace gmlp::data {

// [PAD], [CLS], [SEP] and [MASK] are never chosen; [UNK] and ordinary pieces may be.
bool IsMaskable(int32_t id);

// Checks rates are in [0, 1] and mask_token_frac + random_token_frac <= 1.
absl::Status ValidateMaskingOptions(const MaskingOptions& options);

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
  MaskingOptions options_;
  int64_t vocab_size_;
  std::vector<bool> word_starts_;
  std::vector<int32_t> candidates_;                 // scratch: maskable positions
  std::vector<std::pair<int32_t, int32_t>> words_;  // scratch: (start, length) of words
  std::vector<int32_t> chosen_;                     // scratch
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_MASKING_H_
