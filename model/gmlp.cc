// gMLP / aMLP blocks and encoder (see gmlp.h for the equations).
#include "model/gmlp.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/ops.h"
#include "model/arch.h"

namespace gmlp::model {

GmlpBlockImpl::GmlpBlockImpl(const EncoderConfig& config, int64_t attn_size)
    : config_(config), split_(config.sgu == "split"), attn_size_(attn_size) {
  const int64_t d = config.d_model, f = config.d_ffn, g = GateWidth(config);
  const int64_t n_max = config.max_seq_len;
  const double std = config.init_std;
  norm_ = register_module("norm", LayerNorm(d, config.layer_norm_eps, /*feeds_matmuls=*/true));
  if (split_) {
    in_z1_ = register_module("in_z1", Dense(d, g, std));
    in_z2_ = register_module("in_z2", Dense(d, g, std));
  } else {
    in_z_ = register_module("in_z", Dense(d, f, std));
  }
  sgu_norm_ = register_module("sgu_norm", LayerNorm(g, config.layer_norm_eps));
  // Paper Sec. 2.1: W near zero and b = 1 make s(Z) ~ Z1 (a plain gated FFN) at the start.
  const double eps = config.sgu_init_eps / static_cast<double>(n_max);
  spatial_weight_ =
      register_parameter("spatial_weight", torch::empty({n_max, n_max}).uniform_(-eps, eps));
  spatial_bias_ = register_parameter("spatial_bias", torch::ones({n_max}));
  out_ = register_module("out", Dense(g, d, std));
  if (attn_size_ > 0) {
    const int64_t in = config.attn_input == "block" ? d : f;
    attn_qkv_ = register_module("attn_qkv", Dense(in, 3 * attn_size_, std));
    attn_out_ = register_module("attn_out", Dense(attn_size_, g, std));
  }
}

torch::Tensor GmlpBlockImpl::SpatialProjection(torch::Tensor v_NG, const SeqBatch& batch) {
  const int64_t n = batch.n, B = batch.B, g = v_NG.size(1);
  if (batch.keep_N1.defined()) v_NG = v_NG * batch.keep_N1;
  // Row i*B + b of the (N, g) tensor is row i of the (n, B*g) view: one GEMM mixes positions
  // for the whole batch, and addmm adds b[i] to row i.
  return kernels::AddMm(LeadingColumn(spatial_bias_, n), LeadingBlock(spatial_weight_, n),
                        v_NG.view({n, B * g}))
      .view({n * B, g});
}

torch::Tensor GmlpBlockImpl::TinyAttention(const torch::Tensor& qkv_N3A, const SeqBatch& batch) {
  return attn_out_(kernels::Attention(qkv_N3A, batch.n, batch.B, /*heads=*/1, batch.key_bias_B1N,
                                      /*score_bias=*/{}, /*dropout=*/0.0, /*train=*/false));
}

Residual GmlpBlockImpl::forward(const Residual& in, const SeqBatch& batch) {
  const auto [x_ND, h_ND] = norm_->AddAndNormalize(in);
  torch::Tensor s_NG;
  if (split_) {
    // Z1 and Z2 are materialized only when the expanded attention reads them; otherwise
    // LinearGeluNorm goes from U2 x to LayerNorm(Z2), and LinearGelu from U1 x to Z1 * gate, each
    // in one step.
    const bool expanded_attention = attn_size_ > 0 && config_.attn_input != "block";
    const torch::Tensor z2_NG = expanded_attention ? LinearGelu(in_z2_, h_ND) : torch::Tensor();
    const torch::Tensor z1_NG = expanded_attention ? LinearGelu(in_z1_, h_ND) : torch::Tensor();
    torch::Tensor gate_NG = SpatialProjection(
        expanded_attention ? sgu_norm_(z2_NG) : LinearGeluNorm(in_z2_, h_ND, sgu_norm_), batch);
    if (attn_size_ > 0) {
      torch::Tensor qkv_N3A;
      if (!expanded_attention) {
        qkv_N3A = attn_qkv_(h_ND);
      } else {
        // Proj(Z) with Z = [Z1, Z2] never materialized: Z1 W[:, :g]^T + Z2 W[:, g:]^T + bias.
        const int64_t g = z1_NG.size(1);
        const torch::Tensor& w = attn_qkv_->weight;
        qkv_N3A = kernels::Linear(z1_NG, w.narrow(1, 0, g), attn_qkv_->bias) +
                  kernels::Linear(z2_NG, w.narrow(1, g, g));
      }
      gate_NG = gate_NG + TinyAttention(qkv_N3A, batch);
    }
    s_NG = expanded_attention ? z1_NG * gate_NG : LinearGelu(in_z1_, h_ND, gate_NG);
  } else {
    const torch::Tensor z_NF = LinearGelu(in_z_, h_ND);
    torch::Tensor gate_NF = SpatialProjection(sgu_norm_(z_NF), batch);
    if (attn_size_ > 0) {
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
  return {x_ND, kernels::Dropout(out_(s_NG), config_.dropout, is_training())};
}

// The arch table's constructors (arch.cc): the tiny attention's width is the row's, none for
// gMLP and attn_size for aMLP.
std::shared_ptr<EncoderBlockImpl> MakeGmlpBlock(const EncoderConfig& config) {
  return std::make_shared<GmlpBlockImpl>(config, 0);
}

std::shared_ptr<EncoderBlockImpl> MakeAmlpBlock(const EncoderConfig& config) {
  return std::make_shared<GmlpBlockImpl>(config, config.attn_size);
}

}  // namespace gmlp::model
