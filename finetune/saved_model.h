// A finetuned model on disk, as `gmlp finetune` saves it and `gmlp predict` loads it: a
// directory holding model.pt (the SequenceClassifier's tensors), config.json (the encoder's
// EncoderConfig), task.json (task spec with the label list, max_len) and tokenizer.model.
#ifndef GMLP_FINETUNE_SAVED_MODEL_H_
#define GMLP_FINETUNE_SAVED_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "finetune/task.h"
#include "model/config.h"
#include "model/heads.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::finetune {

// Writes the model directory atomically: assembled under a temporary name, then renamed over
// `dir` (a previous model there is replaced only once the new one is complete).
absl::Status SaveFinetunedModel(const std::string& dir, const model::SequenceClassifierImpl& clf,
                                const model::EncoderConfig& config, const TaskSpec& task,
                                int64_t max_len, const std::string& tokenizer_path);

struct FinetunedModel {
  model::EncoderConfig config;
  TaskSpec task;
  int64_t max_len = 128;
  model::SequenceClassifier classifier{nullptr};  // eval mode
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Loads a directory SaveFinetunedModel wrote (or a `gmlp finetune --output` directory, whose
// model/ subdirectory is used).
absl::StatusOr<FinetunedModel> LoadFinetunedModel(const std::string& dir);

// Labels (label strings, or scores with 3 decimals for regression) for input lines: one sentence
// per line, or for pair tasks "sentence1<TAB>sentence2". `origin` names the input in errors
// (line numbers are 1-based).
absl::StatusOr<std::vector<std::string>> PredictLines(FinetunedModel& m,
                                                      const std::vector<std::string>& lines,
                                                      const std::string& origin,
                                                      int64_t batch_size = 64);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_SAVED_MODEL_H_
