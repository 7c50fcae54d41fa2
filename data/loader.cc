// MlmLoader over the shards of one split. A batch is a pure function of (seed, epoch, position,
// rank): the epoch's order is a keyed permutation of all sequences of the split, step `position`
// covers global slots [position * W * B, (position + 1) * W * B) of it, rank r takes the r-th run
// of B slots, and the masks come from an RNG keyed by (seed, epoch, position, rank). So the state
// is just (epoch, position), resuming needs no replay, and prefetching is computing ahead.
#include "data/loader.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status.h"
#include "data/bounded_queue.h"
#include "data/manifest.h"
#include "data/masking.h"
#include "data/random.h"
#include "data/shard.h"

namespace gmlp::data {

nlohmann::json LoaderState::ToJson() const {
  return {{"epoch", epoch},
          {"position", position},
          {"seed", seed},
          {"global_batch_size", global_batch_size}};
}

absl::StatusOr<LoaderState> LoaderState::FromJson(const nlohmann::json& j) {
  try {
    LoaderState s;
    s.epoch = j.at("epoch").get<int64_t>();
    s.position = j.at("position").get<int64_t>();
    s.seed = j.value("seed", uint64_t{0});
    s.global_batch_size = j.value("global_batch_size", int64_t{0});
    if (s.epoch < 0 || s.position < 0 || s.global_batch_size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("loader state ", j.dump(), ": epoch and position must be >= 0"));
    }
    return s;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader state ", j.dump(), " is malformed (", e.what(),
                     "); expected {\"epoch\": E, \"position\": P, ...}"));
  }
}

namespace {

// Salts keep the shuffle and masking streams independent though both derive from `seed`.
constexpr uint64_t kShuffleSalt = 0x73687566666c65ULL;  // "shuffle"
constexpr uint64_t kMaskSalt = 0x6d61736bULL;           // "mask"

class ShardLoader : public MlmLoader {
 public:
  ShardLoader(const LoaderOptions& options, Manifest manifest,
              std::vector<std::unique_ptr<ShardReader>> shards)
      : options_(options),
        manifest_(std::move(manifest)),
        shards_(std::move(shards)),
        masker_(options.masking, manifest_.vocab_size, manifest_.word_starts) {
    int64_t total = 0;
    for (const auto& s : shards_) {
      first_sequence_.push_back(total);
      total += s->meta().num_sequences;
    }
    num_sequences_ = total;
    global_batch_ = options_.batch_size * options_.world_size;
    batches_per_epoch_ = num_sequences_ / global_batch_;
  }

  ~ShardLoader() override { StopPrefetch(); }

  absl::StatusOr<MlmBatch> Next() override {
    MlmBatch batch;
    if (queue_ == nullptr) {
      if (options_.prefetch > 0) StartPrefetch();
    }
    if (queue_ != nullptr) {
      std::optional<MlmBatch> item = queue_->Pop();
      if (!item.has_value()) return absl::InternalError("loader: prefetch thread stopped");
      batch = std::move(*item);
    } else {
      batch = MakeBatch(epoch_, position_);
    }
    Advance(&epoch_, &position_);
    return batch;
  }

  LoaderState state() const override {
    LoaderState s;
    s.epoch = epoch_;
    s.position = position_;
    s.seed = options_.seed;
    s.global_batch_size = global_batch_;
    return s;
  }

  absl::Status Restore(const LoaderState& state) override {
    if (state.global_batch_size > 0 &&
        (state.global_batch_size != global_batch_ || state.seed != options_.seed)) {
      return absl::FailedPreconditionError(
          absl::StrCat("loader state was saved with seed ", state.seed, " and global batch ",
                       state.global_batch_size, " (world_size * batch_size) but this run has seed ",
                       options_.seed, " and global batch ", global_batch_,
                       "; resume with the same seed and world_size * batch_size"));
    }
    if (state.epoch < 0 || state.position < 0 || state.position > batches_per_epoch_) {
      return absl::InvalidArgumentError(
          absl::StrCat("loader state (epoch ", state.epoch, ", position ", state.position,
                       ") is out of range: an epoch has ", batches_per_epoch_, " batches"));
    }
    StopPrefetch();
    epoch_ = state.epoch;
    position_ = state.position;
    if (position_ == batches_per_epoch_) {
      ++epoch_;
      position_ = 0;
    }
    return absl::OkStatus();
  }

  int64_t batches_per_epoch() const override { return batches_per_epoch_; }
  int64_t vocab_size() const override { return manifest_.vocab_size; }
  int64_t seq_len() const override { return manifest_.seq_len; }
  int64_t num_sequences() const override { return num_sequences_; }

 private:
  void Advance(int64_t* epoch, int64_t* position) const {
    if (++*position == batches_per_epoch_) {
      ++*epoch;
      *position = 0;
    }
  }

  MlmBatch MakeBatch(int64_t epoch, int64_t position) {
    const int64_t n = manifest_.seq_len;
    const int64_t b_size = options_.batch_size;
    MlmBatch batch;
    batch.batch_size = b_size;
    batch.seq_len = n;
    batch.input_ids.resize(static_cast<size_t>(b_size * n));
    const size_t expected_masked =
        static_cast<size_t>(static_cast<double>(b_size * n) * options_.masking.mask_rate * 1.1) + 8;
    batch.masked_index.reserve(expected_masked);
    batch.masked_labels.reserve(expected_masked);

    const Permutation order(static_cast<uint64_t>(num_sequences_),
                            HashKey(options_.seed ^ kShuffleSalt, static_cast<uint64_t>(epoch)));
    Rng rng(HashKey(options_.seed ^ kMaskSalt, static_cast<uint64_t>(epoch),
                    static_cast<uint64_t>(position), static_cast<uint64_t>(options_.rank)));
    const int64_t first_slot = (position * options_.world_size + options_.rank) * b_size;
    for (int64_t b = 0; b < b_size; ++b) {
      const uint64_t slot = static_cast<uint64_t>(first_slot + b);
      const int64_t seq = static_cast<int64_t>(options_.shuffle ? order(slot) : slot);
      const size_t shard = static_cast<size_t>(
          std::upper_bound(first_sequence_.begin(), first_sequence_.end(), seq) -
          first_sequence_.begin() - 1);
      int32_t* row = batch.input_ids.data() + b * n;
      shards_[shard]->CopySequence(seq - first_sequence_[shard], row);
      masker_.MaskSequence(row, n, b * n, &rng, &batch.masked_index, &batch.masked_labels);
    }
    return batch;
  }

  void StartPrefetch() {
    queue_ = std::make_unique<BoundedQueue<MlmBatch>>(static_cast<size_t>(options_.prefetch));
    const int64_t epoch = epoch_;
    const int64_t position = position_;
    producer_ = std::thread([this, epoch, position] {
      int64_t e = epoch;
      int64_t p = position;
      // Push returns false once StopPrefetch closes the queue.
      while (queue_->Push(MakeBatch(e, p))) Advance(&e, &p);
    });
  }

  void StopPrefetch() {
    if (queue_ == nullptr) return;
    queue_->Close();
    producer_.join();
    queue_.reset();
  }

  const LoaderOptions options_;
  const Manifest manifest_;
  const std::vector<std::unique_ptr<ShardReader>> shards_;
  std::vector<int64_t> first_sequence_;  // global index of each shard's first sequence
  int64_t num_sequences_ = 0;
  int64_t global_batch_ = 0;
  int64_t batches_per_epoch_ = 0;
  // Used by the producer thread only while it runs (and by Next when prefetch == 0).
  Masker masker_;
  // The consumer's position: the next batch Next() returns.
  int64_t epoch_ = 0;
  int64_t position_ = 0;
  std::unique_ptr<BoundedQueue<MlmBatch>> queue_;
  std::thread producer_;
};

}  // namespace

namespace {

absl::Status CheckLoaderOptions(const LoaderOptions& options) {
  if (options.batch_size <= 0 || options.world_size <= 0 || options.rank < 0 ||
      options.rank >= options.world_size || options.prefetch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("loader: need batch_size > 0 (got ", options.batch_size,
                     "), 0 <= rank < world_size (got ", options.rank, " and ", options.world_size,
                     ") and prefetch >= 0 (got ", options.prefetch, ")"));
  }
  if (options.split != "train" && options.split != "valid") {
    return absl::InvalidArgumentError(
        absl::StrCat("loader: split must be train or valid, got '", options.split, "'"));
  }
  GMLP_RETURN_IF_ERROR(ValidateMaskingOptions(options.masking));
  return absl::OkStatus();
}

// The shard directory's manifest, checked against what the run needs (tokenizer, length, the
// word-start table for whole-word masking).
absl::StatusOr<Manifest> ReadLoaderManifest(const LoaderOptions& options,
                                            const std::string& manifest_path) {
  if (!PathExists(manifest_path) && IsDirectory(options.shard_dir)) {
    return absl::NotFoundError(
        absl::StrCat(manifest_path,
                     ": no manifest; if `gmlp prepare` ran with --part=i/N, run `gmlp prepare "
                     "--merge --output=",
                     options.shard_dir, "` after all parts finish, else run `gmlp prepare` first"));
  }
  GMLP_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(manifest_path));
  if (!options.expected_tokenizer_checksum.empty() &&
      manifest.tokenizer_checksum != options.expected_tokenizer_checksum) {
    return absl::FailedPreconditionError(
        absl::StrCat(manifest_path, ": shards were made with tokenizer ", manifest.tokenizer, " (",
                     manifest.tokenizer_checksum, ") but this run's tokenizer is ",
                     options.expected_tokenizer_checksum,
                     "; re-run `gmlp prepare --tokenizer=<the tokenizer you train with>`"));
  }
  if (options.expected_seq_len > 0 && manifest.seq_len != options.expected_seq_len) {
    return absl::FailedPreconditionError(absl::StrCat(
        manifest_path, ": shards have seq_len ", manifest.seq_len, " but this run needs ",
        options.expected_seq_len, "; re-run `gmlp prepare --seq_len=", options.expected_seq_len,
        "` or set the model's max_seq_len to ", manifest.seq_len));
  }
  if (options.masking.whole_word &&
      static_cast<int64_t>(manifest.word_starts.size()) != manifest.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        manifest_path, ": no word-start table for whole-word masking; re-run `gmlp prepare`"));
  }
  return manifest;
}

// Every non-empty shard of the split, opened and checked against its manifest entry.
absl::StatusOr<std::vector<std::unique_ptr<ShardReader>>> OpenSplitShards(
    const LoaderOptions& options, const Manifest& manifest, const std::string& manifest_path) {
  std::vector<std::unique_ptr<ShardReader>> shards;
  ShardExpectations expect;
  expect.seq_len = manifest.seq_len;
  expect.vocab_size = manifest.vocab_size;
  expect.tokenizer_checksum = manifest.tokenizer_checksum;
  for (size_t i = 0; i < manifest.shards.size(); ++i) {
    const ShardEntry& entry = manifest.shards[i];
    if (entry.split != options.split) continue;
    expect.num_sequences = entry.num_sequences;
    expect.checksum = entry.checksum;
    expect.listed_in = absl::StrCat(manifest_path, ": shards[", i, "]");
    GMLP_ASSIGN_OR_RETURN(std::unique_ptr<ShardReader> shard,
                          ShardReader::Open(JoinPath(options.shard_dir, entry.file), expect));
    if (shard->meta().num_sequences > 0) shards.push_back(std::move(shard));
  }
  return shards;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MlmLoader>> MlmLoader::Open(const LoaderOptions& options) {
  GMLP_RETURN_IF_ERROR(CheckLoaderOptions(options));
  const std::string manifest_path = JoinPath(options.shard_dir, kManifestFile);
  GMLP_ASSIGN_OR_RETURN(Manifest manifest, ReadLoaderManifest(options, manifest_path));
  GMLP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardReader>> shards,
                        OpenSplitShards(options, manifest, manifest_path));
  const int64_t global_batch = options.batch_size * options.world_size;
  const SplitTotals totals = manifest.Totals(options.split);
  if (totals.sequences < global_batch) {
    return absl::FailedPreconditionError(absl::StrCat(
        manifest_path, ": the ", options.split, " split has ", totals.sequences,
        " sequences, fewer than one global batch (world_size * batch_size = ", global_batch,
        "); lower batch_size, or prepare more text",
        options.split == "valid" ? " or a larger --valid_fraction" : ""));
  }
  return std::unique_ptr<MlmLoader>(
      new ShardLoader(options, std::move(manifest), std::move(shards)));
}

}  // namespace gmlp::data
