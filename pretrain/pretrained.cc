#include "pretrain/pretrained.h"

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"
#include "pretrain/checkpoint_state.h"

namespace gmlp::pretrain {

absl::StatusOr<PretrainedEncoder> LoadPretrainedEncoder(const std::string& path) {
  GMLP_ASSIGN_OR_RETURN(const std::string dir, ResolveCheckpoint(path));
  const std::string config_path = JoinPath(dir, kConfigFile);
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json j,
                        ReadJsonFile(config_path, "the checkpoint is damaged"));
  if (!j.is_object() || !j.contains("model")) {
    return absl::DataLossError(
        absl::StrCat(config_path, ": not a pretraining config (no \"model\" section)"));
  }
  PretrainedEncoder out;
  auto config = model::EncoderConfig::FromJson(j.at("model"));
  if (!config.ok()) {
    return absl::DataLossError(absl::StrCat(config_path, ": ", config.status().message()));
  }
  out.config = *config;
  out.encoder = model::MakeEncoder(out.config);
  GMLP_RETURN_IF_ERROR(model::LoadModule(*out.encoder, JoinPath(dir, kModelFile), "encoder."));
  const std::string tokenizer = JoinPath(dir, kTokenizerFile);
  if (PathExists(tokenizer)) out.tokenizer_path = tokenizer;
  const std::string state_path = JoinPath(dir, kStateFile);
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json state_json,
                        ReadJsonFile(state_path, "the checkpoint is damaged"));
  GMLP_ASSIGN_OR_RETURN(const CheckpointState state, ParseCheckpointState(state_json, state_path));
  out.step = state.step;
  return out;
}

}  // namespace gmlp::pretrain
