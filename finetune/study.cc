#include "finetune/study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "common/status.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "finetune/finetune.h"
#include "finetune/metrics.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/heads.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"
#include "pretrain/config.h"
#include "pretrain/pretrained.h"
#include "pretrain/run.h"
#include "pretrain/trainer.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::finetune {
namespace {

using Clock = std::chrono::steady_clock;

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

struct CellSpec {
  std::string name;
  std::string arch;
  std::string size;
  std::string sgu;  // "" for encoders without an SGU
  std::string preset;
  std::string overrides;  // EncoderConfig "key=value,..."
  bool finetune = true;
};

std::vector<CellSpec> Cells(const StudyConfig& c) {
  std::vector<CellSpec> cells;
  auto join = [&](const std::string& extra) {
    if (c.model_overrides.empty()) return extra;
    if (extra.empty()) return c.model_overrides;
    return absl::StrCat(c.model_overrides, ",", extra);
  };
  for (const std::string& size : c.sizes) {
    for (const std::string& arch : c.archs) {
      const bool has_sgu = arch == "gmlp" || arch == "amlp";
      cells.push_back({absl::StrCat(arch, "-", size), arch, size, has_sgu ? "split" : "",
                       absl::StrCat(arch, "-", size), join(""), true});
    }
  }
  if (!c.sizes.empty()) {
    const std::string& size = c.sizes.front();
    for (const std::string& v : c.sgu_variants) {
      if (v == "split") continue;  // that is the main gMLP cell
      cells.push_back({absl::StrCat("gmlp-", size, "-sgu-", v), "gmlp", size, v,
                       absl::StrCat("gmlp-", size), join(absl::StrCat("sgu=", v)), false});
    }
  }
  return cells;
}

// The first `mb` MB of decompressed text of `corpus`, cut after a document end (a WikiExtractor
// "</doc>" line or a blank line), written atomically to `out`.
absl::Status ExtractCorpus(const std::string& corpus, int64_t mb, const std::string& out) {
  if (!PathExists(corpus)) {
    return absl::NotFoundError(absl::StrCat(
        corpus, ": corpus not found; pass --corpus=<text/.xz/.gz> (relative to --data_dir)"));
  }
  std::string cmd;
  if (absl::EndsWith(corpus, ".xz")) {
    cmd = absl::StrCat("xz -dc '", corpus, "'");
  } else if (absl::EndsWith(corpus, ".gz")) {
    cmd = absl::StrCat("gzip -dc '", corpus, "'");
  } else {
    cmd = absl::StrCat("cat '", corpus, "'");
  }
  FILE* in = ::popen(cmd.c_str(), "r");
  if (in == nullptr) return absl::InternalError(absl::StrCat("cannot run `", cmd, "`"));
  const int64_t limit = mb > 0 ? mb << 20 : INT64_MAX;
  std::string text;
  std::vector<char> buf(1 << 16);
  std::string line;
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), in) != nullptr) {
    line.append(buf.data());
    if (line.empty() || line.back() != '\n') continue;  // a long line continues
    text += line;
    const bool doc_end = absl::StartsWith(line, "</doc>") || line == "\n";
    line.clear();
    if (static_cast<int64_t>(text.size()) >= limit && doc_end) break;
  }
  text += line;
  ::pclose(in);  // the early break makes xz exit with SIGPIPE: not an error here
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(corpus, ": no text read"));
  return WriteFileAtomic(out, text);
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
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    GMLP_ASSIGN_OR_RETURN(data::MlmBatch b, loader->Next());
    pretrain::MlmTensors t = pretrain::ToTensors(b);
    if (t.masked_index.numel() == 0) continue;
    torch::Tensor logits = mlm->forward(t.input, t.masked_index).to(torch::kFloat);
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, t.labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    count += t.masked_index.numel();
  }
  if (count == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(shard_dir, ": the validation split has no masked tokens; prepare more text"));
  }
  return loss_sum / count;
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  GMLP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::DataLossError(absl::StrCat(path, ": not valid JSON; delete it to redo that step"));
  }
  return j;
}

// Settings that change results: a study directory is only resumed with the same ones.
nlohmann::json Fingerprint(const StudyConfig& c) {
  nlohmann::json j = c.ToJson();
  for (const char* k : {"output", "archs", "sizes", "sgu_variants", "tasks", "data_dir"}) {
    j.erase(k);
  }
  return j;
}

}  // namespace

absl::Status StudyConfig::Validate() const {
  if (output.empty()) return absl::InvalidArgumentError("--output is empty");
  if (archs.empty() || sizes.empty()) {
    return absl::InvalidArgumentError("--archs and --sizes must each name at least one");
  }
  for (const std::string& a : archs) {
    for (const std::string& s : sizes) {
      auto p = model::Preset(absl::StrCat(a, "-", s));
      if (!p.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--archs/--sizes: no preset '", a, "-", s,
                                                       "' (", p.status().message(), ")"));
      }
    }
  }
  for (const std::string& v : sgu_variants) {
    if (v != "split" && v != "multiplicative" && v != "additive" && v != "linear") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sgu_variants: '", v, "' is not one of split, multiplicative, additive, linear"));
    }
  }
  for (const std::string& t : tasks) GMLP_RETURN_IF_ERROR(FindStudyTask(t).status());
  if (seeds.empty()) return absl::InvalidArgumentError("--seeds is empty");
  if (pretrain_steps < 1) return absl::InvalidArgumentError("--pretrain_steps must be >= 1");
  if (finetune.max_len > seq_len && shards.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--max_len=", finetune.max_len,
                                                   " exceeds --seq_len=", seq_len,
                                                   " (the encoders' max_seq_len)"));
  }
  return finetune.Validate();
}

nlohmann::json StudyConfig::ToJson() const {
  return {{"output", output},
          {"data_dir", data_dir},
          {"corpus", corpus},
          {"corpus_mb", corpus_mb},
          {"tokenizer", tokenizer},
          {"vocab_size", vocab_size},
          {"shards", shards},
          {"seq_len", seq_len},
          {"archs", archs},
          {"sizes", sizes},
          {"sgu_variants", sgu_variants},
          {"model_overrides", model_overrides},
          {"pretrain_steps", pretrain_steps},
          {"pretrain_batch", pretrain_batch},
          {"pretrain_lr", pretrain_lr},
          {"pretrain_warmup", pretrain_warmup},
          {"pretrain_bf16", pretrain_bf16},
          {"ppl_batches", ppl_batches},
          {"tasks", tasks},
          {"seeds", seeds},
          {"max_train_examples", max_train_examples},
          {"max_eval_examples", max_eval_examples},
          {"finetune", finetune.ToJson()}};
}

absl::Status ApplyStudyPreset(const std::string& name, StudyConfig* c) {
  if (name == "default-small" || name.empty()) return absl::OkStatus();
  if (name == "smoke") {
    c->corpus_mb = 1;
    c->vocab_size = 2000;
    c->seq_len = 64;
    c->archs = {"transformer", "gmlp"};
    c->sizes = {"tiny"};
    c->sgu_variants = {};
    c->model_overrides = "n_layers=1,d_model=64,d_ffn=128";
    c->pretrain_steps = 10;
    c->pretrain_batch = 8;
    c->pretrain_warmup = 2;
    c->ppl_batches = 2;
    c->tasks = {"SST-2", "MNLI-like"};
    c->seeds = {1, 2};
    c->max_train_examples = 64;
    c->max_eval_examples = 64;
    c->finetune.epochs = 1;
    c->finetune.batch_size = 16;
    c->finetune.max_len = 64;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--preset: unknown study preset '", name, "'; use default-small or smoke"));
}

absl::StatusOr<std::string> RunStudy(const StudyConfig& config) {
  GMLP_RETURN_IF_ERROR(config.Validate());
  Progress progress;
  const std::string out = config.output;
  GMLP_RETURN_IF_ERROR(MakeDirs(out));

  // A study directory resumes only with the settings it was started with.
  const std::string study_json = JoinPath(out, "study.json");
  if (PathExists(study_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json old, ReadJsonFile(study_json));
    nlohmann::json old_fp = old;
    for (const char* k : {"output", "archs", "sizes", "sgu_variants", "tasks", "data_dir"}) {
      old_fp.erase(k);
    }
    if (old_fp != Fingerprint(config)) {
      std::string diff;
      for (const auto& [k, v] : Fingerprint(config).items()) {
        if (!old_fp.contains(k) || old_fp[k] != v) {
          absl::StrAppend(&diff, " ", k, ": ", old_fp.contains(k) ? old_fp[k].dump() : "(unset)",
                          " -> ", v.dump(), ";");
        }
      }
      return absl::FailedPreconditionError(
          absl::StrCat(out, " holds a study run with other settings (", diff,
                       " ). Resume it with the same flags, or use a new --output"));
    }
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(study_json, config.ToJson().dump(2) + "\n"));

  // Data: corpus extract, tokenizer, shards; each skipped when already there.
  const std::string data_out = JoinPath(out, "data");
  GMLP_RETURN_IF_ERROR(MakeDirs(data_out));
  const std::string corpus_txt = JoinPath(data_out, "corpus.txt");
  std::string tokenizer_model = config.tokenizer;
  std::string shard_dir = config.shards;
  if ((tokenizer_model.empty() || shard_dir.empty()) && !PathExists(corpus_txt)) {
    progress(absl::StrCat("extracting ", config.corpus_mb, " MB of ", config.corpus));
    GMLP_RETURN_IF_ERROR(ExtractCorpus(ResolveDataPath(config.data_dir, config.corpus),
                                       config.corpus_mb, corpus_txt));
  }
  if (tokenizer_model.empty()) {
    tokenizer_model = JoinPath(data_out, "tokenizer.model");
    if (!PathExists(tokenizer_model)) {
      progress(absl::StrCat("training the tokenizer (vocab ", config.vocab_size, ")"));
      tokenizer::TrainOptions to;
      to.inputs = {corpus_txt};
      to.model_prefix = JoinPath(data_out, "tokenizer");
      to.vocab_size = config.vocab_size;
      to.input_sentence_size = 300000;
      GMLP_RETURN_IF_ERROR(tokenizer::Train(to));
    }
  }
  if (shard_dir.empty()) {
    shard_dir = JoinPath(data_out, "shards");
    if (!PathExists(JoinPath(shard_dir, "manifest.json"))) {
      progress(absl::StrCat("preparing shards (seq_len ", config.seq_len, ")"));
      data::PrepareOptions po;
      po.input = {corpus_txt};
      po.tokenizer = tokenizer_model;
      po.output = shard_dir;
      po.seq_len = config.seq_len;
      po.valid_fraction = 0.02;
      po.progress = false;
      GMLP_RETURN_IF_ERROR(data::Prepare(po).status());
    }
  }

  // The grid.
  const std::vector<CellSpec> cells = Cells(config);
  std::vector<CellResult> results;
  for (size_t ci = 0; ci < cells.size(); ++ci) {
    const CellSpec& cell = cells[ci];
    const std::string cell_dir = JoinPath(JoinPath(out, "cells"), cell.name);
    const std::string done = JoinPath(cell_dir, "cell.json");
    const std::string where = absl::StrCat("cell ", ci + 1, "/", cells.size(), " ", cell.name);
    if (PathExists(done)) {
      GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(done));
      GMLP_ASSIGN_OR_RETURN(CellResult r, CellResult::FromJson(j));
      // A finished cell is reused as long as it covers the tasks asked for now.
      bool covers = true;
      if (cell.finetune) {
        for (const std::string& t : config.tasks) {
          bool found = false;
          for (const TaskScore& s : r.scores) found |= absl::EqualsIgnoreCase(s.task, t);
          covers &= found;
        }
      }
      if (covers) {
        progress(absl::StrCat(where, ": done earlier, skipped"));
        results.push_back(std::move(r));
        continue;
      }
    }
    GMLP_RETURN_IF_ERROR(MakeDirs(cell_dir));
    CellResult r;
    r.name = cell.name;
    r.arch = cell.arch;
    r.size = cell.size;
    r.sgu = cell.sgu;
    r.pretrain_steps = config.pretrain_steps;

    // Pretraining (resumable by the pretrainer's own checkpoints) and held-out perplexity.
    const std::string pre_dir = JoinPath(cell_dir, "pretrain");
    const std::string pre_json = JoinPath(cell_dir, "pretrain_done.json");
    if (PathExists(pre_json)) {
      GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(pre_json));
      r.mlm_loss = j.value("mlm_loss", 0.0);
      r.pretrain_seconds = j.value("seconds", 0.0);
    } else {
      progress(absl::StrCat(where, ": pretraining ", config.pretrain_steps, " steps"));
      const auto t0 = Clock::now();
      pretrain::ConfigSources src;
      src.preset = cell.preset;
      src.model_overrides = cell.overrides;
      src.train_flags = {{"shard_dir", shard_dir},
                         {"out_dir", pre_dir},
                         {"steps", config.pretrain_steps},
                         {"global_batch", config.pretrain_batch},
                         {"micro_batch", config.pretrain_batch},
                         {"lr", config.pretrain_lr},
                         {"warmup_steps", std::min(config.pretrain_warmup, config.pretrain_steps)},
                         {"bf16", config.pretrain_bf16},
                         {"eval_every", 0},
                         {"checkpoint_every", std::max<int64_t>(50, config.pretrain_steps / 4)},
                         {"keep_checkpoints", 1},
                         {"log_every", std::max<int64_t>(10, config.pretrain_steps / 10)},
                         {"seed", 1}};
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, pretrain::ResolveConfig(src));
      GMLP_RETURN_IF_ERROR(pretrain::RunPretraining(pc, /*resume=*/true));
      r.pretrain_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      GMLP_ASSIGN_OR_RETURN(r.mlm_loss, HeldOutMlmLoss(pre_dir, shard_dir, config.pretrain_batch,
                                                       config.ppl_batches));
      GMLP_RETURN_IF_ERROR(WriteFileAtomic(
          pre_json,
          nlohmann::json({{"mlm_loss", r.mlm_loss}, {"seconds", r.pretrain_seconds}}).dump(2)));
    }
    r.mlm_perplexity = std::exp(r.mlm_loss);
    GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre,
                          pretrain::LoadPretrainedEncoder(pre_dir));
    const model::ParamCount pcount = model::CountParameters(pre.config);
    r.params = pcount.total;
    r.non_embedding_params = pcount.non_embedding();
    progress(absl::StrCat(where, ": ", r.params, " parameters, held-out MLM perplexity ",
                          r.mlm_perplexity));

    // Finetuning: one directory per task, skipped when its results.json exists.
    if (cell.finetune) {
      const auto t0 = Clock::now();
      for (const std::string& task_name : config.tasks) {
        GMLP_ASSIGN_OR_RETURN(StudyTask task, FindStudyTask(task_name));
        const std::string ft_dir = JoinPath(JoinPath(cell_dir, "ft"), task.name);
        const std::string results_json = JoinPath(ft_dir, kResultsFile);
        nlohmann::json res;
        if (PathExists(results_json)) {
          GMLP_ASSIGN_OR_RETURN(res, ReadJsonFile(results_json));
        } else {
          progress(absl::StrCat(where, ": finetuning ", task.name, " x ", config.seeds.size(),
                                " seed(s)"));
          FinetuneJob job;
          job.task = task.glue_task;
          job.task_spec = task.task_spec;
          if (!task.task_spec.empty() && !PathExists(task.task_spec)) {
            // Relative to the repo root: found from the build directory (build/gmlp) or the
            // source tree this was built from when the study runs elsewhere (tests).
            const std::string beside = JoinPath(JoinPath(ExecutableDir(), ".."), task.task_spec);
            job.task_spec =
                PathExists(beside) ? beside : JoinPath(GMLP_STUDY_SOURCE_DIR, task.task_spec);
          }
          job.data_dir = task.glue_task.empty() ? config.data_dir
                                                : JoinPath(config.data_dir, task.data_subdir);
          job.init = pre_dir;
          job.output = ft_dir;
          job.seeds = config.seeds;
          job.max_train_examples = config.max_train_examples;
          job.max_eval_examples = config.max_eval_examples;
          job.save_model = false;
          job.options = config.finetune;
          job.options.log_every = 0;
          GMLP_ASSIGN_OR_RETURN(res, RunFinetune(job));
        }
        TaskScore score;
        score.task = task.name;
        score.kind = task.kind;
        score.split = task.report_split;
        score.metric = task.metric;
        if (task.metric == "accuracy" && res.contains("majority_class_accuracy") &&
            res["majority_class_accuracy"].contains(task.report_split)) {
          score.majority = res["majority_class_accuracy"][task.report_split].get<double>();
        }
        for (const auto& s : res.at("seeds")) {
          if (!s["best"].contains(task.report_split)) {
            return absl::InternalError(
                absl::StrCat(results_json, ": no split '", task.report_split, "' in the results"));
          }
          score.seeds.push_back(s["seed"].get<uint64_t>());
          score.values.push_back(s["best"][task.report_split][task.metric].get<double>());
        }
        const SeedStats st = Summarize(score.values);
        progress(absl::StrCat(where, ": ", task.name, " ", task.report_split, " ", task.metric,
                              " median ", st.median, " (std ", st.std, ")"));
        r.scores.push_back(std::move(score));
      }
      r.finetune_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(done, r.ToJson().dump(2) + "\n"));
    results.push_back(std::move(r));
  }

  // Outputs.
  ReportContext ctx;
  ctx.total_seconds = progress.Seconds();
  ctx.settings = {
      {"corpus", absl::StrCat(config.corpus, " (first ", config.corpus_mb, " MB)")},
      {"tokenizer", absl::StrCat(tokenizer_model, " (vocab ", config.vocab_size, ")")},
      {"shards", absl::StrCat(shard_dir, " (seq_len ", config.seq_len, ")")},
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
  absl::Status st = WriteStudyOutputs(results, ctx, out);
  if (!st.ok()) progress(absl::StrCat("warning: ", st.message()));
  const std::string report = JoinPath(out, "report.md");
  progress(absl::StrCat("done: report ", report, ", results ", JoinPath(out, "results.csv"),
                        ", plot ", JoinPath(out, "accuracy_vs_params.png")));
  return report;
}

}  // namespace gmlp::finetune
