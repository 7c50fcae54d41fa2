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
};

// One cell of the grid: an encoder at a size (and SGU variant), pretrained, then finetuned.
struct CellResult {
  std::string name;  // "gmlp-tiny", "gmlp-tiny-sgu-linear"
  std::string arch;  // transformer | gmlp | amlp | mixer
  std::string size;  // tiny | mini | small | base
  std::string sgu;   // gmlp/amlp: split | multiplicative | additive | linear; else ""
  int64_t params = 0;
  int64_t non_embedding_params = 0;
  int64_t pretrain_steps = 0;
  double mlm_loss = 0;        // held-out MLM cross-entropy (nats per masked token)
  double mlm_perplexity = 0;  // exp(mlm_loss)
  double pretrain_seconds = 0;
  double finetune_seconds = 0;
  std::vector<TaskScore> scores;  // empty for pretrain-only cells (SGU ablation)

  nlohmann::json ToJson() const;
  static absl::StatusOr<CellResult> FromJson(const nlohmann::json& j);
};

// Settings shown in the report's setup section (free-form key -> value).
struct ReportContext {
  nlohmann::json settings = nlohmann::json::object();
  double total_seconds = 0;
};

// The main grid cells (default SGU) are finetuned; SGU-variant cells are pretrain-only.
bool IsMainCell(const CellResult& cell);
// The score of `task` in `cell`, or nullptr.
const TaskScore* FindScore(const CellResult& cell, const std::string& task);
// Cells by size (tiny < mini < ...), then arch (the arch table's order), then name.
std::vector<CellResult> SortedCells(std::vector<CellResult> cells);
// Each task's first score, in cell order.
std::vector<const TaskScore*> TaskOrder(const std::vector<CellResult>& cells);

// CSV with a header; one row per (cell, task, seed); pretrain-only cells get one row with the
// task columns empty.
std::string ResultsCsv(const std::vector<CellResult>& cells);
// One row per (cell, task): median, mean, std, min, max over seeds.
std::string SummaryCsv(const std::vector<CellResult>& cells);
// The Markdown report. `plot_basename` is the image name next to it (without extension).
std::string ReportMarkdown(const std::vector<CellResult>& cells, const ReportContext& context,
                           const std::string& plot_basename);

// Writes results.csv, summary.csv, report.md and the plot into `dir` (atomically, each file).
absl::Status WriteStudyOutputs(const std::vector<CellResult>& cells, const ReportContext& context,
                               const std::string& dir);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_REPORT_H_
