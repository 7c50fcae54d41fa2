// End to end on the shared data (skipped without it): a three-cell study (tokenizer, shards,
// the alignment probe, pretraining with its learning curve, perplexity, finetuning on SST-2,
// MNLI-like and both probe versions with two seeds, the baseline's second-segment-only controls;
// the ALiBi Transformer as the baseline, the learned-position one beside it) writes results.csv
// with every seed's predictions, report.md and the plots, reports its finished cells alone
// (--report_only), resumes without redoing finished cells, and resumes from its export
// (scripts/export_study.sh) in another folder, also when a cell had finished only some of its
// tasks; then `gmlp finetune` from one of its pretrained encoders writes results, dev predictions,
// the GLUE submission file and a model that `gmlp predict` loads.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "finetune/finetune.h"
#include "finetune/saved_model.h"
#include "finetune/trainer.h"
#include "study/config.h"
#include "study/results_table.h"
#include "study/study.h"

namespace gmlp::finetune {
namespace {

using study::ApplyStudyPreset;
using study::RunStudy;
using study::StudyConfig;

const char kData[] = GMLP_SOURCE_DIR "/../shared/data";

int64_t MTimeNs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::vector<std::string> Lines(const std::string& path) {
  auto text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return absl::StrSplit(text.ok() ? *text : "", '\n', absl::SkipEmpty());
}

class EndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!IsDirectory(kData)) return;
    torch::set_num_threads(2);
    char tmpl[] = "/tmp/gmlp_study_e2e_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    config_ = new StudyConfig();
    ASSERT_TRUE(ApplyStudyPreset("smoke", config_).ok());
    config_->output = JoinPath(*dir_, "study");
    config_->data_dir = kData;
    config_->transformer_positions = {"alibi", "learned"};
    auto report = RunStudy(*config_);
    ASSERT_TRUE(report.ok()) << report.status();
    report_ = new std::string(*report);
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) std::system(("rm -rf '" + *dir_ + "'").c_str());
  }
  void SetUp() override {
    if (!IsDirectory(kData)) GTEST_SKIP() << "no shared data at " << kData;
    ASSERT_NE(report_, nullptr) << "the study did not run";
  }

  void StudyWritesCsvReportAndPlot();
  void StudySizedByBudget();
  void StudyResumesWithoutRedoingFinishedCells();
  void StudyExportResumesElsewhere();
  void StudyExportContinuesUnfinishedCell();
  void StudyAddsShiftProbeVersions();
  void FinetuneThenPredict();
  void PredictPairTask();

  static std::string* dir_;
  static StudyConfig* config_;
  static std::string* report_;
};
std::string* EndToEndTest::dir_ = nullptr;
StudyConfig* EndToEndTest::config_ = nullptr;
std::string* EndToEndTest::report_ = nullptr;

void EndToEndTest::StudyWritesCsvReportAndPlot() {
  const std::string out = config_->output;
  EXPECT_EQ(*report_, JoinPath(out, "report.md"));
  // 3 cells x 4 tasks x 2 seeds, the baseline's second-segment-only control on the 3 pair
  // tasks x 2 seeds, one majority row per task, the header.
  const std::vector<std::string> rows = Lines(JoinPath(out, "results.csv"));
  EXPECT_EQ(rows.size(), 3u * 4 * 2 + 3 * 2 + 4 + 1);
  // Every seed's predictions are there and match the table (ReadResultsTable checks counts).
  auto table = study::ReadResultsTable(JoinPath(out, "results.csv"));
  ASSERT_TRUE(table.ok()) << table.status();
  for (const study::ResultRow& r : *table) {
    if (r.control == "majority") continue;
    EXPECT_EQ(static_cast<int64_t>(r.correct.size()), r.n_examples) << r.predictions;
    EXPECT_GT(r.n_examples, 0);
  }
  auto md = ReadFile(*report_);
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("## Finding"), std::string::npos);
  EXPECT_NE(md->find("| tiny | SST-2 | dev | gmlp |"), std::string::npos) << *md;
  EXPECT_NE(md->find("| tiny | MNLI-like | xnli_en_test | gmlp |"), std::string::npos) << *md;
  EXPECT_NE(md->find("| tiny | probe-shifted | test | gmlp |"), std::string::npos) << *md;
  EXPECT_NE(md->find("Transformer-tiny (ALiBi) *(second segment only)*"), std::string::npos) << *md;
  // The learned-position Transformer is compared with the ALiBi baseline like any encoder.
  EXPECT_NE(md->find("| tiny | SST-2 | dev | transformer |"), std::string::npos) << *md;
  // Each Transformer cell pretrained with its own positions.
  for (const auto& [cell, position] :
       {std::pair<const char*, const char*>{"transformer-tiny-alibi", "alibi"},
        std::pair<const char*, const char*>{"transformer-tiny", "learned"}}) {
    auto config = ReadFile(JoinPath(out, absl::StrCat("cells/", cell, "/pretrain/config.json")));
    ASSERT_TRUE(config.ok()) << cell;
    EXPECT_EQ(nlohmann::json::parse(*config)["model"]["position"], position) << cell;
  }
  EXPECT_NE(md->find("Plainly:"), std::string::npos);
  EXPECT_NE(md->find("## Where the time went"), std::string::npos);
  EXPECT_NE(md->find("- wall time of this invocation: "), std::string::npos);
  EXPECT_NE(md->find("## Held-out MLM perplexity"), std::string::npos);
  // The context-free floor, computed from the study's own shards: a loss above 0 and below
  // the log of the vocabulary (the uniform guess).
  const size_t floor_at = md->find("**Context-free floor: ");
  ASSERT_NE(floor_at, std::string::npos) << *md;
  const double floor = std::stod(md->substr(floor_at + 23, 6));
  EXPECT_GT(floor, 0.5);
  EXPECT_LT(floor, std::log(static_cast<double>(config_->tokenizer_training.vocab_size)));
  // SST-2's epoch is selected on examples held out from train, not on the reported dev.
  auto sst = ReadFile(JoinPath(out, "cells/gmlp-tiny/ft/SST-2/results.json"));
  ASSERT_TRUE(sst.ok());
  EXPECT_EQ(nlohmann::json::parse(*sst)["selection_split"], "train_heldout");
  // The learning curve: curve_points evaluations while pretraining.
  EXPECT_EQ(Lines(JoinPath(out, "curves.csv")).size(), 3u * 2 + 1);
  auto study_json = ReadFile(JoinPath(out, "study.json"));
  ASSERT_TRUE(study_json.ok());
  EXPECT_GT(nlohmann::json::parse(*study_json)["timings"].size(), 4u);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    for (const char* f : {"accuracy_vs_params.png", "accuracy_vs_params.svg"}) {
      auto size = FileSize(JoinPath(out, f));
      ASSERT_TRUE(size.ok()) << f;
      EXPECT_GT(*size, 1000) << f;
    }
  }
}

// `--pretrain_steps=0 --budget=0.5`: one cell on the smoke study's tokenizer and shards (so no
// data stages), its steps sized by timing it on this machine; the plan is recorded and reported.
void EndToEndTest::StudySizedByBudget() {
  StudyConfig c = *config_;
  c.output = JoinPath(*dir_, "budget");
  c.tokenizer = JoinPath(config_->output, "data/tokenizer.model");
  c.shards = JoinPath(config_->output, "data/shards");
  c.archs = {"gmlp"};
  c.tasks = {"SST-2"};
  c.seeds = {1};
  c.pretraining.steps = 0;
  c.budget_minutes = 0.5;
  const auto start = std::chrono::steady_clock::now();
  auto report = RunStudy(c);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(report.ok()) << report.status();
  auto plan = ReadFile(JoinPath(c.output, "budget.json"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const nlohmann::json j = nlohmann::json::parse(*plan);
  const int64_t steps = j["steps"];
  EXPECT_GT(steps, 0);
  EXPECT_TRUE(j.contains("made_by"));
  ASSERT_EQ(j["cells"].size(), 1u);
  EXPECT_GT(j["cells"][0]["step_seconds"].get<double>(), 0);
  // The study and its one cell ran those steps.
  auto study_json = ReadFile(JoinPath(c.output, "study.json"));
  ASSERT_TRUE(study_json.ok());
  EXPECT_EQ(nlohmann::json::parse(*study_json)["pretrain_steps"], steps);
  auto cell_config = ReadFile(JoinPath(c.output, "cells/gmlp-tiny/pretrain/config.json"));
  ASSERT_TRUE(cell_config.ok());
  EXPECT_EQ(nlohmann::json::parse(*cell_config)["steps"], steps);
  auto md = ReadFile(*report);
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find(absl::StrCat("Budget (`--budget=0.5`, minutes)")), std::string::npos) << *md;
  EXPECT_NE(md->find(absl::StrCat("The plan gave each cell ", steps, " steps")), std::string::npos)
      << *md;
  // Not a speed test: a plan off by a large factor (steps mis-sized) would show here. The plan
  // fills 90% of the 30 s; the bound leaves room for a loaded machine.
  EXPECT_LT(seconds, 4 * 30) << "planned " << steps << " steps";
}

void EndToEndTest::StudyResumesWithoutRedoingFinishedCells() {
  const std::string out = config_->output;
  const std::string done_t = JoinPath(out, "cells/transformer-tiny/cell.json");
  const std::string done_g = JoinPath(out, "cells/gmlp-tiny/cell.json");
  const int64_t t_before = MTimeNs(done_t);
  ASSERT_GT(t_before, 0);
  // Simulate a kill during the second cell's finetuning: its marker and one task are gone.
  ASSERT_EQ(std::remove(done_g.c_str()), 0);
  std::system(("rm -rf '" + JoinPath(out, "cells/gmlp-tiny/ft/MNLI-like") + "'").c_str());
  const int64_t sst_before = MTimeNs(JoinPath(out, "cells/gmlp-tiny/ft/SST-2/results.json"));
  {
    // Meanwhile, an interim report of the finished cell alone, running nothing.
    auto interim = study::ReportStudySoFar(*config_);
    ASSERT_TRUE(interim.ok()) << interim.status();
    auto md = ReadFile(*interim);
    ASSERT_TRUE(md.ok());
    EXPECT_NE(md->find("**Interim report** (`--report_only`): 2 of 3 cells have finished; not "
                       "yet: gmlp-tiny."),
              std::string::npos)
        << *md;
    EXPECT_EQ(md->find("| tiny | SST-2 | dev | gmlp |"), std::string::npos) << *md;
    // It ran nothing, so it states no wall time of its own.
    EXPECT_EQ(md->find("wall time of this invocation"), std::string::npos) << *md;
    // The Transformers' 4 tasks x 2 seeds, the baseline's 3 controls x 2 seeds, 4 majority
    // rows, header.
    EXPECT_EQ(Lines(JoinPath(out, "results.csv")).size(), 2u * 4 * 2 + 3 * 2 + 4 + 1);
    EXPECT_FALSE(PathExists(done_g));
    EXPECT_FALSE(PathExists(JoinPath(out, "cells/gmlp-tiny/ft/MNLI-like")));
    StudyConfig nowhere = *config_;
    nowhere.output = JoinPath(*dir_, "no-study-here");
    auto none = study::ReportStudySoFar(nowhere);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("without --report_only"), std::string::npos)
        << none.status();
  }
  // A pretraining log from before the trainer kept "elapsed_s" across resumes: killed at the
  // middle step after 1000 s, resumed, the rest took 10 s. The cell's pretraining time adds the
  // invocations up: 1010 s (the last record alone said 10).
  const double want_seconds = 1010;
  {
    const std::string log = JoinPath(out, "cells/gmlp-tiny/pretrain/metrics.jsonl");
    auto text = ReadFile(log);
    ASSERT_TRUE(text.ok());
    std::string edited;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      if (nlohmann::json::parse(line)["type"] == "train") continue;
      absl::StrAppend(&edited, line, "\n");
    }
    const int64_t steps = config_->pretraining.steps;
    for (const auto& [step, elapsed] :
         {std::pair<int64_t, double>{steps / 2, 1000.0}, std::pair<int64_t, double>{steps, 10.0}}) {
      absl::StrAppend(
          &edited,
          nlohmann::json({{"type", "train"}, {"step", step}, {"elapsed_s", elapsed}}).dump(), "\n");
    }
    ASSERT_TRUE(WriteFileAtomic(log, edited).ok());
  }
  auto report = RunStudy(*config_);
  ASSERT_TRUE(report.ok()) << report.status();
  {
    const auto cells = Lines(JoinPath(out, "cells.csv"));
    ASSERT_FALSE(cells.empty());
    const std::vector<std::string> header = absl::StrSplit(cells[0], ',');
    const auto column =
        std::find(header.begin(), header.end(), "pretrain_seconds") - header.begin();
    ASSERT_LT(column, static_cast<int64_t>(header.size()));
    bool found = false;
    for (const std::string& line : cells) {
      const std::vector<std::string> f = absl::StrSplit(line, ',');
      if (f[0] != "gmlp-tiny") continue;
      found = true;
      EXPECT_NEAR(std::stod(f[column]), want_seconds, 1e-6) << line;
    }
    EXPECT_TRUE(found);
  }
  EXPECT_EQ(MTimeNs(done_t), t_before);  // finished cell untouched
  EXPECT_EQ(MTimeNs(JoinPath(out, "cells/gmlp-tiny/ft/SST-2/results.json")), sst_before);
  EXPECT_GT(MTimeNs(done_g), 0);  // the interrupted cell was finished
  EXPECT_EQ(Lines(JoinPath(out, "results.csv")).size(), 3u * 4 * 2 + 3 * 2 + 4 + 1);
  // Other settings in the same directory are refused with a clear message.
  StudyConfig other = *config_;
  other.pretraining.steps += 1;
  auto refused = RunStudy(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("pretrain_steps"), std::string::npos);
  // So is another lr for cells already pretrained, by name, before study.json is touched.
  const auto study_json = ReadFile(JoinPath(out, "study.json"));
  ASSERT_TRUE(study_json.ok());
  other = *config_;
  other.pretrain_lr_by_size = {"tiny=0.125"};
  refused = RunStudy(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      refused.status().message().find("cells/transformer-tiny-alibi was pretrained at peak lr"),
      std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("lr 0.125"), std::string::npos) << refused.status();
  EXPECT_EQ(*ReadFile(JoinPath(out, "study.json")), *study_json);
}

// scripts/export_study.sh keeps what a finished study needs to be resumed in another folder (on
// another machine) without checkpoints, shards or the corpus extract; the resumed run redoes no
// cell, rebuilds the same shards from the kept tokenizer and writes the same tables.
void EndToEndTest::StudyExportResumesElsewhere() {
  const std::string out = config_->output;
  const std::string exported = JoinPath(*dir_, "exported");
  const std::string script = GMLP_SOURCE_DIR "/scripts/export_study.sh";
  // A cell whose pretraining had not finished (no pretrain_done.json) is left out.
  ASSERT_TRUE(MakeDirs(JoinPath(out, "cells/unfinished/pretrain")).ok());
  ASSERT_TRUE(WriteFileAtomic(JoinPath(out, "cells/unfinished/pretrain/metrics.jsonl"), "{}").ok());
  ASSERT_EQ(
      std::system(("bash '" + script + "' '" + out + "' '" + exported + "' >/dev/null").c_str()),
      0);
  EXPECT_TRUE(PathExists(JoinPath(exported, "cells/gmlp-tiny/cell.json")));
  EXPECT_TRUE(PathExists(JoinPath(exported, "data/tokenizer.model")));
  EXPECT_TRUE(PathExists(JoinPath(exported, "data/probe.json")));
  // TensorBoard's event files of the finished cells' pretraining and finetuning.
  EXPECT_FALSE(ListDir(JoinPath(exported, "cells/gmlp-tiny/pretrain/tb")).empty());
  EXPECT_FALSE(ListDir(JoinPath(exported, "cells/gmlp-tiny/ft/SST-2/tb")).empty());
  EXPECT_FALSE(PathExists(JoinPath(exported, "data/probe")));
  EXPECT_FALSE(PathExists(JoinPath(exported, "data/shards")));
  EXPECT_FALSE(PathExists(JoinPath(exported, "data/corpus.txt")));
  EXPECT_FALSE(PathExists(JoinPath(exported, "cells/gmlp-tiny/pretrain/checkpoints")));
  EXPECT_FALSE(PathExists(JoinPath(exported, "cells/unfinished")));
  // A folder that is not a study is refused.
  EXPECT_NE(std::system(
                ("bash '" + script + "' '" + *dir_ + "' '" + exported + "2' 2>/dev/null").c_str()),
            0);

  // The export is re-reported by `gmlp study --report_only` with the settings it recorded: no
  // --smoke or --config needed (the defaults differ from this smoke study's), the same tables.
  const std::string rereported = JoinPath(*dir_, "rereported");
  ASSERT_EQ(std::system(("cp -r '" + exported + "' '" + rereported + "'").c_str()), 0);
  ASSERT_EQ(std::system(absl::StrCat(GMLP_BINARY_DIR, "/gmlp study --report_only --output='",
                                     rereported, "' >/dev/null 2>&1")
                            .c_str()),
            0);
  for (const char* table : {"results.csv", "summary.csv"}) {
    auto a = ReadFile(JoinPath(out, table));
    auto b = ReadFile(JoinPath(rereported, table));
    ASSERT_TRUE(a.ok() && b.ok()) << table;
    EXPECT_EQ(*a, *b) << table;
  }
  // Without the shards, the context-free floor comes from the floors.json the run kept: the
  // same line in both reports.
  {
    auto a = ReadFile(JoinPath(out, "report.md"));
    auto b = ReadFile(JoinPath(rereported, "report.md"));
    ASSERT_TRUE(a.ok() && b.ok());
    const size_t at = a->find("**Context-free floor: ");
    ASSERT_NE(at, std::string::npos) << *a;
    const std::string floor_line = a->substr(at, a->find('\n', at) - at);
    EXPECT_NE(b->find(floor_line), std::string::npos) << floor_line << "\n" << *b;
    EXPECT_TRUE(PathExists(JoinPath(exported, "floors.json")));
  }

  StudyConfig moved = *config_;
  moved.output = JoinPath(*dir_, "resumed");
  ASSERT_EQ(std::system(("cp -r '" + exported + "' '" + moved.output + "'").c_str()), 0);
  const int64_t cell_before = MTimeNs(JoinPath(moved.output, "cells/gmlp-tiny/cell.json"));
  auto report = RunStudy(moved);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(MTimeNs(JoinPath(moved.output, "cells/gmlp-tiny/cell.json")), cell_before);
  EXPECT_FALSE(PathExists(JoinPath(moved.output, "cells/gmlp-tiny/pretrain/checkpoints")));
  for (const char* table : {"results.csv", "summary.csv", "cells.csv", "curves.csv"}) {
    auto a = ReadFile(JoinPath(out, table));
    auto b = ReadFile(JoinPath(moved.output, table));
    ASSERT_TRUE(a.ok() && b.ok()) << table;
    EXPECT_EQ(*a, *b) << table;
  }
  // The probe came back byte for byte (its checksums and sizes per version and split).
  auto probe_before = ReadFile(JoinPath(exported, "data/probe.json"));
  auto probe_after = ReadFile(JoinPath(moved.output, "data/probe/probe.json"));
  ASSERT_TRUE(probe_before.ok() && probe_after.ok());
  for (const char* version : {"aligned", "shifted"}) {
    for (const char* split : {"train", "dev", "test"}) {
      EXPECT_EQ(nlohmann::json::parse(*probe_before)["versions"][version][split],
                nlohmann::json::parse(*probe_after)["versions"][version][split])
          << version << " " << split;
    }
  }
  EXPECT_EQ(
      std::system(
          ("cd '" + moved.output + "/data/shards' && md5sum --quiet -c ../shards.md5").c_str()),
      0);
}

// A cell exported after pretraining but before its last task (no cell.json, no checkpoint) is
// continued elsewhere by pretraining it again: the held-out loss comes back identical, so its
// finished tasks and the finished seeds of an unfinished task are kept and the rest are run,
// and the tables are those of the uninterrupted study. When the recorded loss does not match
// (another encoder), its tasks are redone.
void EndToEndTest::StudyExportContinuesUnfinishedCell() {
  const std::string partial = JoinPath(*dir_, "partial");
  ASSERT_EQ(std::system(("cp -r '" + config_->output + "' '" + partial + "'").c_str()), 0);
  const std::string cell = "cells/gmlp-tiny";
  ASSERT_EQ(::unlink(JoinPath(partial, cell + "/cell.json").c_str()), 0);
  ASSERT_EQ(::unlink(JoinPath(partial, cell + "/ft/probe-shifted/results.json").c_str()), 0);
  // MNLI-like stopped during its second seed: its first seed is kept and reused.
  ASSERT_EQ(::unlink(JoinPath(partial, cell + "/ft/MNLI-like/results.json").c_str()), 0);
  ASSERT_EQ(
      ::unlink(JoinPath(partial, cell + "/ft/MNLI-like/predictions/seed-2/result.json").c_str()),
      0);
  const std::string exported = JoinPath(*dir_, "partial-exported");
  ASSERT_EQ(std::system(("bash '" GMLP_SOURCE_DIR "/scripts/export_study.sh' '" + partial + "' '" +
                         exported + "' >/dev/null")
                            .c_str()),
            0);
  EXPECT_TRUE(PathExists(JoinPath(exported, cell + "/pretrain_done.json")));
  EXPECT_TRUE(PathExists(JoinPath(exported, cell + "/pretrain/metrics.jsonl")));
  EXPECT_TRUE(PathExists(JoinPath(exported, cell + "/ft/SST-2/results.json")));
  EXPECT_TRUE(PathExists(JoinPath(exported, cell + "/ft/SST-2/predictions/seed-1/dev.tsv")));
  EXPECT_FALSE(PathExists(JoinPath(exported, cell + "/ft/probe-shifted/results.json")));
  const std::string seed1 = cell + "/ft/MNLI-like/predictions/seed-1/result.json";
  EXPECT_TRUE(PathExists(JoinPath(exported, seed1)));
  EXPECT_FALSE(PathExists(JoinPath(exported, cell + "/ft/MNLI-like/predictions/seed-2")));
  EXPECT_FALSE(PathExists(JoinPath(exported, cell + "/ft/MNLI-like/results.json")));
  EXPECT_FALSE(PathExists(JoinPath(exported, cell + "/cell.json")));
  EXPECT_FALSE(PathExists(JoinPath(exported, cell + "/pretrain/checkpoints")));

  const auto tables_match = [&](const std::string& output) {
    for (const char* table : {"results.csv", "summary.csv"}) {
      auto a = ReadFile(JoinPath(config_->output, table));
      auto b = ReadFile(JoinPath(output, table));
      ASSERT_TRUE(a.ok() && b.ok()) << table;
      EXPECT_EQ(*a, *b) << table;
    }
  };
  StudyConfig continued = *config_;
  continued.output = JoinPath(*dir_, "continued");
  ASSERT_EQ(std::system(("cp -r '" + exported + "' '" + continued.output + "'").c_str()), 0);
  const std::string kept = JoinPath(continued.output, cell + "/ft/SST-2/results.json");
  const int64_t kept_before = MTimeNs(kept);
  const int64_t seed1_before = MTimeNs(JoinPath(continued.output, seed1));
  auto report = RunStudy(continued);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(PathExists(JoinPath(continued.output, cell + "/pretrain/checkpoints")));
  EXPECT_TRUE(PathExists(JoinPath(continued.output, cell + "/cell.json")));
  EXPECT_EQ(MTimeNs(kept), kept_before);  // kept, not redone
  EXPECT_EQ(MTimeNs(JoinPath(continued.output, seed1)), seed1_before);
  EXPECT_TRUE(PathExists(JoinPath(continued.output, cell + "/ft/MNLI-like/results.json")));
  EXPECT_TRUE(PathExists(JoinPath(continued.output, cell + "/ft/probe-shifted/results.json")));
  EXPECT_FALSE(PathExists(JoinPath(continued.output, cell + "/ft.discarded")));
  EXPECT_FALSE(PathExists(JoinPath(continued.output, cell + "/pretrain.exported")));
  tables_match(continued.output);

  // A recorded loss the encoder does not reproduce: the finished tasks were not finetuned from
  // this encoder, so they move aside and are redone, and pretrain_done.json is rewritten.
  StudyConfig mismatched = *config_;
  mismatched.output = JoinPath(*dir_, "mismatched");
  ASSERT_EQ(std::system(("cp -r '" + exported + "' '" + mismatched.output + "'").c_str()), 0);
  const std::string pre_json = JoinPath(mismatched.output, cell + "/pretrain_done.json");
  auto recorded = ReadFile(pre_json);
  ASSERT_TRUE(recorded.ok());
  nlohmann::json j = nlohmann::json::parse(*recorded);
  const double true_loss = j["mlm_loss"].get<double>();
  j["mlm_loss"] = true_loss + 0.5;
  ASSERT_TRUE(WriteFileAtomic(pre_json, j.dump()).ok());
  const std::string redone = JoinPath(mismatched.output, cell + "/ft/SST-2/results.json");
  const int64_t redone_before = MTimeNs(redone);
  report = RunStudy(mismatched);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(PathExists(JoinPath(mismatched.output, cell + "/ft.discarded/SST-2/results.json")));
  EXPECT_NE(MTimeNs(redone), redone_before);
  auto rewritten = ReadFile(pre_json);
  ASSERT_TRUE(rewritten.ok());
  EXPECT_EQ(nlohmann::json::parse(*rewritten)["mlm_loss"].get<double>(), true_loss);
  tables_match(mismatched.output);  // finetuning is deterministic too
}

// Asked again with two shift-k probe tasks and the probe from scratch, the finished study writes
// those versions beside the others (which it rewrites byte for byte), finetunes every cell on
// them, every cell on every probe task from random weights too, and reports the probe's slope.
void EndToEndTest::StudyAddsShiftProbeVersions() {
  StudyConfig more = *config_;
  more.tasks.push_back("probe-shift-0");
  more.tasks.push_back("probe-shift-8");
  more.probe_scratch = true;     // not a setting of any cell's numbers: the study resumes
  more.archs.push_back("fnet");  // a new cell: FNet, the parameter-free mixing baseline
  const std::string probe = JoinPath(more.output, "data/probe");
  const auto aligned_before = ReadFile(JoinPath(probe, "aligned/train.tsv"));
  ASSERT_TRUE(aligned_before.ok());
  auto report = RunStudy(more);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(*ReadFile(JoinPath(probe, "aligned/train.tsv")), *aligned_before);
  for (const char* version : {"shift-0", "shift-8"}) {
    EXPECT_TRUE(PathExists(JoinPath(probe, absl::StrCat(version, "/task.json")))) << version;
  }
  // 4 cells x 6 tasks x 2 seeds, the baseline's controls on 5 pair tasks x 2 seeds, 4 cells x 4
  // probe tasks x 2 seeds from scratch, 6 majority rows, the header.
  EXPECT_EQ(Lines(JoinPath(more.output, "results.csv")).size(),
            4u * 6 * 2 + 5 * 2 + 4 * 4 * 2 + 6 + 1);
  const std::string scratch = JoinPath(more.output, "cells/gmlp-tiny/ft/probe-shift-8-scratch");
  auto scratch_results = ReadFile(JoinPath(scratch, "results.json"));
  ASSERT_TRUE(scratch_results.ok()) << scratch;
  EXPECT_EQ(nlohmann::json::parse(*scratch_results)["reinit"], true);
  auto md = ReadFile(*report);
  ASSERT_TRUE(md.ok());
  EXPECT_NE(md->find("| tiny | probe-shift-8 | test | gmlp |"), std::string::npos) << *md;
  EXPECT_NE(md->find("gMLP-tiny *(from scratch)*"), std::string::npos) << *md;
  // FNet's rows and its curve on the probe, pretrained and from scratch.
  EXPECT_NE(md->find("| tiny | probe-shift-8 | test | fnet |"), std::string::npos) << *md;
  EXPECT_NE(md->find("FNet-tiny *(from scratch)*"), std::string::npos) << *md;
  for (const char* series : {"fnet_none", "fnet_scratch"}) {
    const std::string dat =
        JoinPath(more.output, absl::StrCat("plot/probe_vs_shift_tiny_", series, ".dat"));
    ASSERT_TRUE(PathExists(dat)) << dat;
    EXPECT_EQ(Lines(dat).size(), 3u) << dat;  // the header, k = 0 and k = 8
  }
  EXPECT_NE(md->find("**tiny, probe_slope** (gMLP's probe accuracy falls"), std::string::npos)
      << *md;
  EXPECT_NE(md->find("the shift-k versions' segments are exactly 24 pieces"), std::string::npos)
      << *md;
  // The probe's budget in pair presentations, beside what the calibration found the baseline
  // needs (the reason a "cannot judge" on the probe is expected below it).
  const int64_t epochs = more.probe_epochs > 0 ? more.probe_epochs : more.finetune.epochs;
  EXPECT_NE(md->find(absl::StrCat(more.probe.train_examples * epochs,
                                  " pair presentations per run. The calibration")),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("at chance on every version through 256000 presentations"), std::string::npos)
      << *md;
}

void EndToEndTest::FinetuneThenPredict() {
  FinetuneJob job;
  job.task = "SST-2";
  job.data_dir = JoinPath(kData, "glue/SST-2");
  job.init = JoinPath(config_->output, "cells/gmlp-tiny/pretrain");
  job.output = JoinPath(*dir_, "ft-sst2");
  job.seeds = {3, 4};
  // Each seed trains at both lrs and keeps the better on dev (the selection split here).
  job.lr_grid = {1e-2, 1e-3};
  job.max_train_examples = 64;
  job.max_eval_examples = 50;
  job.options.epochs = 1;
  job.options.batch_size = 16;
  job.options.max_len = 64;
  job.options.quiet = true;
  auto res = RunFinetune(job);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->seeds.size(), 2u);
  for (const SeedResult& s : res->seeds) {
    ASSERT_EQ(s.lr_scores.size(), 2u);
    EXPECT_EQ(s.lr_scores[0].first, 1e-2);
    EXPECT_EQ(s.lr_scores[1].first, 1e-3);
    const auto kept =
        s.lr_scores[0].second >= s.lr_scores[1].second ? s.lr_scores[0] : s.lr_scores[1];
    EXPECT_EQ(s.lr, kept.first) << s.seed;
    EXPECT_EQ(s.selection_score, kept.second) << s.seed;
    EXPECT_EQ(s.best.at("dev").at("accuracy"), kept.second) << s.seed;
  }
  {
    auto results = ReadFile(JoinPath(job.output, "results.json"));
    ASSERT_TRUE(results.ok());
    const nlohmann::json j = nlohmann::json::parse(*results);
    EXPECT_EQ(j["lr_grid"], nlohmann::json({1e-2, 1e-3}));
    EXPECT_EQ(j["seeds"][0]["lr_scores"].size(), 2u);
    auto back = FinetuneResult::FromJson(j);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->seeds[1].lr, res->seeds[1].lr);
    EXPECT_EQ(back->seeds[1].lr_scores, res->seeds[1].lr_scores);
  }
  EXPECT_TRUE(res->Summary()["dev"]["accuracy"].contains("median"));
  EXPECT_TRUE(res->majority_class_accuracy.count("dev"));
  EXPECT_TRUE(PathExists(JoinPath(job.output, "results.json")));
  const std::vector<std::string> dev = Lines(JoinPath(job.output, "predictions/dev.tsv"));
  EXPECT_EQ(dev.size(), 51u);
  EXPECT_EQ(dev[0], "index\tprediction\tlabel");
  EXPECT_EQ(Lines(JoinPath(job.output, "predictions/seed-4/dev.tsv")).size(), 51u);
  const std::vector<std::string> sub = Lines(JoinPath(job.output, "submission/SST-2.tsv"));
  ASSERT_EQ(sub.size(), 1822u);  // header + every test sentence
  EXPECT_EQ(sub[0], "index\tprediction");
  EXPECT_TRUE(sub[1] == "0\t0" || sub[1] == "0\t1") << sub[1];

  auto model = LoadFinetunedModel(job.output);
  ASSERT_TRUE(model.ok()) << model.status();
  auto labels =
      PredictLines(*model, {"a gorgeous , witty , seductive movie .", "dull ."}, "<test>");
  ASSERT_TRUE(labels.ok()) << labels.status();
  ASSERT_EQ(labels->size(), 2u);
  for (const std::string& l : *labels) EXPECT_TRUE(l == "0" || l == "1") << l;
  // The saved model predicts what the best seed predicted on dev.
  std::vector<std::string> dev_text;
  std::vector<std::string> dev_pred;
  auto split = ReadSplit(model->task, model->task.eval[0], job.data_dir);
  ASSERT_TRUE(split.ok());
  for (size_t i = 0; i < 50; ++i) dev_text.push_back(split->examples[i].text_a);
  for (size_t i = 1; i < dev.size(); ++i) {
    dev_pred.push_back(std::vector<std::string>(absl::StrSplit(dev[i], '\t'))[1]);
  }
  auto again = PredictLines(*model, dev_text, "<dev>");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, dev_pred);

  // Evaluation in bf16 (the default where bf16 is native) scores the whole real dev set within
  // 0.2 points of fp32.
  auto full_dev = ReadSplit(model->task, model->task.eval[0], job.data_dir);
  ASSERT_TRUE(full_dev.ok());
  const TokenizeFn tokenize = [&](absl::string_view text, std::vector<int32_t>* out) {
    return model->tokenizer->Encode(text, out);
  };
  auto encoded = EncodeSplit(*full_dev, /*pair=*/false, model->max_len, tokenize);
  ASSERT_TRUE(encoded.ok());
  const SplitPredictions fp32 = Predict(model->classifier, false, *encoded, 128, /*bf16=*/false);
  const SplitPredictions bf16 = Predict(model->classifier, false, *encoded, 128, /*bf16=*/true);
  auto acc32 = Score(model->task, *encoded, fp32);
  auto acc16 = Score(model->task, *encoded, bf16);
  ASSERT_TRUE(acc32.ok() && acc16.ok());
  EXPECT_EQ(encoded->size(), 872u);
  EXPECT_NEAR(acc16->at("accuracy"), acc32->at("accuracy"), 0.002);
}

void EndToEndTest::PredictPairTask() {
  FinetuneJob job;
  job.task_spec = GMLP_SOURCE_DIR "/finetune/tasks/MNLI-subset.json";
  job.data_dir = kData;
  job.init = JoinPath(config_->output, "cells/transformer-tiny/pretrain");
  job.output = JoinPath(*dir_, "ft-mnli");
  job.max_train_examples = 32;
  job.max_eval_examples = 16;
  job.options.epochs = 1;
  job.options.max_len = 64;
  job.options.quiet = true;
  ASSERT_TRUE(RunFinetune(job).ok());
  auto model = LoadFinetunedModel(job.output);
  ASSERT_TRUE(model.ok()) << model.status();
  auto ok = PredictLines(*model, {"A man sleeps.\tA person rests."}, "in.tsv");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE((*ok)[0] == "entailment" || (*ok)[0] == "neutral" || (*ok)[0] == "contradiction");
  auto bad = PredictLines(*model, {"A man sleeps.\tA person rests.", "no tab here"}, "in.tsv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("in.tsv:2:"), std::string::npos) << bad.status();
}

// One test (one process under ctest): the study is the expensive part and every step reuses it.
TEST_F(EndToEndTest, StudyFinetunePredict) {
  {
    SCOPED_TRACE("study outputs");
    StudyWritesCsvReportAndPlot();
  }
  {
    SCOPED_TRACE("study sized by --budget");
    StudySizedByBudget();
  }
  {
    SCOPED_TRACE("finetune + predict, single sentence");
    FinetuneThenPredict();
  }
  {
    SCOPED_TRACE("finetune + predict, sentence pairs");
    PredictPairTask();
  }
  {
    SCOPED_TRACE("study resume");
    StudyResumesWithoutRedoingFinishedCells();
  }
  {
    SCOPED_TRACE("study export, resumed in another folder");
    StudyExportResumesElsewhere();
  }
  {
    SCOPED_TRACE("study export of an unfinished cell, continued in another folder");
    StudyExportContinuesUnfinishedCell();
  }
  {
    SCOPED_TRACE("study asked for shift-k probe versions");
    StudyAddsShiftProbeVersions();
  }
}

}  // namespace
}  // namespace gmlp::finetune
