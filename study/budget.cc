// --budget: the plan that sizes the study's pretraining (budget.h).
#include "study/budget.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "kernels/policy.h"
#include "model/heads.h"
#include "pretrain/dist.h"
#include "pretrain/run.h"
#include "pretrain/synthetic_loader.h"
#include "pretrain/trainer.h"
#include "study/cell_run.h"
#include "study/tasks.h"

namespace gmlp::study {
namespace {

double Minutes(double seconds) { return seconds / 60; }

// Every cell's evaluation and finetuning seconds, the cost the steps do not scale.
double FixedSeconds(const std::vector<CellCost>& cells) {
  double s = 0;
  for (const CellCost& c : cells) s += c.finetune_seconds + c.overhead_steps * c.step_seconds;
  return s;
}

double StepSecondsSum(const std::vector<CellCost>& cells) {
  double s = 0;
  for (const CellCost& c : cells) s += c.step_seconds;
  return s;
}

}  // namespace

double BudgetPlan::pretrain_seconds() const {
  double s = 0;
  for (const CellCost& c : cells) {
    s += (static_cast<double>(steps) + c.overhead_steps) * c.step_seconds;
  }
  return s;
}

double BudgetPlan::finetune_seconds() const {
  double s = 0;
  for (const CellCost& c : cells) s += c.finetune_seconds;
  return s;
}

double BudgetPlan::MinutesFor(int64_t tokens) const {
  if (tokens_per_step <= 0) return 0;
  const double steps_needed = std::ceil(static_cast<double>(tokens) / tokens_per_step);
  return Minutes((spent_seconds + FixedSeconds(cells) + steps_needed * StepSecondsSum(cells)) /
                 kBudgetFill);
}

nlohmann::json BudgetPlan::ToJson() const {
  nlohmann::json cells_json = nlohmann::json::array();
  for (const CellCost& c : cells) {
    cells_json.push_back({{"cell", c.cell},
                          {"step_seconds", c.step_seconds},
                          {"overhead_steps", c.overhead_steps},
                          {"finetune_seconds", c.finetune_seconds}});
  }
  return {{"budget_seconds", budget_seconds},
          {"spent_seconds", spent_seconds},
          {"tokens_per_step", tokens_per_step},
          {"steps", steps},
          {"cells", cells_json}};
}

absl::StatusOr<BudgetPlan> BudgetPlan::FromJson(const nlohmann::json& j,
                                                const std::string& origin) {
  BudgetPlan p;
  try {
    p.budget_seconds = j.at("budget_seconds").get<double>();
    p.spent_seconds = j.at("spent_seconds").get<double>();
    p.tokens_per_step = j.at("tokens_per_step").get<int64_t>();
    p.steps = j.at("steps").get<int64_t>();
    for (const nlohmann::json& c : j.at("cells")) {
      p.cells.push_back({c.at("cell").get<std::string>(), c.at("step_seconds").get<double>(),
                         c.at("overhead_steps").get<double>(),
                         c.at("finetune_seconds").get<double>()});
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(absl::StrCat(origin, ": not a budget plan (", e.what(), "); ", kRedo,
                                            " (the study measures again)"));
  }
  return p;
}

absl::StatusOr<int64_t> StepsWithinBudget(double budget_seconds, double spent_seconds,
                                          const std::vector<CellCost>& cells) {
  const double per_step = StepSecondsSum(cells);
  const double fixed = FixedSeconds(cells);
  const double left = kBudgetFill * budget_seconds - spent_seconds - fixed;
  if (per_step <= 0 || left < per_step) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--budget=%g: the data stages (%.1f min) and the estimated finetuning and evaluations "
        "(%.1f min) leave no time for pretraining within %.0f%% of it; raise --budget (%.0f "
        "min would buy 1,000 steps per cell on this machine), or run fewer tasks or seeds, or "
        "set --pretrain_steps",
        Minutes(budget_seconds), Minutes(spent_seconds), Minutes(fixed), kBudgetFill * 100,
        Minutes((spent_seconds + fixed + 1000 * per_step) / kBudgetFill)));
  }
  return static_cast<int64_t>(std::floor(left / per_step));
}

namespace {

// Calls visit(task, control, training examples) for every finetuning run of `cell` (all its
// seeds, epochs and lrs counted in the examples).
template <typename Visit>
absl::Status ForEachFinetuneRun(const StudyConfig& config, const CellSpec& cell, Visit visit) {
  for (const auto& [task, control] : CellRuns(config, cell)) {
    // The job the cell runs (its epochs and seeds); no file is read.
    GMLP_ASSIGN_OR_RETURN(const finetune::FinetuneJob job,
                          CellTaskJob(config, StudyData{}, task, control, cell.name));
    // A probe task trains on its probe_train_examples pairs, all there are.
    const int64_t examples =
        IsProbeTask(task) ? config.probe.train_examples : job.max_train_examples;
    if (examples <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--budget needs --max_train_examples > 0 to estimate finetuning (task ", task,
          " would train on all its examples); set it, or give --pretrain_steps"));
    }
    const int64_t lrs = std::max<int64_t>(1, static_cast<int64_t>(job.lr_grid.size()));
    visit(task, control,
          examples * job.options.epochs * static_cast<int64_t>(job.seeds.size()) * lrs);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> FinetuneExamples(const StudyConfig& config, const CellSpec& cell) {
  int64_t total = 0;
  GMLP_RETURN_IF_ERROR(ForEachFinetuneRun(
      config, cell,
      [&](const std::string&, const std::string&, int64_t examples) { total += examples; }));
  return total;
}

double FinetuneCostPerToken(const std::string& task, const std::string& control) {
  if (control == "second_only") return kSecondOnlyCostPerToken;
  if (IsProbeTask(task)) return kProbeCostPerToken;
  if (task == "SST-2") return kSst2CostPerToken;
  if (task == "SICK") return kSickCostPerToken;
  return kMnliLikeCostPerToken;  // MNLI-like's, the largest measured
}

absl::StatusOr<double> FinetuneTokenEquivalents(const StudyConfig& config, const CellSpec& cell) {
  const double max_len = static_cast<double>(config.finetune.max_len);
  double total = 0;
  GMLP_RETURN_IF_ERROR(ForEachFinetuneRun(
      config, cell, [&](const std::string& task, const std::string& control, int64_t examples) {
        total += static_cast<double>(examples) * max_len * FinetuneCostPerToken(task, control);
      }));
  return total;
}

absl::StatusOr<double> MeasureStepSeconds(const CellSpec& cell, int64_t vocab_size, int64_t seq_len,
                                          const std::string& scratch_dir, int warmup, int steps) {
  model::EncoderConfig model_config = cell.pretrain.model;
  model_config.vocab_size = vocab_size;
  model_config.max_seq_len = seq_len;
  torch::manual_seed(1);
  model::MlmModel mlm(model_config);
  const pretrain::DistEnv env;  // one process: the time of a step on this machine
  mlm->to(pretrain::TrainingDevice(env));
  pretrain::TrainerOptions options;
  options.config = cell.pretrain.train;
  options.config.out_dir = scratch_dir;
  options.config.tensorboard_dir = "none";
  options.config.steps = std::numeric_limits<int32_t>::max();
  options.config.warmup_steps = 0;
  options.quiet = true;
  const int64_t batch = options.config.micro_batch;
  options.config.global_batch = batch;
  pretrain::SyntheticMlmLoader loader(vocab_size, seq_len, batch, /*seed=*/1);
  kernels::SetPolicy(*kernels::ParsePolicy(options.config.kernels));
  GMLP_RETURN_IF_ERROR(RemoveTree(scratch_dir));
  GMLP_RETURN_IF_ERROR(MakeDirs(scratch_dir));
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<pretrain::Dist> dist,
                        pretrain::Dist::Connect(env, std::chrono::seconds(60)));
  double seconds = 0;
  {
    pretrain::Trainer trainer(
        options, mlm.ptr(),
        [mlm](const model::EncoderInput& in, const torch::Tensor& idx) mutable {
          return mlm->forward(in, idx);
        },
        &loader, nullptr, dist.get());
    GMLP_RETURN_IF_ERROR(trainer.Init());
    for (int i = 0; i < warmup; ++i) GMLP_RETURN_IF_ERROR(trainer.TrainStep().status());
    const auto start = std::chrono::steady_clock::now();
    // As pretraining between its log lines: only the last step waits for the device.
    for (int i = 0; i < steps; ++i) {
      GMLP_RETURN_IF_ERROR(trainer.TrainStep(/*sync=*/i == steps - 1).status());
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  GMLP_RETURN_IF_ERROR(RemoveTree(scratch_dir));
  return seconds / steps;
}

absl::StatusOr<BudgetPlan> PlanBudget(const StudyConfig& config, const std::vector<CellSpec>& cells,
                                      int64_t vocab_size, int64_t seq_len, double spent_seconds,
                                      const Progress& progress) {
  BudgetPlan plan;
  plan.budget_seconds = config.budget_minutes * 60;
  plan.spent_seconds = spent_seconds;
  plan.tokens_per_step = config.pretraining.global_batch * seq_len;
  const std::string scratch = JoinPath(config.output, "budget.measure");
  for (const CellSpec& cell : cells) {
    CellCost cost;
    cost.cell = cell.name;
    GMLP_ASSIGN_OR_RETURN(cost.step_seconds,
                          MeasureStepSeconds(cell, vocab_size, seq_len, scratch));
    // The curve's evaluations and the held-out loss: forward passes, about a third of a step.
    cost.overhead_steps =
        static_cast<double>((config.curve_points + 1) * config.pretraining.eval_batches) / 3;
    GMLP_ASSIGN_OR_RETURN(const int64_t examples, FinetuneExamples(config, cell));
    GMLP_ASSIGN_OR_RETURN(const double equivalents, FinetuneTokenEquivalents(config, cell));
    const double tokens_per_second = plan.tokens_per_step / cost.step_seconds;
    cost.finetune_seconds = equivalents / tokens_per_second;
    progress(absl::StrFormat(
        "budget: %s pretrains %.0f tokens/s here (%.2f s a step); its %d finetuning examples: "
        "about %.1f min",
        cell.name, tokens_per_second, cost.step_seconds, examples, Minutes(cost.finetune_seconds)));
    plan.cells.push_back(std::move(cost));
  }
  GMLP_ASSIGN_OR_RETURN(plan.steps,
                        StepsWithinBudget(plan.budget_seconds, spent_seconds, plan.cells));
  progress(absl::StrFormat(
      "budget: %g min: %d pretraining steps per cell (%.2fM tokens), about %.1f min of "
      "pretraining and %.1f of finetuning after %.1f min of data stages",
      config.budget_minutes, plan.steps, plan.tokens_per_cell() / 1e6,
      Minutes(plan.pretrain_seconds()), Minutes(plan.finetune_seconds()), Minutes(spent_seconds)));
  return plan;
}

std::string BudgetFile(const StudyConfig& config) { return JoinPath(config.output, "budget.json"); }

std::vector<std::string> BudgetNotes(const BudgetPlan& plan, double study_seconds) {
  std::vector<std::string> cells;
  for (const CellCost& c : plan.cells) {
    cells.push_back(absl::StrFormat("%s %.2f s", c.cell, c.step_seconds));
  }
  std::vector<std::string> notes;
  notes.push_back(absl::StrFormat(
      "Budget (`--budget=%g`, minutes): measured per pretraining step on this machine: %s. The "
      "plan gave each cell %d steps (%.2fM tokens), estimated %.0f min of pretraining and %.0f "
      "of finetuning after %.1f of data stages (%.0f%% of the budget planned)%s.",
      Minutes(plan.budget_seconds), absl::StrJoin(cells, ", "), plan.steps,
      plan.tokens_per_cell() / 1e6, Minutes(plan.pretrain_seconds()),
      Minutes(plan.finetune_seconds()), Minutes(plan.spent_seconds), kBudgetFill * 100,
      study_seconds > 0 ? absl::StrFormat("; this invocation took %.0f min", Minutes(study_seconds))
                        : ""));
  if (plan.tokens_per_cell() < kTokensThatJudged) {
    const bool below_floor = plan.tokens_per_cell() < kTokensThatClearedTheFloor;
    notes.push_back(absl::StrFormat(
        "**Small budget:** %.2fM pretraining tokens per cell is less than the %.2fM with which "
        "the default study judged cross_vs_single and amlp_closes_gap "
        "(results/2026-12-07-default-lr-grid); with 8.74M every verdict read \"cannot judge\" "
        "(results/2026-12-07-default-avx2-capped) and 9.07M judged them by a small margin "
        "(results/2026-12-07-default-fp32), %.2fM took the tiny cells clearly below the "
        "context-free floor (results/2026-12-01-cpu-3h) and 5.3M did not: %s. About "
        "`--budget=%.0f` buys %.2fM tokens per cell on this machine (`--budget=%.0f` buys "
        "%.2fM).",
        plan.tokens_per_cell() / 1e6, kTokensThatJudged / 1e6, kTokensThatClearedTheFloor / 1e6,
        below_floor ? "expect cells near the floor and \"cannot judge\" verdicts"
                    : "verdicts may read \"cannot judge\"",
        std::ceil(plan.MinutesFor(kTokensThatJudged)), kTokensThatJudged / 1e6,
        std::ceil(plan.MinutesFor(kTokensThatClearedTheFloor)), kTokensThatClearedTheFloor / 1e6));
  }
  return notes;
}

}  // namespace gmlp::study
