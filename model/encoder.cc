// MakeEncoder: the one place that maps config.arch to an encoder class.
#include "model/encoder.h"

#include <string>

#include "model/gmlp.h"
#include "model/mixer.h"
#include "model/transformer.h"

namespace gmlp::model {

std::shared_ptr<EncoderImpl> MakeEncoder(const EncoderConfig& config) {
  const absl::Status status = config.Validate();
  TORCH_CHECK(status.ok(), std::string(status.message()));
  if (config.arch == "transformer") return std::make_shared<TransformerEncoderImpl>(config);
  if (config.arch == "gmlp" || config.arch == "amlp") {
    return std::make_shared<GmlpEncoderImpl>(config);
  }
  if (config.arch == "mixer") return std::make_shared<MixerEncoderImpl>(config);
  TORCH_CHECK(false, "unreachable: arch '", config.arch, "' passed Validate()");
}

}  // namespace gmlp::model
