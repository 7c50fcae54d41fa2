#include "pretrain/pretrained.h"

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "model/serialize.h"
#include "model/weights_folder.h"
#include "pretrain/checkpoint.h"
#include "pretrain/checkpoint_state.h"

namespace gmlp::pretrain {

absl::StatusOr<PretrainedEncoder> LoadPretrainedEncoder(const std::string& path) {
  if (model::IsWeightsPath(path)) {  // `gmlp export`'s folders and files, HF BERT folders
    GMLP_ASSIGN_OR_RETURN(model::InitWeights w, model::ReadInitWeights(path));
    if (w.tokenizer_path.empty()) {
      return absl::NotFoundError(absl::StrCat(
          path,
          " has no tokenizer.model: gmlp needs the SentencePiece model the weights' ids come "
          "from (`gmlp export` writes it into the folder; put it there)"));
    }
    PretrainedEncoder out;
    out.config = w.config;
    out.encoder = model::MakeEncoder(out.config);
    GMLP_RETURN_IF_ERROR(model::LoadModuleFrom(*out.encoder, w.file, "encoder."));
    out.tokenizer_path = w.tokenizer_path;
    return out;
  }
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
