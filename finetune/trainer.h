// The finetuning loop: a SequenceClassifier over an encoder, AdamW with linear warmup and decay,
// evaluation on eval[0] after each epoch, the best epoch chosen on its primary metric and its
// weights kept; the other eval splits are scored once with those weights. Works on encoded
// examples, so tests can drive it with id-level fixtures and no tokenizer.
#ifndef GMLP_FINETUNE_TRAINER_H_
#define GMLP_FINETUNE_TRAINER_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/field_json.h"
#include "finetune/encode.h"
#include "finetune/options.h"
#include "finetune/task.h"
#include "model/encoder.h"
#include "model/heads.h"

namespace gmlp::finetune {

// split name -> metric name -> value.
using SplitMetrics = std::map<std::string, std::map<std::string, double>>;

struct EpochResult {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0;
  double padding = 0;             // fraction of the training batches' positions that were padding
  SplitMetrics metrics;           // the selection split (eval[0]) only
  nlohmann::json ToJson() const;  // as in results.json's "epochs"
};

// Predictions of one split at the best epoch: class index (or score) per example, in file order.
struct SplitPredictions {
  std::vector<int64_t> label;
  std::vector<double> score;
};

struct SeedResult {
  uint64_t seed = 0;
  int64_t best_epoch = 0;
  double selection_score = 0;  // eval[0]'s primary metric at the best epoch
  std::vector<EpochResult> epochs;
  SplitMetrics best;  // every eval split's metrics at the best epoch
  std::map<std::string, SplitPredictions> predictions;  // eval and predict splits, best epoch
  double seconds = 0;  // wall time of the seed's training and evaluation (every lr tried)
  double lr = 0;       // the peak lr it trained at (0: a result from before it was recorded)
  // With FinetuneJob::lr_grid: each lr tried and its best epoch's selection score, in grid order;
  // the result is the best of them.
  std::vector<std::pair<double, double>> lr_scores;
  bool resumed = false;  // read back from an earlier run (FinetuneJob::resume_seeds); not saved
  nlohmann::json ToJson() const;  // without the predictions
  static absl::StatusOr<SeedResult> FromJson(const nlohmann::json& j);
};

struct EncodedSplit {
  std::string name;
  std::vector<EncodedExample> examples;
};

// Builds the encoder a seed starts from (pretrained weights, or a fresh init).
using EncoderFactory = std::function<absl::StatusOr<std::shared_ptr<model::EncoderImpl>>()>;

struct SeedRun {
  SeedResult result;
  model::SequenceClassifier classifier{nullptr};  // best-epoch weights, in eval mode
};

// Called with each epoch's result as it ends (its error stops the seed).
using EpochCallback = std::function<absl::Status(const EpochResult&)>;

// Finetunes one seed: seeds torch (head init, dropout) and the data order with `seed`, trains
// `options.epochs` epochs on `train`, evaluates every split of `evals` (metrics of `task`) after
// each, keeps the best epoch by evals[0] and predicts `predict` (unlabeled splits) with it.
absl::StatusOr<SeedRun> FinetuneSeed(const TaskSpec& task, const EncoderFactory& make_encoder,
                                     const std::vector<EncodedExample>& train,
                                     const std::vector<EncodedSplit>& evals,
                                     const std::vector<EncodedSplit>& predict,
                                     const FinetuneOptions& options, uint64_t seed,
                                     const EpochCallback& on_epoch = nullptr);

// The order of one training epoch: `shuffled` (a permutation of `examples`' indices) regrouped
// so that each batch of `batch_size` holds examples of similar length (FinetuneOptions::
// group_by_length); full batches in a random order from `rng`, a partial one last.
std::vector<int64_t> LengthGroupedOrder(const std::vector<EncodedExample>& examples,
                                        const std::vector<int64_t>& shuffled, int64_t batch_size,
                                        std::mt19937_64& rng);

// Runs `classifier` (eval mode, inference mode) over `examples` in length-sorted batches, under
// bf16 autocast when `bf16` (FinetuneOptions::bf16: where bf16 is native).
SplitPredictions Predict(model::SequenceClassifier& classifier, bool regression,
                         const std::vector<EncodedExample>& examples, int64_t batch_size,
                         bool bf16 = false);

// The task's metrics of `pred` against the labels of `examples`.
absl::StatusOr<std::map<std::string, double>> Score(const TaskSpec& task,
                                                    const std::vector<EncodedExample>& examples,
                                                    const SplitPredictions& pred);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_TRAINER_H_
