#include "pretrain/trainer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/mix64.h"
#include "common/status.h"
#include "kernels/autocast.h"
#include "kernels/ops.h"
#include "model/provenance.h"
#include "pretrain/checkpoint.h"
#include "pretrain/checkpoint_state.h"
#include "pretrain/mlm_eval.h"
#include "pretrain/preempt.h"
#include "pretrain/schedule.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::pretrain {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

}  // namespace

MlmTensors ToTensors(const data::MlmBatch& batch, torch::Device device) {
  MlmTensors t;
  const int64_t b = batch.batch_size, n = batch.seq_len;
  TORCH_CHECK(static_cast<int64_t>(batch.input_ids.size()) == b * n, "batch holds ",
              batch.input_ids.size(), " ids, expected ", b, " x ", n);
  TORCH_CHECK(batch.masked_index.size() == batch.masked_labels.size(),
              "masked_index and masked_labels differ in length");
  // from_blob does not copy; the int64 conversions do, so the batch may go away afterwards.
  t.input.input_ids =
      torch::from_blob(const_cast<int32_t*>(batch.input_ids.data()), {b, n}, torch::kInt32)
          .to(torch::kInt64);
  t.input.pad_mask = t.input.input_ids.ne(tokenizer::kPadId);
  const int64_t m = static_cast<int64_t>(batch.masked_index.size());
  t.masked_index =
      torch::from_blob(const_cast<int64_t*>(batch.masked_index.data()), {m}, torch::kInt64).clone();
  t.labels = torch::from_blob(const_cast<int32_t*>(batch.masked_labels.data()), {m}, torch::kInt32)
                 .to(torch::kInt64);
  if (!device.is_cpu()) {
    t.input.input_ids = t.input.input_ids.to(device);
    t.input.pad_mask = t.input.pad_mask.to(device);
    t.masked_index = t.masked_index.to(device);
    t.labels = t.labels.to(device);
  }
  return t;
}

Trainer::Trainer(TrainerOptions options, std::shared_ptr<torch::nn::Module> module,
                 MlmForwardFn forward, data::MlmLoader* train, data::MlmLoader* valid, Dist* dist)
    : options_(std::move(options)),
      config_(options_.config),
      module_(std::move(module)),
      forward_(std::move(forward)),
      train_(train),
      valid_(valid),
      dist_(dist) {
  if (!options_.save_model)
    options_.save_model = [](torch::nn::Module& m, const std::string& p) {
      return SaveNamedTensors(m, p);
    };
  if (!options_.load_model) options_.load_model = LoadNamedTensors;
  params_ = UniqueParameters(*module_);
  if (!params_.empty()) device_ = params_.front().device();
  optimizer_ = std::make_unique<Optimizer>(params_, config_.optimizer);
  sync_ = std::make_unique<GradSync>(params_, dist_, config_.bucket_mb);
  first_nonfinite_ = torch::full({}, -1, torch::TensorOptions(torch::kInt64).device(device_));
}

Trainer::~Trainer() = default;

absl::Status Trainer::Init(const std::string& resume_from) {
  GMLP_RETURN_IF_ERROR(config_.Validate());
  GMLP_ASSIGN_OR_RETURN(accumulation_, AccumulationSteps(config_, dist_->world_size()));
  const bool rank0 = dist_->rank() == 0;
  const std::string checkpoints_dir = JoinPath(config_.out_dir, kCheckpointsSubdir);
  if (rank0) {
    GMLP_RETURN_IF_ERROR(MakeDirs(config_.out_dir));
    if (resume_from.empty() && !ListCheckpoints(checkpoints_dir).empty()) {
      return absl::AlreadyExistsError(absl::StrCat(
          config_.out_dir,
          ": already holds checkpoints; --resume=auto (the default) continues that run, or "
          "choose a new --out_dir"));
    }
  }
  if (!resume_from.empty()) GMLP_RETURN_IF_ERROR(Restore(resume_from));
  GMLP_RETURN_IF_ERROR(BroadcastInitialWeights());
  if (rank0) GMLP_RETURN_IF_ERROR(OpenRunRecords(/*resumed=*/!resume_from.empty()));
  return absl::OkStatus();
}

absl::Status Trainer::Restore(const std::string& resume_from) {
  GMLP_ASSIGN_OR_RETURN(const std::string dir, ResolveCheckpoint(resume_from));
  GMLP_RETURN_IF_ERROR(options_.load_model(*module_, JoinPath(dir, kModelFile)));
  GMLP_RETURN_IF_ERROR(optimizer_->Load(JoinPath(dir, kOptimizerFile)));
  const std::string state_path = JoinPath(dir, kStateFile);
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json state_json,
                        ReadJsonFile(state_path, "resume from an older checkpoint"));
  GMLP_ASSIGN_OR_RETURN(const CheckpointState state, ParseCheckpointState(state_json, state_path));
  step_ = state.step;
  // Checkpoints written before the state kept it: the metrics log's kept records say
  // (OpenRunRecords).
  elapsed_before_ = state.elapsed_s;
  data::LoaderState loader_state;
  loader_state.epoch = state.loader_epoch;
  loader_state.position = state.loader_position;
  GMLP_RETURN_IF_ERROR(train_->Restore(loader_state));
  if (state.world_size != dist_->world_size() && dist_->rank() == 0) {
    std::fprintf(stderr,
                 "gmlp pretrain: warning: %s was written by %d ranks, resuming on %d: training "
                 "continues, but the data order differs from an uninterrupted run\n",
                 dir.c_str(), static_cast<int>(state.world_size), dist_->world_size());
  }
  last_checkpoint_step_ = step_;
  last_checkpoint_ = dir;
  return absl::OkStatus();
}

absl::Status Trainer::BroadcastInitialWeights() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> tensors;
  for (const torch::Tensor& p : params_) tensors.push_back(p.detach());
  for (const torch::Tensor& b : module_->buffers()) tensors.push_back(b);
  try {
    dist_->Broadcast(tensors, 0);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("broadcast of the initial weights failed: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status Trainer::OpenRunRecords(bool resumed) {
  GMLP_RETURN_IF_ERROR(
      WriteFileAtomic(JoinPath(config_.out_dir, kConfigFile), options_.config_json.dump(2) + "\n"));
  GMLP_ASSIGN_OR_RETURN(metrics_, MetricsLog::Open(JoinPath(config_.out_dir, "metrics.jsonl"),
                                                   resumed ? step_ : -1, TensorboardDir(config_)));
  if (elapsed_before_ < 0) elapsed_before_ = metrics_->kept_elapsed_s();
  // Which gmlp, LibTorch and device wrote the records that follow (a resumed run adds its own).
  GMLP_RETURN_IF_ERROR(metrics_->Write(
      {{"type", "run"},
       {"step", step_},
       {model::kMadeByKey,
        nlohmann::json::parse(model::Provenance(device_, dist_->world_size()).dump())}}));
  if (!options_.quiet) progress_ = std::make_unique<Progress>(stderr);
  if (options_.flops_per_token > 0) {
    peak_gflops_ = config_.peak_gflops > 0 ? config_.peak_gflops
                                           : MeasureGemmPeakGflops(config_.bf16, 0.3, device_);
  }
  return absl::OkStatus();
}

double Trainer::elapsed_seconds() const {
  return std::max(0.0, elapsed_before_) + Seconds(started_);
}

void Trainer::SeedDropout() {
  const uint64_t seed =
      SplitMix64(SplitMix64(config_.seed) ^ SplitMix64(static_cast<uint64_t>(step_) * 1024 +
                                                       static_cast<uint64_t>(dist_->rank())));
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

absl::StatusOr<std::vector<data::MlmBatch>> Trainer::NextMicroBatches(StepStats* s, double* masked,
                                                                      double* tokens) {
  std::vector<data::MlmBatch> batches;
  batches.reserve(accumulation_);
  for (int64_t k = 0; k < accumulation_; ++k) {
    const auto t0 = Clock::now();
    GMLP_ASSIGN_OR_RETURN(data::MlmBatch batch, train_->Next());
    s->data_wait_s += Seconds(t0);
    *masked += static_cast<double>(batch.masked_index.size());
    *tokens += static_cast<double>(batch.batch_size * batch.seq_len);
    batches.push_back(std::move(batch));
  }
  return batches;
}

torch::Tensor Trainer::ForwardBackward(const std::vector<data::MlmBatch>& batches,
                                       const torch::Tensor& denom) {
  SeedDropout();
  module_->train();
  const auto f64 = torch::TensorOptions(torch::kFloat64).device(device_);
  torch::Tensor loss_sum = torch::zeros({}, f64), correct = torch::zeros({}, f64);
  for (size_t k = 0; k < batches.size(); ++k) {
    MlmTensors t = ToTensors(batches[k], device_);
    if (k + 1 == batches.size()) sync_->PrepareFinalBackward();
    torch::Tensor logits_MV;
    {
      kernels::AutocastScope autocast(config_.bf16);
      logits_MV = forward_(t.input, t.masked_index);
    }
    const kernels::CrossEntropySum loss = kernels::SumCrossEntropy(logits_MV, t.labels);
    (loss.loss / denom).backward();
    loss_sum += loss.loss.detach();
    correct += loss.argmax.eq(t.labels).sum();
  }
  sync_->Finish();
  return torch::stack({loss_sum, correct});
}

// One optimizer step, enqueued without waiting for the device: the loss, correct predictions,
// token counts and gradient norm stay in device tensors (`sums_`), and only a `sync` step reads
// them back, once, before its update. So a GPU never stalls inside a step, and a step that is
// not a sync point is checked for non-finite values at the next one (`first_nonfinite_`).
absl::StatusOr<StepStats> Trainer::TrainStep(bool sync) {
  StepStats s;
  const auto start = Clock::now();
  ScheduleOptions sched{config_.lr, config_.warmup_steps, config_.steps, config_.schedule,
                        config_.min_lr_ratio};
  s.lr = LearningRate(sched, step_);
  s.step = step_ + 1;

  // All micro-batches first: the loss is normalised by the global masked-token count.
  double local_masked = 0, local_tokens = 0;
  GMLP_ASSIGN_OR_RETURN(const std::vector<data::MlmBatch> batches,
                        NextMicroBatches(&s, &local_masked, &local_tokens));
  // The third count is how many ranks were asked to stop (preempt.h): summed with the others, so
  // every rank learns of a request at the same step.
  const double stop = StopSignal() != 0 ? 1.0 : 0.0;
  torch::Tensor counts =
      torch::tensor({local_masked, local_tokens, stop}, torch::kFloat64).to(device_);
  dist_->AllreduceSum(counts);  // on a GPU this orders the stream; the host does not wait
  // On the CPU the sum is already here; a GPU's is read with the step's statistics (SyncStats).
  if (device_.is_cpu()) s.stop_requested = counts[2].item<double>() > 0;
  const torch::Tensor denom = counts[0].clamp_min(1.0).to(torch::kFloat32);

  torch::Tensor sums = ForwardBackward(batches, denom);
  dist_->AllreduceSum(sums);
  const torch::Tensor grad_norm = ClipGradNormAsync(params_, config_.clip_norm);
  // (loss_sum, correct, masked, tokens, stop requests, grad_norm) of the global batch.
  sums_ = torch::cat({sums, counts, grad_norm.reshape({1})});
  const torch::Tensor bad = sums_.isfinite().all().logical_not();
  first_nonfinite_ =
      torch::where(bad.logical_and(first_nonfinite_.lt(0)),
                   torch::full({}, s.step, first_nonfinite_.options()), first_nonfinite_);
  if (sync) GMLP_RETURN_IF_ERROR(SyncStats(&s));
  // From the first non-finite step on, a fused optimizer leaves the weights alone on the device.
  optimizer_->Step(s.lr, first_nonfinite_.ge(0));
  for (torch::Tensor& p : params_) p.mutable_grad().reset();
  ++step_;
  s.step_s = Seconds(start);
  return s;
}

absl::Status Trainer::SyncStats(StepStats* s) const {
  // The one host synchronisation: the step's sums and the first non-finite step, together.
  const torch::Tensor host =
      torch::cat({sums_, first_nonfinite_.to(torch::kFloat64).reshape({1})}).cpu();
  const double* v = host.data_ptr<double>();
  const double denom = std::max(v[2], 1.0);
  s->loss = v[0] / denom;
  s->accuracy = v[1] / denom;
  s->masked_tokens = static_cast<int64_t>(v[2]);
  s->tokens = static_cast<int64_t>(v[3]);
  s->stop_requested = s->stop_requested || v[4] > 0;
  s->grad_norm = v[5];
  const auto first_bad = static_cast<int64_t>(v[6]);
  if (first_bad < 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "step %d: the loss or gradient norm is not finite (step %d: loss %g, gradient norm %g); "
      "stopped %s. %s Lower --lr, raise --warmup_steps or set --clip_norm, then --resume.",
      first_bad, s->step, s->loss, s->grad_norm,
      first_bad == s->step          ? "without updating the weights"
      : optimizer_->SkipsOnDevice() ? "with the weights as they were before it"
                                    : "(no weights since then were saved)",
      last_checkpoint_.empty()
          ? std::string("No checkpoint was written yet.")
          : absl::StrCat("The last good checkpoint is ", last_checkpoint_, " (untouched).")));
}

absl::StatusOr<EvalStats> Trainer::Evaluate() {
  EvalStats e;
  if (valid_ == nullptr) return e;
  module_->eval();
  GMLP_RETURN_IF_ERROR(valid_->Restore(data::LoaderState{}));
  GMLP_ASSIGN_OR_RETURN(torch::Tensor sums, MlmEvalSums(forward_, *valid_, config_.eval_batches,
                                                        device_, config_.bf16));
  module_->train();
  dist_->AllreduceSum(sums);
  const MlmEval m = MlmEvalFromSums(sums);
  e.loss = m.loss;
  e.accuracy = m.accuracy;
  e.perplexity = m.perplexity;
  e.masked_tokens = m.masked_tokens;
  return e;
}

absl::Status Trainer::SaveCheckpoint() {
  if (dist_->rank() != 0) {
    last_checkpoint_step_ = step_;
    return absl::OkStatus();
  }
  const std::string checkpoints_dir = JoinPath(config_.out_dir, kCheckpointsSubdir);
  GMLP_ASSIGN_OR_RETURN(const std::string tmp, BeginCheckpoint(checkpoints_dir, step_));
  auto write_all = [&]() -> absl::Status {
    auto before = [&](const char* file) -> absl::Status {
      return options_.before_checkpoint_write ? options_.before_checkpoint_write(file)
                                              : absl::OkStatus();
    };
    GMLP_RETURN_IF_ERROR(before(kConfigFile));
    GMLP_RETURN_IF_ERROR(
        WriteFileAtomic(JoinPath(tmp, kConfigFile), options_.config_json.dump(2) + "\n"));
    GMLP_RETURN_IF_ERROR(before(kModelFile));
    GMLP_RETURN_IF_ERROR(options_.save_model(*module_, JoinPath(tmp, kModelFile)));
    GMLP_RETURN_IF_ERROR(before(kOptimizerFile));
    GMLP_RETURN_IF_ERROR(optimizer_->Save(JoinPath(tmp, kOptimizerFile)));
    if (!options_.tokenizer_model.empty()) {
      GMLP_RETURN_IF_ERROR(before(kTokenizerFile));
      GMLP_RETURN_IF_ERROR(CopyFile(options_.tokenizer_model, JoinPath(tmp, kTokenizerFile)));
    }
    const data::LoaderState loader = train_->state();
    nlohmann::json state = {
        {"step", step_},
        {"loader", {{"epoch", loader.epoch}, {"position", loader.position}}},
        {"world_size", dist_->world_size()},
        {"global_batch", config_.global_batch},
        {"micro_batch", config_.micro_batch},
        {"accumulation_steps", accumulation_},
        {"optimizer_steps", optimizer_->step_count()},
        {"elapsed_s", elapsed_seconds()},
        {"seed", config_.seed},
        {"rng", "dropout generator reseeded every step from (seed, step, rank)"},
    };
    GMLP_RETURN_IF_ERROR(before(kStateFile));
    return WriteFileAtomic(JoinPath(tmp, kStateFile), state.dump(2) + "\n");
  };
  absl::Status st = write_all();
  absl::StatusOr<std::string> final_path =
      st.ok() ? CommitCheckpoint(tmp, checkpoints_dir, step_) : absl::StatusOr<std::string>(st);
  if (!final_path.ok()) {
    (void)RemoveTree(tmp);
    return absl::Status(
        final_path.status().code(),
        absl::StrCat("checkpoint at step ", step_, " not written: ", final_path.status().message(),
                     last_checkpoint_.empty() ? std::string()
                                              : absl::StrCat("; the previous checkpoint ",
                                                             last_checkpoint_, " is intact")));
  }
  last_checkpoint_ = *final_path;
  last_checkpoint_step_ = step_;
  return PruneCheckpoints(checkpoints_dir, config_.keep_checkpoints);
}

absl::Status Trainer::StopForPreemption() {
  if (last_checkpoint_step_ != step_) GMLP_RETURN_IF_ERROR(SaveCheckpoint());
  // Nobody leaves before rank 0's checkpoint is in place: a launcher stops the whole group as
  // soon as one rank exits.
  dist_->Barrier();
  return absl::CancelledError(absl::StrCat(
      "preempted (", StopSignal() != 0 ? strsignal(StopSignal()) : "a peer rank was signalled",
      ") after step ", step_, "; checkpoint ", JoinPath(config_.out_dir, kCheckpointsSubdir), "/",
      CheckpointName(step_), " written; the same command resumes from it"));
}

absl::Status Trainer::LogTrain(const StepStats& s, double interval_s, double wait_s, int64_t steps,
                               double per_step) {
  // Every step of a run has the same global batch shape.
  const double tps = interval_s > 0 ? steps * s.tokens / interval_s : 0;
  const double mfu =
      peak_gflops_ > 0 ? options_.flops_per_token * tps / (peak_gflops_ * 1e9 * dist_->world_size())
                       : 0;
  nlohmann::json r = {{"type", "train"},
                      {"step", s.step},
                      {"loss", s.loss},
                      {"accuracy", s.accuracy},
                      {"lr", s.lr},
                      {"grad_norm", s.grad_norm},
                      {"tokens_per_s", tps},
                      {"mfu", mfu},
                      {"data_wait_frac", interval_s > 0 ? wait_s / interval_s : 0},
                      {"masked_tokens", s.masked_tokens},
                      {"elapsed_s", elapsed_seconds()}};
  GMLP_RETURN_IF_ERROR(metrics_->Write(r));
  if (progress_) progress_->Train(r, config_.steps, per_step * (config_.steps - step_));
  return absl::OkStatus();
}

absl::Status Trainer::EvaluateAndLog() {
  GMLP_ASSIGN_OR_RETURN(const EvalStats e, Evaluate());
  if (dist_->rank() != 0) return absl::OkStatus();
  GMLP_RETURN_IF_ERROR(metrics_->Write({{"type", "eval"},
                                        {"step", step_},
                                        {"eval_loss", e.loss},
                                        {"eval_perplexity", e.perplexity},
                                        {"eval_accuracy", e.accuracy},
                                        {"eval_masked_tokens", e.masked_tokens}}));
  if (progress_) {
    progress_->Line(absl::StrFormat("eval step %d: loss %.4f  perplexity %.2f  accuracy %.4f",
                                    step_, e.loss, e.perplexity, e.accuracy));
  }
  return absl::OkStatus();
}

absl::Status Trainer::Run() {
  const bool rank0 = dist_->rank() == 0;
  const auto run_start = Clock::now();
  const int64_t first_step = step_;
  // Throughput over the steps since the last log line, by wall clock less the evaluations and
  // checkpoints in between: on a GPU the steps only enqueue work, so the sync at the log step
  // is where their time shows.
  auto interval_start = Clock::now();
  double interval_excluded = 0;  // seconds of evaluation and checkpointing in the interval
  double interval_wait = 0;
  int64_t interval_steps = 0;
  auto every = [&](int64_t n) { return n > 0 && step_ % n == 0; };
  try {
    while (step_ < config_.steps) {
      // A step syncs with the device only where its numbers are needed: a log line, an
      // evaluation, a checkpoint (never written after an unchecked step) or the end.
      const int64_t next = step_ + 1;
      auto at = [&](int64_t n) { return n > 0 && next % n == 0; };
      const bool sync = at(config_.log_every) || at(config_.checkpoint_every) ||
                        (valid_ != nullptr && at(config_.eval_every)) || next == config_.steps;
      GMLP_ASSIGN_OR_RETURN(const StepStats s, TrainStep(sync));
      interval_wait += s.data_wait_s;
      ++interval_steps;
      const bool last = step_ == config_.steps;
      if (every(config_.log_every) || last) {
        if (rank0) {
          GMLP_RETURN_IF_ERROR(LogTrain(
              s, Seconds(interval_start) - interval_excluded, interval_wait, interval_steps,
              Seconds(run_start) / static_cast<double>(step_ - first_step)));
        }
        interval_wait = 0;
        interval_steps = 0;
        interval_excluded = 0;
        interval_start = Clock::now();
      }
      if (valid_ != nullptr && (every(config_.eval_every) || last)) {
        const auto eval_start = Clock::now();
        GMLP_RETURN_IF_ERROR(EvaluateAndLog());
        interval_excluded += Seconds(eval_start);  // evaluation time is not training time
      }
      if (every(config_.checkpoint_every) || last) {
        const auto save_start = Clock::now();
        GMLP_RETURN_IF_ERROR(SaveCheckpoint());
        interval_excluded += Seconds(save_start);
      }
      if (s.stop_requested && !last) return StopForPreemption();
    }
    if (last_checkpoint_step_ != step_) GMLP_RETURN_IF_ERROR(SaveCheckpoint());
  } catch (const c10::Error& e) {
    return absl::UnavailableError(absl::StrCat(
        "rank ", dist_->rank(), ": step ", step_ + 1, " failed: ", e.what_without_backtrace(),
        dist_->world_size() > 1 ? " (a peer rank died or timed out; --resume continues from the "
                                  "last checkpoint)"
                                : ""));
  }
  if (rank0 && progress_) {
    progress_->Line(absl::StrCat("done: ", step_, " steps; checkpoint ", last_checkpoint_));
  }
  return absl::OkStatus();
}

}  // namespace gmlp::pretrain
