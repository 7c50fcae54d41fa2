// Weights that leave gmlp and come back: the folders `gmlp export` writes (model.safetensors +
// config.json + tokenizer.model), in gmlp's own layout or as a Hugging Face BERT, and reading
// any of them (or a lone .safetensors file gmlp wrote) back for `--init`. Tensor names and
// layouts: model/README.md, "Weights out and in".
#ifndef GMLP_MODEL_WEIGHTS_FOLDER_H_
#define GMLP_MODEL_WEIGHTS_FOLDER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace gmlp::model {

inline constexpr char kWeightsFile[] = "model.safetensors";
inline constexpr char kWeightsConfigFile[] = "config.json";
inline constexpr char kWeightsTokenizerFile[] = "tokenizer.model";
// Version of the layout of gmlp-format folders (config.json's "gmlp_export").
inline constexpr int kWeightsFormatVersion = 1;

// What the weights are of: an MlmModel ("encoder.*", "mlm_head.*") or a SequenceClassifier
// ("encoder.*", "pooler.*", "out.*").
inline constexpr char kKindMlm[] = "mlm";
inline constexpr char kKindClassifier[] = "sequence_classification";

// Hugging Face BERT (transformers' BertForMaskedLM / BertForSequenceClassification) is gmlp's
// post-LN Transformer with learned positions. InvalidArgument naming what is supported for
// every other config.
absl::Status CheckHfBertCompatible(const EncoderConfig& config);

// gmlp's tensors (as ModuleTensors names them) under BERT's names: q, k, v split out of
// attn_qkv, the tied MLM decoder left to `tie_word_embeddings`.
TensorList ToHfBert(const TensorList& tensors);
// The reverse; InvalidArgument names a BERT tensor gmlp has no place for.
absl::StatusOr<TensorList> FromHfBert(const TensorList& tensors, const std::string& origin);

// BERT's config.json for `config` (kind kKindMlm or kKindClassifier with `labels`; one label
// = regression), and the EncoderConfig a BERT config.json describes (refusing, naming the key,
// what gmlp's Transformer cannot be: another activation, relative positions, ...).
nlohmann::ordered_json HfBertConfig(const EncoderConfig& config, const std::string& kind,
                                    const std::vector<std::string>& labels);
absl::StatusOr<EncoderConfig> EncoderConfigFromHfBert(const nlohmann::json& j,
                                                      const std::string& origin);

// Weights read for `--init`, under gmlp's names.
struct InitWeights {
  EncoderConfig config;
  SafetensorsFile file;        // tensors renamed to gmlp's (BERT's mapped back)
  std::string kind;            // kKindMlm or kKindClassifier
  std::string tokenizer_path;  // the folder's tokenizer.model, "" when it has none
  std::string format;          // "gmlp" or "hf"
};

// `path`: an export folder (either format), or a .safetensors file gmlp wrote (its config is in
// the file's metadata). Errors name the file and the tensor or key.
absl::StatusOr<InitWeights> ReadInitWeights(const std::string& path);

// True when `path` is something ReadInitWeights reads (a folder with model.safetensors, or a
// .safetensors file), as opposed to a pretraining run or checkpoint.
bool IsWeightsPath(const std::string& path);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_WEIGHTS_FOLDER_H_
