#include "finetune/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "finetune/metrics.h"
#include "kernels/autocast.h"
#include "kernels/ops.h"
#include "pretrain/optimizer.h"
#include "pretrain/run.h"
#include "pretrain/schedule.h"

namespace gmlp::finetune {
namespace {

// Where the classifier's parameters live (the CPU, or a GPU with a CUDA LibTorch).
torch::Device DeviceOf(const model::SequenceClassifier& clf) {
  for (const torch::Tensor& p : clf->parameters()) return p.device();
  return torch::kCPU;
}

model::EncoderInput ToInput(const PaddedBatch& b, torch::Device device) {
  const auto shape = std::vector<int64_t>{b.batch, b.len};
  model::EncoderInput in;
  in.input_ids =
      torch::from_blob(const_cast<int64_t*>(b.ids.data()), shape, torch::kLong).clone().to(device);
  in.segment_ids = torch::from_blob(const_cast<int64_t*>(b.segments.data()), shape, torch::kLong)
                       .clone()
                       .to(device);
  in.pad_mask = torch::from_blob(const_cast<uint8_t*>(b.mask.data()), shape, torch::kUInt8)
                    .to(device, torch::kBool);
  return in;
}

// Parameters and buffers by name, deep-copied: the best epoch's weights.
using StateDict = std::vector<std::pair<std::string, torch::Tensor>>;

StateDict CopyState(const torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  StateDict s;
  for (const auto& p : m.named_parameters()) s.emplace_back(p.key(), p.value().detach().clone());
  for (const auto& b : m.named_buffers()) s.emplace_back(b.key(), b.value().detach().clone());
  return s;
}

void RestoreState(torch::nn::Module& m, const StateDict& s) {
  torch::NoGradGuard no_grad;
  auto params = m.named_parameters();
  auto buffers = m.named_buffers();
  for (const auto& [name, t] : s) {
    if (torch::Tensor* p = params.find(name)) {
      p->copy_(t);
    } else if (torch::Tensor* b = buffers.find(name)) {
      b->copy_(t);
    }
  }
}

}  // namespace

nlohmann::json EpochResult::ToJson() const {
  return {{"epoch", epoch}, {"train_loss", train_loss}, {"padding", padding}, {"metrics", metrics}};
}

nlohmann::json SeedResult::ToJson() const {
  nlohmann::json j = {{"seed", seed},
                      {"best_epoch", best_epoch},
                      {"selection_score", selection_score},
                      {"best", best},
                      {"seconds", seconds}};
  if (lr > 0) j["lr"] = lr;
  if (!lr_scores.empty()) {
    j["lr_scores"] = nlohmann::json::array();
    for (const auto& [l, score] : lr_scores)
      j["lr_scores"].push_back({{"lr", l}, {"score", score}});
  }
  j["epochs"] = nlohmann::json::array();
  for (const EpochResult& e : epochs) j["epochs"].push_back(e.ToJson());
  return j;
}

absl::StatusOr<SeedResult> SeedResult::FromJson(const nlohmann::json& j) {
  SeedResult r;
  try {
    r.seed = j.at("seed").get<uint64_t>();
    r.best_epoch = j.value("best_epoch", int64_t{0});
    r.selection_score = j.value("selection_score", 0.0);
    r.seconds = j.value("seconds", 0.0);
    r.lr = j.value("lr", 0.0);
    for (const nlohmann::json& e : j.value("lr_scores", nlohmann::json::array())) {
      r.lr_scores.emplace_back(e.at("lr").get<double>(), e.at("score").get<double>());
    }
    r.best = j.at("best").get<SplitMetrics>();
    for (const nlohmann::json& e : j.value("epochs", nlohmann::json::array())) {
      r.epochs.push_back({e.at("epoch").get<int64_t>(), e.at("train_loss").get<double>(),
                          e.value("padding", 0.0), e.at("metrics").get<SplitMetrics>()});
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed seed result (", e.what(), ")"));
  }
  return r;
}

std::vector<int64_t> LengthGroupedOrder(const std::vector<EncodedExample>& examples,
                                        const std::vector<int64_t>& shuffled, int64_t batch_size,
                                        std::mt19937_64& rng) {
  const size_t bs = static_cast<size_t>(batch_size);
  const size_t pool = bs * 50;
  std::vector<int64_t> sorted = shuffled;
  for (size_t begin = 0; begin < sorted.size(); begin += pool) {
    const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(begin);
    const auto last =
        sorted.begin() + static_cast<std::ptrdiff_t>(std::min(sorted.size(), begin + pool));
    std::stable_sort(first, last, [&](int64_t a, int64_t b) {
      return examples[a].ids.size() < examples[b].ids.size();
    });
  }
  // Whole batches in a random order; the remainder (one partial batch) last.
  const size_t full = sorted.size() / bs;
  std::vector<size_t> batches(full);
  std::iota(batches.begin(), batches.end(), 0);
  std::shuffle(batches.begin(), batches.end(), rng);
  std::vector<int64_t> order;
  order.reserve(sorted.size());
  for (size_t b : batches) {
    order.insert(order.end(), sorted.begin() + static_cast<std::ptrdiff_t>(b * bs),
                 sorted.begin() + static_cast<std::ptrdiff_t>((b + 1) * bs));
  }
  order.insert(order.end(), sorted.begin() + static_cast<std::ptrdiff_t>(full * bs), sorted.end());
  return order;
}

SplitPredictions Predict(model::SequenceClassifier& classifier, bool regression,
                         const std::vector<EncodedExample>& examples, int64_t batch_size,
                         bool bf16) {
  c10::InferenceMode inference;
  kernels::AutocastScope autocast(bf16);
  classifier->eval();
  SplitPredictions out;
  // Length-sorted batches pad less; results go back to file order.
  std::vector<int64_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return examples[a].ids.size() < examples[b].ids.size();
  });
  out.label.assign(examples.size(), 0);
  out.score.assign(examples.size(), 0);
  const torch::Device device = DeviceOf(classifier);
  for (size_t begin = 0; begin < order.size(); begin += batch_size) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(batch_size));
    PaddedBatch b = MakeBatch(examples, order, begin, end);
    torch::Tensor out_BC = classifier->forward(ToInput(b, device)).to(torch::kCPU, torch::kFloat);
    if (regression) {
      torch::Tensor s = out_BC.select(1, 0).contiguous();
      for (size_t i = begin; i < end; ++i) out.score[order[i]] = s[i - begin].item<float>();
    } else {
      torch::Tensor arg = out_BC.argmax(1).contiguous();
      const int64_t* a = arg.data_ptr<int64_t>();
      for (size_t i = begin; i < end; ++i) out.label[order[i]] = a[i - begin];
    }
  }
  return out;
}

absl::StatusOr<std::map<std::string, double>> Score(const TaskSpec& task,
                                                    const std::vector<EncodedExample>& examples,
                                                    const SplitPredictions& pred) {
  Predictions p;
  if (task.is_regression()) {
    p.pred_score = pred.score;
    for (const EncodedExample& e : examples) p.gold_score.push_back(e.score);
  } else {
    p.pred = pred.label;
    for (const EncodedExample& e : examples) p.gold.push_back(e.label);
  }
  return ComputeMetrics(task.metrics, p);
}

namespace {

// One seed's training state: the classifier on its device, the trainable parameters, their
// optimizer and the lr schedule over all epochs.
struct SeedTraining {
  torch::Device device = torch::kCPU;
  std::vector<torch::Tensor> params;
  std::unique_ptr<pretrain::Optimizer> optimizer;
  pretrain::ScheduleOptions schedule;
  int64_t steps_per_epoch = 0;
  int64_t step = 0;  // optimizer steps so far
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
};

// Seeds torch, builds the classifier (encoder, then head) and its optimizer and schedule.
absl::StatusOr<SeedTraining> StartSeed(const TaskSpec& task, const EncoderFactory& make_encoder,
                                       int64_t train_examples, const FinetuneOptions& options,
                                       uint64_t seed, model::SequenceClassifier* clf) {
  torch::manual_seed(seed);
  GMLP_ASSIGN_OR_RETURN(std::shared_ptr<model::EncoderImpl> encoder, make_encoder());
  if (options.max_len > encoder->config().max_seq_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_len=", options.max_len, " exceeds the encoder's max_seq_len (",
                     encoder->config().max_seq_len, "); lower --max_len"));
  }
  *clf = model::SequenceClassifier(encoder, task.num_outputs());
  SeedTraining t;
  // A GPU when this LibTorch sees one (CUDA build), else the CPU; as a single pretraining rank.
  t.device = pretrain::TrainingDevice(pretrain::DistEnv{});
  (*clf)->to(t.device);
  for (const torch::Tensor& p : (*clf)->parameters()) {
    if (p.requires_grad()) t.params.push_back(p);
  }
  pretrain::OptimizerOptions opt_options;
  opt_options.kind = "adamw";
  opt_options.weight_decay = options.weight_decay;
  t.optimizer = std::make_unique<pretrain::Optimizer>(t.params, opt_options);
  t.steps_per_epoch = (train_examples + options.batch_size - 1) / options.batch_size;
  t.schedule.lr = options.lr;
  t.schedule.total_steps = t.steps_per_epoch * options.epochs;
  t.schedule.warmup_steps =
      static_cast<int64_t>(std::llround(options.warmup * t.schedule.total_steps));
  t.schedule.kind = "linear";
  return t;
}

// The training loss of one batch (cross-entropy, or MSE for regression).
torch::Tensor BatchLoss(const TaskSpec& task, model::SequenceClassifier& clf, PaddedBatch& b,
                        torch::Device device, bool bf16) {
  torch::Tensor out_BC;
  {
    kernels::AutocastScope autocast(bf16);
    out_BC = clf->forward(ToInput(b, device));
  }
  if (task.is_regression()) {
    torch::Tensor target =
        torch::from_blob(b.scores.data(), {b.batch}, torch::kFloat).clone().to(device);
    return torch::mse_loss(out_BC.select(1, 0).to(torch::kFloat), target);
  }
  torch::Tensor target =
      torch::from_blob(b.labels.data(), {b.batch}, torch::kLong).clone().to(device);
  return torch::nn::functional::cross_entropy(out_BC.to(torch::kFloat), target);
}

struct EpochTraining {
  double loss = 0;     // mean over batches
  double padding = 0;  // padded positions / all positions of the batches
};

// One pass over `train` in `order`.
absl::StatusOr<EpochTraining> TrainEpoch(const TaskSpec& task,
                                         const std::vector<EncodedExample>& train,
                                         const std::vector<int64_t>& order,
                                         const FinetuneOptions& options, uint64_t seed,
                                         int64_t epoch, model::SequenceClassifier& clf,
                                         SeedTraining* t) {
  clf->train();
  const size_t n = train.size();
  double loss_sum = 0;
  int64_t loss_count = 0, positions = 0, real = 0;
  for (int64_t s = 0; s < t->steps_per_epoch; ++s, ++t->step) {
    const size_t begin = static_cast<size_t>(s * options.batch_size);
    const size_t end = std::min(n, begin + options.batch_size);
    PaddedBatch b = MakeBatch(train, order, begin, end);
    positions += b.batch * b.len;
    for (uint8_t m : b.mask) real += m;
    torch::Tensor loss = BatchLoss(task, clf, b, t->device, options.bf16);
    for (torch::Tensor& p : t->params) p.mutable_grad() = torch::Tensor();
    loss.backward();
    pretrain::ClipGradNorm(t->params, options.clip_norm);
    const double lr = pretrain::LearningRate(t->schedule, t->step);
    t->optimizer->Step(lr);
    const double l = loss.item<double>();
    if (!std::isfinite(l)) {
      return absl::InternalError(absl::StrCat(task.name, " seed ", seed, ": loss is ", l,
                                              " at epoch ", epoch, " step ", s + 1,
                                              "; lower --lr (now ", options.lr, ")"));
    }
    loss_sum += l;
    ++loss_count;
    if (!options.quiet && options.log_every > 0 && (t->step + 1) % options.log_every == 0) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t->t0).count();
      std::fprintf(stderr,
                   "finetune %s seed %llu: epoch %lld/%lld step %lld/%lld loss %.4f lr %.3g "
                   "(%.0f examples/s)\n",
                   task.name.c_str(), static_cast<unsigned long long>(seed),
                   static_cast<long long>(epoch), static_cast<long long>(options.epochs),
                   static_cast<long long>(t->step + 1),
                   static_cast<long long>(t->schedule.total_steps), loss_sum / loss_count, lr,
                   static_cast<double>((t->step + 1) * options.batch_size) / std::max(secs, 1e-9));
    }
  }
  EpochTraining out;
  out.loss = loss_sum / std::max<int64_t>(loss_count, 1);
  out.padding = positions > 0 ? 1.0 - static_cast<double>(real) / positions : 0;
  return out;
}

void LogEpoch(const TaskSpec& task, uint64_t seed, const EpochResult& er) {
  std::string line;
  for (const auto& [split, metrics] : er.metrics) {
    for (const auto& [m, v] : metrics) absl::StrAppend(&line, " ", split, "/", m, "=", v);
  }
  std::fprintf(stderr, "finetune %s seed %llu: epoch %lld train_loss %.4f padding %.1f%%%s\n",
               task.name.c_str(), static_cast<unsigned long long>(seed),
               static_cast<long long>(er.epoch), er.train_loss, 100 * er.padding, line.c_str());
}

}  // namespace

absl::StatusOr<SeedRun> FinetuneSeed(const TaskSpec& task, const EncoderFactory& make_encoder,
                                     const std::vector<EncodedExample>& train,
                                     const std::vector<EncodedSplit>& evals,
                                     const std::vector<EncodedSplit>& predict,
                                     const FinetuneOptions& options, uint64_t seed,
                                     const EpochCallback& on_epoch) {
  GMLP_RETURN_IF_ERROR(options.Validate());
  if (train.empty()) return absl::InvalidArgumentError("no training examples");
  if (evals.empty()) return absl::InvalidArgumentError("no eval split to select epochs on");
  SeedRun run;
  model::SequenceClassifier& clf = run.classifier;
  GMLP_ASSIGN_OR_RETURN(
      SeedTraining t,
      StartSeed(task, make_encoder, static_cast<int64_t>(train.size()), options, seed, &clf));
  std::mt19937_64 rng(seed);
  std::vector<int64_t> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  StateDict best_state;
  run.result.seed = seed;
  run.result.selection_score = -std::numeric_limits<double>::infinity();
  for (int64_t epoch = 1; epoch <= options.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    const std::vector<int64_t> batches =
        options.group_by_length ? LengthGroupedOrder(train, order, options.batch_size, rng) : order;
    EpochResult er;
    er.epoch = epoch;
    GMLP_ASSIGN_OR_RETURN(const EpochTraining et,
                          TrainEpoch(task, train, batches, options, seed, epoch, clf, &t));
    er.train_loss = et.loss;
    er.padding = et.padding;
    // Epochs are selected on the first eval split alone; the others are scored once, with the
    // best epoch's weights, after training (same numbers, a fraction of the evaluation time).
    const EncodedSplit& split = evals[0];
    SplitPredictions p =
        Predict(clf, task.is_regression(), split.examples, options.eval_batch_size, options.bf16);
    GMLP_ASSIGN_OR_RETURN(er.metrics[split.name], Score(task, split.examples, p));
    const double score = er.metrics[split.name][task.primary_metric()];
    if (!options.quiet) LogEpoch(task, seed, er);
    if (on_epoch) GMLP_RETURN_IF_ERROR(on_epoch(er));
    if (score > run.result.selection_score) {
      run.result.selection_score = score;
      run.result.best_epoch = epoch;
      run.result.best = er.metrics;
      run.result.predictions = {{split.name, std::move(p)}};
      best_state = CopyState(*clf);
    }
    run.result.epochs.push_back(std::move(er));
  }
  RestoreState(*clf, best_state);
  clf->eval();
  for (size_t i = 1; i < evals.size(); ++i) {
    SplitPredictions p = Predict(clf, task.is_regression(), evals[i].examples,
                                 options.eval_batch_size, options.bf16);
    GMLP_ASSIGN_OR_RETURN(run.result.best[evals[i].name], Score(task, evals[i].examples, p));
    run.result.predictions[evals[i].name] = std::move(p);
  }
  for (const EncodedSplit& split : predict) {
    run.result.predictions[split.name] =
        Predict(clf, task.is_regression(), split.examples, options.eval_batch_size, options.bf16);
  }
  return run;
}

}  // namespace gmlp::finetune
