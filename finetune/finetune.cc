#include "finetune/finetune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "common/tensorboard.h"
#include "finetune/metrics.h"
#include "finetune/saved_model.h"
#include "kernels/policy.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/provenance.h"
#include "pretrain/pretrained.h"
#include "pretrain/run.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::finetune {
namespace {

// Every split of the task read and encoded.
struct TaskData {
  std::vector<EncodedExample> train;
  std::vector<EncodedSplit> evals;
  std::vector<EncodedSplit> tests;
  std::vector<SplitData> eval_raw;
  std::vector<SplitData> test_raw;
};

std::string FormatPrediction(const TaskSpec& task, const SplitPredictions& p, size_t i) {
  if (task.is_regression()) return absl::StrFormat("%.3f", p.score[i]);
  return task.labels[p.label[i]];
}

std::string FormatGold(const TaskSpec& task, const Example& e) {
  if (task.is_regression()) return absl::StrFormat("%.3f", e.score);
  return e.label >= 0 ? task.labels[e.label] : "";
}

// <dir>/<eval split>.tsv for one seed: index, prediction, gold.
absl::Status WriteEvalPredictions(const TaskSpec& task, const TaskData& data,
                                  const SeedResult& seed, const std::string& dir) {
  GMLP_RETURN_IF_ERROR(MakeDirs(dir));
  for (const SplitData& split : data.eval_raw) {
    const SplitPredictions& p = seed.predictions.at(split.name);
    std::string text = "index\tprediction\tlabel\n";
    for (size_t i = 0; i < split.examples.size(); ++i) {
      absl::StrAppend(&text, split.examples[i].id, "\t", FormatPrediction(task, p, i), "\t",
                      FormatGold(task, split.examples[i]), "\n");
    }
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, split.name + ".tsv"), text));
  }
  return absl::OkStatus();
}

absl::Status WritePredictions(const TaskSpec& task, const TaskData& data, const SeedResult& best,
                              const std::string& output) {
  GMLP_RETURN_IF_ERROR(WriteEvalPredictions(task, data, best, JoinPath(output, "predictions")));
  if (data.test_raw.empty()) return absl::OkStatus();
  const std::string sub_dir = JoinPath(output, "submission");
  GMLP_RETURN_IF_ERROR(MakeDirs(sub_dir));
  for (size_t t = 0; t < data.test_raw.size(); ++t) {
    const SplitData& split = data.test_raw[t];
    const SplitSpec* spec = nullptr;
    for (const SplitSpec& s : task.test) {
      if (s.name == split.name) spec = &s;
    }
    const std::string file =
        spec != nullptr && !spec->submission.empty() ? spec->submission : split.name + ".tsv";
    const SplitPredictions& p = best.predictions.at(split.name);
    std::string text = "index\tprediction\n";  // the GLUE submission format
    for (size_t i = 0; i < split.examples.size(); ++i) {
      absl::StrAppend(&text, split.examples[i].id, "\t", FormatPrediction(task, p, i), "\n");
    }
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(sub_dir, file), text));
  }
  return absl::OkStatus();
}

// The encoder every seed starts from, and the tokenizer that goes with it.
struct EncoderSource {
  model::EncoderConfig config;
  std::string tokenizer_path;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  EncoderFactory make;
};

absl::StatusOr<EncoderSource> LoadEncoderSource(const FinetuneJob& job) {
  EncoderSource src;
  if (job.reinit && job.init.empty()) {
    return absl::InvalidArgumentError(
        "--reinit takes the architecture of --init: name one (or use --preset and --tokenizer)");
  }
  if (!job.init.empty()) {
    GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre,
                          pretrain::LoadPretrainedEncoder(job.init));
    src.config = pre.config;
    src.tokenizer_path = pre.tokenizer_path;
    const std::string init = job.init;
    if (job.reinit) {
      std::fprintf(stderr,
                   "\n*** --reinit: finetuning %s's architecture RANDOMLY INITIALIZED (its "
                   "pretrained weights are not used). ***\n\n",
                   init.c_str());
      const model::EncoderConfig config = pre.config;
      src.make = [config]() -> absl::StatusOr<std::shared_ptr<model::EncoderImpl>> {
        return model::MakeEncoder(config);
      };
    } else {
      src.make = [init]() -> absl::StatusOr<std::shared_ptr<model::EncoderImpl>> {
        GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder p, pretrain::LoadPretrainedEncoder(init));
        return p.encoder;
      };
    }
  } else {
    if (job.preset.empty() || job.tokenizer.empty()) {
      return absl::InvalidArgumentError(
          "--init is unset: name a pretrained run (--init=runs/pretrain/...), or to train from "
          "scratch give both --preset and --tokenizer");
    }
    std::fprintf(stderr,
                 "\n*** WARNING: --init is unset: finetuning a RANDOMLY INITIALIZED %s encoder "
                 "(no pretraining). Scores will be far below pretrained ones. ***\n\n",
                 job.preset.c_str());
    GMLP_ASSIGN_OR_RETURN(src.config, model::Preset(job.preset));
    src.tokenizer_path = job.tokenizer;
  }
  GMLP_ASSIGN_OR_RETURN(src.tokenizer, tokenizer::Tokenizer::Load(src.tokenizer_path));
  if (job.init.empty()) {
    src.config.vocab_size = src.tokenizer->vocab_size();
    src.config.max_seq_len = std::max(src.config.max_seq_len, job.options.max_len);
    GMLP_RETURN_IF_ERROR(src.config.Validate());
    const model::EncoderConfig config = src.config;
    src.make = [config]() -> absl::StatusOr<std::shared_ptr<model::EncoderImpl>> {
      return model::MakeEncoder(config);
    };
  }
  if (job.options.max_len > src.config.max_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat("--max_len=", job.options.max_len,
                                                   " exceeds the encoder's max_seq_len (",
                                                   src.config.max_seq_len, "); lower --max_len"));
  }
  return src;
}

// Reads one split, reporting what was skipped; the strict setting makes bad UTF-8 an error.
absl::StatusOr<SplitData> ReadAndReport(const FinetuneJob& job, const TaskSpec& task,
                                        const SplitSpec& split, const std::string& data_dir) {
  ReadOptions options;
  options.strict_utf8 = job.strict_utf8;
  GMLP_ASSIGN_OR_RETURN(SplitData d, ReadSplit(task, split, data_dir, options));
  if (d.skipped_rows > 0) {
    std::fprintf(stderr, "finetune: %s: skipped %lld malformed rows\n", d.path.c_str(),
                 static_cast<long long>(d.skipped_rows));
  }
  if (d.invalid_utf8_rows > 0) {
    std::fprintf(stderr,
                 "finetune: %s: skipped %lld rows of invalid UTF-8 (--strict_utf8 stops at "
                 "the first)\n",
                 d.path.c_str(), static_cast<long long>(d.invalid_utf8_rows));
  }
  return d;
}

// The training examples in a fixed random order (the same for every seed and encoder), split
// into the select_from_train held-out part (returned; its rows keep their train line numbers)
// and a train subset of max_train_examples (0 = the rest). Without either, train is unchanged.
absl::StatusOr<std::optional<SplitData>> CarveFromTrain(const FinetuneJob& job, SplitData* train) {
  std::vector<Example>& all = train->examples;
  const int64_t n = static_cast<int64_t>(all.size());
  const int64_t carve = job.select_from_train;
  if (carve > 0 && carve >= n) {
    return absl::InvalidArgumentError(absl::StrCat(train->path, ": --select_from_train=", carve,
                                                   " leaves nothing to train on (", n,
                                                   " training examples); lower it"));
  }
  const bool subset = job.max_train_examples > 0 && n - carve > job.max_train_examples;
  if (carve == 0 && !subset) return std::optional<SplitData>();
  std::mt19937_64 rng(12345);
  std::shuffle(all.begin(), all.end(), rng);
  std::optional<SplitData> heldout;
  if (carve > 0) {  // the tail, so that the subset below is what it was without carving
    heldout = SplitData{kTrainHeldoutSplit, train->path, true, {}, 0, 0};
    heldout->examples.assign(all.end() - carve, all.end());
    all.resize(n - carve);
  }
  if (subset) all.resize(job.max_train_examples);
  return heldout;
}

// Reads and encodes every split: train (a fixed random subset when asked), the held-out
// selection split carved from it (when asked), eval (the first N when asked) and the test
// splits whose files exist.
absl::StatusOr<TaskData> ReadTaskData(const FinetuneJob& job, const TaskSpec& task,
                                      const std::string& data_dir,
                                      const tokenizer::Tokenizer& tok) {
  const TokenizeFn tokenize = [&tok](absl::string_view text, std::vector<int32_t>* out) {
    return tok.Encode(text, out);
  };
  const bool pair = task.is_pair();
  const int64_t max_len = job.options.max_len;
  TaskData data;
  GMLP_ASSIGN_OR_RETURN(SplitData train, ReadAndReport(job, task, task.train, data_dir));
  GMLP_ASSIGN_OR_RETURN(std::optional<SplitData> heldout, CarveFromTrain(job, &train));
  GMLP_ASSIGN_OR_RETURN(data.train, EncodeSplit(train, pair, max_len, tokenize));
  if (heldout.has_value()) {
    GMLP_ASSIGN_OR_RETURN(std::vector<EncodedExample> enc,
                          EncodeSplit(*heldout, pair, max_len, tokenize));
    data.evals.push_back({heldout->name, std::move(enc)});
    data.eval_raw.push_back(std::move(*heldout));
  }
  for (const SplitSpec& s : task.eval) {
    if (s.name == kTrainHeldoutSplit) continue;  // carved above
    GMLP_ASSIGN_OR_RETURN(SplitData d, ReadAndReport(job, task, s, data_dir));
    if (job.max_eval_examples > 0 &&
        static_cast<int64_t>(d.examples.size()) > job.max_eval_examples) {
      d.examples.resize(job.max_eval_examples);
    }
    GMLP_ASSIGN_OR_RETURN(std::vector<EncodedExample> enc, EncodeSplit(d, pair, max_len, tokenize));
    data.evals.push_back({s.name, std::move(enc)});
    data.eval_raw.push_back(std::move(d));
  }
  for (const SplitSpec& s : task.test) {
    const std::string path = ResolveDataPath(data_dir, s.file);
    if (!PathExists(path)) {
      std::fprintf(stderr, "finetune: %s: no test file %s; no predictions for split '%s'\n",
                   task.name.c_str(), path.c_str(), s.name.c_str());
      continue;
    }
    GMLP_ASSIGN_OR_RETURN(SplitData d, ReadAndReport(job, task, s, data_dir));
    GMLP_ASSIGN_OR_RETURN(std::vector<EncodedExample> enc, EncodeSplit(d, pair, max_len, tokenize));
    data.tests.push_back({s.name, std::move(enc)});
    data.test_raw.push_back(std::move(d));
  }
  return data;
}

// What always answering the most frequent label scores on each eval split: the floor the
// seeds must beat.
std::map<std::string, double> MajorityClassAccuracy(const std::vector<EncodedSplit>& evals) {
  std::map<std::string, double> majority;
  for (const EncodedSplit& split : evals) {
    std::map<int64_t, int64_t> counts;
    int64_t top = 0;
    for (const EncodedExample& e : split.examples) top = std::max(top, ++counts[e.label]);
    if (!split.examples.empty()) {
      majority[split.name] = static_cast<double>(top) / static_cast<double>(split.examples.size());
    }
  }
  return majority;
}

// results.json (layout in finetune/README.md).
nlohmann::json ResultsJson(const FinetuneJob& job, const TaskSpec& task,
                           const std::string& data_dir, const model::EncoderConfig& config,
                           const TaskData& data, const FinetuneResult& result) {
  nlohmann::json out = {{"task", task.name},
                        {"task_spec", task.ToJson()},
                        {"data_dir", data_dir},
                        {"init", job.init},
                        {"from_scratch", job.init.empty() || job.reinit},
                        {"reinit", job.reinit},
                        {"encoder", config.ToJson()},
                        {"num_params", model::CountParameters(config).total},
                        {"options", job.options.ToJson()},
                        {"lr_grid", job.lr_grid},
                        {"max_train_examples", job.max_train_examples},
                        {"select_from_train", job.select_from_train},
                        {"second_segment_only", job.second_segment_only},
                        {"train_examples", data.train.size()},
                        {"selection_split", task.eval[0].name},
                        {"selection_metric", task.primary_metric()},
                        {"best_seed", result.best_seed}};
  if (!task.is_regression()) out["majority_class_accuracy"] = result.majority_class_accuracy;
  out["seeds"] = nlohmann::json::array();
  for (const SeedResult& r : result.seeds) out["seeds"].push_back(r.ToJson());
  out["summary"] = result.Summary();
  out[model::kMadeByKey] = nlohmann::json::parse(
      model::Provenance(pretrain::TrainingDevice(pretrain::DistEnv{})).dump());
  return out;
}

void LogSummary(const std::string& task, const nlohmann::json& summary, size_t seeds) {
  for (const auto& [split, metrics] : summary.items()) {
    for (const auto& [metric, s] : metrics.items()) {
      std::fprintf(stderr, "finetune %s: %s %s: median %.4f mean %.4f std %.4f over %zu seed(s)\n",
                   task.c_str(), split.c_str(), metric.c_str(), s["median"].get<double>(),
                   s["mean"].get<double>(), s["std"].get<double>(), seeds);
    }
  }
}

// Keeps eval[0] (it selects the epoch) and the eval splits named in `names`.
absl::Status KeepEvalSplits(const std::vector<std::string>& names, TaskSpec* task) {
  std::vector<SplitSpec> kept = {task->eval.front()};
  for (const std::string& name : names) {
    auto it = std::find_if(task->eval.begin(), task->eval.end(),
                           [&](const SplitSpec& s) { return s.name == name; });
    if (it == task->eval.end()) {
      std::vector<std::string> known;
      for (const SplitSpec& s : task->eval) known.push_back(s.name);
      return absl::InvalidArgumentError(
          absl::StrCat("--eval_splits: ", task->name, " has no eval split '", name,
                       "'; its eval splits: ", absl::StrJoin(known, ", ")));
    }
    if (it != task->eval.begin()) kept.push_back(*it);
  }
  task->eval = std::move(kept);
  return absl::OkStatus();
}

}  // namespace

std::string SeedPredictionsDir(const std::string& output, uint64_t seed) {
  return JoinPath(JoinPath(output, "predictions"), absl::StrCat("seed-", seed));
}

absl::StatusOr<TaskSpec> ResolveTask(const FinetuneJob& job) {
  if (job.task.empty() == job.task_spec.empty()) {
    return absl::InvalidArgumentError(
        "give exactly one of --task (a GLUE task) or --task_spec (a task spec JSON file)");
  }
  TaskSpec task;
  if (!job.task.empty()) {
    GMLP_ASSIGN_OR_RETURN(task, GlueTask(job.task));
  } else {
    GMLP_ASSIGN_OR_RETURN(task, LoadTaskSpec(job.task_spec));
  }
  if (job.second_segment_only) {
    GMLP_ASSIGN_OR_RETURN(task, SecondSegmentOnly(std::move(task)));
  }
  if (!job.eval_splits.empty()) GMLP_RETURN_IF_ERROR(KeepEvalSplits(job.eval_splits, &task));
  if (!job.predict_test) task.test.clear();
  if (job.select_from_train > 0) {
    // The carved split selects the epoch; it reads like train (ReadTaskData carves it).
    SplitSpec heldout = task.train;
    heldout.name = kTrainHeldoutSplit;
    task.eval.insert(task.eval.begin(), heldout);
  }
  return task;
}

std::string TaskDataDir(const FinetuneJob& job, const TaskSpec& task) {
  if (!job.data_dir.empty()) return job.data_dir;
  return task.data_dir.empty() ? job.data_root : ResolveDataPath(job.data_root, task.data_dir);
}

absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    uint64_t s = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--seeds: '", part, "' is not a non-negative integer; e.g. --seeds=1,2,3"));
    }
    seeds.push_back(s);
  }
  if (seeds.empty()) return absl::InvalidArgumentError("--seeds is empty; e.g. --seeds=1,2,3");
  return seeds;
}

std::string TensorboardDir(const FinetuneJob& job) {
  if (job.tensorboard_dir == "none") return "";
  if (job.tensorboard_dir.empty()) return JoinPath(job.output, "tb");
  return job.tensorboard_dir;
}

namespace {

// Every number under `j`, tagged `tag`/<key path>.
void AddNumbers(const nlohmann::json& j, const std::string& tag, Scalars* out) {
  if (j.is_number()) out->emplace_back(tag, j.get<double>());
  if (!j.is_object()) return;
  for (const auto& [key, value] : j.items()) AddNumbers(value, absl::StrCat(tag, "/", key), out);
}

}  // namespace

std::map<int64_t, Scalars> SeedScalars(uint64_t seed, const nlohmann::json& seed_json) {
  const std::string prefix = absl::StrCat("seed-", seed);
  std::map<int64_t, Scalars> out;
  for (const nlohmann::json& e : seed_json.value("epochs", nlohmann::json::array())) {
    Scalars& scalars = out[e.value("epoch", int64_t{0})];
    for (const auto& [key, value] : e.items()) {
      if (key == "epoch") continue;
      AddNumbers(value, key == "metrics" ? prefix : absl::StrCat(prefix, "/", key), &scalars);
    }
  }
  if (seed_json.contains("best")) {
    AddNumbers(seed_json["best"], prefix + "/best",
               &out[seed_json.value("best_epoch", int64_t{0})]);
  }
  return out;
}

nlohmann::json SummarizeSeeds(const std::vector<SeedResult>& seeds) {
  nlohmann::json summary = nlohmann::json::object();
  if (seeds.empty()) return summary;
  for (const auto& [split, metrics] : seeds.front().best) {
    for (const auto& [metric, unused] : metrics) {
      std::vector<double> values;
      for (const SeedResult& s : seeds) values.push_back(s.best.at(split).at(metric));
      const SeedStats st = Summarize(values);
      summary[split][metric] = {{"values", values}, {"mean", st.mean}, {"median", st.median},
                                {"std", st.std},    {"min", st.min},   {"max", st.max}};
    }
  }
  return summary;
}

nlohmann::json FinetuneResult::Summary() const { return SummarizeSeeds(seeds); }

absl::StatusOr<FinetuneResult> FinetuneResult::FromJson(const nlohmann::json& j) {
  FinetuneResult r;
  try {
    r.task = j.at("task").get<std::string>();
    r.best_seed = j.value("best_seed", uint64_t{0});
    r.train_examples = j.value("train_examples", int64_t{0});
    if (j.contains("majority_class_accuracy")) {
      r.majority_class_accuracy =
          j.at("majority_class_accuracy").get<std::map<std::string, double>>();
    }
    for (const nlohmann::json& s : j.at("seeds")) {
      GMLP_ASSIGN_OR_RETURN(SeedResult seed, SeedResult::FromJson(s));
      r.seeds.push_back(std::move(seed));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed results (", e.what(), ")"));
  }
  return r;
}

namespace {

// TensorBoard: each epoch as it ends, and each seed's best-epoch metrics (SeedScalars, from the
// JSON results.json is made of). A rerun writes every seed again (a reused one from its
// result.json) after a restart marker at step 0, so what earlier event files there hold is
// dropped by TensorBoard, as results.json is replaced.
class SeedEvents {
 public:
  static absl::StatusOr<SeedEvents> Open(const FinetuneJob& job) {
    SeedEvents e;
    if (const std::string dir = TensorboardDir(job); !dir.empty()) {
      GMLP_ASSIGN_OR_RETURN(e.writer_, EventWriter::Open(dir));
      GMLP_RETURN_IF_ERROR(e.writer_->WriteStart(0));
    }
    return e;
  }
  absl::Status Log(uint64_t seed, const nlohmann::json& seed_json) {
    if (writer_ == nullptr) return absl::OkStatus();
    for (const auto& [step, scalars] : SeedScalars(seed, seed_json)) {
      GMLP_RETURN_IF_ERROR(writer_->WriteScalars(step, scalars));
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<EventWriter> writer_;
};

// A seed an earlier invocation finished, from its result.json.
absl::StatusOr<SeedRun> ReusedSeed(const TaskSpec& task, uint64_t seed,
                                   const std::string& seed_json) {
  GMLP_ASSIGN_OR_RETURN(nlohmann::json j,
                        ReadJsonFile(seed_json, "delete it to run that seed again"));
  auto read = SeedResult::FromJson(j);
  if (!read.ok()) {
    return absl::DataLossError(absl::StrCat(seed_json, ": ", read.status().message(),
                                            "; delete it to run that seed again"));
  }
  SeedRun run;
  run.result = *std::move(read);
  run.result.resumed = true;
  std::fprintf(stderr, "finetune %s: seed %llu finished earlier (%s), reused\n", task.name.c_str(),
               static_cast<unsigned long long>(seed), seed_json.c_str());
  return run;
}

// The peak lrs a seed trains at: job.lr_grid, or options.lr alone.
std::vector<double> SeedLrs(const FinetuneJob& job) {
  return job.lr_grid.empty() ? std::vector<double>{job.options.lr} : job.lr_grid;
}

// Trains one seed at each of its lrs and keeps the run that scores highest on the selection
// split (the first on a tie; its epochs logged as they end when there is one lr), then writes its
// eval predictions and, for a job that resumes by seed, its result.json.
absl::StatusOr<SeedRun> TrainSeed(const FinetuneJob& job, const TaskSpec& task,
                                  const EncoderSource& encoder, const TaskData& data, uint64_t seed,
                                  SeedEvents& events) {
  const std::string seed_dir = SeedPredictionsDir(job.output, seed);
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<double> lrs = SeedLrs(job);
  std::optional<SeedRun> best;
  std::vector<std::pair<double, double>> scores;
  for (double lr : lrs) {
    FinetuneOptions options = job.options;
    options.lr = lr;
    if (lrs.size() > 1) {
      std::fprintf(stderr, "finetune %s seed %llu: lr %g\n", task.name.c_str(),
                   static_cast<unsigned long long>(seed), lr);
    }
    GMLP_ASSIGN_OR_RETURN(
        SeedRun run,
        FinetuneSeed(task, encoder.make, data.train, data.evals, data.tests, options, seed,
                     [&](const EpochResult& er) {
                       if (lrs.size() > 1) return absl::OkStatus();
                       return events.Log(seed, {{"epochs", nlohmann::json::array({er.ToJson()})}});
                     }));
    run.result.lr = lr;
    scores.emplace_back(lr, run.result.selection_score);
    if (!best || run.result.selection_score > best->result.selection_score) best = std::move(run);
  }
  SeedRun run = *std::move(best);
  if (lrs.size() > 1) run.result.lr_scores = std::move(scores);
  run.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  GMLP_RETURN_IF_ERROR(WriteEvalPredictions(task, data, run.result, seed_dir));
  if (job.resume_seeds) {
    GMLP_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(seed_dir, kSeedResultFile), run.result.ToJson().dump(2) + "\n"));
  }
  return run;
}

// The best seed's outputs: <output>/predictions (a reused seed's copied from its own folder,
// where WriteEvalPredictions wrote them) and, with save_model, the model.
absl::Status WriteBestSeed(const FinetuneJob& job, const TaskSpec& task, const TaskData& data,
                           const EncoderSource& encoder, const SeedRun& best) {
  GMLP_RETURN_IF_ERROR(MakeDirs(job.output));
  if (best.result.resumed) {
    const std::string from = SeedPredictionsDir(job.output, best.result.seed);
    const std::string to = JoinPath(job.output, "predictions");
    for (const SplitData& split : data.eval_raw) {
      GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(JoinPath(from, split.name + ".tsv")));
      GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(to, split.name + ".tsv"), text));
    }
  } else {
    GMLP_RETURN_IF_ERROR(WritePredictions(task, data, best.result, job.output));
  }
  if (!job.save_model) return absl::OkStatus();
  return SaveFinetunedModel(JoinPath(job.output, kModelDir), *best.classifier, encoder.config, task,
                            job.options.max_len, encoder.tokenizer_path);
}

}  // namespace

absl::StatusOr<FinetuneResult> RunFinetune(const FinetuneJob& given) {
  GMLP_RETURN_IF_ERROR(given.options.Validate());
  for (double lr : given.lr_grid) {
    if (!IsValidLr(lr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lr_grid: ", lr, " must be in (0, 1], like --lr"));
    }
  }
  kernels::SetPolicy(*kernels::ParsePolicy(given.options.kernels));
  GMLP_ASSIGN_OR_RETURN(TaskSpec task, ResolveTask(given));
  if (given.output.empty()) {
    return absl::InvalidArgumentError("--output is empty; name a directory");
  }
  const std::string data_dir = TaskDataDir(given, task);
  GMLP_ASSIGN_OR_RETURN(EncoderSource encoder, LoadEncoderSource(given));
  // --max_len follows the encoder unless given.
  FinetuneJob job = given;
  if (job.options.max_len == 0) job.options.max_len = encoder.config.max_seq_len;
  GMLP_ASSIGN_OR_RETURN(TaskData data, ReadTaskData(job, task, data_dir, *encoder.tokenizer));
  std::fprintf(stderr, "finetune %s: %zu train examples, eval %s; %s encoder, %zu seed(s)\n",
               task.name.c_str(), data.train.size(), task.eval[0].name.c_str(),
               encoder.config.arch.c_str(), job.seeds.size());

  // k seeds; the best (by eval[0]'s primary metric) is saved.
  const bool resume = job.resume_seeds && !job.save_model && data.tests.empty();
  GMLP_ASSIGN_OR_RETURN(SeedEvents events, SeedEvents::Open(job));
  FinetuneResult result;
  result.task = task.name;
  std::optional<SeedRun> best;
  for (uint64_t seed : job.seeds) {
    const std::string seed_json = JoinPath(SeedPredictionsDir(job.output, seed), kSeedResultFile);
    const bool reuse = resume && PathExists(seed_json);
    GMLP_ASSIGN_OR_RETURN(SeedRun run, reuse ? ReusedSeed(task, seed, seed_json)
                                             : TrainSeed(job, task, encoder, data, seed, events));
    nlohmann::json logged = run.result.ToJson();
    if (!reuse && SeedLrs(job).size() == 1) logged.erase("epochs");  // logged as they ended
    GMLP_RETURN_IF_ERROR(events.Log(seed, logged));
    result.seeds.push_back(run.result);
    result.seeds.back().predictions.clear();
    if (!best || run.result.selection_score > best->result.selection_score) best = std::move(run);
  }
  result.best_seed = best->result.seed;
  result.train_examples = static_cast<int64_t>(data.train.size());
  if (!task.is_regression()) result.majority_class_accuracy = MajorityClassAccuracy(data.evals);
  GMLP_RETURN_IF_ERROR(WriteBestSeed(job, task, data, encoder, *best));
  const nlohmann::json out = ResultsJson(job, task, data_dir, encoder.config, data, result);
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(job.output, kResultsFile), out.dump(2) + "\n"));
  LogSummary(task.name, out["summary"], result.seeds.size());
  return result;
}

}  // namespace gmlp::finetune
