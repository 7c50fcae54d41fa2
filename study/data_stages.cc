// The study's data stages (data_stages.h).
#include "study/data_stages.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/prepare.h"
#include "finetune/task.h"
#include "study/probe.h"
#include "study/tasks.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::study {
namespace {

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
  progress(
      absl::StrCat("training the tokenizer (vocab ", config.tokenizer_training.vocab_size, ")"));
  tokenizer::TrainOptions to = config.tokenizer_training;
  to.inputs = {corpus_txt};
  to.model_prefix = JoinPath(data_out, "tokenizer");
  return tokenizer::Train(to);
}

absl::Status ShardStage(const StudyConfig& config, const std::string& corpus_txt,
                        const StudyData& d, const Progress& progress, double* tokens) {
  progress(absl::StrCat("preparing shards (seq_len ", config.sharding.seq_len, ")"));
  data::PrepareOptions po = config.sharding;
  po.input = {corpus_txt};
  po.tokenizer = d.tokenizer_model;
  po.output = d.shard_dir;
  GMLP_ASSIGN_OR_RETURN(const data::PrepareResult r, data::Prepare(po));
  *tokens =
      static_cast<double>(r.manifest.Totals("train").tokens + r.manifest.Totals("valid").tokens);
  return absl::OkStatus();
}

absl::Status ProbeStage(const StudyConfig& config, const std::string& corpus, const StudyData& d,
                        const Progress& progress) {
  progress("generating the alignment probe from the held-out documents");
  ProbeOptions po = config.probe;
  po.corpus = corpus;
  po.output = d.probe_dir;
  po.holdout_fraction = config.holdout_fraction;
  po.tokenizer = d.tokenizer_model;
  po.max_len = config.finetune.max_len;
  po.shifts = ProbeShifts(config.tasks);
  po.word_versions = false;  // only where a task reads them
  for (const std::string& t : config.tasks) {
    po.word_versions |= IsProbeTask(t) && ProbeShiftOf(t) < 0;
  }
  absl::Status st = WriteProbe(po).status();
  if (absl::IsFailedPrecondition(st)) {  // a pair over max_len tokens: name the study's flags
    return absl::FailedPreconditionError(absl::StrCat(
        st.message(),
        " (gmlp study: lower --probe_max_sentence_bytes or --probe_segment_pieces, or raise "
        "--max_len)"));
  }
  return st;
}

}  // namespace

StudyData DataPaths(const StudyConfig& config) {
  const std::string data_out = JoinPath(config.output, "data");
  StudyData d{config.tokenizer, config.shards, ""};
  if (d.tokenizer_model.empty()) d.tokenizer_model = JoinPath(data_out, "tokenizer.model");
  if (d.shard_dir.empty()) d.shard_dir = JoinPath(data_out, "shards");
  if (UsesProbe(config)) d.probe_dir = JoinPath(data_out, "probe");
  return d;
}

StageLog::StageLog(std::string path) : path_(std::move(path)) {
  auto j = ReadJsonFile(path_, kRedo);
  if (!j.ok()) return;
  for (const auto& t : *j) {
    stages_.push_back(
        {t.value("stage", ""), t.value("seconds", 0.0), t.value("work", 0.0), t.value("unit", "")});
  }
}

absl::Status StageLog::Time(const std::string& name, const std::function<absl::Status()>& stage,
                            const double* work, const std::string& unit) {
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
  // Again where a resumed study asks for a version it has not written (the same seed writes the
  // same bytes for the versions it has).
  bool make_probe = !d.probe_dir.empty() && !PathExists(JoinPath(d.probe_dir, "probe.json"));
  for (const std::string& t : config.tasks) {
    auto task = FindStudyTask(t);
    if (task.ok() && IsProbeTask(task->name)) {
      make_probe |= !PathExists(JoinPath(d.probe_dir, task->task_spec));
    }
  }
  if (make_probe) {
    GMLP_RETURN_IF_ERROR(log->Time("alignment probe generation",
                                   [&] { return ProbeStage(config, corpus, d, progress); }));
  }
  return d;
}

}  // namespace gmlp::study
