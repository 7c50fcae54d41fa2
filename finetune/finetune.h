// `gmlp finetune` as a library call: read a task (GLUE row or task spec), tokenize it with the
// pretrained checkpoint's tokenizer, finetune k seeds, and write results.json, dev predictions,
// GLUE-format test predictions and the best seed's model (for `gmlp predict`), all atomically.
#ifndef GMLP_FINETUNE_FINETUNE_H_
#define GMLP_FINETUNE_FINETUNE_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensorboard.h"
#include "finetune/trainer.h"

namespace gmlp::finetune {

struct FinetuneJob {
  std::string task;       // a GLUE task name (CoLA, SST-2, ..., MNLI, ...), or
  std::string task_spec;  // a task spec JSON file
  // The shared data root: a task's files are read from <data_root>/<its spec's data_dir> (the
  // GLUE specs': glue/<task>, nli/RTE for RTE; a spec without one: data_root itself).
  std::string data_root = "../shared/data";
  std::string data_dir;   // overrides that folder
  std::string init;       // `gmlp pretrain` output or checkpoint, or exported weights
  std::string preset;     // only without init: train from scratch (loudly warned)
  std::string tokenizer;  // only without init: the SentencePiece .model to tokenize with
  // With init: its encoder's architecture and tokenizer, but randomly initialized weights (each
  // seed its own draw): what the architecture learns without its pretraining.
  bool reinit = false;
  std::string output = "runs/finetune";
  // TensorBoard event files of every seed's epochs: "" = <output>/tb, "none" = none
  // (TensorboardDir).
  std::string tensorboard_dir;
  std::vector<uint64_t> seeds = {1};
  // Non-empty: peak lrs to choose from, per seed: the seed trains once at each and keeps the run
  // whose best epoch scores highest on the selection split (eval[0]); options.lr is then unused.
  // A fair comparison of encoders lets each find its lr: on the 2026-12-07 default run's
  // encoders, 3e-3 instead of 1e-3 moved gMLP-tiny's SST-2 from 54 to 66 and the Transformer's
  // from 69 to 69.
  std::vector<double> lr_grid;
  int64_t max_train_examples = 0;  // > 0: a fixed random subset (same for every seed)
  int64_t max_eval_examples = 0;   // > 0: first N examples of each eval split
  // > 0: hold out this many training examples (a fixed random draw, taken before
  // max_train_examples) as the split that selects the epoch, "train_heldout"; the task's own
  // eval splits are then only reported. For tasks whose one labelled eval split is the one
  // reported (SST-2, CoLA, RTE, STS-B): the reported score is not also the selected one.
  int64_t select_from_train = 0;
  // Sentence-pair tasks: train and score on the second segment alone (SecondSegmentOnly), the
  // hypothesis-only control of NLI.
  bool second_segment_only = false;
  // Non-empty: score only these eval splits besides eval[0], which selects the epoch (the study
  // scores its reported split alone).
  std::vector<std::string> eval_splits;
  bool predict_test = true;  // predict the task's unlabeled test splits (submission/)
  bool save_model = true;
  bool strict_utf8 = false;  // invalid UTF-8 in a data file is an error, not a skipped row
  // Not a flag: a caller that owns job.output and never changes the job's settings there (the
  // study) sets it. Each finished seed leaves predictions/seed-<s>/result.json, and a seed that
  // has one is read back instead of run again, so an interrupted job loses only the seed in
  // flight. Only without save_model and test predictions (they need every seed's model).
  bool resume_seeds = false;
  FinetuneOptions options;

  // The job's own fields (options has its own list), as FinetuneOptions::ForEachField.
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("task", self.task,
          "GLUE task: CoLA, SST-2, MRPC, QQP, STS-B, MNLI, QNLI, RTE or WNLI (or use --task_spec)");
    visit("task_spec", self.task_spec,
          "task spec JSON file describing any other dataset (e.g. finetune/tasks/SICK.json)");
    visit("data_root", self.data_root,
          "the shared data root: a task's files are read from <data_root>/<its spec's "
          "\"data_dir\"> (GLUE tasks: glue/<task>, nli/RTE for RTE; a spec without one: the "
          "data root)");
    visit("data_dir", self.data_dir,
          "the folder of the task's files, instead of <data_root>/<its spec's \"data_dir\">");
    visit("init", self.init,
          "pretrained encoder: a `gmlp pretrain` output or checkpoint directory, or exported "
          "weights (a `gmlp export` folder, a .safetensors file it wrote, a Hugging Face BERT "
          "folder with gmlp's tokenizer.model)");
    visit("preset", self.preset,
          "only without --init: finetune a randomly initialized encoder of this preset");
    visit("tokenizer", self.tokenizer,
          "only without --init: the SentencePiece .model to tokenize with");
    visit("reinit", self.reinit,
          "with --init: its architecture and tokenizer, randomly initialized weights (what the "
          "architecture learns without its pretraining)");
    visit("output", self.output,
          "output directory: results.json, predictions/, submission/, model/");
    visit("tensorboard_dir", self.tensorboard_dir,
          "TensorBoard event files of every seed's per-epoch scalars of results.json "
          "(seed-<s>/train_loss, seed-<s>/<split>/<metric>, ...); empty = <output>/tb, none = "
          "off");
    visit("seeds", self.seeds, "comma-separated seeds, one finetuning run each (e.g. 1,2,3)");
    visit("lr_grid", self.lr_grid,
          "comma-separated peak lrs (e.g. 1e-3,3e-3): each seed trains at every one and keeps "
          "the run whose best epoch scores highest on the selection split; empty = --lr alone");
    visit("max_train_examples", self.max_train_examples,
          "> 0: train on a fixed random subset of this many examples");
    visit("max_eval_examples", self.max_eval_examples,
          "> 0: evaluate on the first N examples of each eval split");
    visit("select_from_train", self.select_from_train,
          "> 0: hold out N training examples as the split that selects the epoch "
          "(train_heldout); the task's eval splits are then only reported");
    visit("second_segment_only", self.second_segment_only,
          "pair tasks: train and score on the second segment alone (hypothesis-only control)");
    visit("eval_splits", self.eval_splits,
          "comma-separated eval splits to score besides the one selecting the epoch; empty = "
          "all");
    visit("predict_test", self.predict_test,
          "predict the task's unlabeled test splits into submission/");
    visit("save_model", self.save_model, "save the best seed's model for `gmlp predict`");
    visit("strict_utf8", self.strict_utf8,
          "stop at the first line of invalid UTF-8 (default: count and skip such lines)");
  }
};

// Output layout under job.output (see finetune/README.md):
//   results.json                  options, every seed's epochs, best-epoch metrics, summary
//   predictions/<eval split>.tsv  best seed, best epoch: index, prediction, gold
//   predictions/seed-<s>/<split>.tsv  the same for every seed (per-example scores for intervals)
//   predictions/seed-<s>/result.json  with resume_seeds: that seed's result, written when it ends
//   submission/<GLUE name>.tsv    test splits in the GLUE submission format (index, prediction)
//   model/                        best seed: model.pt, config.json, tokenizer.model, task.json
inline constexpr char kResultsFile[] = "results.json";
inline constexpr char kSeedResultFile[] = "result.json";
inline constexpr char kModelDir[] = "model";

// What a job found: every seed's best epoch, and the floor they had to beat. results.json
// holds it (and more); FromJson reads it back from there.
struct FinetuneResult {
  std::string task;
  std::vector<SeedResult> seeds;  // in job order; without predictions
  uint64_t best_seed = 0;
  int64_t train_examples = 0;  // after select_from_train and max_train_examples
  // Per eval split: the accuracy of always answering its most frequent label (classification).
  std::map<std::string, double> majority_class_accuracy;

  // SummarizeSeeds(seeds).
  nlohmann::json Summary() const;
  static absl::StatusOr<FinetuneResult> FromJson(const nlohmann::json& results_json);
};

// Runs the job, writes its outputs and returns what it found.
absl::StatusOr<FinetuneResult> RunFinetune(const FinetuneJob& job);

// The task `job` runs: its GLUE task or its task spec file (exactly one must be set), made
// second-segment-only when the job asks.
absl::StatusOr<TaskSpec> ResolveTask(const FinetuneJob& job);

// Where the job writes TensorBoard event files: job.tensorboard_dir, <output>/tb when that is
// empty, "" (none) when it is "none".
std::string TensorboardDir(const FinetuneJob& job);

// The TensorBoard scalars of one seed's result as results.json holds it: every number of each
// epoch's entry (train_loss, padding, metrics/<split>/<metric>) tagged seed-<s>/<key path>
// (the metrics level left out: seed-1/dev/accuracy) at step = the epoch, and every number of
// "best" as seed-<s>/best/<split>/<metric> at the best epoch. Step -> scalars.
std::map<int64_t, Scalars> SeedScalars(uint64_t seed, const nlohmann::json& seed_json);

// <output>/predictions/seed-<seed>: one seed's <eval split>.tsv files.
std::string SeedPredictionsDir(const std::string& output, uint64_t seed);

// The name of the split select_from_train carves out of train.
inline constexpr char kTrainHeldoutSplit[] = "train_heldout";

// The directory `task`'s relative file names are read from (rules above).
std::string TaskDataDir(const FinetuneJob& job, const TaskSpec& task);

// Parses "1,2,3" into seeds.
absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& text);

// The summary block of results.json: for each eval split and metric, every seed's best-epoch
// value with mean, median, std, min, max. Exposed for the study and tests.
nlohmann::json SummarizeSeeds(const std::vector<SeedResult>& seeds);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_FINETUNE_H_
