// TrainConfig::FromJson and Validate: the training keys of `gmlp pretrain --config` and of every
// checkpoint's config.json.
#include <nlohmann/json.hpp>

#include "pretrain/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  auto config = gmlp::pretrain::TrainConfig::FromJson(j);
  if (config.ok()) {
    (void)config->Validate();
    (void)config->ToJson().dump();
  }
  return 0;
}
