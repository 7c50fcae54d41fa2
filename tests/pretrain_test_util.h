// Fixtures for the pretraining tests: a deterministic in-memory MLM loader and a tiny MLM
// module with a tied decoder, so the trainer is tested without shards or the real encoders.
#ifndef GMLP_TESTS_PRETRAIN_TEST_UTIL_H_
#define GMLP_TESTS_PRETRAIN_TEST_UTIL_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

#include "data/loader.h"
#include "model/encoder.h"
#include "pretrain/trainer.h"

namespace gmlp::pretrain::testing {

// Sequence g (global index) is a pure function of (seed, g): sequence positions of rank r at
// batch position p are g = (p * world + r) * batch + b, so 2 ranks x b sequences see exactly
// the sequences 1 rank x 2b sees, and accumulation of two b-batches those of one 2b-batch.
class FakeLoader : public data::MlmLoader {
 public:
  FakeLoader(int64_t vocab, int64_t seq_len, int64_t batch, int rank = 0, int world = 1,
             uint64_t seed = 7, int64_t batches_per_epoch = 1000);
  absl::StatusOr<data::MlmBatch> Next() override;
  data::LoaderState state() const override { return state_; }
  absl::Status Restore(const data::LoaderState& s) override {
    state_ = s;
    return absl::OkStatus();
  }
  int64_t batches_per_epoch() const override { return per_epoch_; }
  int64_t vocab_size() const override { return vocab_; }
  int64_t seq_len() const override { return seq_len_; }
  int64_t num_sequences() const override { return per_epoch_ * batch_ * world_; }

 private:
  int64_t vocab_, seq_len_, batch_;
  int rank_, world_;
  uint64_t seed_;
  int64_t per_epoch_;
  data::LoaderState state_;
};

// Embedding -> LayerNorm -> GELU(Linear) -> Dropout; decoder tied to the embedding (registered a
// second time as "decoder_weight", the way a tied head may hold it) plus a bias.
class TinyMlmImpl : public torch::nn::Module {
 public:
  TinyMlmImpl(int64_t vocab, int64_t d, double dropout);
  torch::Tensor forward(const model::EncoderInput& input, const torch::Tensor& masked_index);

  torch::nn::Embedding emb{nullptr};
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear dense{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::Tensor decoder_bias;
};
TORCH_MODULE(TinyMlm);

MlmForwardFn ForwardOf(TinyMlm model);

// A fresh empty directory under the test temp dir ($TEST_TMPDIR, else /tmp), named for this
// process and `name`. It goes at the process's exit with every file named after it (a test's
// <dir>.log), unless GMLP_KEEP_TEST_DIRS is set.
std::string FreshTempDir(const std::string& name);

}  // namespace gmlp::pretrain::testing

#endif  // GMLP_TESTS_PRETRAIN_TEST_UTIL_H_
