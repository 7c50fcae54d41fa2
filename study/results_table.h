// The study's results table (results.csv): one row per encoder, size, task, split, seed and
// control run, enough on its own to compute every interval and verdict (study/verdict.h).
// Torch-free.
//
// Columns, by header name (any order; other columns, such as the study's cell or mlm_loss, are
// ignored):
//   encoder      transformer | gmlp | amlp | ...; "majority" (or empty) on majority-class rows
//   size         preset size (tiny, mini, ...); empty on majority-class rows
//   params       total parameters (optional)
//   task         task name (SST-2, MNLI-like, probe-shifted, ...)
//   kind         single | cross | probe (probe tasks are sentence pairs too)
//   split        the split scored (test, xnli_en_test, ...)
//   seed         finetuning seed (0 on majority-class rows)
//   control      none | second_only (trained and scored on the second segment alone) |
//                scratch (the encoder's architecture finetuned from random weights) | majority
//   metric       accuracy | f1 | mcc | pearson | spearman
//   value        the metric, as a fraction (0.853, not 85.3)
//   n_examples   examples scored
//   predictions  optional: a TSV "index<TAB>prediction<TAB>gold" (header line first, as
//                `gmlp finetune` writes predictions/<split>.tsv), relative to results.csv's folder
//   reported     optional: 1 (default) = the reported split; 0 = a split that selected the epoch
//                (kept in the table, left out of verdicts)
#ifndef GMLP_STUDY_RESULTS_TABLE_H_
#define GMLP_STUDY_RESULTS_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "study/stats.h"

namespace gmlp::study {

struct ResultRow {
  std::string encoder;
  std::string size;
  int64_t params = 0;
  std::string task;
  std::string kind;  // single | cross | probe
  std::string split;
  uint64_t seed = 0;
  std::string control = "none";  // none | second_only | scratch | majority
  std::string metric = "accuracy";
  double value = 0;
  int64_t n_examples = 0;
  std::string predictions;  // path as written in the table
  bool reported = true;
  // Per-example correctness (prediction == gold), in file order, when `predictions` was loaded.
  std::vector<uint8_t> correct;
  std::vector<std::string> example_ids;  // the predictions file's index column
};

// A control run in words ("second segment only", "from scratch", "majority class"); "" for none.
const char* ControlDescription(const std::string& control);

// The header line (no newline) and one CSV line per row, newline-terminated.
std::string ResultsTableHeader();
std::string FormatResultsTable(const std::vector<ResultRow>& rows);

// Parses results.csv text. `origin` names it in errors, which give the line and column.
absl::StatusOr<std::vector<ResultRow>> ParseResultsTable(absl::string_view text,
                                                         absl::string_view origin);

// Reads results.csv and, for rows that name one, their predictions file (relative to the CSV's
// folder): `correct` and `example_ids` are filled and n_examples must match the file's rows.
absl::StatusOr<std::vector<ResultRow>> ReadResultsTable(const std::string& path);

// Appends `row` to `runs` as one more seed: its value, example count and per-example
// correctness; the metric sets `proportion` and the task/split the pairing key. Every grouping
// of rows into SeedRuns (summary.csv, the verdicts, the plot) goes through this and
// FinishSeedRuns, so the same runs get the same interval everywhere.
void AddSeedRow(const ResultRow& row, SeedRuns* runs);

// Once every seed is added: drops the per-example correctness unless every seed has it and the
// metric is a proportion (the bootstrap then draws examples binomially, study/stats.h).
void FinishSeedRuns(SeedRuns* runs);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_RESULTS_TABLE_H_
