// Helpers shared by the model tests: tiny configs of every encoder kind, random batches with
// padding, and parameter perturbation (so spatial/token mixing weights are far from their
// near-zero initialization and a padding leak would be visible).
#ifndef GMLP_TESTS_MODEL_TEST_UTIL_H_
#define GMLP_TESTS_MODEL_TEST_UTIL_H_

#include <torch/torch.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "model/arch.h"
#include "model/config.h"
#include "model/encoder.h"

namespace gmlp::model::testing {

// A tiny, dropout-free config of `arch` (a name of the arch table).
inline EncoderConfig TinyConfig(const std::string& arch, const std::string& sgu = "split") {
  EncoderConfig c;
  c.arch = arch;
  c.sgu = sgu;
  c.vocab_size = 37;
  c.max_seq_len = 64;
  c.d_model = 8;
  c.n_layers = 2;
  c.d_ffn = 12;
  c.n_heads = 2;
  c.attn_size = 4;
  c.token_mlp_dim = 6;
  c.dropout = 0.0;
  c.layer_norm_eps = 1e-5;
  return c;
}

// Every encoder kind and option the tests cover, with a readable name.
struct NamedConfig {
  std::string name;
  EncoderConfig config;
};
// gtest prints a parameter with this (not its raw bytes) in test output and listings.
inline void PrintTo(const NamedConfig& c, std::ostream* os) { *os << c.name; }
// Every arch of the table (model/arch.h) as TinyConfig(arch), a new one included; the gMLP
// family once per SGU variant; and the variants of the knobs only some archs read: the
// Transformer pre-LN and with ALiBi, aMLP's attention on Z ("expanded").
inline std::vector<NamedConfig> AllTinyConfigs() {
  std::vector<NamedConfig> out;
  for (const ArchSpec& arch : ArchTable()) {
    if (!arch.has_sgu) {
      out.push_back({arch.name, TinyConfig(arch.name)});
      continue;
    }
    for (const std::string& sgu : SguVariants()) {
      out.push_back({arch.name + "_" + sgu, TinyConfig(arch.name, sgu)});
      if (!arch.has_tiny_attention) continue;
      EncoderConfig expanded = TinyConfig(arch.name, sgu);
      expanded.attn_input = "expanded";
      out.push_back({arch.name + "_expanded_" + sgu, expanded});
    }
  }
  EncoderConfig pre = TinyConfig("transformer");
  pre.pre_ln = true;
  out.push_back({"transformer_preln", pre});
  EncoderConfig alibi = pre;
  alibi.position = "alibi";
  out.push_back({"transformer_alibi", alibi});
  return out;
}

// Adds N(0, scale^2) noise to every parameter, so near-zero spatial weights become O(1).
inline void Perturb(torch::nn::Module& module, double scale, uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) p.add_(torch::randn_like(p) * scale);
}

// Random ids/segments for a (B, n) batch; real lengths per row (the rest is padding, filled
// with random ids too, so any leak shows).
inline EncoderInput RandomInput(const EncoderConfig& c, int64_t n,
                                const std::vector<int64_t>& lengths, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t B = static_cast<int64_t>(lengths.size());
  EncoderInput in;
  in.input_ids = torch::randint(0, c.vocab_size, {B, n}, torch::kLong);
  in.segment_ids = torch::randint(0, c.type_vocab_size, {B, n}, torch::kLong);
  in.pad_mask = torch::zeros({B, n}, torch::kBool);
  for (int64_t b = 0; b < B; ++b) in.pad_mask[b].narrow(0, 0, lengths[b]).fill_(true);
  return in;
}

// The first `n` columns of every tensor of `in`.
inline EncoderInput Prefix(const EncoderInput& in, int64_t n) {
  EncoderInput out;
  out.input_ids = in.input_ids.narrow(1, 0, n).contiguous();
  if (in.segment_ids.defined()) out.segment_ids = in.segment_ids.narrow(1, 0, n).contiguous();
  if (in.pad_mask.defined()) out.pad_mask = in.pad_mask.narrow(1, 0, n).contiguous();
  return out;
}

}  // namespace gmlp::model::testing

#endif  // GMLP_TESTS_MODEL_TEST_UTIL_H_
