#include "tests/pretrain_test_util.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/mix64.h"
#include "pretrain/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::pretrain::testing {
namespace {

std::string TempBase() {
  const char* base = std::getenv("TEST_TMPDIR");
  return base != nullptr && *base != '\0' ? base : "/tmp";
}

// What every FreshTempDir of this process is named after: <base>/gmlp_pretrain_test_<pid>_.
std::string ProcessPrefix() { return absl::StrCat("gmlp_pretrain_test_", ::getpid(), "_"); }

// At exit: this process's directories and the logs the tests write beside them (<dir>.log),
// unless GMLP_KEEP_TEST_DIRS is set (to look at a failed run's files). A full suite left about
// 1 GB under /tmp before.
void RemoveThisProcessesDirs() {
  if (std::getenv("GMLP_KEEP_TEST_DIRS") != nullptr) return;
  const std::string base = TempBase(), prefix = ProcessPrefix();
  DIR* d = ::opendir(base.c_str());
  if (d == nullptr) return;
  std::vector<std::string> doomed;
  while (const dirent* e = ::readdir(d)) {
    if (absl::StartsWith(e->d_name, prefix)) doomed.push_back(JoinPath(base, e->d_name));
  }
  ::closedir(d);
  for (const std::string& path : doomed) (void)RemoveTree(path);
}

}  // namespace

FakeLoader::FakeLoader(int64_t vocab, int64_t seq_len, int64_t batch, int rank, int world,
                       uint64_t seed, int64_t batches_per_epoch)
    : vocab_(vocab),
      seq_len_(seq_len),
      batch_(batch),
      rank_(rank),
      world_(world),
      seed_(seed),
      per_epoch_(batches_per_epoch) {}

absl::StatusOr<data::MlmBatch> FakeLoader::Next() {
  data::MlmBatch out;
  out.batch_size = batch_;
  out.seq_len = seq_len_;
  out.input_ids.resize(batch_ * seq_len_);
  const int64_t p = state_.epoch * per_epoch_ + state_.position;
  for (int64_t b = 0; b < batch_; ++b) {
    const uint64_t g = static_cast<uint64_t>((p * world_ + rank_) * batch_ + b);
    const uint64_t h = SplitMix64(seed_ ^ SplitMix64(g));
    const int64_t length = seq_len_ - static_cast<int64_t>(h % 3);  // some padding
    int32_t prev = 5;
    for (int64_t i = 0; i < seq_len_; ++i) {
      int32_t id = tokenizer::kPadId;
      if (i < length) {
        // A learnable pattern: mostly the previous id + 1, sometimes random.
        const uint64_t r = SplitMix64(h + static_cast<uint64_t>(i));
        id = (r % 4 == 0) ? static_cast<int32_t>(5 + r / 4 % (vocab_ - 5))
                          : static_cast<int32_t>(5 + (prev - 5 + 1) % (vocab_ - 5));
        prev = id;
      }
      int32_t& slot = out.input_ids[b * seq_len_ + i];
      slot = id;
      if (i < length && (SplitMix64(h ^ (0xABCDull + i)) % 100 < 15 || i == 1)) {
        out.masked_index.push_back(b * seq_len_ + i);
        out.masked_labels.push_back(id);
        slot = tokenizer::kMaskId;
      }
    }
  }
  if (++state_.position == per_epoch_) {
    state_.position = 0;
    ++state_.epoch;
  }
  return out;
}

TinyMlmImpl::TinyMlmImpl(int64_t vocab, int64_t d, double dropout) {
  emb = register_module("emb", torch::nn::Embedding(vocab, d));
  ln = register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
  dense = register_module("dense", torch::nn::Linear(d, d));
  drop = register_module("drop", torch::nn::Dropout(dropout));
  register_parameter("decoder_weight", emb->weight);
  decoder_bias = register_parameter("decoder_bias", torch::zeros({vocab}));
}

torch::Tensor TinyMlmImpl::forward(const model::EncoderInput& input,
                                   const torch::Tensor& masked_index) {
  torch::Tensor x_BND = emb(input.input_ids);
  // A little context: each position also sees its left neighbour.
  x_BND = x_BND + torch::roll(x_BND, 1, 1);
  torch::Tensor h_BND = drop(torch::gelu(dense(ln(x_BND))));
  const int64_t d = h_BND.size(-1);
  torch::Tensor h_MD = h_BND.reshape({-1, d}).index_select(0, masked_index);
  return torch::matmul(h_MD, emb->weight.t()) + decoder_bias;
}

MlmForwardFn ForwardOf(TinyMlm model) {
  return [model](const model::EncoderInput& input, const torch::Tensor& masked_index) mutable {
    return model->forward(input, masked_index);
  };
}

std::string FreshTempDir(const std::string& name) {
  static std::once_flag cleanup;
  std::call_once(cleanup, [] { std::atexit(RemoveThisProcessesDirs); });
  const std::string dir = JoinPath(TempBase(), ProcessPrefix() + name);
  (void)RemoveTree(dir);
  (void)MakeDirs(dir);
  return dir;
}

}  // namespace gmlp::pretrain::testing
