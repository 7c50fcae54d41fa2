// MakeEncoder: builds the encoder config.arch names, through the arch table (model/arch.h).
#include "model/encoder.h"

#include <string>

#include "model/arch.h"
#include "model/stacked_encoder.h"

namespace gmlp::model {

std::shared_ptr<EncoderImpl> MakeEncoder(const EncoderConfig& config) {
  const absl::Status status = config.Validate();
  TORCH_CHECK(status.ok(), std::string(status.message()));
  return std::make_shared<StackedEncoderImpl>(config, FindArch(config.arch)->block);
}

}  // namespace gmlp::model
