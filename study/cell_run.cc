// One cell of the study (cell_run.h).
#include "study/cell_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "finetune/finetune.h"
#include "finetune/metrics.h"
#include "model/flops.h"
#include "pretrain/checkpoint.h"
#include "pretrain/pretrained.h"
#include "pretrain/run.h"
#include "study/held_out.h"
#include "study/results_table.h"
#include "study/tasks.h"

namespace gmlp::study {
namespace {

// What a pretraining run's metrics.jsonl says: its held-out loss curve ("eval" records) and
// the wall seconds it took, the last train record's "elapsed_s", which counts every
// invocation since the trainer keeps it across resumes. Logs written before it did restart
// "elapsed_s" at each resume; their invocations are added up.
struct PretrainLog {
  std::vector<CurvePoint> curve;
  double seconds = 0;
};

absl::StatusOr<PretrainLog> ReadPretrainLog(const std::string& run_dir) {
  const std::string path = JoinPath(run_dir, "metrics.jsonl");
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  PretrainLog log;
  double invocation = 0;  // elapsed_s of the latest train record
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const nlohmann::json r = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) {
      return absl::DataLossError(absl::StrCat(path, ": a line is not JSON; ", kRedo));
    }
    if (r.value("type", "") == "eval") {
      log.curve.push_back({r.value("step", int64_t{0}), r.value("eval_loss", 0.0)});
    } else if (r.contains("elapsed_s")) {
      const double elapsed = r.value("elapsed_s", 0.0);
      if (elapsed < invocation) log.seconds += invocation;  // an older log's resume
      invocation = elapsed;
    }
  }
  log.seconds += invocation;
  return log;
}

// Pretrains `cell` into `pre_dir` (continuing from its checkpoints) and returns its held-out
// MLM loss.
absl::StatusOr<double> PretrainAndMeasure(const StudyConfig& config, const StudyData& data,
                                          const CellSpec& cell, const std::string& pre_dir) {
  pretrain::PretrainConfig pc = cell.pretrain;
  pc.train.shard_dir = data.shard_dir;
  pc.train.out_dir = pre_dir;
  GMLP_RETURN_IF_ERROR(pretrain::RunPretraining(pc, pretrain::ResumeMode::kAuto));
  return HeldOutMlmLoss(pre_dir, data.shard_dir, config.pretraining.global_batch,
                        config.pretraining.eval_batches);
}

// Pretraining is deterministic (same seed, data, threads and kernels: bit for bit, also on
// another machine of the same kind), so a cell exported before it finished (pretrain_done.json
// and some finished tasks, no checkpoint: scripts/export_study.sh) is continued by pretraining
// it again. The finished tasks are kept only when the held-out loss comes back identical to
// the recorded one; otherwise they were finetuned from a different encoder and are moved to
// ft.discarded/ to be redone, and pretrain_done.json records the new encoder.
absl::Status RecoverCheckpoint(const StudyConfig& config, const StudyData& data,
                               const CellSpec& cell, const std::string& cell_dir,
                               const std::string& where, const Progress& progress) {
  const std::string pre_dir = JoinPath(cell_dir, "pretrain");
  const std::string pre_json = JoinPath(cell_dir, "pretrain_done.json");
  GMLP_ASSIGN_OR_RETURN(nlohmann::json recorded, ReadJsonFile(pre_json, kRedo));
  if (!recorded.is_object() || !recorded.contains("mlm_loss") ||
      !recorded["mlm_loss"].is_number()) {
    return absl::DataLossError(absl::StrCat(pre_json, ": no \"mlm_loss\"; ", kRedo));
  }
  const double recorded_loss = recorded["mlm_loss"].get<double>();
  progress(absl::StrCat(where, ": no checkpoint (an exported, unfinished cell): pretraining ",
                        config.pretraining.steps, " steps again"));
  // The exported log and config go aside while the pretrainer writes afresh. When they are
  // aside already, an earlier recovery was stopped: its checkpoints continue (exact resume).
  const std::string aside = pre_dir + ".exported";
  if (!PathExists(aside) && PathExists(pre_dir)) {
    GMLP_RETURN_IF_ERROR(RenameAtomic(pre_dir, aside));
  }
  GMLP_ASSIGN_OR_RETURN(const double loss, PretrainAndMeasure(config, data, cell, pre_dir));
  const std::string ft_dir = JoinPath(cell_dir, "ft");
  if (loss == recorded_loss) {
    progress(absl::StrCat(where, ": held-out loss ", absl::StrFormat("%.17g", loss),
                          " identical to the recorded one: its finished tasks are kept"));
  } else {
    const std::string discarded = JoinPath(cell_dir, "ft.discarded");
    progress(absl::StrCat(where, ": held-out loss ", absl::StrFormat("%.17g", loss), ", recorded ",
                          absl::StrFormat("%.17g", recorded_loss),
                          ": not the same encoder, its finished tasks move to ", discarded,
                          " and are redone"));
    GMLP_RETURN_IF_ERROR(RemoveTree(discarded));
    if (PathExists(ft_dir)) GMLP_RETURN_IF_ERROR(RenameAtomic(ft_dir, discarded));
    GMLP_ASSIGN_OR_RETURN(PretrainLog log, ReadPretrainLog(pre_dir));
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(
        pre_json, nlohmann::json({{"mlm_loss", loss}, {"seconds", log.seconds}}).dump(2)));
  }
  return RemoveTree(aside);
}

// Pretrains the cell (resumable by the pretrainer's own checkpoints) and measures its held-out
// loss, unless pretrain_done.json says that was done (and its checkpoint is there, or comes back
// by RecoverCheckpoint); fills the pretraining part of `r`.
absl::Status PretrainCell(const StudyConfig& config, const StudyData& data, const CellSpec& cell,
                          const std::string& cell_dir, const std::string& where,
                          const Progress& progress, CellResult* r) {
  const std::string pre_dir = JoinPath(cell_dir, "pretrain");
  const std::string pre_json = JoinPath(cell_dir, "pretrain_done.json");
  const bool done = PathExists(pre_json);
  // The final checkpoint, or none: an earlier recovery may have been stopped part way.
  const auto checkpoints =
      pretrain::ListCheckpoints(JoinPath(pre_dir, pretrain::kCheckpointsSubdir));
  if (done && (checkpoints.empty() || checkpoints.back().first < config.pretraining.steps)) {
    GMLP_RETURN_IF_ERROR(RecoverCheckpoint(config, data, cell, cell_dir, where, progress));
  }
  if (done) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(pre_json, kRedo));
    r->mlm_loss = j.value("mlm_loss", 0.0);
  } else {
    progress(absl::StrCat(where, ": pretraining ", config.pretraining.steps, " steps"));
    GMLP_ASSIGN_OR_RETURN(r->mlm_loss, PretrainAndMeasure(config, data, cell, pre_dir));
  }
  // The log, not pretrain_done.json, is the record of time: studies before the trainer kept
  // "elapsed_s" across resumes wrote there only the last invocation's seconds.
  GMLP_ASSIGN_OR_RETURN(PretrainLog log, ReadPretrainLog(pre_dir));
  r->curve = std::move(log.curve);
  r->pretrain_seconds = log.seconds;
  r->mlm_perplexity = std::exp(r->mlm_loss);
  if (!done) {
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(
        pre_json, nlohmann::json({{"mlm_loss", r->mlm_loss}, {"seconds", log.seconds}}).dump(2)));
  }
  GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre, pretrain::LoadPretrainedEncoder(pre_dir));
  const model::ParamCount pcount = model::CountParameters(pre.config);
  r->params = pcount.total;
  r->non_embedding_params = pcount.non_embedding();
  r->pretrain_tokens =
      config.pretraining.steps * config.pretraining.global_batch * pre.config.max_seq_len;
  progress(absl::StrCat(where, ": ", r->params, " parameters, held-out MLM perplexity ",
                        r->mlm_perplexity));
  return absl::OkStatus();
}

// `path` relative to `base` when it lies under it (results.csv names files relative to its
// folder), else unchanged.
std::string RelativeTo(const std::string& path, const std::string& base) {
  const std::string prefix = base.empty() || base.back() == '/' ? base : base + "/";
  return absl::StartsWith(path, prefix) ? path.substr(prefix.size()) : path;
}

// Data rows of a TSV with a header line.
absl::StatusOr<int64_t> CountTsvRows(const std::string& path) {
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  int64_t lines = std::count(text.begin(), text.end(), '\n');
  if (!text.empty() && text.back() != '\n') ++lines;
  return std::max<int64_t>(0, lines - 1);
}

// The study's score of one task from a finetuning result: each seed's best-epoch value of the
// reported split and the task's primary metric, with the seed's predictions file (relative to
// the study's output) and the split's size.
absl::StatusOr<TaskScore> ScoreOf(const StudyConfig& config, const StudyTask& task,
                                  const finetune::TaskSpec& spec,
                                  const finetune::FinetuneResult& res,
                                  const std::string& job_output, const std::string& where) {
  TaskScore score;
  score.task = task.name;
  score.kind = task.kind;
  score.split = task.report_split;
  score.metric = spec.primary_metric();
  if (score.metric == "accuracy") {
    auto it = res.majority_class_accuracy.find(task.report_split);
    if (it != res.majority_class_accuracy.end()) score.majority = it->second;
  }
  for (const finetune::SeedResult& s : res.seeds) {
    auto split = s.best.find(task.report_split);
    if (split == s.best.end() || split->second.count(score.metric) == 0) {
      return absl::InternalError(
          absl::StrCat(where, ": no split '", task.report_split, "' in the results"));
    }
    score.seeds.push_back(s.seed);
    score.values.push_back(split->second.at(score.metric));
    const std::string pred =
        JoinPath(finetune::SeedPredictionsDir(job_output, s.seed), task.report_split + ".tsv");
    GMLP_ASSIGN_OR_RETURN(score.n_examples, CountTsvRows(pred));
    score.predictions.push_back(RelativeTo(pred, config.output));
  }
  return score;
}

// The finetuning job of `task` with its data under `data_root`: the task (GLUE name or the
// spec file, found from the build or source tree when relative; probe tasks under `probe_dir`),
// data_root and select_from_train. The caller fills init, output, seeds and options.
finetune::FinetuneJob StudyTaskJob(const StudyTask& task, const std::string& data_root,
                                   const std::string& probe_dir) {
  finetune::FinetuneJob job;
  job.task = task.glue_task;
  job.task_spec = task.task_spec;
  job.select_from_train = task.select_from_train;
  if (IsProbeTask(task.name)) {
    job.task_spec = JoinPath(probe_dir, task.task_spec);
  } else if (!task.task_spec.empty() && !PathExists(task.task_spec)) {
    // Relative to the repo root: found from the build directory (build/gmlp) or the source
    // tree this was built from when the study runs elsewhere (tests).
    const std::string beside = JoinPath(JoinPath(ExecutableDir(), ".."), task.task_spec);
    job.task_spec = PathExists(beside) ? beside : JoinPath(GMLP_STUDY_SOURCE_DIR, task.task_spec);
  }
  job.data_root = data_root;
  return job;
}

}  // namespace

absl::StatusOr<finetune::FinetuneJob> CellTaskJob(const StudyConfig& config, const StudyData& data,
                                                  const std::string& task_name,
                                                  const std::string& control,
                                                  const std::string& cell_dir) {
  GMLP_ASSIGN_OR_RETURN(StudyTask task, FindStudyTask(task_name));
  finetune::FinetuneJob job = StudyTaskJob(task, config.data_dir, data.probe_dir);
  const bool second_only = control == "second_only";
  job.second_segment_only = second_only;
  job.init = JoinPath(cell_dir, "pretrain");
  job.reinit = control == "scratch";
  job.output = JoinPath(JoinPath(cell_dir, "ft"), second_only  ? task.name + "-second-only"
                                                  : job.reinit ? task.name + "-scratch"
                                                               : task.name);
  job.seeds = config.seeds;
  job.max_train_examples = config.max_train_examples;
  job.max_eval_examples = config.max_eval_examples;
  job.save_model = false;
  job.predict_test = false;               // the study reports labelled splits only
  job.resume_seeds = true;                // the fingerprint keeps the settings of job.output
  job.eval_splits = {task.report_split};  // besides the selection split
  job.options = config.finetune;
  job.options.log_every = 0;
  job.lr_grid = config.lr_grid;
  if (IsProbeTask(task.name)) {  // its own size, epochs and lr (the calibration's)
    // All of its probe_train_examples pairs (a study with fewer than max_train_examples of
    // them trains on the same rows as before this rule).
    if (job.max_train_examples > 0) {
      job.max_train_examples = std::max(job.max_train_examples, config.probe.train_examples);
    }
    if (config.probe_epochs > 0) job.options.epochs = config.probe_epochs;
    if (config.probe_lr > 0) {
      job.options.lr = config.probe_lr;
      job.lr_grid.clear();
    }
  }
  return job;
}

namespace {

// Finetunes the cell on one task with every seed (on the second segment alone for the
// "second_only" control), unless its results.json exists.
absl::StatusOr<TaskScore> FinetuneTask(const StudyConfig& config, const StudyData& data,
                                       const std::string& task_name, const std::string& control,
                                       const std::string& cell_dir, const std::string& where,
                                       const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(StudyTask task, FindStudyTask(task_name));
  GMLP_ASSIGN_OR_RETURN(finetune::FinetuneJob job,
                        CellTaskJob(config, data, task_name, control, cell_dir));
  const std::string what =
      control == "none" ? "" : absl::StrCat(" (", ControlDescription(control), ")");
  GMLP_ASSIGN_OR_RETURN(finetune::TaskSpec spec, finetune::ResolveTask(job));
  const std::string results_json = JoinPath(job.output, finetune::kResultsFile);
  finetune::FinetuneResult res;
  const auto t0 = Clock::now();
  if (PathExists(results_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(results_json, kRedo));
    GMLP_ASSIGN_OR_RETURN(res, finetune::FinetuneResult::FromJson(j));
  } else {
    progress(absl::StrCat(where, ": finetuning ", task.name, what, " x ", config.seeds.size(),
                          " seed(s)"));
    GMLP_ASSIGN_OR_RETURN(res, finetune::RunFinetune(job));
    // This invocation's time, and that of the seeds an earlier one finished.
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    for (const finetune::SeedResult& s : res.seeds) {
      if (s.resumed) seconds += s.seconds;
    }
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(job.output, "seconds.json"),
                                         nlohmann::json({{"seconds", seconds}}).dump()));
  }
  GMLP_ASSIGN_OR_RETURN(TaskScore score,
                        ScoreOf(config, task, spec, res, job.output, results_json));
  score.control = control;
  auto seconds = ReadJsonFile(JoinPath(job.output, "seconds.json"), kRedo);
  if (seconds.ok()) score.seconds = seconds->value("seconds", 0.0);
  score.train_examples = res.train_examples * config.finetune.epochs;  // per seed
  const finetune::SeedStats st = finetune::Summarize(score.values);
  progress(absl::StrCat(where, ": ", task.name, what, " ", task.report_split, " ", score.metric,
                        " median ", st.median, " (std ", st.std, ")"));
  return score;
}

bool Covers(const std::vector<std::pair<std::string, std::string>>& runs, const CellResult& r) {
  for (const auto& [task, control] : runs) {
    bool found = false;
    for (const TaskScore& s : r.scores) {
      found |= absl::EqualsIgnoreCase(s.task, task) && s.control == control;
    }
    if (!found) return false;
  }
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> CellRuns(const StudyConfig& config,
                                                          const CellSpec& cell) {
  std::vector<std::pair<std::string, std::string>> runs;
  if (!cell.finetune) return runs;
  for (const std::string& t : config.tasks) runs.emplace_back(t, "none");
  if (config.controls && cell.encoder == BaselineEncoder(config)) {
    for (const std::string& t : config.tasks) {
      auto task = FindStudyTask(t);
      if (task.ok() && task->kind != "single") runs.emplace_back(t, "second_only");
    }
  }
  if (config.probe_scratch) {
    for (const std::string& t : config.tasks) {
      if (IsProbeTask(t)) runs.emplace_back(t, "scratch");
    }
  }
  return runs;
}

// A finished cell (cell.json) is reused as long as it covers the runs asked for now.

absl::StatusOr<std::optional<CellResult>> FinishedCell(const StudyConfig& config,
                                                       const CellSpec& cell) {
  const std::string done = JoinPath(CellDir(config, cell), "cell.json");
  if (!PathExists(done)) return std::nullopt;
  GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(done, kRedo));
  GMLP_ASSIGN_OR_RETURN(CellResult r, CellResult::FromJson(j));
  if (!Covers(CellRuns(config, cell), r)) return std::nullopt;
  return r;
}

absl::StatusOr<CellResult> RunCell(const StudyConfig& config, const StudyData& data,
                                   const CellSpec& cell, const std::string& where,
                                   const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(std::optional<CellResult> finished, FinishedCell(config, cell));
  if (finished.has_value()) {
    progress(absl::StrCat(where, ": done earlier, skipped"));
    return *std::move(finished);
  }
  const std::string cell_dir = CellDir(config, cell);
  const std::string done = JoinPath(cell_dir, "cell.json");
  const auto runs = CellRuns(config, cell);
  GMLP_RETURN_IF_ERROR(MakeDirs(cell_dir));
  CellResult r;
  r.name = cell.name;
  r.encoder = cell.encoder;
  r.arch = cell.arch;
  r.size = cell.size;
  r.sgu = cell.sgu;
  r.pretrain_steps = config.pretraining.steps;
  GMLP_RETURN_IF_ERROR(PretrainCell(config, data, cell, cell_dir, where, progress, &r));
  for (const auto& [task, control] : runs) {
    GMLP_ASSIGN_OR_RETURN(TaskScore score,
                          FinetuneTask(config, data, task, control, cell_dir, where, progress));
    r.finetune_seconds += score.seconds;
    r.scores.push_back(std::move(score));
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(done, r.ToJson().dump(2) + "\n"));
  return r;
}

}  // namespace gmlp::study
