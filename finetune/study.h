// `gmlp study`: the paper's accuracy-vs-parameters experiment end to end. From a raw corpus it
// trains a tokenizer and prepares shards (each skipped when its output exists), then for every
// cell of the grid (encoder x size, plus pretrain-only SGU variants) pretrains on the same
// shards for the same number of steps, measures held-out MLM perplexity, and finetunes on each
// study task with k seeds. Every finished step leaves a marker written atomically, so a killed
// study resumes where it stopped, losing at most the step in progress. Finally writes
// results.csv, summary.csv, report.md and the plot (study_report.h).
#ifndef GMLP_FINETUNE_STUDY_H_
#define GMLP_FINETUNE_STUDY_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "finetune/study_report.h"
#include "finetune/trainer.h"

namespace gmlp::finetune {

struct StudyConfig {
  std::string output = "runs/study";
  std::string data_dir = "../shared/data";  // the shared data root
  // Raw text for the tokenizer and the shards (relative to data_dir unless absolute), of which
  // the first corpus_mb MB of decompressed text are used (0 = all), cut at a document end.
  std::string corpus = "corpus/wikipedia-en/enwiki_extract.txt.xz";
  int64_t corpus_mb = 6;
  std::string tokenizer;  // an existing .model: skips tokenizer training
  int32_t vocab_size = 8192;
  std::string shards;  // an existing shard directory: skips prepare (its seq_len wins)
  int64_t seq_len = 128;

  std::vector<std::string> archs = {"transformer", "gmlp", "amlp"};
  std::vector<std::string> sizes = {"tiny", "mini"};  // preset = "<arch>-<size>"
  // Pretrain-only gMLP cells at sizes[0] for the SGU ablation's perplexity table ("split" is
  // the main gMLP cell).
  std::vector<std::string> sgu_variants = {"multiplicative", "additive", "linear"};
  // "key=value,..." EncoderConfig overrides applied to every cell (e.g. "n_layers=2" for tests).
  std::string model_overrides;

  int64_t pretrain_steps = 300;
  int64_t pretrain_batch = 32;
  double pretrain_lr = 2e-3;
  int64_t pretrain_warmup = 30;
  // bf16 autocast for pretraining (and finetune.bf16 for finetuning; `--bf16` sets both): about
  // 2x the tokens per second of fp32 on an AVX-512-bf16 CPU, same loss to 4 decimals at the
  // first step (bench/RESULTS.md).
  bool pretrain_bf16 = true;
  int64_t ppl_batches = 16;  // validation batches (of pretrain_batch) for the perplexity table

  std::vector<std::string> tasks = {"SST-2", "MNLI-like", "SICK"};
  std::vector<uint64_t> seeds = {1, 2};
  int64_t max_train_examples = 2000;  // per task, a fixed random subset; 0 = all
  int64_t max_eval_examples = 1000;   // per eval split, the first N; 0 = all
  // lr, epochs, batch size, max_len...: small, briefly pretrained encoders want a higher lr
  // than BERT-base's 2e-5..1e-4 (measured: gmlp-tiny after 300 pretraining steps stayed at
  // chance on SST-2 with 2 epochs at 3e-4, and reached 0.70 with 3 epochs at 1e-3).
  FinetuneOptions finetune = [] {
    FinetuneOptions o;
    o.lr = 1e-3;
    o.epochs = 3;
    o.batch_size = 32;
    o.max_len = 128;
    o.bf16 = true;
    return o;
  }();

  absl::Status Validate() const;
  nlohmann::json ToJson() const;
};

// Applies a named study preset: "default-small" = the defaults above, sized for about 30 min on
// 2 cores; "smoke" = two one-layer cells, a few steps (`gmlp study --smoke`, tests).
absl::Status ApplyStudyPreset(const std::string& name, StudyConfig* config);

// Runs (or resumes) the study and returns the path of report.md.
absl::StatusOr<std::string> RunStudy(const StudyConfig& config);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_STUDY_H_
