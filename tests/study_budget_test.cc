// `gmlp study --budget`: the arithmetic that sizes pretraining (known answers), the finetuning
// examples it estimates from, a real step measurement, the plan's record, and a resumed study
// keeping the steps it recorded.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "study/budget.h"
#include "study/cells.h"
#include "study/config.h"
#include "study/study.h"

namespace gmlp::study {
namespace {

std::string TempDir(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/study_budget_", name, "_", getpid());
}

// Two cells: 0.5 s and 1.5 s a step, 30 evaluation steps each, 100 s and 300 s of finetuning.
std::vector<CellCost> TwoCells() { return {{"a", 0.5, 30, 100}, {"b", 1.5, 30, 300}}; }

TEST(StudyBudgetTest, StepsFillTheBudgetAfterDataFinetuningAndEvaluations) {
  // 0.9 x 3600 = 3240 s; minus 40 s of data stages, 400 s of finetuning and 30 x 2 s of
  // evaluations leaves 2740 s at 2 s per step (both cells): 1370 steps.
  auto steps = StepsWithinBudget(3600, 40, TwoCells());
  ASSERT_TRUE(steps.ok()) << steps.status();
  EXPECT_EQ(*steps, 1370);
  // One second less for pretraining: one step fewer.
  EXPECT_EQ(*StepsWithinBudget(3600 - 1 / kBudgetFill - 1e-9, 40, TwoCells()), 1369);

  BudgetPlan plan;
  plan.budget_seconds = 3600;
  plan.spent_seconds = 40;
  plan.tokens_per_step = 4096;
  plan.cells = TwoCells();
  plan.steps = *steps;
  EXPECT_EQ(plan.tokens_per_cell(), 1370 * 4096);
  EXPECT_DOUBLE_EQ(plan.finetune_seconds(), 400);
  EXPECT_DOUBLE_EQ(plan.pretrain_seconds(), (1370 + 30) * 2.0);
  // The plan fills the share it promised, to within one step.
  const double planned = plan.spent_seconds + plan.pretrain_seconds() + plan.finetune_seconds();
  EXPECT_LE(planned, kBudgetFill * 3600);
  EXPECT_GT(planned + 2, kBudgetFill * 3600);
  // The budget for 2,500 steps: (40 + 460 + 5000) / 0.9 s.
  EXPECT_NEAR(plan.MinutesFor(2500 * 4096), 5500 / kBudgetFill / 60, 1e-9);
}

TEST(StudyBudgetTest, ABudgetWithNoTimeForPretrainingSaysWhatToChange) {
  auto steps = StepsWithinBudget(600, 40, TwoCells());  // 540 - 40 - 460 = 40 s: 20 steps
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, 20);
  steps = StepsWithinBudget(500, 40, TwoCells());  // 450 - 500 < 0
  ASSERT_FALSE(steps.ok());
  const std::string message(steps.status().message());
  EXPECT_NE(message.find("--budget=8.33333: the data stages (0.7 min) and the estimated "
                         "finetuning and evaluations (7.7 min) leave no time for pretraining"),
            std::string::npos)
      << message;
  // (40 + 460 + 2000) / 0.9 s = 46.3 min buys 1,000 steps.
  EXPECT_NE(message.find("raise --budget (46 min would buy 1,000 steps per cell"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--pretrain_steps"), std::string::npos) << message;
}

// 3 seeds, 1,000 examples x 3 epochs a task, the probe 2,000 pairs x 5 epochs, controls on.
StudyConfig FinetuneCountConfig(std::vector<std::string> tasks, std::vector<double> lr_grid) {
  StudyConfig c;
  c.tasks = std::move(tasks);
  c.seeds = {1, 2, 3};
  c.lr_grid = std::move(lr_grid);
  c.max_train_examples = 1000;
  c.finetune.epochs = 3;
  c.probe.train_examples = 2000;
  c.probe_epochs = 5;
  c.controls = true;
  c.pretraining.steps = 10;
  return c;
}

TEST(StudyBudgetTest, FinetuneExamplesCountEveryRunOfTheCell) {
  StudyConfig c = FinetuneCountConfig({"SST-2", "MNLI-like", "probe-aligned"},
                                      /*lr_grid=*/{});  // one lr: each run once
  auto cells = Cells(c);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->front().encoder, BaselineEncoder(c));
  // Every cell: SST-2 and MNLI-like 1000 x 3 epochs, the probe 2000 x 5, each x 3 seeds.
  const int64_t per_cell = 3 * (1000 * 3 + 1000 * 3 + 2000 * 5);
  // The baseline also runs the second-segment-only control of both pair tasks.
  EXPECT_EQ(*FinetuneExamples(c, cells->front()), per_cell + 3 * (1000 * 3 + 2000 * 5));
  EXPECT_EQ(*FinetuneExamples(c, cells->back()), per_cell);
  c.probe_scratch = true;  // and every encoder the probe from scratch
  EXPECT_EQ(*FinetuneExamples(c, cells->back()), per_cell + 3 * 2000 * 5);
  // The default lr grid (two lrs) runs each of them twice, except the probe's tasks when they
  // have a probe_lr of their own.
  c.lr_grid = {1e-3, 3e-3};
  EXPECT_EQ(*FinetuneExamples(c, cells->back()), 2 * (per_cell + 3 * 2000 * 5));
  c.probe_lr = 3e-4;
  EXPECT_EQ(*FinetuneExamples(c, cells->back()), 2 * 3 * (1000 * 3 + 1000 * 3) + 2 * 3 * 2000 * 5);
  c.probe_lr = 0;

  c.max_train_examples = 0;  // all of each task's examples: no estimate
  auto all = FinetuneExamples(c, cells->back());
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("--budget needs --max_train_examples > 0"),
            std::string::npos)
      << all.status();
}

TEST(StudyBudgetTest, FinetuningCostsEachRunAtItsTasksMeasuredRate) {
  StudyConfig c = FinetuneCountConfig({"SST-2", "SICK", "RTE", "probe-aligned"}, {1e-3, 3e-3});
  c.finetune.max_len = 128;
  auto cells = Cells(c);
  ASSERT_TRUE(cells.ok()) << cells.status();
  // Each run: examples x epochs x 3 seeds x 2 lrs x 128 tokens x its cost per token; RTE was
  // not measured and costs what MNLI-like does.
  const double glue = 1000.0 * 3 * 3 * 2 * 128;
  const double probe = 2000.0 * 5 * 3 * 2 * 128;
  const double encoder = glue * (kSst2CostPerToken + kSickCostPerToken + kMnliLikeCostPerToken) +
                         probe * kProbeCostPerToken;
  EXPECT_NEAR(*FinetuneTokenEquivalents(c, cells->back()), encoder, 1e-6);
  // The baseline's second-segment-only controls of the three pair tasks, at their own rate.
  EXPECT_NEAR(*FinetuneTokenEquivalents(c, cells->front()),
              encoder + (2 * glue + probe) * kSecondOnlyCostPerToken, 1e-6);
  EXPECT_EQ(FinetuneCostPerToken("probe-shift-8", "scratch"), kProbeCostPerToken);
  EXPECT_EQ(FinetuneCostPerToken("MNLI-like", "none"), kMnliLikeCostPerToken);
}

// A real measurement: a one-layer cell's step, finite and positive, its throwaway run removed.
TEST(StudyBudgetTest, MeasuresAStepOfTheCellOnThisMachine) {
  torch::set_num_threads(2);
  StudyConfig c;
  c.archs = {"gmlp"};
  c.model_overrides = "n_layers=1,d_model=32,d_ffn=64";
  c.pretraining.global_batch = 4;
  c.pretraining.steps = 10;
  c.pretraining.bf16 = false;
  auto cells = Cells(c);
  ASSERT_TRUE(cells.ok()) << cells.status();
  const std::string dir = TempDir("measure");
  auto seconds = MeasureStepSeconds(cells->front(), 200, 32, dir, 1, 2);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_GT(*seconds, 0);
  EXPECT_LT(*seconds, 10);
  EXPECT_FALSE(PathExists(dir));
}

TEST(StudyBudgetTest, PlanRoundTripsAndWarnsBelowWhatJudged) {
  BudgetPlan plan;
  plan.budget_seconds = 3600;
  plan.spent_seconds = 40;
  plan.tokens_per_step = 4096;
  plan.cells = TwoCells();
  plan.steps = 1370;
  auto back = BudgetPlan::FromJson(plan.ToJson(), "budget.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), plan.ToJson());
  auto bad = BudgetPlan::FromJson(nlohmann::json{{"steps", 3}}, "/x/budget.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/x/budget.json: not a budget plan"), std::string::npos);

  // 1370 x 4096 = 5.61M tokens: below the 10.24M that cleared the floor.
  std::vector<std::string> notes = BudgetNotes(plan, 3000);
  ASSERT_EQ(notes.size(), 2u) << absl::StrJoin(notes, "\n");
  EXPECT_NE(notes[0].find("`--budget=60`"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("a 0.50 s, b 1.50 s"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("1370 steps (5.61M tokens)"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("this invocation took 50 min"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("5.61M pretraining tokens per cell"), std::string::npos) << notes[1];
  EXPECT_NE(notes[1].find("expect cells near the floor"), std::string::npos) << notes[1];
  // 7053 steps: (40 + 460 + 14106) / 0.9 s = 270.5 min; 2500 steps: (40 + 460 + 5000) / 0.9 s
  // = 101.9 min.
  EXPECT_NE(notes[1].find("About `--budget=271` buys 28.89M tokens per cell on this machine "
                          "(`--budget=102` buys 10.24M)"),
            std::string::npos)
      << notes[1];
  // Clear of the floor but short of what judged: a milder warning.
  plan.steps = 2500;
  notes = BudgetNotes(plan, 0);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("verdicts may read \"cannot judge\""), std::string::npos) << notes[1];
  EXPECT_EQ(notes[1].find("expect cells near the floor"), std::string::npos) << notes[1];
  plan.steps = 7053;
  EXPECT_EQ(BudgetNotes(plan, 0).size(), 1u);
}

// A study sized by its budget resumes with the steps it recorded: it does not measure again
// (the data stages would fail here: there is no data).
TEST(StudyBudgetTest, AResumedStudyKeepsTheStepsItRecorded) {
  StudyConfig c;
  c.output = TempDir("resume");
  c.data_dir = "/nonexistent";
  ASSERT_TRUE(MakeDirs(c.output).ok());
  StudyConfig sized = c;
  sized.pretraining.steps = 777;
  ASSERT_TRUE(WriteFileAtomic(JoinPath(c.output, "study.json"), sized.ToJson().dump(2)).ok());
  auto report = RunStudy(c);  // pretrain_steps 0: sized by --budget
  ASSERT_FALSE(report.ok());
  // It got as far as the data (no measurement, no budget.json), with the recorded steps.
  EXPECT_NE(report.status().message().find("/nonexistent"), std::string::npos) << report.status();
  EXPECT_FALSE(PathExists(JoinPath(c.output, "budget.json")));
  auto recorded = ReadFile(JoinPath(c.output, "study.json"));
  ASSERT_TRUE(recorded.ok());
  EXPECT_NE(recorded->find("\"pretrain_steps\": 777"), std::string::npos) << *recorded;
  // Other steps given explicitly are a change of settings.
  StudyConfig other = c;
  other.pretraining.steps = 500;
  report = RunStudy(other);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("pretrain_steps: 777 -> 500"), std::string::npos)
      << report.status();
  ASSERT_TRUE(RemoveTree(c.output).ok());
}

TEST(StudyBudgetTest, ZeroStepsNeedABudget) {
  StudyConfig c;
  EXPECT_EQ(c.pretraining.steps, 0);  // the default: sized by the budget
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  c.budget_minutes = 0;
  EXPECT_NE(std::string(c.Validate().message()).find("give --budget=MINUTES or --pretrain_steps"),
            std::string::npos)
      << c.Validate();
  c.pretraining.steps = 100;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  c.budget_minutes = -1;
  EXPECT_NE(std::string(c.Validate().message()).find("--budget=-1.0 must be minutes in [0, 1e6]"),
            std::string::npos)
      << c.Validate();
}

}  // namespace
}  // namespace gmlp::study
