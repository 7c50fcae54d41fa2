// Closed-form parameter counts and training FLOPs per token (see flops.h). Notation: d d_model,
// f d_ffn, L n_layers, V vocab_size, T type_vocab_size, n_max max_seq_len, n the sequence
// length of the FLOP count, g the gMLP gate width (f/2 split, f otherwise), a attn_size,
// t token_mlp_dim, h n_heads. Each formula mirrors the module's registered parameters
// exactly (tests compare them for every arch and SGU variant).
#include "model/flops.h"

#include "model/gmlp.h"

namespace gmlp::model {
namespace {

int64_t LayerNormParams(int64_t dim) { return 2 * dim; }
int64_t LinearParams(int64_t in, int64_t out) { return in * out + out; }

int64_t AttnInputWidth(const EncoderConfig& c) {
  return c.attn_input == "block" ? c.d_model : c.d_ffn;
}

}  // namespace

ParamCount CountParameters(const EncoderConfig& c) {
  const int64_t d = c.d_model, f = c.d_ffn, n_max = c.max_seq_len;
  ParamCount count;
  // Token and segment tables, positions for the Transformer only, embedding LayerNorm.
  count.embedding = c.vocab_size * d + c.type_vocab_size * d + LayerNormParams(d);
  if (c.arch == "transformer") count.embedding += n_max * d;

  int64_t per_layer = 0, final_norm = 0;
  if (c.arch == "transformer") {
    // attn_qkv (d -> 3d), attn_out, ffn_in, ffn_out, two LayerNorms.
    per_layer = LinearParams(d, 3 * d) + LinearParams(d, d) + LinearParams(d, f) +
                LinearParams(f, d) + 2 * LayerNormParams(d);
    if (c.pre_ln) final_norm = LayerNormParams(d);
  } else if (c.arch == "gmlp" || c.arch == "amlp") {
    const int64_t g = GateWidth(c);
    // norm; U (as in_z1 + in_z2 for split: 2 (d g + g) = d f + f, the same count); sgu_norm;
    // W (n_max^2) and b (n_max); V (g -> d).
    per_layer = LayerNormParams(d) + LinearParams(d, f) + LayerNormParams(g) + n_max * n_max +
                n_max + LinearParams(g, d);
    if (c.arch == "amlp") {
      per_layer += LinearParams(AttnInputWidth(c), 3 * c.attn_size) + LinearParams(c.attn_size, g);
    }
    final_norm = LayerNormParams(d);
  } else if (c.arch == "mixer") {
    const int64_t t = c.token_mlp_dim;
    // token MLP over positions (t x n_max + t, n_max x t + n_max), channel MLP, two LayerNorms.
    per_layer = (t * n_max + t) + (n_max * t + n_max) + LinearParams(d, f) + LinearParams(f, d) +
                2 * LayerNormParams(d);
    final_norm = LayerNormParams(d);
  }
  count.total = count.embedding + c.n_layers * per_layer + final_norm;
  return count;
}

double TrainingFlopsPerToken(const EncoderConfig& c, int64_t seq_len, double masked_fraction) {
  const double d = c.d_model, f = c.d_ffn, n = static_cast<double>(seq_len);
  // Forward FLOPs per token of one layer, counting a multiply-add as 2 and only matmuls
  // (elementwise ops, softmax and LayerNorm are O(d) per token and left out, as usual).
  double layer = 0.0;
  if (c.arch == "transformer") {
    // Projections q,k,v,o: 2 * 4 d^2. Scores q k^T and probs @ v: each 2 n d per token.
    // Feed-forward: 2 * 2 d f.
    layer = 8.0 * d * d + 4.0 * n * d + 4.0 * d * f;
  } else if (c.arch == "gmlp" || c.arch == "amlp") {
    const double g = static_cast<double>(GateWidth(c));
    // U: 2 d f. Spatial projection W (n x n) on g channels: 2 n g per token. V: 2 g d.
    layer = 2.0 * d * f + 2.0 * n * g + 2.0 * g * d;
    if (c.arch == "amlp") {
      const double a = c.attn_size, in = static_cast<double>(AttnInputWidth(c));
      // q,k,v: 2 in 3a. Scores and probs @ v: 2 n a each. Output projection: 2 a g.
      layer += 6.0 * in * a + 4.0 * n * a + 2.0 * a * g;
    }
  } else if (c.arch == "mixer") {
    const double t = c.token_mlp_dim;
    // Token MLP: (t x n) then (n x t) GEMMs on every channel: 2 t d + 2 t d per token.
    // Channel MLP: 2 * 2 d f.
    layer = 4.0 * t * d + 4.0 * d * f;
  }
  // MLM head on the masked rows: dense 2 d^2, tied decoder 2 d V. Embedding lookups are free.
  const double head = masked_fraction * (2.0 * d * d + 2.0 * d * c.vocab_size);
  // Backward costs twice the forward (gradients w.r.t. inputs and weights).
  return 3.0 * (c.n_layers * layer + head);
}

}  // namespace gmlp::model
