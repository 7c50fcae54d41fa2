// `gmlp finetune` as a library call: read a task (GLUE row or task spec), tokenize it with the
// pretrained checkpoint's tokenizer, finetune k seeds, and write results.json, dev predictions,
// GLUE-format test predictions and the best seed's model (for `gmlp predict`), all atomically.
#ifndef GMLP_FINETUNE_FINETUNE_H_
#define GMLP_FINETUNE_FINETUNE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "finetune/trainer.h"

namespace gmlp::finetune {

struct FinetuneJob {
  std::string task;       // a GLUE task name (CoLA, SST-2, ..., MNLI, ...), or
  std::string task_spec;  // a task spec JSON file
  // GLUE: the task's folder (default ../shared/data/glue/<task>, nli/RTE for RTE). Task spec:
  // the directory its relative file names resolve against (default ../shared/data).
  std::string data_dir;
  std::string init;       // `gmlp pretrain` output or checkpoint directory
  std::string preset;     // only without init: train from scratch (loudly warned)
  std::string tokenizer;  // only without init: the SentencePiece .model to tokenize with
  std::string output = "runs/finetune";
  std::vector<uint64_t> seeds = {1};
  int64_t max_train_examples = 0;  // > 0: a fixed random subset (same for every seed)
  int64_t max_eval_examples = 0;   // > 0: first N examples of each eval split
  bool save_model = true;
  FinetuneOptions options;
};

// Output layout under job.output (see finetune/README.md):
//   results.json                  options, every seed's epochs, best-epoch metrics, summary
//   predictions/<eval split>.tsv  best seed, best epoch: index, prediction, gold
//   submission/<GLUE name>.tsv    test splits in the GLUE submission format (index, prediction)
//   model/                        best seed: model.pt, config.json, tokenizer.model, task.json
inline constexpr char kResultsFile[] = "results.json";
inline constexpr char kModelDir[] = "model";

// Runs the job and returns the results JSON it wrote.
absl::StatusOr<nlohmann::json> RunFinetune(const FinetuneJob& job);

// The default data directory for a job (rules above), given the repo-relative data root.
std::string DefaultDataDir(const FinetuneJob& job, const std::string& data_root);

// Parses "1,2,3" into seeds.
absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& text);

// The summary block of results.json: for each eval split and metric, every seed's best-epoch
// value with mean, median, std, min, max. Exposed for the study and tests.
nlohmann::json SummarizeSeeds(const std::vector<SeedResult>& seeds);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_FINETUNE_H_
