// The MLM training loop: data-parallel over a Dist group, gradient accumulation to the global
// batch, clipping, AdamW/LAMB, the LR schedule, evaluation, metrics and atomic checkpoints with
// exact resume. Model-agnostic: it trains any module with an MLM forward (the real pretrainer
// passes model::MlmModel, tests pass tiny modules).
//
// Loss normalisation: the loss of a step is the sum of the cross-entropies of all masked tokens
// of the global batch divided by their number (counted across micro-batches and ranks before
// backward), and gradients are SUMMED across ranks. So 2 ranks x b sequences, 1 rank x 2b and
// 1 rank x b with 2 accumulation steps compute the same step, even though the number of masked
// tokens differs between micro-batches.
//
// Host syncs: a step keeps its loss, accuracy, token counts and gradient norm in device
// tensors; Run reads them back once at each log, evaluation or checkpoint step (a GPU stream
// never waits for the host in between). A non-finite step is remembered on the device and
// reported at the next such step, before any checkpoint could save its weights.
//
// Dropout RNG: torch's default generator is reseeded from (seed, step, rank) at the start of
// every step, so the checkpoint's step number determines it and a resumed run draws the same
// dropout masks as an uninterrupted one.
#ifndef GMLP_PRETRAIN_TRAINER_H_
#define GMLP_PRETRAIN_TRAINER_H_

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "data/loader.h"
#include "model/encoder.h"
#include "pretrain/dist.h"
#include "pretrain/grad_sync.h"
#include "pretrain/metrics.h"
#include "pretrain/optimizer.h"
#include "pretrain/train_config.h"

namespace gmlp::pretrain {

// (input, masked_index (M,)) -> (M, V) logits.
using MlmForwardFn = std::function<torch::Tensor(const model::EncoderInput& input,
                                                 const torch::Tensor& masked_index)>;
using ModuleIoFn = std::function<absl::Status(torch::nn::Module& module, const std::string& path)>;

struct TrainerOptions {
  TrainConfig config;
  nlohmann::json config_json;   // saved as config.json in every checkpoint (the resolved config)
  std::string tokenizer_model;  // copied into every checkpoint when non-empty
  double flops_per_token = 0;   // training FLOPs per input token, for MFU (0: MFU not reported)
  // Model file format; default SaveNamedTensors / LoadNamedTensors.
  ModuleIoFn save_model;
  ModuleIoFn load_model;
  // Called before each checkpoint file is written with its name; an error aborts the checkpoint
  // as a failed write would (tests simulate a full disk with it).
  std::function<absl::Status(const std::string& file)> before_checkpoint_write;
  bool quiet = false;  // no progress output (tests)
};

// What one optimizer step measured (global over ranks).
struct StepStats {
  int64_t step = 0;  // optimizer steps completed, this one included
  double loss = 0;   // mean cross-entropy over the global batch's masked tokens
  double accuracy = 0;
  double lr = 0;
  double grad_norm = 0;  // before clipping
  int64_t masked_tokens = 0;
  int64_t tokens = 0;  // input tokens of the global batch
  double data_wait_s = 0;
  double step_s = 0;
  // Some rank was asked to stop (preempt.h) by this step; every rank sees the same value. Known
  // on the CPU at every step, on a GPU at sync steps.
  bool stop_requested = false;
};

struct EvalStats {
  double loss = 0;
  double perplexity = 0;
  double accuracy = 0;
  int64_t masked_tokens = 0;
};

class Trainer {
 public:
  // `module` holds the parameters that `forward` uses, already on the training device (CPU, or
  // cuda:LOCAL_RANK); batches and collective buffers follow it. `valid` may be null (no
  // evaluation). Loaders and `dist` must outlive the trainer.
  Trainer(TrainerOptions options, std::shared_ptr<torch::nn::Module> module, MlmForwardFn forward,
          data::MlmLoader* train, data::MlmLoader* valid, Dist* dist);
  ~Trainer();

  // Fresh start: broadcasts rank 0's parameters. With `resume_from` non-empty (a checkpoint
  // directory or a run directory), loads model, optimizer, step and loader state from it first.
  absl::Status Init(const std::string& resume_from = "");

  // Trains until config.steps, logging, evaluating and checkpointing on the way. When a rank was
  // asked to stop (SIGTERM/SIGUSR1, preempt.h), every rank finishes the step where the request is
  // seen, the checkpoint of that step is written and Run returns Cancelled ("preempted"). A
  // non-finite
  // loss or gradient stops the run at the next log, evaluation or checkpoint step with
  // FailedPrecondition naming the first bad step (the last checkpoint is untouched);
  // a failed peer makes it return Unavailable / Aborted.
  absl::Status Run();

  // One optimizer step. With `sync` (Run passes it at log, evaluation and checkpoint steps) it
  // reads the step's statistics back from the device, the step's one host synchronisation, and
  // stops before the update when this or an earlier unsynced step was not finite. Without it
  // nothing waits for the device and only the host-side fields of StepStats (step, lr,
  // data_wait_s, step_s) are set.
  absl::StatusOr<StepStats> TrainStep(bool sync = true);
  absl::StatusOr<EvalStats> Evaluate();
  // Writes checkpoint `step()` (rank 0 only; other ranks return OK) and prunes old ones.
  absl::Status SaveCheckpoint();

  int64_t step() const { return step_; }
  // Wall seconds this run has taken to reach step(), across resumes: those of the invocations
  // that produced the checkpoint it resumed from plus this one's (work redone after a kill is
  // counted once). Written to every checkpoint and as the metrics records' "elapsed_s".
  double elapsed_seconds() const;
  const std::vector<torch::Tensor>& params() const { return params_; }
  int64_t accumulation_steps() const { return accumulation_; }
  const GradSync& grad_sync() const { return *sync_; }

 private:
  absl::Status SyncStats(StepStats* stats) const;
  // The step's accumulation_ micro-batches, adding their masked and all tokens to the counts.
  absl::StatusOr<std::vector<data::MlmBatch>> NextMicroBatches(StepStats* s, double* masked,
                                                               double* tokens);
  // Forward and backward over the micro-batches, the loss normalised by `denom` (the global
  // masked-token count); the gradient sync finishes inside. (loss sum, correct) on the device.
  torch::Tensor ForwardBackward(const std::vector<data::MlmBatch>& batches,
                                const torch::Tensor& denom);
  // Writes this step's checkpoint (unless it exists), waits for every rank, returns Cancelled.
  absl::Status StopForPreemption();
  void SeedDropout();
  // Rank 0's "train" record of step `s` and its progress line: throughput over the `steps`
  // steps of the last `interval_s` seconds of training (evaluation and checkpoints excluded),
  // `wait_s` of them waiting for data; `per_step` (seconds) estimates the time left.
  absl::Status LogTrain(const StepStats& s, double interval_s, double wait_s, int64_t steps,
                        double per_step);
  // Evaluates, and rank 0 writes the "eval" record and its progress line.
  absl::Status EvaluateAndLog();
  // Init's steps: the model, optimizer, step and data position of checkpoint `resume_from`;
  // rank 0's weights to every rank; rank 0's config.json, metrics log (resumed at step() when
  // `resumed`), progress lines and GEMM peak.
  absl::Status Restore(const std::string& resume_from);
  absl::Status BroadcastInitialWeights();
  absl::Status OpenRunRecords(bool resumed);

  TrainerOptions options_;
  const TrainConfig& config_;
  std::shared_ptr<torch::nn::Module> module_;
  MlmForwardFn forward_;
  data::MlmLoader* train_;
  data::MlmLoader* valid_;
  Dist* dist_;
  std::vector<torch::Tensor> params_;
  torch::Device device_ = torch::kCPU;  // where the module's parameters live
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradSync> sync_;
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<Progress> progress_;
  int64_t accumulation_ = 1;
  int64_t step_ = 0;
  int64_t last_checkpoint_step_ = -1;
  std::string last_checkpoint_;
  double peak_gflops_ = 0;
  double elapsed_before_ = 0;  // seconds of the earlier invocations (see elapsed_seconds)
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  torch::Tensor sums_;  // the last step's (loss_sum, correct, masked, tokens, grad_norm), f64
  torch::Tensor first_nonfinite_;  // int64 scalar on the device: first non-finite step, or -1
};

// Wraps a loader batch as the encoder's input on `device`: input_ids (B, n) int64, pad_mask
// (B, n) where ids != [PAD]; masked_index (M,) and labels (M,) int64.
struct MlmTensors {
  model::EncoderInput input;
  torch::Tensor masked_index;
  torch::Tensor labels;
};
MlmTensors ToTensors(const data::MlmBatch& batch, torch::Device device = torch::kCPU);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_TRAINER_H_
