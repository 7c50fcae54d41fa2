// A SentencePiece tokenizer usable beside LibTorch. Debian's libsentencepiece bundles its own
// protobuf, which clashes with LibTorch's, so the SentencePiece calls live in a small shared
// library with a C ABI (spm_shim.h) that this class loads with dlmopen(LM_ID_NEWLM).
#ifndef GMLP_TOKENIZER_TOKENIZER_H_
#define GMLP_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp::tokenizer {

// Fixed ids of the special tokens in every model `gmlp tokenizer train` writes.
inline constexpr int32_t kPadId = 0;   // [PAD]
inline constexpr int32_t kUnkId = 1;   // [UNK]
inline constexpr int32_t kClsId = 2;   // [CLS]
inline constexpr int32_t kSepId = 3;   // [SEP]
inline constexpr int32_t kMaskId = 4;  // [MASK]
inline constexpr int32_t kNumSpecialIds = 5;

struct TrainOptions {
  std::vector<std::string> inputs;    // plain text, .gz or .xz; WikiExtractor <doc> or blank-line docs
  std::string model_prefix;           // writes <prefix>.model and <prefix>.vocab
  int32_t vocab_size = 8192;
  std::string model_type = "unigram";  // unigram | bpe
  double character_coverage = 0.9995;
  bool byte_fallback = true;
  int64_t input_sentence_size = 2000000;  // sentences sampled from the corpus for training
  int32_t num_threads = 0;                // 0 = all cores
  uint64_t seed = 1;
};

// Trains a model; the special tokens get the ids above.
absl::Status Train(const TrainOptions& options);

class Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& model_path);
  ~Tokenizer();

  // Appends the ids of `text` (no special tokens added) to `out`.
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const;
  std::vector<int32_t> Encode(absl::string_view text) const;  // dies on error
  std::string Decode(const std::vector<int32_t>& ids) const;
  int32_t vocab_size() const;
  std::string IdToPiece(int32_t id) const;
  // True if piece `id` begins a word (starts with U+2581); special ids are not word starts.
  bool IsWordStart(int32_t id) const;
  // Checksum of the .model file's bytes (common/checksum.h), recorded in shard manifests.
  const std::string& checksum() const;
  const std::string& model_path() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gmlp::tokenizer

#endif  // GMLP_TOKENIZER_TOKENIZER_H_
