// The MLM batch loader used by the pretrainer: memory-maps shards written by `gmlp prepare`,
// checks them, deals sequences to ranks, masks dynamically and prefetches on a background thread.
// Torch-free: batches are plain vectors that the trainer wraps with torch::from_blob.
#ifndef GMLP_DATA_LOADER_H_
#define GMLP_DATA_LOADER_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::data {

struct MaskingOptions {
  double mask_rate = 0.15;         // fraction of non-special tokens chosen
  double mask_token_frac = 0.8;    // of the chosen: replaced by [MASK]
  double random_token_frac = 0.1;  // of the chosen: replaced by a random non-special token
  bool whole_word = false;         // choose whole words (SentencePiece word-start pieces)
};

struct LoaderOptions {
  std::string shard_dir;        // directory with manifest.json
  std::string split = "train";  // train | valid
  int64_t batch_size = 32;      // sequences per rank per batch
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 1;  // shuffling and masking
  MaskingOptions masking;
  int prefetch = 4;  // batches queued ahead (0 = synchronous)
  bool shuffle = true;
  // Checked against the manifest when non-empty / non-zero.
  std::string expected_tokenizer_checksum;
  int64_t expected_seq_len = 0;
};

// One rank's batch. Flat index of (b, i) is b * seq_len + i.
struct MlmBatch {
  int64_t batch_size = 0;
  int64_t seq_len = 0;
  std::vector<int32_t> input_ids;      // B*n, after masking; [PAD] where padded
  std::vector<int64_t> masked_index;   // flat indices of the positions to predict, ascending
  std::vector<int32_t> masked_labels;  // the original ids there
};

// Where the loader is: enough to continue exactly where it stopped.
struct LoaderState {
  int64_t epoch = 0;
  int64_t position = 0;  // batches already served in this epoch
  // What the batch sequence depends on besides (epoch, position), recorded so that Restore refuses
  // a state from a run with another seed or global batch (world_size * batch_size). A state whose
  // global_batch_size is 0 (built by hand) is not checked. Masks also depend on the rank, so a
  // resumed run sees the same sequences on other world sizes but identical batches only on the
  // same.
  uint64_t seed = 0;
  int64_t global_batch_size = 0;
  nlohmann::json ToJson() const;
  static absl::StatusOr<LoaderState> FromJson(const nlohmann::json& j);
};

class MlmLoader {
 public:
  static absl::StatusOr<std::unique_ptr<MlmLoader>> Open(const LoaderOptions& options);
  virtual ~MlmLoader() = default;

  // The next batch; epochs roll over forever (reshuffled from seed and epoch).
  virtual absl::StatusOr<MlmBatch> Next() = 0;
  // State after the last batch Next() returned (not counting prefetched ones).
  virtual LoaderState state() const = 0;
  // Repositions so that the next batch is the one an uninterrupted run would see.
  virtual absl::Status Restore(const LoaderState& state) = 0;
  // Batches per epoch for this rank (the tail that cannot fill a batch on every rank is dropped).
  virtual int64_t batches_per_epoch() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t seq_len() const = 0;
  // Sequences in the split (all ranks together), before dropping the tail.
  virtual int64_t num_sequences() const = 0;
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_LOADER_H_
