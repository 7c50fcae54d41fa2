// Running one cell of the study: pretraining (resumable, and recovered when an exported cell
// lost its checkpoint), the held-out perplexity, then finetuning on every task with every seed,
// each step skipped when its record is there; cell.json records the finished cell.
#ifndef GMLP_STUDY_CELL_RUN_H_
#define GMLP_STUDY_CELL_RUN_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "finetune/finetune.h"
#include "study/cells.h"
#include "study/config.h"
#include "study/data_stages.h"
#include "study/progress.h"
#include "study/report.h"

namespace gmlp::study {

// The cell's result when an earlier invocation finished every run asked for now.
absl::StatusOr<std::optional<CellResult>> FinishedCell(const StudyConfig& config,
                                                       const CellSpec& cell);

// The finetuning job of one of the cell's tasks under `control` ("none", "second_only",
// "scratch"): the task's data, the cell's pretraining as init, its output folder under
// <cell_dir>/ft, the seeds and config.finetune, with a probe task's own settings (all of its
// probe_train_examples pairs, probe_epochs, probe_lr).
absl::StatusOr<finetune::FinetuneJob> CellTaskJob(const StudyConfig& config, const StudyData& data,
                                                  const std::string& task_name,
                                                  const std::string& control,
                                                  const std::string& cell_dir);

// The (task, control) runs of a cell: every task ("none"), plus the second-segment-only control
// ("second_only") of every pair task for the baseline when controls are on, and every probe task
// from scratch ("scratch") with probe_scratch.
std::vector<std::pair<std::string, std::string>> CellRuns(const StudyConfig& config,
                                                          const CellSpec& cell);

// Runs (or reuses) one cell: pretraining, perplexity, finetuning; then writes cell.json.
// `where` names the cell in progress lines ("cell 2/6 gmlp-tiny").
absl::StatusOr<CellResult> RunCell(const StudyConfig& config, const StudyData& data,
                                   const CellSpec& cell, const std::string& where,
                                   const Progress& progress);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_CELL_RUN_H_
