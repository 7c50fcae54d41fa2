// Task descriptions for finetuning: where each split's examples live, how to read them (layout,
// columns), the label set (or regression) and the metrics, read from a JSON task spec (see
// finetune/README.md). The nine GLUE tasks are the specs of finetune/tasks/glue/, compiled in
// (glue.cc); any other dataset is a spec file of the same form. Torch-free.
#ifndef GMLP_FINETUNE_TASK_H_
#define GMLP_FINETUNE_TASK_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp::finetune {

// One split (train, a dev set, a test set) of a task: one file read one way.
struct SplitSpec {
  std::string name;            // "train", "dev", "dev_matched", "test", "xnli_en_test", ...
  std::string file;            // relative to the data directory, or absolute
  std::string layout = "tsv";  // tsv | jsonl | json_object ({"0": {...}, "1": {...}})
  bool header = true;          // tsv only: first line names the columns
  // Columns: a header name / JSON key, or a 0-based column number ("3"). sentence2 empty =
  // single-sentence task; label empty = unlabeled (test) split; index empty = row number.
  std::string sentence1;
  std::string sentence2;
  std::string label;
  std::string index;
  // Optional: keep only rows whose `split_column` equals `split_value` (SICK's SemEval_set).
  std::string split_column;
  std::string split_value;
  // test splits: the GLUE submission file name ("MNLI-m.tsv"), under --output's submission/ (as
  // is `name` under predictions/): relative, no ".." component.
  std::string submission;
  bool optional = false;     // a missing file is skipped (with a note) instead of an error
  int64_t max_examples = 0;  // > 0: keep only the first N rows (subsets for quick runs); 0 = all

  nlohmann::json ToJson() const;
};

struct TaskSpec {
  std::string name;
  // The folder of the splits' relative file names, relative to the data root (--data_root)
  // unless absolute; empty = the data root itself. --data_dir replaces it.
  std::string data_dir;
  // Class labels as they appear in the data (matched case-insensitively, so "NEUTRAL" in SICK
  // equals "neutral" in MNLI); empty = regression on a numeric label.
  std::vector<std::string> labels;
  // Official metrics, the first is the one that selects the best epoch: accuracy | f1 | mcc |
  // pearson | spearman.
  std::vector<std::string> metrics;
  SplitSpec train;
  std::vector<SplitSpec> eval;  // eval[0] selects the best epoch; the others are reported
  std::vector<SplitSpec> test;  // predictions only
  // Rows with too few fields are skipped with a count instead of failing (QQP's train file has a
  // few); off by default so that a broken file is one clear error.
  bool skip_malformed_rows = false;

  bool is_regression() const { return labels.empty(); }
  int64_t num_outputs() const { return labels.empty() ? 1 : static_cast<int64_t>(labels.size()); }
  bool is_pair() const { return !train.sentence2.empty(); }
  const std::string& primary_metric() const { return metrics.front(); }

  // Checks names, metrics, and that every split names sentence1 (and a label for train/eval).
  absl::Status Validate() const;
  nlohmann::json ToJson() const;
  // Parses a task spec (format in finetune/README.md): top-level layout fields are defaults that
  // each split may override. `origin` names the file in error messages.
  static absl::StatusOr<TaskSpec> FromJson(const nlohmann::json& j, absl::string_view origin);
};

// The GLUE task table (glue.cc): CoLA, SST-2, MRPC, QQP, STS-B, MNLI, QNLI, RTE, WNLI
// (case-insensitive; "MNLI-m"/"MNLI-mm" are not names: MNLI evaluates both). Each task's data_dir
// is its folder under the shared data root (glue/<task>; nli/RTE for RTE).
absl::StatusOr<TaskSpec> GlueTask(absl::string_view name);
std::vector<std::string> GlueTaskNames();

// `task` (a sentence-pair task) read as a single-sentence task over its second segment: every
// split's sentence1 column becomes its sentence2 column. InvalidArgument for single-sentence
// tasks.
absl::StatusOr<TaskSpec> SecondSegmentOnly(TaskSpec task);

// Reads a task spec JSON file.
absl::StatusOr<TaskSpec> LoadTaskSpec(const std::string& path);

// Resolves `file` against `data_dir` unless it is absolute.
std::string ResolveDataPath(const std::string& data_dir, const std::string& file);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_TASK_H_
