// RunStudy in stages: check the directory and record its settings, prepare the data
// (data_stages.h), run each cell of the grid (cells.h, cell_run.h), write the report.
#include "study/study.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/manifest.h"
#include "model/arch.h"
#include "model/provenance.h"
#include "study/budget.h"
#include "study/cell_run.h"
#include "study/cells.h"
#include "study/data_stages.h"
#include "study/held_out.h"
#include "study/probe.h"
#include "study/progress.h"
#include "study/report.h"
#include "study/tasks.h"

namespace gmlp::study {
namespace {

// study.json's settings with "made_by": the gmlp, LibTorch and machine of this invocation (a
// resumed study records the one that resumed it; report.md names the one that wrote it).
nlohmann::json WithProvenance(nlohmann::json j) {
  j[model::kMadeByKey] = nlohmann::json::parse(model::Provenance().dump());
  return j;
}

std::string StudyJson(const StudyConfig& config) { return JoinPath(config.output, "study.json"); }

// Writes study.json: the settings, and the gmlp, LibTorch and machine that ran them.
absl::Status RecordSettings(const StudyConfig& config) {
  return WriteFileAtomic(StudyJson(config), WithProvenance(config.ToJson()).dump(2) + "\n");
}

// A study directory resumes only with the settings it was started with, and its cells only with
// the lr they were pretrained at; then writes study.json.
absl::Status CheckAndRecordSettings(const StudyConfig& config, const std::vector<CellSpec>& cells) {
  GMLP_RETURN_IF_ERROR(CheckCellLearningRates(config, cells));
  if (PathExists(StudyJson(config))) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json old_json, ReadJsonFile(StudyJson(config), kRedo));
    const std::string diff = SettingsChanges(old_json, config);
    if (!diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(config.output, " holds a study run with other settings (", diff,
                       " ). Resume it with the same flags, or use a new --output"));
    }
  }
  return RecordSettings(config);
}

// A study sized by --budget (pretrain_steps 0) resumes with the steps its study.json recorded
// once they were sized; and the plan of budget.json when it sized these steps (for the report).
absl::StatusOr<std::optional<BudgetPlan>> RecordedBudget(StudyConfig* config) {
  if (config->pretraining.steps == 0 && PathExists(StudyJson(*config))) {
    GMLP_ASSIGN_OR_RETURN(const nlohmann::json recorded, ReadJsonFile(StudyJson(*config), kRedo));
    config->pretraining.steps = recorded.value("pretrain_steps", int64_t{0});
  }
  const std::string file = BudgetFile(*config);
  if (config->pretraining.steps == 0 || !PathExists(file)) return std::nullopt;
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json j, ReadJsonFile(file, kRedo));
  GMLP_ASSIGN_OR_RETURN(BudgetPlan plan, BudgetPlan::FromJson(j, file));
  if (plan.steps != config->pretraining.steps) return std::nullopt;
  return plan;
}

// Sizes the pretraining of a study with pretrain_steps 0 by its budget, after the data stages:
// writes budget.json and records the steps in study.json.
absl::StatusOr<BudgetPlan> SizePretraining(StudyConfig* config, const StudyData& data,
                                           std::vector<CellSpec>* cells, const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(const data::Manifest manifest,
                        data::ReadManifest(JoinPath(data.shard_dir, data::kManifestFile)));
  GMLP_ASSIGN_OR_RETURN(BudgetPlan plan,
                        PlanBudget(*config, *cells, manifest.vocab_size, manifest.seq_len,
                                   progress.Seconds(), progress));
  nlohmann::json j = plan.ToJson();
  j[model::kMadeByKey] = nlohmann::json::parse(model::Provenance().dump());
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(BudgetFile(*config), j.dump(2) + "\n"));
  config->pretraining.steps = plan.steps;
  GMLP_ASSIGN_OR_RETURN(*cells, Cells(*config));
  GMLP_RETURN_IF_ERROR(RecordSettings(*config));
  return plan;
}

// study.json's "timings": each stage's wall time, work and share of the total (not part of the
// fingerprint).
absl::Status RecordTimings(const StudyConfig& config, const std::vector<StageTiming>& stages) {
  double total = 0;
  for (const StageTiming& t : stages) total += t.seconds;
  nlohmann::json j = WithProvenance(config.ToJson());
  j["timings"] = nlohmann::json::array();
  for (const StageTiming& t : stages) {
    j["timings"].push_back({{"stage", t.stage},
                            {"seconds", t.seconds},
                            {"work", t.work},
                            {"unit", t.unit},
                            {"per_second", t.seconds > 0 ? t.work / t.seconds : 0.0},
                            {"share", total > 0 ? t.seconds / total : 0.0}});
  }
  return WriteFileAtomic(JoinPath(config.output, "study.json"), j.dump(2) + "\n");
}

// "<dir> (seq_len n, N train tokens: each cell pretrains on x epochs of them)".
std::string ShardsSetting(const std::string& shard_dir, const StudyConfig& config) {
  auto manifest = data::ReadManifest(JoinPath(shard_dir, "manifest.json"));
  if (!manifest.ok()) return absl::StrCat(shard_dir, " (seq_len ", config.sharding.seq_len, ")");
  const int64_t train = manifest->Totals("train").tokens;
  const double seen =
      static_cast<double>(config.pretraining.steps * config.pretraining.global_batch) *
      static_cast<double>(manifest->seq_len);
  return absl::StrFormat(
      "%s (seq_len %d, %.2fM train tokens; a cell's %d x %d sequences are "
      "%.2f passes over them)",
      shard_dir, manifest->seq_len, train / 1e6, config.pretraining.steps,
      config.pretraining.global_batch, train > 0 ? seen / static_cast<double>(train) : 0);
}

// The report's settings table: what the study ran with.
nlohmann::ordered_json Settings(const StudyConfig& config, const StudyData& data) {
  const std::string corpus_part =
      config.corpus_mb > 0 ? absl::StrCat("first ", config.corpus_mb, " MB") : "all";
  return {
      {"corpus", absl::StrCat(config.corpus, " (", corpus_part,
                              " of the documents before the "
                              "held-out last ",
                              config.holdout_fraction * 100, "%)")},
      {"tokenizer",
       absl::StrCat(data.tokenizer_model, " (vocab ", config.tokenizer_training.vocab_size, ")")},
      {"shards", ShardsSetting(data.shard_dir, config)},
      {"pretraining",
       absl::StrCat(
           config.pretraining.steps, " steps x ", config.pretraining.global_batch,
           " sequences, lr ", config.pretraining.lr,
           config.pretrain_lr_by_size.empty()
               ? ""
               : absl::StrCat(" (by size: ", absl::StrJoin(config.pretrain_lr_by_size, ", "), ")"),
           ", warmup ", config.pretraining.warmup_steps,
           config.pretraining.bf16 ? ", bf16 autocast" : ", fp32",
           config.pretrain_lr_by_size.empty() ? " (the same recipe for every cell)"
                                              : " (the same recipe for every encoder of a size)")},
      {"finetuning",
       absl::StrCat(config.finetune.epochs, " epochs, batch ", config.finetune.batch_size,
                    config.lr_grid.empty() ? absl::StrCat(", lr ", config.finetune.lr)
                                           : absl::StrCat(", lr chosen per seed from ",
                                                          absl::StrJoin(config.lr_grid, ", "),
                                                          " on the selection split"),
                    ", max_len ", config.finetune.max_len,
                    config.finetune.bf16 ? ", bf16 autocast" : ", fp32", ", train subset ",
                    config.max_train_examples, ", eval subset ", config.max_eval_examples,
                    " (0 = all); tasks without a second labelled split select the epoch on "
                    "examples held out from train")},
      {"seeds", absl::StrJoin(config.seeds, ",")},
      {"tasks", absl::StrJoin(config.tasks, ", ") +
                    " (MNLI-like = train on the 9k MNLI subset, report all of XNLI English test; "
                    "not MNLI-m/mm)"},
      {"model_overrides", config.model_overrides.empty() ? "none" : config.model_overrides},
      {"report written by", model::ProvenanceLine(model::Provenance())}};
}

// The report's notes on the recipe: the baseline's setup, each tiny attention's width, the probe.
std::vector<std::string> RecipeNotes(const StudyConfig& config, const StudyData& data,
                                     const std::vector<CellSpec>& cells) {
  std::vector<std::string> notes;
  if (config.transformer_pre_ln) {
    notes.push_back(
        "The Transformer baseline is pre-LN (with a final LayerNorm), the same recipe as the "
        "other encoders: BERT's post-LN Transformer collapses to the majority class at this "
        "scale (study/README.md, \"Why these defaults\").");
  }
  if (config.transformer_positions.front() == "alibi") {
    notes.push_back(
        "The baseline Transformer has no position table: each head adds -m|i-j| to its "
        "attention scores (ALiBi, the reference slopes). With BERT's learned positions it "
        "stays on the context-free floor at this scale (study/README.md, \"Why these "
        "defaults\").");
  }
  for (const CellSpec& c : cells) {
    const model::ArchSpec* spec = model::FindArch(c.arch);
    if (spec == nullptr || !spec->has_tiny_attention || !c.finetune) continue;
    notes.push_back(absl::StrFormat(
        "%s: tiny attention %d wide at d_model %d (1/%.0f; the paper's aMLPs use 64 at "
        "d_model 512-1024, 1/8-1/16)",
        c.name, c.pretrain.model.attn_size, c.pretrain.model.d_model,
        static_cast<double>(c.pretrain.model.d_model) / c.pretrain.model.attn_size));
  }
  if (UsesProbe(config)) {
    // The probe's epochs and lr as its finetuning runs get them (no file is read).
    const std::string task = *std::find_if(config.tasks.begin(), config.tasks.end(), IsProbeTask);
    absl::StatusOr<finetune::FinetuneJob> job = CellTaskJob(config, StudyData{}, task, "none", "");
    if (!job.ok()) job = finetune::FinetuneJob{};  // unreachable for a validated config
    const std::string lr = job->lr_grid.empty() ? absl::StrCat("lr ", job->options.lr)
                                                : absl::StrCat("the lr each seed chose from ",
                                                               absl::StrJoin(job->lr_grid, ", "));
    const int64_t epochs = job->options.epochs;
    notes.push_back(absl::StrCat(
        "alignment probe (study/probe.h): ", config.probe.train_examples, "/",
        config.probe.dev_examples, "/", config.probe.test_examples,
        " train/dev/test pairs per version from the held-out documents",
        ProbeShifts(config.tasks).empty()
            ? ""
            : absl::StrCat("; the shift-k versions' segments are exactly ",
                           config.probe.segment_pieces, " pieces"),
        "; ", epochs, " epochs at ", lr, ", so ", config.probe.train_examples * epochs,
        " pair presentations per run. The calibration (study/README.md, \"Not calibrated\"; "
        "versions with 6-piece segments) found the baseline Transformer-tiny, from scratch, at "
        "chance on every version through ",
        kProbeBaselineChanceThrough, " presentations and above chance only on the aligned one at ",
        kProbeBaselineReadsAlignedAt,
        " (and not on the shifted one there): below that, \"cannot judge\" on the probe is the "
        "expected reading, not a finding about the encoders; details in ",
        JoinPath(data.probe_dir, "probe.json")));
  }
  return notes;
}

// The report's setup section: settings, notes on the recipe, and the per-stage times.
ReportContext Context(const StudyConfig& config, const StudyData& data,
                      const std::vector<CellSpec>& cells, double seconds) {
  ReportContext ctx;
  ctx.total_seconds = seconds;
  ctx.settings = Settings(config, data);
  ctx.notes = RecipeNotes(config, data, cells);
  ctx.baseline = BaselineEncoder(config);
  return ctx;
}

// The study's outputs from the results of `cells`: report.md, the tables and plots, timings.
absl::StatusOr<std::string> WriteReport(const StudyConfig& config, const StudyData& data,
                                        const std::vector<CellSpec>& cells,
                                        const std::vector<CellResult>& results, const StageLog& log,
                                        const Progress& progress,
                                        std::vector<std::string> extra_notes,
                                        double invocation_seconds) {
  const std::string& out = config.output;
  ReportContext context = Context(config, data, cells, invocation_seconds);
  for (std::string& note : extra_notes) context.notes.push_back(std::move(note));
  context.stages = log.stages();
  for (StageTiming& t : CellTimings(results)) context.stages.push_back(std::move(t));
  // The floors from the shards where they are (and kept in floors.json), else as kept.
  const std::string floors_file = FloorsFile(out);
  ReportContext floors;
  absl::Status st = absl::OkStatus();
  if (PathExists(JoinPath(data.shard_dir, data::kManifestFile))) {
    if (!cells.empty()) {
      st = AddContextFreeFloors(config, data.shard_dir, cells.front().pretrain.train, &floors);
      if (st.ok()) st = WriteFloors(floors_file, floors);
    }
  } else if (PathExists(floors_file)) {
    st = ReadFloors(floors_file, &floors);
  } else {
    st = absl::NotFoundError(absl::StrCat("no shards in ", data.shard_dir, " and no ", floors_file,
                                          " from a report made with them"));
  }
  if (st.ok()) {
    context.context_free_loss = floors.context_free_loss;
    context.curve_context_free_loss = floors.curve_context_free_loss;
  } else {
    progress(absl::StrCat("warning: no context-free floor: ", st.message()));
  }
  GMLP_RETURN_IF_ERROR(RecordTimings(config, context.stages));
  st = WriteStudyOutputs(results, context, out);
  if (!st.ok()) progress(absl::StrCat("warning: ", st.message()));
  const std::string report = JoinPath(out, "report.md");
  progress(absl::StrCat("done: report ", report, ", results ", JoinPath(out, "results.csv"),
                        ", plot ", JoinPath(out, "accuracy_vs_params.png")));
  return report;
}

}  // namespace

absl::StatusOr<std::string> RunStudy(const StudyConfig& given) {
  GMLP_RETURN_IF_ERROR(given.Validate());
  GMLP_ASSIGN_OR_RETURN(StudyConfig config, given.WithDerivedDefaults());
  GMLP_RETURN_IF_ERROR(config.Validate());
  GMLP_ASSIGN_OR_RETURN(std::optional<BudgetPlan> plan, RecordedBudget(&config));
  GMLP_ASSIGN_OR_RETURN(std::vector<CellSpec> cells, Cells(config));
  Progress progress;
  GMLP_RETURN_IF_ERROR(MakeDirs(config.output));
  GMLP_RETURN_IF_ERROR(CheckAndRecordSettings(config, cells));
  StageLog log(JoinPath(JoinPath(config.output, "data"), "stages.json"));
  GMLP_ASSIGN_OR_RETURN(const StudyData data, PrepareData(config, progress, &log));
  if (config.pretraining.steps == 0) {
    GMLP_ASSIGN_OR_RETURN(plan, SizePretraining(&config, data, &cells, progress));
  }
  std::vector<CellResult> results;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string where = absl::StrCat("cell ", i + 1, "/", cells.size(), " ", cells[i].name);
    GMLP_ASSIGN_OR_RETURN(CellResult r, RunCell(config, data, cells[i], where, progress));
    results.push_back(std::move(r));
  }
  std::vector<std::string> notes;
  if (plan.has_value()) notes = BudgetNotes(*plan, progress.Seconds());
  return WriteReport(config, data, cells, results, log, progress, std::move(notes),
                     progress.Seconds());
}

absl::StatusOr<std::string> ReportStudySoFar(const StudyConfig& given) {
  GMLP_RETURN_IF_ERROR(given.Validate());
  GMLP_ASSIGN_OR_RETURN(StudyConfig config, given.WithDerivedDefaults());
  GMLP_ASSIGN_OR_RETURN(const std::optional<BudgetPlan> plan, RecordedBudget(&config));
  Progress progress;
  if (!PathExists(JoinPath(config.output, "study.json"))) {
    return absl::NotFoundError(absl::StrCat(config.output,
                                            "/study.json not found: no study has started in "
                                            "this --output; run it without --report_only"));
  }
  GMLP_ASSIGN_OR_RETURN(const std::vector<CellSpec> cells, Cells(config));
  GMLP_RETURN_IF_ERROR(CheckAndRecordSettings(config, cells));
  const StageLog log(JoinPath(JoinPath(config.output, "data"), "stages.json"));
  const StudyData data = DataPaths(config);
  std::vector<CellSpec> done_cells;
  std::vector<CellResult> results;
  std::vector<std::string> missing;
  for (const CellSpec& cell : cells) {
    GMLP_ASSIGN_OR_RETURN(std::optional<CellResult> r, FinishedCell(config, cell));
    if (r.has_value()) {
      done_cells.push_back(cell);
      results.push_back(*std::move(r));
    } else {
      missing.push_back(cell.name);
    }
  }
  if (results.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(config.output, ": no cell has finished yet (", cells.size(),
                     " to run); --report_only reports finished cells"));
  }
  std::vector<std::string> notes;
  if (!missing.empty()) {
    notes.push_back(absl::StrCat("**Interim report** (`--report_only`): ", results.size(), " of ",
                                 cells.size(),
                                 " cells have finished; not yet: ", absl::StrJoin(missing, ", "),
                                 ". Every number below is from the finished cells alone."));
  }
  if (plan.has_value()) {
    for (std::string& note : BudgetNotes(*plan, /*study_seconds=*/0)) {
      notes.push_back(std::move(note));
    }
  }
  progress(absl::StrCat("report of ", results.size(), " of ", cells.size(), " finished cells"));
  // This invocation ran nothing: the report leaves out its wall time.
  return WriteReport(config, data, done_cells, results, log, progress, std::move(notes),
                     /*invocation_seconds=*/0);
}

}  // namespace gmlp::study
