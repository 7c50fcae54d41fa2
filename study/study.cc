// RunStudy in stages: check the directory, prepare the data, run each cell (pretrain, held-out
// perplexity, finetune each task), write the outputs.
#include "study/study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "finetune/finetune.h"
#include "finetune/metrics.h"
#include "model/arch.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/heads.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"
#include "pretrain/config.h"
#include "pretrain/mlm_eval.h"
#include "pretrain/pretrained.h"
#include "pretrain/run.h"
#include "study/report.h"
#include "study/tasks.h"
#include "tokenizer/byte_source.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::study {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kRedo[] = "delete it to redo that step";

// Progress lines: "[study 12:34 elapsed] ...".
class Progress {
 public:
  Progress() : t0_(Clock::now()) {}
  void operator()(const std::string& msg) const {
    const double s = Seconds();
    std::fprintf(stderr, "[study %02d:%02d] %s\n", static_cast<int>(s / 60),
                 static_cast<int>(s) % 60, msg.c_str());
    std::fflush(stderr);
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  Clock::time_point t0_;
};

// One cell of the grid, with the pretraining configuration it runs.
struct CellSpec {
  std::string name;
  std::string arch;
  std::string size;
  std::string sgu;  // "" for encoders without an SGU
  pretrain::PretrainConfig pretrain;
  bool finetune = true;
};

// The pretraining configuration of every cell: `preset` with the study's overrides, on the
// study's shards for the same steps.
absl::StatusOr<pretrain::PretrainConfig> CellPretrainConfig(const StudyConfig& c,
                                                            const std::string& preset,
                                                            const std::string& sgu) {
  pretrain::PretrainConfig pc;
  pc.preset = preset;
  GMLP_ASSIGN_OR_RETURN(pc.model, model::Preset(preset));
  if (!c.model_overrides.empty()) {
    GMLP_ASSIGN_OR_RETURN(pc.model, pretrain::ApplyModelOverrides(pc.model, c.model_overrides));
  }
  if (!sgu.empty()) pc.model.sgu = sgu;
  pretrain::TrainConfig& t = pc.train;
  t.steps = c.pretrain_steps;
  t.global_batch = c.pretrain_batch;
  t.micro_batch = c.pretrain_batch;
  t.lr = c.pretrain_lr;
  t.warmup_steps = std::min(c.pretrain_warmup, c.pretrain_steps);
  t.bf16 = c.pretrain_bf16;
  t.eval_every = 0;
  t.checkpoint_every = std::max<int64_t>(50, c.pretrain_steps / 4);
  t.keep_checkpoints = 1;
  t.log_every = std::max<int64_t>(10, c.pretrain_steps / 10);
  t.seed = 1;
  return pc;
}

absl::StatusOr<std::vector<CellSpec>> Cells(const StudyConfig& c) {
  std::vector<CellSpec> cells;
  for (const std::string& size : c.sizes) {
    for (const std::string& arch : c.archs) {
      const model::ArchSpec* spec = model::FindArch(arch);
      const bool has_sgu = spec != nullptr && spec->has_sgu;
      const std::string preset = absl::StrCat(arch, "-", size);
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, CellPretrainConfig(c, preset, ""));
      cells.push_back({preset, arch, size, has_sgu ? "split" : "", std::move(pc), true});
    }
  }
  if (!c.sizes.empty()) {
    const std::string& size = c.sizes.front();
    for (const std::string& v : c.sgu_variants) {
      if (v == "split") continue;  // that is the main gMLP cell
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc,
                            CellPretrainConfig(c, absl::StrCat("gmlp-", size), v));
      cells.push_back(
          {absl::StrCat("gmlp-", size, "-sgu-", v), "gmlp", size, v, std::move(pc), false});
    }
  }
  return cells;
}

// A study directory resumes only with the settings it was started with; writes study.json.
absl::Status CheckAndRecordSettings(const StudyConfig& config) {
  const std::string study_json = JoinPath(config.output, "study.json");
  const nlohmann::json now = Fingerprint(config.ToJson());
  if (PathExists(study_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json old_json, ReadJsonFile(study_json, kRedo));
    const nlohmann::json old = Fingerprint(old_json);
    if (old != now) {
      std::string diff;
      for (const auto& [k, v] : now.items()) {
        if (!old.contains(k) || old[k] != v) {
          absl::StrAppend(&diff, " ", k, ": ", old.contains(k) ? old[k].dump() : "(unset)", " -> ",
                          v.dump(), ";");
        }
      }
      return absl::FailedPreconditionError(
          absl::StrCat(config.output, " holds a study run with other settings (", diff,
                       " ). Resume it with the same flags, or use a new --output"));
    }
  }
  return WriteFileAtomic(study_json, config.ToJson().dump(2) + "\n");
}

// The first `mb` MB of decompressed text of `corpus` (plain, .gz or .xz, read in process), cut
// after a document end (a WikiExtractor "</doc>" line or a blank line), written atomically.
absl::Status ExtractCorpus(const std::string& corpus, int64_t mb, const std::string& out) {
  if (!PathExists(corpus)) {
    return absl::NotFoundError(absl::StrCat(
        corpus, ": corpus not found; pass --corpus=<text/.xz/.gz> (relative to --data_dir)"));
  }
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::ByteSource> in,
                        tokenizer::ByteSource::Open(corpus));
  const int64_t limit = mb > 0 ? mb << 20 : INT64_MAX;
  std::string text, line;
  std::vector<char> buf(1 << 16);
  bool done = false;
  while (!done) {
    GMLP_ASSIGN_OR_RETURN(const size_t n, in->Read(buf.data(), buf.size()));
    if (n == 0) break;
    size_t begin = 0;
    while (begin < n && !done) {
      const void* nl = std::memchr(buf.data() + begin, '\n', n - begin);
      if (nl == nullptr) {  // the line continues in the next read
        line.append(buf.data() + begin, n - begin);
        break;
      }
      const size_t end = static_cast<const char*>(nl) - buf.data() + 1;
      line.append(buf.data() + begin, end - begin);
      begin = end;
      text += line;
      const bool doc_end = absl::StartsWith(line, "</doc>") || line == "\n";
      line.clear();
      done = static_cast<int64_t>(text.size()) >= limit && doc_end;
    }
  }
  text += line;  // a last line without a newline
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(corpus, ": no text read"));
  return WriteFileAtomic(out, text);
}

// Where the data stages put their outputs, or the existing ones the config names.
struct StudyData {
  std::string tokenizer_model;
  std::string shard_dir;
};

// Corpus extract, tokenizer, shards; each skipped when already there.
absl::StatusOr<StudyData> PrepareData(const StudyConfig& config, const Progress& progress) {
  const std::string data_out = JoinPath(config.output, "data");
  GMLP_RETURN_IF_ERROR(MakeDirs(data_out));
  const std::string corpus_txt = JoinPath(data_out, "corpus.txt");
  StudyData d{config.tokenizer, config.shards};
  if ((d.tokenizer_model.empty() || d.shard_dir.empty()) && !PathExists(corpus_txt)) {
    progress(absl::StrCat("extracting ", config.corpus_mb, " MB of ", config.corpus));
    GMLP_RETURN_IF_ERROR(ExtractCorpus(finetune::ResolveDataPath(config.data_dir, config.corpus),
                                       config.corpus_mb, corpus_txt));
  }
  if (d.tokenizer_model.empty()) {
    d.tokenizer_model = JoinPath(data_out, "tokenizer.model");
    if (!PathExists(d.tokenizer_model)) {
      progress(absl::StrCat("training the tokenizer (vocab ", config.vocab_size, ")"));
      tokenizer::TrainOptions to;
      to.inputs = {corpus_txt};
      to.model_prefix = JoinPath(data_out, "tokenizer");
      to.vocab_size = config.vocab_size;
      to.input_sentence_size = 300000;
      GMLP_RETURN_IF_ERROR(tokenizer::Train(to));
    }
  }
  if (d.shard_dir.empty()) {
    d.shard_dir = JoinPath(data_out, "shards");
    if (!PathExists(JoinPath(d.shard_dir, "manifest.json"))) {
      progress(absl::StrCat("preparing shards (seq_len ", config.seq_len, ")"));
      data::PrepareOptions po;
      po.input = {corpus_txt};
      po.tokenizer = d.tokenizer_model;
      po.output = d.shard_dir;
      po.seq_len = config.seq_len;
      po.valid_fraction = 0.02;
      po.progress = false;
      GMLP_RETURN_IF_ERROR(data::Prepare(po).status());
    }
  }
  return d;
}

// Masked-token cross-entropy on `batches` validation batches, with the loader's masking seeded
// the same way for every cell (so all cells predict the same positions).
absl::StatusOr<double> HeldOutMlmLoss(const std::string& run_dir, const std::string& shard_dir,
                                      int64_t batch_size, int64_t batches) {
  GMLP_ASSIGN_OR_RETURN(const std::string ckpt, pretrain::ResolveCheckpoint(run_dir));
  GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre, pretrain::LoadPretrainedEncoder(ckpt));
  model::MlmModel mlm(pre.config);
  GMLP_RETURN_IF_ERROR(model::LoadModule(*mlm, JoinPath(ckpt, pretrain::kModelFile)));
  mlm->eval();
  data::LoaderOptions lo;
  lo.shard_dir = shard_dir;
  lo.split = "valid";
  lo.batch_size = batch_size;
  lo.seed = 4242;
  lo.shuffle = false;
  lo.prefetch = 0;
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> loader, data::MlmLoader::Open(lo));
  const int64_t n = std::max<int64_t>(1, std::min(batches, loader->batches_per_epoch()));
  auto forward = [&mlm](const model::EncoderInput& in, const torch::Tensor& masked) {
    return mlm->forward(in, masked);
  };
  GMLP_ASSIGN_OR_RETURN(pretrain::MlmEval eval,
                        pretrain::EvaluateMlm(forward, *loader, n, torch::kCPU, /*bf16=*/false));
  if (eval.masked_tokens == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(shard_dir, ": the validation split has no masked tokens; prepare more text"));
  }
  return eval.loss;
}

// Pretrains the cell (resumable by the pretrainer's own checkpoints) and measures its held-out
// loss, unless pretrain_done.json says that was done; fills the pretraining part of `r`.
absl::Status PretrainCell(const StudyConfig& config, const StudyData& data, const CellSpec& cell,
                          const std::string& cell_dir, const std::string& where,
                          const Progress& progress, CellResult* r) {
  const std::string pre_dir = JoinPath(cell_dir, "pretrain");
  const std::string pre_json = JoinPath(cell_dir, "pretrain_done.json");
  if (PathExists(pre_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(pre_json, kRedo));
    r->mlm_loss = j.value("mlm_loss", 0.0);
    r->pretrain_seconds = j.value("seconds", 0.0);
  } else {
    progress(absl::StrCat(where, ": pretraining ", config.pretrain_steps, " steps"));
    const auto t0 = Clock::now();
    pretrain::PretrainConfig pc = cell.pretrain;
    pc.train.shard_dir = data.shard_dir;
    pc.train.out_dir = pre_dir;
    GMLP_RETURN_IF_ERROR(pretrain::RunPretraining(pc, /*resume=*/true));
    r->pretrain_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    GMLP_ASSIGN_OR_RETURN(r->mlm_loss, HeldOutMlmLoss(pre_dir, data.shard_dir,
                                                      config.pretrain_batch, config.ppl_batches));
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(
        pre_json,
        nlohmann::json({{"mlm_loss", r->mlm_loss}, {"seconds", r->pretrain_seconds}}).dump(2)));
  }
  r->mlm_perplexity = std::exp(r->mlm_loss);
  GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre, pretrain::LoadPretrainedEncoder(pre_dir));
  const model::ParamCount pcount = model::CountParameters(pre.config);
  r->params = pcount.total;
  r->non_embedding_params = pcount.non_embedding();
  progress(absl::StrCat(where, ": ", r->params, " parameters, held-out MLM perplexity ",
                        r->mlm_perplexity));
  return absl::OkStatus();
}

// The study's score of one task from a finetuning result: each seed's best-epoch value of the
// reported split and the task's primary metric.
absl::StatusOr<TaskScore> ScoreOf(const StudyTask& task, const finetune::TaskSpec& spec,
                                  const finetune::FinetuneResult& res, const std::string& where) {
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
  }
  return score;
}

// Finetunes the cell on one task with every seed, unless its results.json exists.
absl::StatusOr<TaskScore> FinetuneTask(const StudyConfig& config, const std::string& task_name,
                                       const std::string& cell_dir, const std::string& where,
                                       const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(StudyTask task, FindStudyTask(task_name));
  finetune::FinetuneJob job = StudyTaskJob(task, config.data_dir);
  job.init = JoinPath(cell_dir, "pretrain");
  job.output = JoinPath(JoinPath(cell_dir, "ft"), task.name);
  job.seeds = config.seeds;
  job.max_train_examples = config.max_train_examples;
  job.max_eval_examples = config.max_eval_examples;
  job.save_model = false;
  job.options = config.finetune;
  job.options.log_every = 0;
  GMLP_ASSIGN_OR_RETURN(finetune::TaskSpec spec, finetune::ResolveTask(job));
  const std::string results_json = JoinPath(job.output, finetune::kResultsFile);
  finetune::FinetuneResult res;
  if (PathExists(results_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(results_json, kRedo));
    GMLP_ASSIGN_OR_RETURN(res, finetune::FinetuneResult::FromJson(j));
  } else {
    progress(
        absl::StrCat(where, ": finetuning ", task.name, " x ", config.seeds.size(), " seed(s)"));
    GMLP_ASSIGN_OR_RETURN(res, finetune::RunFinetune(job));
  }
  GMLP_ASSIGN_OR_RETURN(TaskScore score, ScoreOf(task, spec, res, results_json));
  const finetune::SeedStats st = finetune::Summarize(score.values);
  progress(absl::StrCat(where, ": ", task.name, " ", task.report_split, " ", score.metric,
                        " median ", st.median, " (std ", st.std, ")"));
  return score;
}

// A finished cell (cell.json) is reused as long as it covers the tasks asked for now.
bool Covers(const CellSpec& cell, const CellResult& r, const std::vector<std::string>& tasks) {
  if (!cell.finetune) return true;
  for (const std::string& t : tasks) {
    bool found = false;
    for (const TaskScore& s : r.scores) found |= absl::EqualsIgnoreCase(s.task, t);
    if (!found) return false;
  }
  return true;
}

// Runs (or reuses) one cell: pretraining, perplexity, finetuning; then writes cell.json.
absl::StatusOr<CellResult> RunCell(const StudyConfig& config, const StudyData& data,
                                   const CellSpec& cell, const std::string& where,
                                   const Progress& progress) {
  const std::string cell_dir = JoinPath(JoinPath(config.output, "cells"), cell.name);
  const std::string done = JoinPath(cell_dir, "cell.json");
  if (PathExists(done)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(done, kRedo));
    GMLP_ASSIGN_OR_RETURN(CellResult r, CellResult::FromJson(j));
    if (Covers(cell, r, config.tasks)) {
      progress(absl::StrCat(where, ": done earlier, skipped"));
      return r;
    }
  }
  GMLP_RETURN_IF_ERROR(MakeDirs(cell_dir));
  CellResult r;
  r.name = cell.name;
  r.arch = cell.arch;
  r.size = cell.size;
  r.sgu = cell.sgu;
  r.pretrain_steps = config.pretrain_steps;
  GMLP_RETURN_IF_ERROR(PretrainCell(config, data, cell, cell_dir, where, progress, &r));
  if (cell.finetune) {
    const auto t0 = Clock::now();
    for (const std::string& task_name : config.tasks) {
      GMLP_ASSIGN_OR_RETURN(TaskScore score,
                            FinetuneTask(config, task_name, cell_dir, where, progress));
      r.scores.push_back(std::move(score));
    }
    r.finetune_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(done, r.ToJson().dump(2) + "\n"));
  return r;
}

// The report's setup section.
ReportContext Context(const StudyConfig& config, const StudyData& data, double seconds) {
  ReportContext ctx;
  ctx.total_seconds = seconds;
  ctx.settings = {
      {"corpus", absl::StrCat(config.corpus, " (first ", config.corpus_mb, " MB)")},
      {"tokenizer", absl::StrCat(data.tokenizer_model, " (vocab ", config.vocab_size, ")")},
      {"shards", absl::StrCat(data.shard_dir, " (seq_len ", config.seq_len, ")")},
      {"pretraining",
       absl::StrCat(config.pretrain_steps, " steps x ", config.pretrain_batch, " sequences, lr ",
                    config.pretrain_lr, ", warmup ", config.pretrain_warmup,
                    config.pretrain_bf16 ? ", bf16 autocast" : ", fp32", " (same for every cell)")},
      {"finetuning",
       absl::StrCat(config.finetune.epochs, " epochs, batch ", config.finetune.batch_size, ", lr ",
                    config.finetune.lr, ", max_len ", config.finetune.max_len, ", train subset ",
                    config.max_train_examples, ", eval subset ", config.max_eval_examples,
                    " (0 = all)")},
      {"seeds", absl::StrJoin(config.seeds, ",")},
      {"tasks", absl::StrJoin(config.tasks, ", ") +
                    " (MNLI-like = train on the 9k MNLI subset, report XNLI English test; not "
                    "MNLI-m/mm)"},
      {"model_overrides", config.model_overrides.empty() ? "none" : config.model_overrides}};
  return ctx;
}

}  // namespace

absl::StatusOr<std::string> RunStudy(const StudyConfig& config) {
  GMLP_RETURN_IF_ERROR(config.Validate());
  Progress progress;
  const std::string& out = config.output;
  GMLP_RETURN_IF_ERROR(MakeDirs(out));
  GMLP_RETURN_IF_ERROR(CheckAndRecordSettings(config));
  GMLP_ASSIGN_OR_RETURN(const StudyData data, PrepareData(config, progress));
  GMLP_ASSIGN_OR_RETURN(const std::vector<CellSpec> cells, Cells(config));
  std::vector<CellResult> results;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string where = absl::StrCat("cell ", i + 1, "/", cells.size(), " ", cells[i].name);
    GMLP_ASSIGN_OR_RETURN(CellResult r, RunCell(config, data, cells[i], where, progress));
    results.push_back(std::move(r));
  }
  absl::Status st = WriteStudyOutputs(results, Context(config, data, progress.Seconds()), out);
  if (!st.ok()) progress(absl::StrCat("warning: ", st.message()));
  const std::string report = JoinPath(out, "report.md");
  progress(absl::StrCat("done: report ", report, ", results ", JoinPath(out, "results.csv"),
                        ", plot ", JoinPath(out, "accuracy_vs_params.png")));
  return report;
}

}  // namespace gmlp::study
