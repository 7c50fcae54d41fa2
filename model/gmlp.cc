// gMLP / aMLP blocks and encoder (see gmlp.h for the equations).
#include "model/gmlp.h"

#include <cmath>

#include "model/dropout.h"

namespace gmlp::model {

int64_t GateWidth(const EncoderConfig& config) {
  return config.sgu == "split" ? config.d_ffn / 2 : config.d_ffn;
}

GmlpBlockImpl::GmlpBlockImpl(const EncoderConfig& config)
    : config_(config), split_(config.sgu == "split"), tiny_attention_(config.arch == "amlp") {
  const int64_t d = config.d_model, f = config.d_ffn, g = GateWidth(config);
  const int64_t n_max = config.max_seq_len;
  const double std = config.init_std;
  norm_ = register_module("norm", LayerNorm(d, config.layer_norm_eps));
  if (split_) {
    in_z1_ = register_module("in_z1", MakeLinear(d, g, std));
    in_z2_ = register_module("in_z2", MakeLinear(d, g, std));
  } else {
    in_z_ = register_module("in_z", MakeLinear(d, f, std));
  }
  sgu_norm_ = register_module("sgu_norm", LayerNorm(g, config.layer_norm_eps));
  // Paper Sec. 2.1: W near zero and b = 1 make s(Z) ~ Z1 (a plain gated FFN) at the start.
  const double eps = config.sgu_init_eps / static_cast<double>(n_max);
  spatial_weight_ =
      register_parameter("spatial_weight", torch::empty({n_max, n_max}).uniform_(-eps, eps));
  spatial_bias_ = register_parameter("spatial_bias", torch::ones({n_max}));
  out_ = register_module("out", MakeLinear(g, d, std));
  if (tiny_attention_) {
    const int64_t in = config.attn_input == "block" ? d : f;
    attn_qkv_ = register_module("attn_qkv", MakeLinear(in, 3 * config.attn_size, std));
    attn_out_ = register_module("attn_out", MakeLinear(config.attn_size, g, std));
  }
}

torch::Tensor GmlpBlockImpl::SpatialProjection(const torch::Tensor& z_NG, const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B, g = z_NG.size(1);
  torch::Tensor v_NG = sgu_norm_(z_NG);
  if (batch.keep_N1.defined()) v_NG = v_NG * batch.keep_N1;
  // Row i*B + b of the (N, g) tensor is row i of the (n, B*g) view: one GEMM mixes positions
  // for the whole batch, and addmm adds b[i] to row i.
  return torch::addmm(LeadingColumn(spatial_bias_, n), LeadingBlock(spatial_weight_, n),
                      v_NG.view({n, B * g}))
      .view({n * B, g});
}

torch::Tensor GmlpBlockImpl::TinyAttention(const torch::Tensor& qkv_N3A, const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B, a = config_.attn_size;
  // unbind's backward stacks the three gradients (no zero-filled full-size buffers).
  const auto qkv = qkv_N3A.view({n, B, 3, a}).unbind(2);  // 3 x (n, B, a)
  const torch::Tensor q_BnA = qkv[0].transpose(0, 1) * (1.0 / std::sqrt(static_cast<double>(a)));
  const torch::Tensor k_BnA = qkv[1].transpose(0, 1);
  const torch::Tensor v_BnA = qkv[2].transpose(0, 1);
  torch::Tensor scores_Bnn = torch::matmul(q_BnA, k_BnA.transpose(1, 2));
  if (batch.key_bias_B1N.defined()) scores_Bnn = scores_Bnn + batch.key_bias_B1N;
  const torch::Tensor probs_Bnn = torch::softmax(scores_Bnn, -1);
  const torch::Tensor o_nBA = torch::matmul(probs_Bnn, v_BnA).transpose(0, 1);
  return attn_out_(o_nBA.reshape({n * B, a}));
}

torch::Tensor GmlpBlockImpl::forward(const torch::Tensor& x_ND, const SeqBatch& batch) {
  const torch::Tensor h_ND = norm_(x_ND);
  torch::Tensor s_NG;
  if (split_) {
    const torch::Tensor z1_NG = torch::gelu(in_z1_(h_ND));
    const torch::Tensor z2_NG = torch::gelu(in_z2_(h_ND));
    torch::Tensor gate_NG = SpatialProjection(z2_NG, batch);
    if (tiny_attention_) {
      torch::Tensor qkv_N3A;
      if (config_.attn_input == "block") {
        qkv_N3A = attn_qkv_(h_ND);
      } else {
        // Proj(Z) with Z = [Z1, Z2] never materialized: Z1 W[:, :g]^T + Z2 W[:, g:]^T + bias.
        const int64_t g = z1_NG.size(1);
        const torch::Tensor& w = attn_qkv_->weight;
        qkv_N3A = torch::linear(z1_NG, w.narrow(1, 0, g), attn_qkv_->bias) +
                  torch::linear(z2_NG, w.narrow(1, g, g));
      }
      gate_NG = gate_NG + TinyAttention(qkv_N3A, batch);
    }
    s_NG = z1_NG * gate_NG;
  } else {
    const torch::Tensor z_NF = torch::gelu(in_z_(h_ND));
    torch::Tensor gate_NF = SpatialProjection(z_NF, batch);
    if (tiny_attention_) {
      gate_NF =
          gate_NF + TinyAttention(attn_qkv_(config_.attn_input == "block" ? h_ND : z_NF), batch);
    }
    if (config_.sgu == "multiplicative") {
      s_NG = z_NF * gate_NF;
    } else if (config_.sgu == "additive") {
      s_NG = z_NF + gate_NF;
    } else {  // linear
      s_NG = gate_NF;
    }
  }
  return x_ND + Dropout(out_(s_NG), config_.dropout, is_training());
}

GmlpEncoderImpl::GmlpEncoderImpl(const EncoderConfig& config) : EncoderImpl(config) {
  embeddings_ = register_module("embeddings", Embeddings(config, /*with_position=*/false));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.n_layers; ++i) blocks_->push_back(GmlpBlock(config));
  final_norm_ = register_module("final_norm", LayerNorm(config.d_model, config.layer_norm_eps));
}

torch::Tensor GmlpEncoderImpl::Encode(const EncoderInput& input, SeqBatch* batch) {
  *batch = MakeSeqBatch(input, config().max_seq_len, embeddings_->token_weight().scalar_type());
  torch::Tensor x_ND = embeddings_->forward(input, *batch);
  for (const auto& block : *blocks_) x_ND = block->as<GmlpBlockImpl>()->forward(x_ND, *batch);
  return x_ND;
}

torch::Tensor GmlpEncoderImpl::forward(const EncoderInput& input) {
  SeqBatch batch;
  const torch::Tensor x_ND = final_norm_(Encode(input, &batch));
  return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
}

torch::Tensor GmlpEncoderImpl::forward_features(const EncoderInput& input) {
  SeqBatch batch;
  const torch::Tensor x_ND = Encode(input, &batch);
  return SeqMajorToBatchMajor(x_ND, batch.n, batch.B);
}

torch::Tensor GmlpEncoderImpl::final_norm(const torch::Tensor& hidden_XD) {
  return final_norm_(hidden_XD);
}

}  // namespace gmlp::model
