// Turning examples into model inputs: `[CLS] a [SEP] b [SEP]` with segment ids 0/1, truncated
// longest-first to max_len, and batches padded to their longest member. Torch-free: the trainer
// wraps the flat vectors with torch::from_blob.
#ifndef GMLP_FINETUNE_ENCODE_H_
#define GMLP_FINETUNE_ENCODE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "finetune/reader.h"

namespace gmlp::finetune {

struct EncodedExample {
  std::vector<int32_t> ids;       // [CLS] a [SEP] (b [SEP])
  std::vector<int32_t> segments;  // 0 over [CLS] a [SEP], 1 over b [SEP]
  int64_t label = -1;
  double score = 0;
};

// Builds one input from token ids. With `pair`, both are kept ([CLS] a [SEP] b [SEP]; b may be
// empty); otherwise b is ignored. Longest-first truncation (BERT's _truncate_seq_pair: drop the
// last token of the longer side, b on ties) keeps the total within max_len (>= 3 for pairs, >= 2
// for single sentences).
EncodedExample PackExample(std::vector<int32_t> a, std::vector<int32_t> b, bool pair,
                           int64_t max_len);

// Appends the token ids of `text` to `out` (a Tokenizer's Encode, or a test's stand-in).
using TokenizeFn = std::function<absl::Status(absl::string_view text, std::vector<int32_t>* out)>;

// Encodes every example of a split. Errors name the file and line of the example.
absl::StatusOr<std::vector<EncodedExample>> EncodeSplit(const SplitData& split, bool pair,
                                                        int64_t max_len,
                                                        const TokenizeFn& tokenize);

// A padded batch, row-major (B, n) with n the longest member's length.
struct PaddedBatch {
  int64_t batch = 0;
  int64_t len = 0;
  std::vector<int64_t> ids;       // [PAD] where padded
  std::vector<int64_t> segments;  // 0 where padded
  std::vector<uint8_t> mask;      // 1 at real tokens
  std::vector<int64_t> labels;
  std::vector<float> scores;
};

// Gathers examples[index[i]] for i in [begin, end) into one padded batch.
PaddedBatch MakeBatch(const std::vector<EncodedExample>& examples,
                      const std::vector<int64_t>& index, size_t begin, size_t end);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_ENCODE_H_
