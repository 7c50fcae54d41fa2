// Loading a pretrained encoder from a `gmlp pretrain` run, for finetuning.
#ifndef GMLP_PRETRAIN_PRETRAINED_H_
#define GMLP_PRETRAIN_PRETRAINED_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/encoder.h"

namespace gmlp::pretrain {

struct PretrainedEncoder {
  model::EncoderConfig config;
  std::shared_ptr<model::EncoderImpl> encoder;  // weights loaded
  std::string tokenizer_path;                   // the checkpoint's copy of the .model file
  int64_t step = 0;
};

// `path` is a checkpoint directory, a run's output directory (then its newest complete
// checkpoint is used), or exported weights (model::ReadInitWeights: a `gmlp export` folder in
// either format, a .safetensors file gmlp wrote, an HF BERT folder with gmlp's tokenizer.model).
absl::StatusOr<PretrainedEncoder> LoadPretrainedEncoder(const std::string& path);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_PRETRAINED_H_
