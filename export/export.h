// `gmlp export`: a pretrained or finetuned model as a folder other tools read. In gmlp's layout
// (model.safetensors under gmlp's tensor names, config.json, tokenizer.model, README.md) for the
// PyTorch twin in python/ and for `--init`, or, for the post-LN Transformer, as a Hugging Face
// BERT folder that transformers' from_pretrained loads (plus tokenizer.json for AutoTokenizer).
#ifndef GMLP_EXPORT_EXPORT_H_
#define GMLP_EXPORT_EXPORT_H_

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "model/config.h"

namespace gmlp::exporter {

struct ExportOptions {
  std::string model;   // a `gmlp pretrain` run or checkpoint, or a `gmlp finetune` output/model
  std::string output;  // the folder to write (replaced atomically when it exists)
  std::string dtype = "fp32";   // fp32 | bf16 (floating-point tensors)
  std::string format = "gmlp";  // gmlp | hf

  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("model", self.model,
          "what to export: a `gmlp pretrain` run or checkpoint directory (the MLM model), or a "
          "`gmlp finetune` output or model directory (the classifier)");
    visit("output", self.output, "the folder to write (replaced atomically if it exists)");
    visit("dtype", self.dtype, "fp32 | bf16: the dtype of the exported weights");
    visit("format", self.format,
          "gmlp (gmlp's tensor names; python/ and --init load it) | hf (a Hugging Face BERT "
          "folder; post-LN Transformer with learned positions only)");
  }
};

// A model to export: its module and what config.json and the model card say about it.
struct ExportSource {
  const torch::nn::Module* module = nullptr;  // an MlmModel or a SequenceClassifier
  std::string kind;                           // model::kKindMlm or model::kKindClassifier
  model::EncoderConfig config;
  std::string tokenizer_path;  // the SentencePiece .model the ids come from
  nlohmann::json task;         // classifier: {"name", "labels", "max_len", "pair"}
  nlohmann::json trained;      // for the card: source, step, held-out loss, data, ...
};

// Writes `source` to `output` (ExportOptions' dtype and format) through a temporary folder
// renamed into place: on an error nothing is left at `output`.
absl::Status WriteExport(const ExportSource& source, const std::string& output,
                         const std::string& dtype, const std::string& format);

// The command: loads options.model, then WriteExport.
absl::Status Export(const ExportOptions& options);

}  // namespace gmlp::exporter

#endif  // GMLP_EXPORT_EXPORT_H_
