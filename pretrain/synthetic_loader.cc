#include "pretrain/synthetic_loader.h"

#include <random>

#include "tokenizer/tokenizer.h"

namespace gmlp::pretrain {

SyntheticMlmLoader::SyntheticMlmLoader(int64_t vocab, int64_t seq_len, int64_t batch, uint64_t seed)
    : vocab_(vocab) {
  std::mt19937_64 rng(seed);
  batch_.batch_size = batch;
  batch_.seq_len = seq_len;
  batch_.input_ids.resize(batch * seq_len);
  for (int64_t i = 0; i < batch * seq_len; ++i) {
    const auto id = static_cast<int32_t>(5 + rng() % static_cast<uint64_t>(vocab - 5));
    batch_.input_ids[i] = id;
    if (rng() % 10000 < 1500) {
      batch_.masked_index.push_back(i);
      batch_.masked_labels.push_back(id);
      batch_.input_ids[i] = tokenizer::kMaskId;
    }
  }
}

}  // namespace gmlp::pretrain
