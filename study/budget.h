// `gmlp study --budget=MIN`: sizes every cell's pretraining (the same steps for every cell) so
// that the whole study fits a wall-clock budget on this machine. After the data stages it times
// a few training steps of each cell's model on a synthetic batch, estimates each cell's
// finetuning from that throughput, and gives pretraining what is left. budget.json in the study
// directory records the plan; the report says what the budget bought.
#ifndef GMLP_STUDY_BUDGET_H_
#define GMLP_STUDY_BUDGET_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/cells.h"
#include "study/config.h"
#include "study/progress.h"

namespace gmlp::study {

// Where a run's finetuning time goes, in pretraining-token equivalents per finetuning example
// and token of max_len (evaluation of the dev and test splits included): measured on the
// default study of 2026-12-02 (results/2026-12-02-default/study.json's timings, pretraining
// ~6,400 tokens/s): SST-2 0.23, the probe 0.50, MNLI-like 0.65 (its 5,010-pair test split).
// The largest is taken, so the estimate errs towards less pretraining.
inline constexpr double kFinetuneCostPerToken = 0.65;
// The share of the budget the plan fills; the rest absorbs estimation error.
inline constexpr double kBudgetFill = 0.9;
// Pretraining tokens per cell that cleared the context-free floor in the long CPU run
// (results/2026-12-01-cpu-3h: 10.24M tokens, 0.3-1.3 nats below it at tiny); 5.3M did not
// (results/2026-12-02-default).
inline constexpr int64_t kTokensThatClearedTheFloor = 10240000;
// Pretraining tokens per cell with which the default study judged cross_vs_single and
// amlp_closes_gap (results/2026-12-07-default-lr-grid: 7,053 steps of 4,096 tokens); with 8.74M
// every verdict read "cannot judge" (results/2026-12-07-default-avx2-capped: the Transformer
// 0.18 nats below the floor, not clear of its SICK control). The report warns below this.
inline constexpr int64_t kTokensThatJudged = int64_t{7053} * 4096;

// One cell's measured and estimated costs.
struct CellCost {
  std::string cell;
  double step_seconds = 0;      // one pretraining step (global_batch x seq_len tokens), measured
  double overhead_steps = 0;    // held-out evaluations during and after pretraining, in steps
  double finetune_seconds = 0;  // every finetuning run of the cell, estimated
};

struct BudgetPlan {
  double budget_seconds = 0;
  double spent_seconds = 0;  // by the study before the plan (data stages)
  int64_t tokens_per_step = 0;
  std::vector<CellCost> cells;
  int64_t steps = 0;  // pretraining steps per cell

  int64_t tokens_per_cell() const { return steps * tokens_per_step; }
  // Estimated seconds of all pretraining (evaluations included), and of all finetuning.
  double pretrain_seconds() const;
  double finetune_seconds() const;
  // The budget (minutes) at which this machine would pretrain `tokens` per cell, by this plan's
  // measurements.
  double MinutesFor(int64_t tokens) const;
  nlohmann::json ToJson() const;
  static absl::StatusOr<BudgetPlan> FromJson(const nlohmann::json& j, const std::string& origin);
};

// Steps per cell that fit: (kBudgetFill x budget - spent - finetuning - evaluations) / the sum of
// the cells' step times, rounded down. An error when not one step fits, naming the estimates and
// what to change.
absl::StatusOr<int64_t> StepsWithinBudget(double budget_seconds, double spent_seconds,
                                          const std::vector<CellCost>& cells);

// Training examples of every finetuning run of `cell` (tasks x seeds x epochs, with the
// controls and from-scratch runs the cell makes). Needs max_train_examples > 0 for the tasks
// that are not the probe.
absl::StatusOr<int64_t> FinetuneExamples(const StudyConfig& config, const CellSpec& cell);

// Seconds of one optimizer step of `cell`'s pretraining (its model with `vocab_size` and
// `seq_len`, its batch, bf16 and kernels) on this machine: `warmup` steps, then the mean of
// `steps` timed ones, on a synthetic batch; `scratch_dir` holds the throwaway run's records.
absl::StatusOr<double> MeasureStepSeconds(const CellSpec& cell, int64_t vocab_size, int64_t seq_len,
                                          const std::string& scratch_dir, int warmup = 2,
                                          int steps = 4);

// The plan of a study whose pretraining steps are 0 (sized by --budget): measures each cell
// (MeasureStepSeconds), estimates its finetuning, sizes the steps.
absl::StatusOr<BudgetPlan> PlanBudget(const StudyConfig& config, const std::vector<CellSpec>& cells,
                                      int64_t vocab_size, int64_t seq_len, double spent_seconds,
                                      const Progress& progress);

// <output>/budget.json.
std::string BudgetFile(const StudyConfig& config);

// The report's lines on the plan: what the budget bought, and a warning when that is below
// what cleared the context-free floor before.
std::vector<std::string> BudgetNotes(const BudgetPlan& plan, double study_seconds);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_BUDGET_H_
