// Numerical parity of every block kind (and of whole encoders) with independent references
// written here with plain tensor ops in the batch-major (B, n, d) layout: hand-written LayerNorm
// and erf-GELU, explicit head splits, einsum for the spatial/token mixing, -inf masked softmax.
// The modules run sequence-major with fused GEMMs, so the two share no code path.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/arch.h"
#include "model/layers.h"
#include "model/stacked_encoder.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::AllTinyConfigs;
using testing::NamedConfig;
using testing::Perturb;
using testing::RandomInput;
using Params = torch::OrderedDict<std::string, torch::Tensor>;

torch::Tensor RefLayerNorm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                           double eps) {
  const torch::Tensor mean = x.mean(-1, /*keepdim=*/true);
  const torch::Tensor var = (x - mean).pow(2).mean(-1, /*keepdim=*/true);
  return (x - mean) / torch::sqrt(var + eps) * w + b;
}

torch::Tensor RefGelu(const torch::Tensor& x) { return 0.5 * x * (1.0 + torch::erf(x / M_SQRT2)); }

torch::Tensor Dense(const torch::Tensor& x, const Params& p, const std::string& name) {
  return torch::matmul(x, p[name + ".weight"].t()) + p[name + ".bias"];
}

torch::Tensor Norm(const torch::Tensor& x, const Params& p, const std::string& name, double eps) {
  return RefLayerNorm(x, p[name + ".weight"], p[name + ".bias"], eps);
}

// Single- or multi-head softmax attention over (B, n, H, k) q/k/v; keep_Bn masks keys. With
// `slopes` (one per head), ALiBi: score(i, j) of head h gets -slopes[h] * |i - j|.
torch::Tensor RefAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                           const torch::Tensor& keep_Bn, const std::vector<double>& slopes = {}) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  torch::Tensor scores = torch::einsum("bihc,bjhc->bhij", {q, k}) * scale;
  for (size_t h = 0; h < slopes.size(); ++h) {
    for (int64_t i = 0; i < q.size(1); ++i) {
      for (int64_t j = 0; j < q.size(1); ++j) {
        scores.select(1, h).select(1, i).select(1, j) -= slopes[h] * std::abs(i - j);
      }
    }
  }
  scores = scores.masked_fill(keep_Bn.logical_not().view({keep_Bn.size(0), 1, 1, -1}),
                              -std::numeric_limits<double>::infinity());
  const torch::Tensor probs = torch::exp(scores - std::get<0>(scores.max(-1, true)));
  return torch::einsum("bhij,bjhc->bihc", {probs / probs.sum(-1, true), v});
}

torch::Tensor RefGmlpBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                           const std::string& pre, const EncoderConfig& c) {
  const int64_t B = x.size(0), n = x.size(1);
  const double eps = c.layer_norm_eps;
  const torch::Tensor h = Norm(x, p, pre + "norm", eps);
  torch::Tensor z, z1, z2;
  if (c.sgu == "split") {
    z1 = RefGelu(Dense(h, p, pre + "in_z1"));
    z2 = RefGelu(Dense(h, p, pre + "in_z2"));
    z = torch::cat({z1, z2}, -1);
  } else {
    z = z2 = RefGelu(Dense(h, p, pre + "in_z"));
  }
  const torch::Tensor v = Norm(z2, p, pre + "sgu_norm", eps) * keep_Bn.unsqueeze(-1);
  const torch::Tensor w = p[pre + "spatial_weight"].slice(0, 0, n).slice(1, 0, n);
  torch::Tensor gate =
      torch::einsum("ij,bjc->bic", {w, v}) + p[pre + "spatial_bias"].slice(0, 0, n).view({1, n, 1});
  if (c.arch == "amlp") {
    const torch::Tensor qkv = Dense(c.attn_input == "block" ? h : z, p, pre + "attn_qkv");
    const int64_t a = c.attn_size;
    auto head = [&](int i) { return qkv.slice(-1, i * a, (i + 1) * a).view({B, n, 1, a}); };
    const torch::Tensor o = RefAttention(head(0), head(1), head(2), keep_Bn).view({B, n, a});
    gate = gate + Dense(o, p, pre + "attn_out");
  }
  torch::Tensor s;
  if (c.sgu == "split") s = z1 * gate;
  if (c.sgu == "multiplicative") s = z * gate;
  if (c.sgu == "additive") s = z + gate;
  if (c.sgu == "linear") s = gate;
  return x + Dense(s, p, pre + "out");
}

torch::Tensor RefTransformerBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn,
                                  const Params& p, const std::string& pre, const EncoderConfig& c) {
  const int64_t B = x.size(0), n = x.size(1), d = c.d_model, H = c.n_heads;
  const double eps = c.layer_norm_eps;
  auto attention = [&](const torch::Tensor& h) {
    const torch::Tensor qkv = Dense(h, p, pre + "attn_qkv");
    auto part = [&](int i) { return qkv.slice(-1, i * d, (i + 1) * d).view({B, n, H, d / H}); };
    // ALiBi's slopes for the tiny configs' 2 heads, written out: 2^-4 and 2^-8.
    std::vector<double> slopes;
    if (c.position == "alibi") slopes = {1.0 / 16, 1.0 / 256};
    const torch::Tensor o =
        RefAttention(part(0), part(1), part(2), keep_Bn, slopes).reshape({B, n, d});
    return Dense(o, p, pre + "attn_out");
  };
  auto ffn = [&](const torch::Tensor& h) {
    return Dense(RefGelu(Dense(h, p, pre + "ffn_in")), p, pre + "ffn_out");
  };
  if (c.pre_ln) {
    const torch::Tensor y = x + attention(Norm(x, p, pre + "attn_norm", eps));
    return y + ffn(Norm(y, p, pre + "ffn_norm", eps));
  }
  const torch::Tensor y = Norm(x + attention(x), p, pre + "attn_norm", eps);
  return Norm(y + ffn(y), p, pre + "ffn_norm", eps);
}

torch::Tensor RefMixerBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                            const std::string& pre, const EncoderConfig& c) {
  const int64_t n = x.size(1);
  const double eps = c.layer_norm_eps;
  const torch::Tensor h = Norm(x, p, pre + "token_norm", eps) * keep_Bn.unsqueeze(-1);
  const torch::Tensor u =
      RefGelu(torch::einsum("tj,bjc->btc", {p[pre + "token_in_weight"].slice(1, 0, n), h}) +
              p[pre + "token_in_bias"].view({1, -1, 1}));
  const torch::Tensor y =
      torch::einsum("it,btc->bic", {p[pre + "token_out_weight"].slice(0, 0, n), u}) +
      p[pre + "token_out_bias"].slice(0, 0, n).view({1, n, 1});
  const torch::Tensor x1 = x + y;
  const torch::Tensor ch =
      Dense(RefGelu(Dense(Norm(x1, p, pre + "channel_norm", eps), p, pre + "channel_in")), p,
            pre + "channel_out");
  return x1 + ch;
}

torch::Tensor RefBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                       const std::string& pre, const EncoderConfig& c) {
  if (c.arch == "transformer") return RefTransformerBlock(x, keep_Bn, p, pre, c);
  if (c.arch == "mixer") return RefMixerBlock(x, keep_Bn, p, pre, c);
  return RefGmlpBlock(x, keep_Bn, p, pre, c);
}

// The whole encoder: embeddings (token + segment [+ position]), LayerNorm, blocks, final LN.
torch::Tensor RefEncoder(const EncoderInput& in, const Params& p, const EncoderConfig& c) {
  const int64_t n = in.input_ids.size(1);
  torch::Tensor x = p["embeddings.token.weight"]
                        .index_select(0, in.input_ids.reshape(-1))
                        .view({in.input_ids.size(0), n, -1}) +
                    p["embeddings.segment.weight"]
                        .index_select(0, in.segment_ids.reshape(-1))
                        .view({in.input_ids.size(0), n, -1});
  if (c.arch == "transformer" && c.position == "learned") {
    x = x + p["embeddings.position.weight"].slice(0, 0, n);
  }
  x = Norm(x, p, "embeddings.norm", c.layer_norm_eps);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    x = RefBlock(x, in.pad_mask, p, "blocks." + std::to_string(i) + ".", c);
  }
  if (c.arch != "transformer" || c.pre_ln) x = Norm(x, p, "final_norm", c.layer_norm_eps);
  return x;
}

class ParityTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(ParityTest, OneBlockMatchesPlainOpsReference) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(41);
  const std::shared_ptr<EncoderBlockImpl> block = FindArch(c.arch)->block.make(c);
  block->to(torch::kDouble);
  Perturb(*block, 0.3, 42);
  block->eval();
  const int64_t B = 3, n = 10;
  const EncoderInput in = RandomInput(c, n, {10, 6, 1}, 43);
  const SeqBatch batch = MakeSeqBatch(in, c.max_seq_len, torch::kDouble);
  const torch::Tensor x_BnD = torch::randn({B, n, c.d_model}, torch::kDouble);
  const torch::Tensor x_ND = x_BnD.transpose(0, 1).reshape({n * B, c.d_model});
  // The block's input arrives with a residual add still pending, as it does in the stack.
  const torch::Tensor pending_ND = torch::randn_like(x_ND);
  const torch::Tensor out_ND = block->forward(Residual{x_ND - pending_ND, pending_ND}, batch).Sum();
  const torch::Tensor out = SeqMajorToBatchMajor(out_ND, n, B);
  const torch::Tensor ref = RefBlock(x_BnD, in.pad_mask, block->named_parameters(), "", c);
  // Padded positions hold garbage by design; compare the real ones.
  const torch::Tensor keep = in.pad_mask.unsqueeze(-1);
  const double err = ((out - ref) * keep).abs().max().item<double>();
  EXPECT_LT(err, 1e-10) << GetParam().name;
  EXPECT_GT(ref.abs().max().item<double>(), 0.1);
}

TEST_P(ParityTest, WholeEncoderMatchesPlainOpsReference) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(51);
  auto encoder = MakeEncoder(c);
  encoder->to(torch::kDouble);
  Perturb(*encoder, 0.3, 52);
  encoder->eval();
  const EncoderInput in = RandomInput(c, 12, {12, 9}, 53);
  const torch::Tensor out = encoder->forward(in);
  const torch::Tensor ref = RefEncoder(in, encoder->named_parameters(), c);
  const double err = ((out - ref) * in.pad_mask.unsqueeze(-1)).abs().max().item<double>();
  EXPECT_LT(err, 1e-10) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, ParityTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gmlp::model
