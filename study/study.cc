// RunStudy in stages: check the directory, prepare the data, run each cell (pretrain, held-out
// perplexity, finetune each task), write the outputs.
#include "study/study.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "data/masking.h"
#include "data/prepare.h"
#include "finetune/finetune.h"
#include "finetune/metrics.h"
#include "model/arch.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/heads.h"
#include "model/provenance.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"
#include "pretrain/config.h"
#include "pretrain/mlm_eval.h"
#include "pretrain/pretrained.h"
#include "pretrain/run.h"
#include "study/probe.h"
#include "study/report.h"
#include "study/tasks.h"
#include "tokenizer/corpus_reader.h"
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
  std::string encoder;  // the results table's encoder: the arch, "amlp-attn16", "transformer-alibi"
  std::string arch;
  std::string size;
  std::string sgu;  // "" for encoders without an SGU
  pretrain::PretrainConfig pretrain;
  bool finetune = true;
};

// An error in the configuration of cell `name`, naming it and the settings that made it (each
// as its source set it: a --config file, --smoke or a flag).
absl::Status CellError(const StudyConfig& c, const std::string& name, const std::string& arch,
                       const std::string& size, const absl::Status& st) {
  std::string made_by =
      absl::StrCat(c.origins.Mention("archs", c.archs), ", ", c.origins.Mention("sizes", c.sizes));
  if (!c.model_overrides.empty()) {
    absl::StrAppend(&made_by, ", ", c.origins.Mention("model_overrides", c.model_overrides));
  }
  return absl::InvalidArgumentError(absl::StrCat("cell ", name, " (arch ", arch, ", size ", size,
                                                 "; from ", made_by, "): ", st.message()));
}

// The pretraining configuration of every cell: "<arch>-<size>" with the study's overrides, on
// the study's shards for the same steps, at the size's lr.
absl::StatusOr<pretrain::PretrainConfig> CellPretrainConfig(const StudyConfig& c,
                                                            const std::string& arch,
                                                            const std::string& size,
                                                            const std::string& sgu) {
  const std::string preset = absl::StrCat(arch, "-", size);
  pretrain::PretrainConfig pc;
  pc.preset = preset;
  GMLP_ASSIGN_OR_RETURN(pc.model, model::Preset(preset));
  if (!c.model_overrides.empty()) {
    auto model = pretrain::ApplyModelOverrides(pc.model, c.model_overrides);
    if (!model.ok()) return CellError(c, preset, arch, size, model.status());
    pc.model = *std::move(model);
  }
  if (!sgu.empty()) pc.model.sgu = sgu;
  if (const model::ArchSpec* spec = model::FindArch(pc.model.arch); spec != nullptr) {
    if (spec->has_position_schemes) pc.model.pre_ln = c.transformer_pre_ln;
    if (spec->has_tiny_attention) pc.model.attn_size = static_cast<int64_t>(c.amlp_attn_sizes[0]);
  }
  pretrain::TrainConfig& t = pc.train;
  t.steps = c.pretrain_steps;
  t.global_batch = c.pretrain_batch;
  t.micro_batch = c.pretrain_batch;
  GMLP_ASSIGN_OR_RETURN(t.lr, c.PretrainLr(size));
  t.warmup_steps = std::min(c.pretrain_warmup, c.pretrain_steps);
  t.bf16 = c.pretrain_bf16;
  t.kernels = c.pretrain_kernels;
  // The learning curve: held-out loss at curve_points evenly spaced steps (and the last).
  t.eval_every = std::max<int64_t>(1, c.pretrain_steps / c.curve_points);
  t.eval_batches = c.ppl_batches;
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
      if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown arch ", arch));
      const std::string preset = absl::StrCat(arch, "-", size);
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, CellPretrainConfig(c, arch, size, ""));
      if (spec->has_position_schemes) {  // one cell per position scheme, the baseline's first
        for (const std::string& position : c.transformer_positions) {
          pc.model.position = position;
          const std::string name =
              position == "learned" ? preset : absl::StrCat(preset, "-", position);
          cells.push_back({name, TransformerEncoder(position), arch, size, "", pc, true});
        }
        continue;
      }
      cells.push_back({preset, arch, arch, size, spec->has_sgu ? "split" : "", pc, true});
      if (!spec->has_tiny_attention) continue;
      for (size_t i = 1; i < c.amlp_attn_sizes.size(); ++i) {  // the other attention widths
        const std::string suffix = absl::StrCat("attn", c.amlp_attn_sizes[i]);
        pc.model.attn_size = static_cast<int64_t>(c.amlp_attn_sizes[i]);
        cells.push_back({absl::StrCat(preset, "-", suffix), absl::StrCat(arch, "-", suffix), arch,
                         size, "split", pc, true});
      }
    }
  }
  if (!c.sizes.empty()) {
    const std::string& size = c.sizes.front();
    for (const std::string& v : c.sgu_variants) {
      if (v == "split") continue;  // that is the main gMLP cell
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, CellPretrainConfig(c, "gmlp", size, v));
      cells.push_back({absl::StrCat("gmlp-", size, "-sgu-", v), absl::StrCat("gmlp-sgu-", v),
                       "gmlp", size, v, std::move(pc), false});
    }
  }
  // Every cell is checked before any work starts (the study's own keys bound what it sets).
  for (const CellSpec& cell : cells) {
    absl::Status st = cell.pretrain.model.Validate();
    if (st.ok()) st = cell.pretrain.train.Validate();
    if (!st.ok()) return CellError(c, cell.name, cell.arch, cell.size, st);
  }
  return cells;
}

std::string CellDir(const StudyConfig& config, const CellSpec& cell) {
  return JoinPath(JoinPath(config.output, "cells"), cell.name);
}

// Each cell whose pretraining started (its pretrain/config.json, or pretrain.exported/ while an
// exported cell is recovered) must have the peak lr the study gives it now: pretrain_lr_by_size
// is not in the study's fingerprint, so that a new entry redoes only its size's cells.
absl::Status CheckCellLearningRates(const StudyConfig& config, const std::vector<CellSpec>& cells) {
  for (const CellSpec& cell : cells) {
    const std::string cell_dir = CellDir(config, cell);
    for (const char* sub : {"pretrain", "pretrain.exported"}) {
      const std::string path = JoinPath(JoinPath(cell_dir, sub), "config.json");
      if (!PathExists(path)) continue;
      GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path, kRedo));
      if (!j.contains("lr") || !j["lr"].is_number()) {
        return absl::DataLossError(absl::StrCat(path, ": no \"lr\"; ", kRedo));
      }
      const double recorded = j["lr"].get<double>();
      if (recorded != cell.pretrain.train.lr) {
        return absl::FailedPreconditionError(absl::StrCat(
            cell_dir, " was pretrained at peak lr ", recorded, "; this study gives its size (",
            cell.size, ") lr ", cell.pretrain.train.lr,
            " (--pretrain_lr, --pretrain_lr_by_size). Move that folder out of ", config.output,
            "/cells to redo the cell at the new lr, or run with the lr it was started with"));
      }
    }
  }
  return absl::OkStatus();
}

// study.json's settings with "made_by": the gmlp, LibTorch and machine of this invocation (a
// resumed study records the one that resumed it; report.md names the one that wrote it).
nlohmann::json WithProvenance(nlohmann::json j) {
  j[model::kMadeByKey] = nlohmann::json::parse(model::Provenance().dump());
  return j;
}

// A study directory resumes only with the settings it was started with, and its cells only with
// the lr they were pretrained at; then writes study.json.
absl::Status CheckAndRecordSettings(const StudyConfig& config, const std::vector<CellSpec>& cells) {
  GMLP_RETURN_IF_ERROR(CheckCellLearningRates(config, cells));
  const std::string study_json = JoinPath(config.output, "study.json");
  if (PathExists(study_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json old_json, ReadJsonFile(study_json, kRedo));
    const std::string diff = SettingsChanges(old_json, config);
    if (!diff.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(config.output, " holds a study run with other settings (", diff,
                       " ). Resume it with the same flags, or use a new --output"));
    }
  }
  return WriteFileAtomic(study_json, WithProvenance(config.ToJson()).dump(2) + "\n");
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

// The documents of `corpus` before `stop_before` (the held-out tail), the first `mb` MB of them
// when mb > 0 (cut at a document end), as plain text: a piece per line and a blank line between
// documents, which CorpusReader reads back as the same documents. Written atomically.
absl::Status ExtractCorpus(const std::string& corpus, int64_t mb, int64_t stop_before,
                           const std::string& out) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::CorpusReader> reader,
                        tokenizer::CorpusReader::Open(corpus));
  const int64_t limit = mb > 0 ? mb << 20 : INT64_MAX;
  std::string text, piece;
  int64_t document = -1;
  bool new_document = false;
  for (;;) {
    GMLP_ASSIGN_OR_RETURN(const bool got, reader->Next(&piece, &new_document));
    if (!got) break;
    if (new_document) {
      ++document;
      if (document >= stop_before || static_cast<int64_t>(text.size()) >= limit) break;
      if (document > 0) text += "\n";
    }
    text += piece;
    text += "\n";
  }
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(corpus, ": no text read"));
  return WriteFileAtomic(out, text);
}

// Where the data stages put their outputs, or the existing ones the config names.
struct StudyData {
  std::string tokenizer_model;
  std::string shard_dir;
  std::string probe_dir;  // the alignment probe's task specs, when a probe task runs
};

bool UsesProbe(const StudyConfig& config) {
  for (const std::string& t : config.tasks) {
    if (IsProbeTask(t)) return true;
  }
  return false;
}

// The data paths a study uses: the tokenizer and shards the config names, else those its data
// stages write under <output>/data.
StudyData DataPaths(const StudyConfig& config) {
  const std::string data_out = JoinPath(config.output, "data");
  StudyData d{config.tokenizer, config.shards, ""};
  if (d.tokenizer_model.empty()) d.tokenizer_model = JoinPath(data_out, "tokenizer.model");
  if (d.shard_dir.empty()) d.shard_dir = JoinPath(data_out, "shards");
  if (UsesProbe(config)) d.probe_dir = JoinPath(data_out, "probe");
  return d;
}

// The data stages' wall times, kept in data/stages.json across invocations (a resumed study
// reports the stages an earlier invocation ran).
class StageLog {
 public:
  explicit StageLog(std::string path) : path_(std::move(path)) {
    auto j = ReadJsonFile(path_, kRedo);
    if (!j.ok()) return;
    for (const auto& t : *j) {
      stages_.push_back({t.value("stage", ""), t.value("seconds", 0.0), t.value("work", 0.0),
                         t.value("unit", "")});
    }
  }
  // Runs `stage` and records its time; `work` is read after it ran.
  absl::Status Time(const std::string& name, const std::function<absl::Status()>& stage,
                    const double* work = nullptr, const std::string& unit = "") {
    const auto t0 = Clock::now();
    GMLP_RETURN_IF_ERROR(stage());
    stages_.push_back({name, std::chrono::duration<double>(Clock::now() - t0).count(),
                       work != nullptr ? *work : 0.0, unit});
    nlohmann::json j = nlohmann::json::array();
    for (const StageTiming& t : stages_) {
      j.push_back({{"stage", t.stage}, {"seconds", t.seconds}, {"work", t.work}, {"unit", t.unit}});
    }
    return WriteFileAtomic(path_, j.dump(2) + "\n");
  }
  const std::vector<StageTiming>& stages() const { return stages_; }

 private:
  std::string path_;
  std::vector<StageTiming> stages_;
};

absl::Status ExtractStage(const StudyConfig& config, const std::string& corpus,
                          const std::string& corpus_txt, const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(const CorpusHoldout holdout,
                        FindCorpusHoldout(corpus, config.holdout_fraction));
  progress(absl::StrCat(
      "extracting ", config.corpus_mb > 0 ? absl::StrCat(config.corpus_mb, " MB") : "all", " of ",
      config.corpus, " before its held-out last ",
      holdout.documents - holdout.first_holdout_document, " of ", holdout.documents, " documents"));
  return ExtractCorpus(corpus, config.corpus_mb, holdout.first_holdout_document, corpus_txt);
}

absl::Status TokenizerStage(const StudyConfig& config, const std::string& corpus_txt,
                            const std::string& data_out, const Progress& progress) {
  progress(absl::StrCat("training the tokenizer (vocab ", config.vocab_size, ")"));
  tokenizer::TrainOptions to;
  to.inputs = {corpus_txt};
  to.model_prefix = JoinPath(data_out, "tokenizer");
  to.vocab_size = config.vocab_size;
  to.input_sentence_size = 300000;
  return tokenizer::Train(to);
}

absl::Status ShardStage(const StudyConfig& config, const std::string& corpus_txt,
                        const StudyData& d, const Progress& progress, double* tokens) {
  progress(absl::StrCat("preparing shards (seq_len ", config.seq_len, ")"));
  data::PrepareOptions po;
  po.input = {corpus_txt};
  po.tokenizer = d.tokenizer_model;
  po.output = d.shard_dir;
  po.seq_len = config.seq_len;
  po.valid_fraction = 0.02;
  po.progress = false;
  GMLP_ASSIGN_OR_RETURN(const data::PrepareResult r, data::Prepare(po));
  *tokens =
      static_cast<double>(r.manifest.Totals("train").tokens + r.manifest.Totals("valid").tokens);
  return absl::OkStatus();
}

absl::Status ProbeStage(const StudyConfig& config, const std::string& corpus, const StudyData& d,
                        const Progress& progress) {
  progress("generating the alignment probe from the held-out documents");
  ProbeOptions po;
  po.corpus = corpus;
  po.output = d.probe_dir;
  po.holdout_fraction = config.holdout_fraction;
  po.train_examples = config.probe_train_examples;
  po.dev_examples = config.probe_dev_examples;
  po.test_examples = config.probe_test_examples;
  po.max_sentence_bytes = config.probe_max_sentence_bytes;
  po.tokenizer = d.tokenizer_model;
  po.max_len = config.finetune.max_len;
  absl::Status st = WriteProbe(po).status();
  if (absl::IsFailedPrecondition(st)) {  // a pair over max_len tokens: name the study's flags
    return absl::FailedPreconditionError(absl::StrCat(
        st.message(), " (gmlp study: lower --probe_max_sentence_bytes, or raise --max_len)"));
  }
  return st;
}

// Corpus extract (without the held-out tail), tokenizer, shards, probe; each skipped when
// already there.
absl::StatusOr<StudyData> PrepareData(const StudyConfig& config, const Progress& progress,
                                      StageLog* log) {
  const std::string data_out = JoinPath(config.output, "data");
  GMLP_RETURN_IF_ERROR(MakeDirs(data_out));
  const std::string corpus_txt = JoinPath(data_out, "corpus.txt");
  const StudyData d = DataPaths(config);
  const std::string corpus = finetune::ResolveDataPath(config.data_dir, config.corpus);
  if (!PathExists(corpus)) {
    return absl::NotFoundError(absl::StrCat(
        corpus, ": corpus not found; pass --corpus=<text/.xz/.gz> (relative to --data_dir)"));
  }
  const bool make_tokenizer = config.tokenizer.empty() && !PathExists(d.tokenizer_model);
  const bool make_shards =
      config.shards.empty() && !PathExists(JoinPath(d.shard_dir, "manifest.json"));
  if ((make_tokenizer || make_shards) && !PathExists(corpus_txt)) {
    GMLP_RETURN_IF_ERROR(log->Time(
        "corpus extract", [&] { return ExtractStage(config, corpus, corpus_txt, progress); }));
  }
  if (make_tokenizer) {
    GMLP_RETURN_IF_ERROR(log->Time("tokenizer training", [&] {
      return TokenizerStage(config, corpus_txt, data_out, progress);
    }));
  }
  if (make_shards) {
    double tokens = 0;
    GMLP_RETURN_IF_ERROR(log->Time(
        "shards", [&] { return ShardStage(config, corpus_txt, d, progress, &tokens); }, &tokens,
        "tokens"));
  }
  if (!d.probe_dir.empty() && !PathExists(JoinPath(d.probe_dir, "probe.json"))) {
    GMLP_RETURN_IF_ERROR(log->Time("alignment probe generation",
                                   [&] { return ProbeStage(config, corpus, d, progress); }));
  }
  return d;
}

// The held-out batches every cell is scored on: the validation split in order, its masking
// seeded the same way for every cell (so all cells predict the same positions).
data::LoaderOptions HeldOutLoaderOptions(const std::string& shard_dir, int64_t batch_size) {
  data::LoaderOptions lo;
  lo.shard_dir = shard_dir;
  lo.split = "valid";
  lo.batch_size = batch_size;
  lo.seed = 4242;
  lo.shuffle = false;
  lo.prefetch = 0;
  return lo;
}

int64_t HeldOutBatches(const data::MlmLoader& loader, int64_t batches) {
  return std::max<int64_t>(1, std::min(batches, loader.batches_per_epoch()));
}

// Masked-token cross-entropy on `batches` held-out batches.
absl::StatusOr<double> HeldOutMlmLoss(const std::string& run_dir, const std::string& shard_dir,
                                      int64_t batch_size, int64_t batches) {
  GMLP_ASSIGN_OR_RETURN(const std::string ckpt, pretrain::ResolveCheckpoint(run_dir));
  GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre, pretrain::LoadPretrainedEncoder(ckpt));
  model::MlmModel mlm(pre.config);
  GMLP_RETURN_IF_ERROR(model::LoadModule(*mlm, JoinPath(ckpt, pretrain::kModelFile)));
  mlm->eval();
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> loader,
                        data::MlmLoader::Open(HeldOutLoaderOptions(shard_dir, batch_size)));
  const int64_t n = HeldOutBatches(*loader, batches);
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

// Per id: how often it occurs in the training split as written (nothing chosen, nothing
// replaced), read in batches of `batch_size` (the tail that fills no batch is left out): the
// frequencies a context-free predictor can learn.
absl::StatusOr<std::vector<int64_t>> TrainTokenCounts(const std::string& shard_dir,
                                                      int64_t batch_size) {
  data::LoaderOptions lo = HeldOutLoaderOptions(shard_dir, batch_size);
  lo.split = "train";
  lo.masking.mask_rate = 0;
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> train, data::MlmLoader::Open(lo));
  std::vector<int64_t> counts(static_cast<size_t>(train->vocab_size()), 0);
  for (int64_t b = train->batches_per_epoch(); b > 0; --b) {
    GMLP_ASSIGN_OR_RETURN(const data::MlmBatch batch, train->Next());
    for (int32_t id : batch.input_ids) ++counts[static_cast<size_t>(id)];
  }
  return counts;
}

// The context-free floor (data::ContextFreeMlmLoss) of a held-out loss: the predictor knows
// `train_counts` and is scored on the labels of the first `batches` batches of `held_out` (the
// positions that loss is measured on).
absl::StatusOr<double> ContextFreeFloor(const std::vector<int64_t>& train_counts,
                                        const data::LoaderOptions& held_out, int64_t batches) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> valid, data::MlmLoader::Open(held_out));
  std::vector<int64_t> target(static_cast<size_t>(valid->vocab_size()), 0);
  for (int64_t b = HeldOutBatches(*valid, batches); b > 0; --b) {
    GMLP_ASSIGN_OR_RETURN(const data::MlmBatch batch, valid->Next());
    for (int32_t id : batch.masked_labels) ++target[static_cast<size_t>(id)];
  }
  return data::ContextFreeMlmLoss(train_counts, target, held_out.masking);
}

// Both floors the report uses: at the final loss's positions (HeldOutMlmLoss) and at the
// learning curves' (the trainer's evaluation batches, as pretrain/run.cc opens them: the
// cell's seed and masking, the same for every cell). The training split is read once.
absl::Status AddContextFreeFloors(const StudyConfig& config, const std::string& shard_dir,
                                  const pretrain::TrainConfig& train, ReportContext* context) {
  GMLP_ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                        TrainTokenCounts(shard_dir, config.pretrain_batch));
  data::LoaderOptions curve = HeldOutLoaderOptions(shard_dir, train.micro_batch);
  curve.seed = train.seed;
  curve.masking.mask_rate = train.mask_rate;
  curve.masking.whole_word = train.whole_word;
  GMLP_ASSIGN_OR_RETURN(
      context->context_free_loss,
      ContextFreeFloor(counts, HeldOutLoaderOptions(shard_dir, config.pretrain_batch),
                       config.ppl_batches));
  GMLP_ASSIGN_OR_RETURN(context->curve_context_free_loss,
                        ContextFreeFloor(counts, curve, train.eval_batches));
  return absl::OkStatus();
}

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
  return HeldOutMlmLoss(pre_dir, data.shard_dir, config.pretrain_batch, config.ppl_batches);
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
                        config.pretrain_steps, " steps again"));
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
  if (done && (checkpoints.empty() || checkpoints.back().first < config.pretrain_steps)) {
    GMLP_RETURN_IF_ERROR(RecoverCheckpoint(config, data, cell, cell_dir, where, progress));
  }
  if (done) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(pre_json, kRedo));
    r->mlm_loss = j.value("mlm_loss", 0.0);
  } else {
    progress(absl::StrCat(where, ": pretraining ", config.pretrain_steps, " steps"));
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
  r->pretrain_tokens = config.pretrain_steps * config.pretrain_batch * pre.config.max_seq_len;
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

// Finetunes the cell on one task with every seed (on the second segment alone for the
// "second_only" control), unless its results.json exists.
absl::StatusOr<TaskScore> FinetuneTask(const StudyConfig& config, const StudyData& data,
                                       const std::string& task_name, const std::string& control,
                                       const std::string& cell_dir, const std::string& where,
                                       const Progress& progress) {
  GMLP_ASSIGN_OR_RETURN(StudyTask task, FindStudyTask(task_name));
  finetune::FinetuneJob job = StudyTaskJob(task, config.data_dir, data.probe_dir);
  const bool second_only = control == "second_only";
  job.second_segment_only = second_only;
  job.init = JoinPath(cell_dir, "pretrain");
  job.output =
      JoinPath(JoinPath(cell_dir, "ft"), second_only ? task.name + "-second-only" : task.name);
  job.seeds = config.seeds;
  job.max_train_examples = config.max_train_examples;
  job.max_eval_examples = config.max_eval_examples;
  job.save_model = false;
  job.predict_test = false;               // the study reports labelled splits only
  job.resume_seeds = true;                // the fingerprint keeps the settings of job.output
  job.eval_splits = {task.report_split};  // besides the selection split
  job.options = config.finetune;
  job.options.log_every = 0;
  GMLP_ASSIGN_OR_RETURN(finetune::TaskSpec spec, finetune::ResolveTask(job));
  const std::string results_json = JoinPath(job.output, finetune::kResultsFile);
  finetune::FinetuneResult res;
  const auto t0 = Clock::now();
  if (PathExists(results_json)) {
    GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(results_json, kRedo));
    GMLP_ASSIGN_OR_RETURN(res, finetune::FinetuneResult::FromJson(j));
  } else {
    progress(absl::StrCat(where, ": finetuning ", task.name,
                          second_only ? " (second segment only)" : "", " x ", config.seeds.size(),
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
  progress(absl::StrCat(where, ": ", task.name, second_only ? " (second segment only) " : " ",
                        task.report_split, " ", score.metric, " median ", st.median, " (std ",
                        st.std, ")"));
  return score;
}

// The (task, control) runs of a cell: every task, plus the second-segment-only control of every
// pair task for the baseline when controls are on.
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
  return runs;
}

// A finished cell (cell.json) is reused as long as it covers the runs asked for now.
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

// The cell's result when an earlier invocation finished every run asked for now.
absl::StatusOr<std::optional<CellResult>> FinishedCell(const StudyConfig& config,
                                                       const CellSpec& cell) {
  const std::string done = JoinPath(CellDir(config, cell), "cell.json");
  if (!PathExists(done)) return std::nullopt;
  GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(done, kRedo));
  GMLP_ASSIGN_OR_RETURN(CellResult r, CellResult::FromJson(j));
  if (!Covers(CellRuns(config, cell), r)) return std::nullopt;
  return r;
}

// Runs (or reuses) one cell: pretraining, perplexity, finetuning; then writes cell.json.
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
  r.pretrain_steps = config.pretrain_steps;
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

// "<dir> (seq_len n, N train tokens: each cell pretrains on x epochs of them)".
std::string ShardsSetting(const std::string& shard_dir, const StudyConfig& config) {
  auto manifest = data::ReadManifest(JoinPath(shard_dir, "manifest.json"));
  if (!manifest.ok()) return absl::StrCat(shard_dir, " (seq_len ", config.seq_len, ")");
  const int64_t train = manifest->Totals("train").tokens;
  const double seen = static_cast<double>(config.pretrain_steps * config.pretrain_batch) *
                      static_cast<double>(manifest->seq_len);
  return absl::StrFormat(
      "%s (seq_len %d, %.2fM train tokens; a cell's %d x %d sequences are "
      "%.2f passes over them)",
      shard_dir, manifest->seq_len, train / 1e6, config.pretrain_steps, config.pretrain_batch,
      train > 0 ? seen / static_cast<double>(train) : 0);
}

// The report's setup section: settings, notes on the recipe, and the per-stage times.
ReportContext Context(const StudyConfig& config, const StudyData& data,
                      const std::vector<CellSpec>& cells, double seconds) {
  ReportContext ctx;
  ctx.total_seconds = seconds;
  const std::string corpus_part =
      config.corpus_mb > 0 ? absl::StrCat("first ", config.corpus_mb, " MB") : "all";
  ctx.settings = {
      {"corpus", absl::StrCat(config.corpus, " (", corpus_part,
                              " of the documents before the "
                              "held-out last ",
                              config.holdout_fraction * 100, "%)")},
      {"tokenizer", absl::StrCat(data.tokenizer_model, " (vocab ", config.vocab_size, ")")},
      {"shards", ShardsSetting(data.shard_dir, config)},
      {"pretraining",
       absl::StrCat(
           config.pretrain_steps, " steps x ", config.pretrain_batch, " sequences, lr ",
           config.pretrain_lr,
           config.pretrain_lr_by_size.empty()
               ? ""
               : absl::StrCat(" (by size: ", absl::StrJoin(config.pretrain_lr_by_size, ", "), ")"),
           ", warmup ", config.pretrain_warmup, config.pretrain_bf16 ? ", bf16 autocast" : ", fp32",
           config.pretrain_lr_by_size.empty() ? " (the same recipe for every cell)"
                                              : " (the same recipe for every encoder of a size)")},
      {"finetuning",
       absl::StrCat(config.finetune.epochs, " epochs, batch ", config.finetune.batch_size, ", lr ",
                    config.finetune.lr, ", max_len ", config.finetune.max_len,
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
  if (config.transformer_pre_ln) {
    ctx.notes.push_back(
        "The Transformer baseline is pre-LN (with a final LayerNorm), the same recipe as the "
        "other encoders: BERT's post-LN Transformer-mini collapsed to the majority class at this "
        "scale in the study's earlier default run.");
  }
  ctx.baseline = BaselineEncoder(config);
  if (config.transformer_positions.front() == "alibi") {
    ctx.notes.push_back(
        "The baseline Transformer has no position table: each head adds -m|i-j| to its "
        "attention scores (ALiBi, the reference slopes). With BERT's learned positions it "
        "stayed on the context-free floor at this scale (the long run of 2026-12-01, "
        "results/2026-12-01-cpu-3h; bench/context_bench: at length 128, learned-position "
        "attention stays on the floor of a toy task that gMLP solves early).");
  }
  for (const CellSpec& c : cells) {
    const model::ArchSpec* spec = model::FindArch(c.arch);
    if (spec == nullptr || !spec->has_tiny_attention || !c.finetune) continue;
    ctx.notes.push_back(absl::StrFormat(
        "%s: tiny attention %d wide at d_model %d (1/%.0f; the paper's aMLPs use 64 at "
        "d_model 512-1024, 1/8-1/16)",
        c.name, c.pretrain.model.attn_size, c.pretrain.model.d_model,
        static_cast<double>(c.pretrain.model.d_model) / c.pretrain.model.attn_size));
  }
  if (UsesProbe(config)) {
    ctx.notes.push_back(
        absl::StrCat("alignment probe (study/probe.h): ", config.probe_train_examples, "/",
                     config.probe_dev_examples, "/", config.probe_test_examples,
                     " train/dev/test pairs per version from the held-out documents; details in ",
                     JoinPath(data.probe_dir, "probe.json")));
  }
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
  if (PathExists(JoinPath(data.shard_dir, data::kManifestFile)) && !cells.empty()) {
    ReportContext floors;
    const absl::Status st =
        AddContextFreeFloors(config, data.shard_dir, cells.front().pretrain.train, &floors);
    if (st.ok()) {
      context.context_free_loss = floors.context_free_loss;
      context.curve_context_free_loss = floors.curve_context_free_loss;
    } else {
      progress(absl::StrCat("warning: no context-free floor: ", st.message()));
    }
  }
  GMLP_RETURN_IF_ERROR(RecordTimings(config, context.stages));
  absl::Status st = WriteStudyOutputs(results, context, out);
  if (!st.ok()) progress(absl::StrCat("warning: ", st.message()));
  const std::string report = JoinPath(out, "report.md");
  progress(absl::StrCat("done: report ", report, ", results ", JoinPath(out, "results.csv"),
                        ", plot ", JoinPath(out, "accuracy_vs_params.png")));
  return report;
}

}  // namespace

absl::StatusOr<std::string> RunStudy(const StudyConfig& given) {
  GMLP_RETURN_IF_ERROR(given.Validate());
  GMLP_ASSIGN_OR_RETURN(const StudyConfig config, given.WithDerivedDefaults());
  GMLP_RETURN_IF_ERROR(config.Validate());
  GMLP_ASSIGN_OR_RETURN(const std::vector<CellSpec> cells, Cells(config));
  Progress progress;
  GMLP_RETURN_IF_ERROR(MakeDirs(config.output));
  GMLP_RETURN_IF_ERROR(CheckAndRecordSettings(config, cells));
  StageLog log(JoinPath(JoinPath(config.output, "data"), "stages.json"));
  GMLP_ASSIGN_OR_RETURN(const StudyData data, PrepareData(config, progress, &log));
  std::vector<CellResult> results;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string where = absl::StrCat("cell ", i + 1, "/", cells.size(), " ", cells[i].name);
    GMLP_ASSIGN_OR_RETURN(CellResult r, RunCell(config, data, cells[i], where, progress));
    results.push_back(std::move(r));
  }
  return WriteReport(config, data, cells, results, log, progress, {}, progress.Seconds());
}

absl::StatusOr<std::string> ReportStudySoFar(const StudyConfig& given) {
  GMLP_RETURN_IF_ERROR(given.Validate());
  GMLP_ASSIGN_OR_RETURN(const StudyConfig config, given.WithDerivedDefaults());
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
  progress(absl::StrCat("report of ", results.size(), " of ", cells.size(), " finished cells"));
  // This invocation ran nothing: the report leaves out its wall time.
  return WriteReport(config, data, done_cells, results, log, progress, std::move(notes),
                     /*invocation_seconds=*/0);
}

}  // namespace gmlp::study
