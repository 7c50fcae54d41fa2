// Closed-form parameter counts and training FLOPs per token (see flops.h). Notation: d d_model,
// L n_layers, V vocab_size, T type_vocab_size, n_max max_seq_len, n the sequence length of the
// FLOP count. The per-block formulas are in the arch table's rows (arch.cc); tests compare the
// counts with the modules for every arch and SGU variant.
#include "model/flops.h"

#include "model/arch.h"

namespace gmlp::model {

ParamCount CountParameters(const EncoderConfig& c) {
  const ArchSpec* arch = FindArch(c.arch);
  const int64_t d = c.d_model;
  ParamCount count;
  if (arch == nullptr) return count;
  // Token and segment tables, learned positions when the arch has them, embedding LayerNorm.
  count.embedding = c.vocab_size * d + c.type_vocab_size * d + LayerNormParams(d);
  if (arch->block.position_embeddings(c)) count.embedding += c.max_seq_len * d;
  const int64_t final_norm = arch->block.final_norm(c) ? LayerNormParams(d) : 0;
  count.total = count.embedding + c.n_layers * arch->block.params(c) + final_norm;
  return count;
}

double TrainingFlopsPerToken(const EncoderConfig& c, int64_t seq_len, double masked_fraction) {
  const ArchSpec* arch = FindArch(c.arch);
  const double d = c.d_model;
  // Forward FLOPs per token of one layer, counting a multiply-add as 2 and only matmuls
  // (elementwise ops, softmax and LayerNorm are O(d) per token and left out, as usual).
  const double layer = arch != nullptr ? arch->block.flops(c, static_cast<double>(seq_len)) : 0.0;
  // MLM head on the masked rows: dense 2 d^2, tied decoder 2 d V. Embedding lookups are free.
  const double head = masked_fraction * (2.0 * d * d + 2.0 * d * c.vocab_size);
  // Backward costs twice the forward (gradients w.r.t. inputs and weights).
  return 3.0 * (c.n_layers * layer + head);
}

}  // namespace gmlp::model
