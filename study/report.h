// The study's results and what is written from them: results.csv (one row per cell, task and
// seed), summary.csv, report.md (setup, tables, the finding section with gMLP/aMLP minus
// Transformer per size and the perplexity table) and the accuracy-vs-parameters plot
// (plot.h). Works on plain results, so it is tested on made-up ones.
#ifndef GMLP_STUDY_REPORT_H_
#define GMLP_STUDY_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "study/results_table.h"

namespace gmlp::study {

struct TaskScore {
  std::string task;
  std::string kind;
  std::string split;
  std::string metric;
  std::vector<uint64_t> seeds;
  std::vector<double> values;  // best-epoch value per seed
  // Accuracy of always predicting the split's most frequent label; < 0 when not applicable
  // (other metrics, or results written before it was recorded).
  double majority = -1;
  // "none", or "second_only": trained and scored on the second segment alone (a control).
  std::string control = "none";
  int64_t n_examples = 0;                // examples of the reported split
  std::vector<std::string> predictions;  // per seed: its predictions TSV, relative to the study
  int64_t train_examples = 0;            // per seed: training examples x epochs
  double seconds = 0;                    // finetuning and evaluating every seed
};

// One held-out MLM loss measurement while pretraining.
struct CurvePoint {
  int64_t step = 0;
  double loss = 0;
};

// One cell of the grid: an encoder at a size (and SGU variant), pretrained, then finetuned.
struct CellResult {
  std::string name;     // "gmlp-tiny", "gmlp-tiny-sgu-linear", "amlp-tiny-attn16"
  std::string encoder;  // results.csv's encoder: the arch, "amlp-attn16", "gmlp-sgu-linear"
  std::string arch;     // a row of the arch table (model/arch.h)
  std::string size;     // tiny | mini | small | base
  std::string sgu;      // gmlp/amlp: split | multiplicative | additive | linear; else ""
  int64_t params = 0;
  int64_t non_embedding_params = 0;
  int64_t pretrain_steps = 0;
  int64_t pretrain_tokens = 0;    // steps x batch x sequence length
  std::vector<CurvePoint> curve;  // held-out loss while pretraining
  double mlm_loss = 0;            // held-out MLM cross-entropy (nats per masked token)
  double mlm_perplexity = 0;      // exp(mlm_loss)
  double pretrain_seconds = 0;
  double finetune_seconds = 0;
  std::vector<TaskScore> scores;  // empty for pretrain-only cells (SGU ablation)

  nlohmann::json ToJson() const;
  static absl::StatusOr<CellResult> FromJson(const nlohmann::json& j);
};

// One stage's wall time and the work it did (issue 13, item 4).
struct StageTiming {
  std::string stage;  // "pretraining gmlp-tiny", "finetuning SST-2 (all cells)", ...
  double seconds = 0;
  double work = 0;   // tokens, examples, ... (0 = no rate)
  std::string unit;  // "tokens", "examples"
};

// Settings shown in the report's setup section (free-form key -> value), and where the time
// went.
struct ReportContext {
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  std::vector<std::string> notes;  // setup remarks (the baseline's LN, aMLP's attention ratio)
  std::vector<StageTiming> stages;
  double total_seconds = 0;
  // The results table's encoder every other is compared with (BaselineEncoder, study/config.h).
  std::string baseline = "transformer";
  // The held-out loss of the best predictor that ignores context (data::ContextFreeMlmLoss) on
  // the positions the final loss is measured on, and on those of the learning curves (the
  // trainer's evaluation batches); 0 when not computed (no shards at hand).
  double context_free_loss = 0;
  double curve_context_free_loss = 0;
};

// A results-table encoder for readers, with `size` when given: "amlp-attn16" -> "aMLP (attention
// 16)", or "aMLP-tiny (attention 16)"; "gmlp-sgu-linear" -> "gMLP (SGU linear)"; an arch alone
// -> its label ("gMLP", "gMLP-tiny").
std::string EncoderLabel(const std::string& encoder, const std::string& size = "");

// The main grid cells (default SGU) are finetuned; SGU-variant cells are pretrain-only.
bool IsMainCell(const CellResult& cell);
// The score of `task` in `cell` (control "none"), or nullptr.
const TaskScore* FindScore(const CellResult& cell, const std::string& task);
// Cells by size (tiny < mini < ...), then arch (the arch table's order), then name.
std::vector<CellResult> SortedCells(std::vector<CellResult> cells);
// Each task's first score, in cell order.
std::vector<const TaskScore*> TaskOrder(const std::vector<CellResult>& cells);

// results.csv's rows (study/results_table.h): one per finetuned cell, task, control and seed
// (predictions named, not loaded), then one majority-class row per task split.
std::vector<ResultRow> ResultRows(const std::vector<CellResult>& cells);
// cells.csv: one row per cell (parameters, pretraining tokens, held-out loss, times).
std::string CellsCsv(const std::vector<CellResult>& cells);
// curves.csv: cell, step, held-out MLM loss.
std::string CurvesCsv(const std::vector<CellResult>& cells);
// summary.csv: per encoder, size, task, split and control: seeds, mean, median, std, min, max and
// the 95% interval of the mean (seeds and test examples resampled, study/stats.h).
std::string SummaryCsv(const std::vector<ResultRow>& rows);

// The per-stage timings of a study's cells (pretraining and each task's finetuning, summed
// over cells), for ReportContext::stages.
std::vector<StageTiming> CellTimings(const std::vector<CellResult>& cells);

// The Markdown report from the cells (pretraining, perplexity) and results.csv's rows as read
// back (with predictions, for intervals): every score, interval and verdict is computed from
// those rows. `plot_basename` names the images next to it (without extension).
std::string ReportMarkdown(const std::vector<CellResult>& cells, const std::vector<ResultRow>& rows,
                           const ReportContext& context, const std::string& plot_basename);

// Writes results.csv, then reads it back and writes summary.csv, cells.csv, curves.csv,
// report.md and the plots into `dir` (atomically, each file).
absl::Status WriteStudyOutputs(const std::vector<CellResult>& cells, const ReportContext& context,
                               const std::string& dir);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_REPORT_H_
