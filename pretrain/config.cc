#include "pretrain/config.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"

namespace gmlp::pretrain {

absl::Status PretrainConfig::Validate() const {
  absl::Status st = model.Validate();
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat("model config: ", st.message()));
  return train.Validate();
}

nlohmann::json PretrainConfig::ToJson() const {
  nlohmann::json j = train.ToJson();
  j["preset"] = preset;
  j["model"] = model.ToJson();
  return j;
}

absl::StatusOr<PretrainConfig> PretrainConfig::FromJson(const nlohmann::json& j,
                                                        absl::string_view origin) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": expected a JSON object"));
  }
  PretrainConfig c;
  if (j.contains("preset")) {
    if (!j["preset"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": \"preset\" must be a string"));
    }
    c.preset = j["preset"].get<std::string>();
  }
  // The preset is checked even beside a "model" section: config.json records it for people.
  absl::StatusOr<model::EncoderConfig> preset = model::Preset(c.preset);
  if (!preset.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": \"preset\": ", preset.status().message()));
  }
  if (j.contains("model")) {
    auto parsed = model::EncoderConfig::FromJson(j["model"]);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": \"model\": ", parsed.status().message()));
    }
    c.model = *std::move(parsed);
  } else {
    c.model = *std::move(preset);
  }
  GMLP_ASSIGN_OR_RETURN(c.train, TrainConfig::FromJson(j, TrainConfig(), origin));
  return c;
}

absl::StatusOr<model::EncoderConfig> ApplyModelOverrides(const model::EncoderConfig& base,
                                                         absl::string_view overrides) {
  nlohmann::json j = base.ToJson();
  for (absl::string_view item : absl::StrSplit(overrides, ',', absl::SkipWhitespace())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model_overrides: \"", item,
                       "\" is not key=value (e.g. --model_overrides=d_model=256,n_layers=2)"));
    }
    const std::string key(absl::StripAsciiWhitespace(item.substr(0, eq)));
    const std::string value(absl::StripAsciiWhitespace(item.substr(eq + 1)));
    if (!j.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model_overrides: unknown encoder config key \"", key,
                       "\"; valid keys: ", base.ToJson().dump()));
    }
    nlohmann::json& field = j[key];
    bool ok = true;
    if (field.is_boolean()) {
      ok = value == "true" || value == "false" || value == "1" || value == "0";
      field = value == "true" || value == "1";
    } else if (field.is_number_integer()) {
      int64_t v = 0;
      ok = absl::SimpleAtoi(value, &v);
      field = v;
    } else if (field.is_number()) {
      double v = 0;
      ok = absl::SimpleAtod(value, &v);
      field = v;
    } else {
      field = value;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("--model_overrides: \"", key, "=", value,
                                                     "\": expected a ", field.type_name()));
    }
  }
  return model::EncoderConfig::FromJson(j);
}

absl::StatusOr<PretrainConfig> ResolveConfig(const ConfigSources& sources) {
  PretrainConfig c;
  KeyOrigins origins;  // the file's training keys, less those the flags set again
  if (!sources.config_file.empty()) {
    GMLP_ASSIGN_OR_RETURN(const nlohmann::json j,
                          ReadJsonFile(sources.config_file,
                                       "check the file (a run's config.json is a valid example)"));
    GMLP_ASSIGN_OR_RETURN(c, PretrainConfig::FromJson(j, sources.config_file));
    origins.SetAll(j, sources.config_file);
  } else {
    GMLP_ASSIGN_OR_RETURN(c.model, model::Preset(c.preset));
  }
  if (!sources.preset.empty()) {
    auto preset = model::Preset(sources.preset);
    if (!preset.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--preset=", sources.preset, ": ", preset.status().message()));
    }
    c.preset = sources.preset;
    c.model = *preset;
  }
  if (!sources.model_overrides.empty()) {
    auto model = ApplyModelOverrides(c.model, sources.model_overrides);
    if (!model.ok() && !absl::StartsWith(model.status().message(), "--model_overrides")) {
      // A value the encoder's own checks refused: name the flag that gave it.
      return absl::Status(model.status().code(),
                          absl::StrCat("--model_overrides=", sources.model_overrides, ": ",
                                       model.status().message()));
    }
    GMLP_RETURN_IF_ERROR(model.status());
    c.model = *std::move(model);
  }
  GMLP_ASSIGN_OR_RETURN(c.train, TrainConfig::FromJson(sources.train_flags, c.train));
  for (const auto& item : sources.train_flags.items()) origins.SetByFlag(item.key());
  GMLP_RETURN_IF_ERROR(c.train.Validate(origins));
  c.origins = std::move(origins);
  return c;
}

}  // namespace gmlp::pretrain
