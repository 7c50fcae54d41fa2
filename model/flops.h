// Closed-form parameter counts and training FLOPs per token for every encoder, used for MFU in
// the trainer and for the accuracy-vs-parameters study. The formulas are written next to the
// code in flops.cc and checked against the modules in tests.
#ifndef GMLP_MODEL_FLOPS_H_
#define GMLP_MODEL_FLOPS_H_

#include <cstdint>

#include "model/config.h"

namespace gmlp::model {

struct ParamCount {
  int64_t total = 0;      // encoder only (embeddings included), no task head
  int64_t embedding = 0;  // token + segment (+ position) embeddings and their LayerNorm
  int64_t non_embedding() const { return total - embedding; }
};

ParamCount CountParameters(const EncoderConfig& config);

// Forward + backward FLOPs per token (3x forward matmul FLOPs, as in the usual 6N estimate but
// counting the sequence mixing exactly) of the encoder plus the MLM head evaluated on a
// `masked_fraction` of the tokens, at sequence length `seq_len`.
double TrainingFlopsPerToken(const EncoderConfig& config, int64_t seq_len,
                             double masked_fraction = 0.15);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_FLOPS_H_
