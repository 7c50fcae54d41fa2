// PretrainConfig::FromJson and Validate: a whole `gmlp pretrain --config` file or checkpoint
// config.json, its "preset" and "model" sections (EncoderConfig and the arch table's checks)
// included. A valid config must survive its own round trip unchanged. Inputs that are not JSON go
// to ApplyModelOverrides, the parser of `--model="key=value,..."`.
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "model/config.h"
#include "pretrain/config.h"

namespace {

void CheckRoundTrip(const gmlp::pretrain::PretrainConfig& config) {
  const nlohmann::json written = config.ToJson();
  auto reread = gmlp::pretrain::PretrainConfig::FromJson(written, "round trip");
  if (!reread.ok() || !reread->Validate().ok() || reread->ToJson() != written) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) {
    static const gmlp::model::EncoderConfig base = *gmlp::model::Preset("gmlp-tiny");
    auto overridden = gmlp::pretrain::ApplyModelOverrides(
        base, std::string(reinterpret_cast<const char*>(data), size));
    if (overridden.ok()) (void)overridden->Validate();
    return 0;
  }
  auto config = gmlp::pretrain::PretrainConfig::FromJson(j, "fuzz.json");
  if (config.ok() && config->Validate().ok()) CheckRoundTrip(*config);
  return 0;
}
