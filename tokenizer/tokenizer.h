// A SentencePiece tokenizer usable beside LibTorch. Debian's libsentencepiece bundles its own
// protobuf, which clashes with LibTorch's, so the SentencePiece calls live in a small shared
// library with a C ABI (spm_shim.h) that this class loads with dlmopen(LM_ID_NEWLM).
#ifndef GMLP_TOKENIZER_TOKENIZER_H_
#define GMLP_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <functional>
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
  // Plain text, .gz or .xz (globs allowed); WikiExtractor <doc> blocks or blank-line documents.
  std::vector<std::string> inputs;
  std::string model_prefix;  // writes <prefix>.model and <prefix>.vocab
  int32_t vocab_size = 8192;
  std::string model_type = "unigram";  // unigram | bpe
  double character_coverage = 0.9995;
  bool byte_fallback = true;
  int64_t input_sentence_size = 2000000;  // sentences sampled from the corpus for training
  int32_t num_threads = 0;                // 0 = all cores
  uint64_t seed = 1;
  // Longer lines are cut (at whitespace) into sentences of at most this many bytes: SentencePiece
  // would otherwise drop them from training.
  int32_t max_sentence_length = 8192;
  // Invalid UTF-8 lines are counted and skipped unless this is set (then they are an error).
  bool strict_utf8 = false;
  std::string format = "auto";      // corpus format: auto | text | jsonl (see CorpusOptions)
  std::string text_field = "text";  // JSONL: the text's field, a dotted path
  bool verbose = false;             // show SentencePiece's own training log on stderr
  // Called with a one-line progress message after the corpus is read (training can then take
  // minutes); not a knob, so no flag or JSON key.
  std::function<void(absl::string_view)> on_progress;

  // The field list of the training knobs, once: calls visit(name, field, help) for each, with
  // `self` a TrainOptions or a const one; `gmlp tokenizer train`'s flags are made from it. Not
  // listed: inputs, num_threads and on_progress, which the command sets itself (--input is
  // shared with `encode`, --threads is every subcommand's).
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("model_prefix", self.model_prefix,
          "writes PREFIX.model and PREFIX.vocab (directories are created).");
    visit("vocab_size", self.vocab_size,
          "vocabulary size (the 5 special tokens and byte pieces included).");
    visit("model_type", self.model_type, "unigram or bpe.");
    visit("character_coverage", self.character_coverage,
          "fraction of the corpus's characters the vocabulary covers; rarer characters become "
          "byte pieces (or [UNK] without --byte_fallback).");
    visit("byte_fallback", self.byte_fallback,
          "spell characters outside the vocabulary as UTF-8 byte pieces instead of [UNK].");
    visit("input_sentence_size", self.input_sentence_size,
          "train on a uniform random sample of at most this many sentences (lines); 0 = all. "
          "Bounds the trainer's memory on large corpora.");
    visit("seed", self.seed, "random seed (sentence sampling).");
    visit("max_sentence_length", self.max_sentence_length,
          "longer lines are cut at whitespace into sentences of at most this many bytes.");
    visit("strict_utf8", self.strict_utf8,
          "stop at the first line of invalid UTF-8 (default: count and skip such lines).");
    visit("format", self.format,
          "input format: auto (JSON lines when the first non-blank line starts with {), text "
          "(plain text or WikiExtractor <doc> blocks) or jsonl (one JSON object per line).");
    visit("text_field", self.text_field,
          "JSONL: the field holding the document text; a dotted path for nested objects "
          "(meta.body).");
    visit("verbose", self.verbose, "show SentencePiece's training log.");
  }
};

// What Train read and used.
struct TrainStats {
  int64_t files = 0;
  int64_t bytes = 0;  // decompressed bytes read
  int64_t documents = 0;
  int64_t sentences = 0;           // sentences (lines or pieces of long lines) read
  int64_t sampled_sentences = 0;   // of which trained on (at most input_sentence_size)
  int64_t invalid_utf8_lines = 0;  // skipped
  double seconds = 0;
};

// Checks the options without touching the inputs; InvalidArgument names the bad field.
absl::Status ValidateTrainOptions(const TrainOptions& options);

// Trains a model; the special tokens get the ids above. The inputs (globs allowed) are read with
// CorpusReader; when they hold more than input_sentence_size sentences, a uniform sample of that
// many (reservoir sampling, seeded by `seed`) is trained on. <prefix>.model and <prefix>.vocab
// appear atomically, and only when training succeeded. `stats`, if not null, says what was read.
absl::Status Train(const TrainOptions& options);
absl::Status Train(const TrainOptions& options, TrainStats* stats);

class Tokenizer {
 public:
  // Loads a .model file written by `gmlp tokenizer train`. NotFound names a missing file;
  // FailedPrecondition says when ids 0-4 are not the special tokens above.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& model_path);
  ~Tokenizer();

  // Appends the ids of `text` (no special tokens added) to `out`. Thread-safe: several threads
  // may encode with one Tokenizer at once.
  // Common words are served from a per-thread cache; the ids are exactly SentencePiece's.
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const;
  // The same ids straight from SentencePiece, without the cache (for tests and benchmarks).
  absl::Status EncodeUncached(absl::string_view text, std::vector<int32_t>* out) const;
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
