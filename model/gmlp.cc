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

int64_t GateWidth(const EncoderConfig& config) {
  return config.sgu == "split" ? config.d_ffn / 2 : config.d_ffn;
}

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

namespace {

// The tiny attention's width in the gMLP row (none) and in the aMLP row (attn_size); everything
// below reads it, never the arch's name.
template <bool kAmlp>
int64_t AttnSize(const EncoderConfig& c) {
  return kAmlp ? c.attn_size : 0;
}

template <bool kAmlp>
std::shared_ptr<EncoderBlockImpl> MakeGmlpBlock(const EncoderConfig& c) {
  return std::make_shared<GmlpBlockImpl>(c, AttnSize<kAmlp>(c));
}

template <bool kAmlp>
absl::Status Validate(const EncoderConfig& c) {
  if (c.sgu == "split" && c.d_ffn % 2 != 0) {
    return InvalidConfig(absl::StrCat("sgu=split halves Z, so d_ffn must be even, got ", c.d_ffn));
  }
  if (!(c.sgu_init_eps >= 0.0)) {
    return InvalidConfig(absl::StrCat("sgu_init_eps must be >= 0, got ", c.sgu_init_eps));
  }
  if (kAmlp) GMLP_RETURN_IF_ERROR(CheckPositive("attn_size", c.attn_size));
  return absl::OkStatus();
}

int64_t AttnInputWidth(const EncoderConfig& c) {
  return c.attn_input == "block" ? c.d_model : c.d_ffn;
}

template <bool kAmlp>
int64_t BlockParams(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn, g = GateWidth(c), n_max = c.max_seq_len;
  const int64_t a = AttnSize<kAmlp>(c);
  // norm; U (as in_z1 + in_z2 for split: 2 (d g + g) = d f + f, the same count); sgu_norm;
  // W (n_max^2) and b (n_max); V (g -> d); aMLP: attn_qkv (in -> 3a), attn_out (a -> g).
  int64_t params = LayerNormParams(d) + LinearParams(d, f) + LayerNormParams(g) + n_max * n_max +
                   n_max + LinearParams(g, d);
  if (a > 0) params += LinearParams(AttnInputWidth(c), 3 * a) + LinearParams(a, g);
  return params;
}

template <bool kAmlp>
double BlockFlops(const EncoderConfig& c, double n) {
  const double d = c.d_model, f = c.d_ffn, g = static_cast<double>(GateWidth(c));
  const double a = static_cast<double>(AttnSize<kAmlp>(c));
  // U: 2 d f. Spatial projection W (n x n) on g channels: 2 n g per token. V: 2 g d.
  double flops = 2.0 * d * f + 2.0 * n * g + 2.0 * g * d;
  if (a > 0) {
    const double in = static_cast<double>(AttnInputWidth(c));
    // q,k,v: 2 in 3a. Scores and probs @ v: 2 n a each. Output projection: 2 a g.
    flops += 6.0 * in * a + 4.0 * n * a + 2.0 * a * g;
  }
  return flops;
}

// No position embeddings (the spatial projection is position-aware); a final LayerNorm.
template <bool kAmlp>
BlockSpec Spec() {
  return {
      &MakeGmlpBlock<kAmlp>, &NoPositionEmbeddings, &AlwaysFinalNorm,
      &Validate<kAmlp>,      &BlockParams<kAmlp>,   &BlockFlops<kAmlp>,
  };
}

}  // namespace

BlockSpec GmlpBlockSpec() { return Spec<false>(); }
BlockSpec AmlpBlockSpec() { return Spec<true>(); }

}  // namespace gmlp::model
