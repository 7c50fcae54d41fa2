// SyntheticMlmLoader: one fixed masked batch of random ids, forever. For timing a training step
// without the data path (bench/pretrain_bench.cc, `gmlp study --budget`).
#ifndef GMLP_PRETRAIN_SYNTHETIC_LOADER_H_
#define GMLP_PRETRAIN_SYNTHETIC_LOADER_H_

#include <cstdint>

#include "data/loader.h"

namespace gmlp::pretrain {

class SyntheticMlmLoader : public data::MlmLoader {
 public:
  // `batch` sequences of `seq_len` ids drawn from [5, vocab) (past the special ids), 15% of them
  // replaced by [MASK] as the masked positions; `seed` picks the ids (one per rank).
  SyntheticMlmLoader(int64_t vocab, int64_t seq_len, int64_t batch, uint64_t seed);

  absl::StatusOr<data::MlmBatch> Next() override { return batch_; }
  data::LoaderState state() const override { return {}; }
  absl::Status Restore(const data::LoaderState&) override { return absl::OkStatus(); }
  int64_t batches_per_epoch() const override { return int64_t{1} << 30; }
  int64_t vocab_size() const override { return vocab_; }
  int64_t seq_len() const override { return batch_.seq_len; }
  int64_t num_sequences() const override { return batch_.batch_size; }

 private:
  int64_t vocab_;
  data::MlmBatch batch_;
};

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_SYNTHETIC_LOADER_H_
