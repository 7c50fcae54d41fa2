// The study's results and what is written from them: results.csv (one row per cell, task and
// seed), summary.csv, report.md (setup, tables, the finding section with gMLP/aMLP minus
// Transformer per size and the perplexity table) and the accuracy-vs-parameters plot (gnuplot
// script + data, rendered to PNG and SVG). Torch-free, so it is tested on made-up results.
#ifndef GMLP_FINETUNE_STUDY_REPORT_H_
#define GMLP_FINETUNE_STUDY_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::finetune {

// A task as the study uses it: which finetuning task, which split/metric is reported, and
// whether it is single-sentence or cross-sentence (the paper's split of GLUE).
struct StudyTask {
  std::string name;         // "SST-2", "MNLI-like", ...
  std::string glue_task;    // a GLUE task name, or
  std::string task_spec;    // a task spec file (relative to the repo root or absolute)
  std::string data_subdir;  // GLUE: the task's folder under the data root
  std::string kind;         // single | cross
  std::string report_split;
  std::string metric;
};

// The built-in study tasks: SST-2 and CoLA (single); MNLI-like (train MNLI subset, report XNLI
// English test), SICK, RTE, SNLI-subset and STS-B (cross).
absl::StatusOr<StudyTask> FindStudyTask(const std::string& name);
std::vector<std::string> StudyTaskNames();

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

// CSV with a header; one row per (cell, task, seed); pretrain-only cells get one row with the
// task columns empty.
std::string ResultsCsv(const std::vector<CellResult>& cells);
// One row per (cell, task): median, mean, std, min, max over seeds.
std::string SummaryCsv(const std::vector<CellResult>& cells);
// The Markdown report. `plot_basename` is the image name next to it (without extension).
std::string ReportMarkdown(const std::vector<CellResult>& cells, const ReportContext& context,
                           const std::string& plot_basename);

// Writes <dir>/<basename>.gp plus one data file per (task, arch) and runs gnuplot to render
// <dir>/<basename>.png and .svg: log x = parameters, one panel per task, one line per encoder,
// median over seeds with min-max error bars. Returns an error naming the missing gnuplot
// (install gnuplot-nox) or its message if rendering fails; the script stays for a re-run.
absl::Status WritePlot(const std::vector<CellResult>& cells, const std::string& dir,
                       const std::string& basename);

// Writes results.csv, summary.csv, report.md and the plot into `dir` (atomically, each file).
absl::Status WriteStudyOutputs(const std::vector<CellResult>& cells, const ReportContext& context,
                               const std::string& dir);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_STUDY_REPORT_H_
