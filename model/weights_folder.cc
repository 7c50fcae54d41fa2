// Export folders in gmlp's layout and as Hugging Face BERT, and reading them back (see
// weights_folder.h).
#include "model/weights_folder.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"

namespace gmlp::model {
namespace {

// gmlp module path -> BERT module path, for the parts outside the blocks ...
constexpr std::pair<const char*, const char*> kHfOuter[] = {
    {"encoder.embeddings.token", "bert.embeddings.word_embeddings"},
    {"encoder.embeddings.segment", "bert.embeddings.token_type_embeddings"},
    {"encoder.embeddings.position", "bert.embeddings.position_embeddings"},
    {"encoder.embeddings.norm", "bert.embeddings.LayerNorm"},
    {"mlm_head.dense", "cls.predictions.transform.dense"},
    {"mlm_head.norm", "cls.predictions.transform.LayerNorm"},
    {"mlm_head", "cls.predictions"},  // the output bias
    {"pooler", "bert.pooler.dense"},
    {"out", "classifier"},
};
// ... and inside block i ("encoder.blocks.<i>." <-> "bert.encoder.layer.<i>.").
constexpr std::pair<const char*, const char*> kHfBlock[] = {
    {"attn_out", "attention.output.dense"}, {"attn_norm", "attention.output.LayerNorm"},
    {"ffn_in", "intermediate.dense"},       {"ffn_out", "output.dense"},
    {"ffn_norm", "output.LayerNorm"},
};
constexpr const char* kQkv[] = {"query", "key", "value"};
constexpr char kGmlpBlocks[] = "encoder.blocks.";
constexpr char kHfLayers[] = "bert.encoder.layer.";

// "a.b.weight" -> {"a.b", "weight"}.
std::pair<std::string, std::string> SplitLeaf(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return {"", name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

// For "<prefix><i>.<rest>": i and rest; false otherwise.
bool SplitIndexed(const std::string& name, absl::string_view prefix, std::string* index,
                  std::string* rest) {
  if (!absl::StartsWith(name, prefix)) return false;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return false;
  *index = name.substr(prefix.size(), dot - prefix.size());
  *rest = name.substr(dot + 1);
  int64_t unused;
  return absl::SimpleAtoi(*index, &unused);
}

absl::StatusOr<std::string> StringField(const nlohmann::json& j, const char* key,
                                        const std::string& origin) {
  if (!j.contains(key) || !j[key].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": \"", key, "\" must be a string"));
  }
  return j[key].get<std::string>();
}

}  // namespace

absl::Status CheckHfBertCompatible(const EncoderConfig& config) {
  if (config.arch != "transformer" || config.pre_ln || config.position != "learned") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=hf exports BERT, which is gmlp's post-LN Transformer with learned positions "
        "(arch transformer, pre_ln false, position learned); this model is arch ",
        config.arch,
        config.arch == "transformer" ? absl::StrCat(", pre_ln ", config.pre_ln ? "true" : "false",
                                                    ", position ", config.position)
                                     : "",
        ": export it with --format=gmlp (the PyTorch twin in python/ loads it)"));
  }
  return absl::OkStatus();
}

TensorList ToHfBert(const TensorList& tensors) {
  TensorList out;
  for (const auto& [name, t] : tensors) {
    const auto [module, leaf] = SplitLeaf(name);
    std::string index, rest;
    if (SplitIndexed(name, kGmlpBlocks, &index, &rest)) {
      const std::string layer = absl::StrCat(kHfLayers, index, ".");
      const auto [block_module, block_leaf] = SplitLeaf(rest);
      if (block_module == "attn_qkv") {  // rows [q; k; v], each d wide
        const std::vector<torch::Tensor> qkv = t.chunk(3, 0);
        for (int i = 0; i < 3; ++i) {
          out.emplace_back(absl::StrCat(layer, "attention.self.", kQkv[i], ".", block_leaf),
                           qkv[i].contiguous());
        }
        continue;
      }
      for (const auto& [ours, theirs] : kHfBlock) {
        if (block_module == ours) out.emplace_back(absl::StrCat(layer, theirs, ".", block_leaf), t);
      }
      continue;
    }
    for (const auto& [ours, theirs] : kHfOuter) {
      if (module == ours) {
        out.emplace_back(absl::StrCat(theirs, ".", leaf), t);
        break;
      }
    }
  }
  return out;
}

namespace {

// Puts BERT tensor `name` (with its "bert." prefix) where gmlp's Transformer keeps it: into
// `out`, or for a layer's query, key or value into that layer's `qkv` parts (concatenated
// later). False when it has no place.
bool MapHfTensor(const std::string& name, const torch::Tensor& t, TensorList* out,
                 std::map<std::string, std::vector<torch::Tensor>>* qkv) {
  const auto [module, leaf] = SplitLeaf(name);
  std::string index, rest;
  if (SplitIndexed(name, kHfLayers, &index, &rest)) {
    const std::string block = absl::StrCat(kGmlpBlocks, index, ".");
    const auto [layer_module, layer_leaf] = SplitLeaf(rest);
    for (int i = 0; i < 3; ++i) {
      if (layer_module == absl::StrCat("attention.self.", kQkv[i])) {
        auto& parts = (*qkv)[absl::StrCat(block, "attn_qkv.", layer_leaf)];
        parts.resize(3);
        parts[i] = t;
        return true;
      }
    }
    for (const auto& [ours, theirs] : kHfBlock) {
      if (layer_module == theirs) {
        out->emplace_back(absl::StrCat(block, ours, ".", layer_leaf), t);
        return true;
      }
    }
    return false;
  }
  for (const auto& [ours, theirs] : kHfOuter) {
    if (module == theirs) {
      out->emplace_back(absl::StrCat(ours, ".", leaf), t);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<TensorList> FromHfBert(const TensorList& tensors, const std::string& origin) {
  // Checkpoints of a bare BertModel have no "bert." prefix.
  bool prefixed = false;
  for (const auto& item : tensors) prefixed = prefixed || absl::StartsWith(item.first, "bert.");
  TensorList out;
  std::map<std::string, std::vector<torch::Tensor>> qkv;  // block -> [q, k, v] weight, bias
  for (const auto& [raw_name, t] : tensors) {
    const std::string name =
        prefixed || absl::StartsWith(raw_name, "cls.") || absl::StartsWith(raw_name, "classifier.")
            ? raw_name
            : absl::StrCat("bert.", raw_name);
    // Not weights of their own: position ids (older transformers saved them), the decoder tied
    // to the word embeddings and its bias (= cls.predictions.bias), BERT's next-sentence head.
    if (name == "bert.embeddings.position_ids" || absl::StartsWith(name, "cls.seq_relationship.") ||
        absl::StartsWith(name, "cls.predictions.decoder.")) {
      continue;
    }
    if (!MapHfTensor(name, t, &out, &qkv)) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": tensor '", raw_name,
                       "' has no place in gmlp's Transformer (a BERT with other parts? gmlp maps "
                       "BertForMaskedLM, BertForSequenceClassification and BertModel)"));
    }
  }
  for (auto& [name, parts] : qkv) {
    for (int i = 0; i < 3; ++i) {
      if (!parts[i].defined()) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": '", name, "' has no ", kQkv[i],
                                                       " part (attention.self.", kQkv[i], ")"));
      }
    }
    out.emplace_back(name, torch::cat(parts, 0));
  }
  return out;
}

nlohmann::ordered_json HfBertConfig(const EncoderConfig& c, const std::string& kind,
                                    const std::vector<std::string>& labels) {
  const bool mlm = kind == kKindMlm;
  nlohmann::ordered_json j = {
      {"architectures", {mlm ? "BertForMaskedLM" : "BertForSequenceClassification"}},
      {"model_type", "bert"},
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.d_model},
      {"num_hidden_layers", c.n_layers},
      {"num_attention_heads", c.n_heads},
      {"intermediate_size", c.d_ffn},
      {"hidden_act", "gelu"},  // erf GELU, as gmlp's
      {"hidden_dropout_prob", c.dropout},
      {"attention_probs_dropout_prob", c.dropout},
      {"max_position_embeddings", c.max_seq_len},
      {"type_vocab_size", c.type_vocab_size},
      {"initializer_range", c.init_std},
      {"layer_norm_eps", c.layer_norm_eps},
      {"position_embedding_type", "absolute"},
      {"pad_token_id", 0},
      {"tie_word_embeddings", true},
  };
  if (!mlm) {
    nlohmann::ordered_json id2label = nlohmann::ordered_json::object(),
                           label2id = nlohmann::ordered_json::object();
    for (size_t i = 0; i < labels.size(); ++i) {
      id2label[std::to_string(i)] = labels[i];
      label2id[labels[i]] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
    j["problem_type"] = labels.size() == 1 ? "regression" : "single_label_classification";
  }
  return j;
}

absl::StatusOr<EncoderConfig> EncoderConfigFromHfBert(const nlohmann::json& j,
                                                      const std::string& origin) {
  GMLP_ASSIGN_OR_RETURN(const std::string model_type, StringField(j, "model_type", origin));
  if (model_type != "bert") {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": model_type is \"", model_type,
                                                   "\"; gmlp reads BERT (\"bert\") folders only"));
  }
  // Each BERT key that gmlp's post-LN Transformer must agree with.
  const std::pair<const char*, const char*> fixed[] = {{"hidden_act", "gelu"},
                                                       {"position_embedding_type", "absolute"}};
  for (const auto& [key, value] : fixed) {
    if (j.contains(key) && j[key] != value) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": \"", key, "\" is ", j[key].dump(),
                                                     "; gmlp's Transformer has \"", value, "\""));
    }
  }
  if (j.value("is_decoder", false) || j.value("add_cross_attention", false)) {
    return absl::InvalidArgumentError(absl::StrCat(
        origin, ": a decoder BERT (is_decoder/add_cross_attention) is not an encoder"));
  }
  nlohmann::json ours = {{"arch", "transformer"}, {"pre_ln", false}, {"position", "learned"}};
  const std::pair<const char*, const char*> keys[] = {
      {"vocab_size", "vocab_size"},           {"hidden_size", "d_model"},
      {"num_hidden_layers", "n_layers"},      {"num_attention_heads", "n_heads"},
      {"intermediate_size", "d_ffn"},         {"max_position_embeddings", "max_seq_len"},
      {"type_vocab_size", "type_vocab_size"}, {"hidden_dropout_prob", "dropout"},
      {"layer_norm_eps", "layer_norm_eps"},   {"initializer_range", "init_std"},
  };
  for (const auto& [theirs, gmlp_key] : keys) {
    if (j.contains(theirs)) ours[gmlp_key] = j[theirs];
  }
  auto config = EncoderConfig::FromJson(ours);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", config.status().message()));
  }
  return *config;
}

bool IsWeightsPath(const std::string& path) {
  if (absl::EndsWith(path, ".safetensors")) return true;
  return IsDirectory(path) && PathExists(JoinPath(path, kWeightsFile));
}

namespace {

// A lone .safetensors file's description: gmlp keeps its config in the file's metadata.
absl::StatusOr<nlohmann::json> DescriptionFromMetadata(const SafetensorsFile& file,
                                                       const std::string& weights_path) {
  const auto model = file.metadata.find("model");
  const auto kind = file.metadata.find("kind");
  if (model == file.metadata.end() || kind == file.metadata.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(weights_path,
                     ": no gmlp config in the file's metadata (\"model\", \"kind\"); pass the "
                     "folder `gmlp export` wrote, which has config.json"));
  }
  return nlohmann::json{{"gmlp_export", kWeightsFormatVersion},
                        {"kind", kind->second},
                        {"model", nlohmann::json::parse(model->second, nullptr, false)}};
}

// A gmlp export's description: its version, kind and encoder config.
absl::Status ReadGmlpDescription(const nlohmann::json& described, const std::string& described_in,
                                 InitWeights* out) {
  InitWeights& w = *out;
  w.format = "gmlp";
  if (described["gmlp_export"] != kWeightsFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(described_in, ": gmlp_export is ", described["gmlp_export"].dump(),
                     "; this gmlp reads version ", kWeightsFormatVersion));
  }
  GMLP_ASSIGN_OR_RETURN(w.kind, StringField(described, "kind", described_in));
  if (!described.contains("model")) {
    return absl::InvalidArgumentError(absl::StrCat(described_in, ": no \"model\" section"));
  }
  auto config = EncoderConfig::FromJson(described["model"]);
  if (!config.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(described_in, ": ", config.status().message()));
  }
  w.config = *config;
  return absl::OkStatus();
}

// A Hugging Face BERT folder: its config.json and its tensors under gmlp's names.
absl::Status ReadHfDescription(const nlohmann::json& described, const std::string& described_in,
                               const std::string& weights_path, InitWeights* out) {
  InitWeights& w = *out;
  w.format = "hf";
  GMLP_ASSIGN_OR_RETURN(w.config, EncoderConfigFromHfBert(described, described_in));
  GMLP_ASSIGN_OR_RETURN(w.file.tensors, FromHfBert(w.file.tensors, weights_path));
  bool classifier = false;
  for (const auto& item : w.file.tensors) classifier = classifier || item.first == "out.weight";
  w.kind = classifier ? kKindClassifier : kKindMlm;
  return absl::OkStatus();
}

// Every tensor must belong to a part of the model `w.kind` names.
absl::Status CheckTensorsFitKind(const InitWeights& w, const std::string& weights_path) {
  const std::vector<std::string> parts =
      w.kind == kKindMlm ? std::vector<std::string>{"encoder.", "mlm_head."}
                         : std::vector<std::string>{"encoder.", "pooler.", "out."};
  for (const auto& item : w.file.tensors) {
    bool known = false;
    for (const std::string& p : parts) known = known || absl::StartsWith(item.first, p);
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(weights_path, ": unexpected tensor '",
                                                     item.first, "' in a ", w.kind, " model"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<InitWeights> ReadInitWeights(const std::string& path) {
  InitWeights w;
  nlohmann::json described;  // {"kind", "model"} from config.json or the file's metadata
  std::string weights_path = path;
  std::string described_in;
  if (IsDirectory(path)) {
    weights_path = JoinPath(path, kWeightsFile);
    described_in = JoinPath(path, kWeightsConfigFile);
    GMLP_ASSIGN_OR_RETURN(described, ReadJsonFile(described_in, "write it with `gmlp export`"));
    const std::string tokenizer = JoinPath(path, kWeightsTokenizerFile);
    if (PathExists(tokenizer)) w.tokenizer_path = tokenizer;
  }
  GMLP_ASSIGN_OR_RETURN(w.file, ReadSafetensors(weights_path));
  if (described.is_null()) {
    described_in = absl::StrCat(weights_path, " (metadata)");
    GMLP_ASSIGN_OR_RETURN(described, DescriptionFromMetadata(w.file, weights_path));
  }
  if (!described.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(described_in, ": not a JSON object"));
  }
  if (described.contains("gmlp_export")) {
    GMLP_RETURN_IF_ERROR(ReadGmlpDescription(described, described_in, &w));
  } else if (described.contains("model_type")) {
    GMLP_RETURN_IF_ERROR(ReadHfDescription(described, described_in, weights_path, &w));
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(described_in,
                     ": neither a gmlp export (no \"gmlp_export\") nor a BERT config (no "
                     "\"model_type\")"));
  }
  if (w.kind != kKindMlm && w.kind != kKindClassifier) {
    return absl::InvalidArgumentError(absl::StrCat(described_in, ": kind \"", w.kind, "\" is not ",
                                                   kKindMlm, " or ", kKindClassifier));
  }
  GMLP_RETURN_IF_ERROR(CheckTensorsFitKind(w, weights_path));
  return w;
}

}  // namespace gmlp::model
