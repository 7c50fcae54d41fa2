// PretrainConfig: the fully resolved configuration of a `gmlp pretrain` run, i.e. the encoder's
// architecture (a preset plus overrides, a JSON config file, or a checkpoint's) and the
// training knobs. Printed at start, saved as config.json in the run directory and in every
// checkpoint. JSON layout: the TrainConfig keys at top level, plus "preset" and "model" (the
// EncoderConfig).
#ifndef GMLP_PRETRAIN_CONFIG_H_
#define GMLP_PRETRAIN_CONFIG_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/config.h"
#include "pretrain/train_config.h"

namespace gmlp::pretrain {

struct PretrainConfig {
  std::string preset = "gmlp-tiny";  // model::Preset name the encoder started from
  model::EncoderConfig model;
  TrainConfig train;
  // Which training keys a --config file set (ResolveConfig), for errors found later
  // (AccumulationSteps); not a setting.
  KeyOrigins origins;

  absl::Status Validate() const;
  nlohmann::json ToJson() const;
  // Reads a config.json as ToJson writes it; a missing "model" section means the preset's.
  // Errors are "<origin>: ..." naming the key.
  static absl::StatusOr<PretrainConfig> FromJson(const nlohmann::json& j,
                                                 absl::string_view origin = "pretrain config");
};

// Applies "key=value,key=value" (EncoderConfig JSON keys) to `base`; each value is parsed as
// the type of the field it sets. Errors name the offending key.
absl::StatusOr<model::EncoderConfig> ApplyModelOverrides(const model::EncoderConfig& base,
                                                         absl::string_view overrides);

// Where a run's configuration comes from, lowest precedence first.
struct ConfigSources {
  std::string config_file;      // optional JSON file (e.g. an earlier run's config.json)
  std::string preset;           // optional; overrides the file's preset and model section
  std::string model_overrides;  // optional "key=value,..." applied to the encoder config
  nlohmann::json train_flags = nlohmann::json::object();  // training keys set on the command line
};

// Defaults < config file < preset flag < model overrides / flags. vocab_size and max_seq_len
// are set later from the shard manifest. The result is validated: an error names the file and
// key (`FILE: "mask_rate" -0.15 must be in (0, 1)`), or the flag, that set the bad value.
absl::StatusOr<PretrainConfig> ResolveConfig(const ConfigSources& sources);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_CONFIG_H_
