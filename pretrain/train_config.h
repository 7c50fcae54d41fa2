// TrainConfig: every pretraining knob that is not the encoder's architecture (data, optimisation,
// schedule, masking, intervals, distributed settings). Field name = JSON key = `gmlp pretrain`
// flag name, all three made from one field list (ForEachField). Model-free so the trainer and its
// tests do not need the model library.
#ifndef GMLP_PRETRAIN_TRAIN_CONFIG_H_
#define GMLP_PRETRAIN_TRAIN_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/field_json.h"

namespace gmlp::pretrain {

// The optimizer's own settings (pretrain/optimizer.h), a part of TrainConfig whose keys stay at
// the top level of config.json and of the flags ("optimizer" is `kind`); the finetuner fills its
// own.
struct OptimizerOptions {
  std::string kind = "adamw";  // adamw | lamb
  double weight_decay = 0.01;  // decoupled; not applied to biases and LayerNorm weights
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
};

struct TrainConfig {
  // Data and output.
  std::string shard_dir;                  // directory with manifest.json from `gmlp prepare`
  std::string out_dir = "runs/pretrain";  // checkpoints/, metrics.jsonl, config.json
  // Exported weights to start from (a `gmlp export` folder, a .safetensors file gmlp wrote, or a
  // Hugging Face BERT folder): the encoder's architecture and weights come from it, the MLM head
  // too when it has one; the optimizer starts fresh. "" = random init from the preset.
  std::string init;
  // TensorBoard event files (rank 0): "" = <out_dir>/tb, "none" = none (TensorboardDir).
  std::string tensorboard_dir;

  // Batch: global_batch = micro_batch x accumulation steps x world size (sequences per step).
  int64_t global_batch = 32;
  int64_t micro_batch = 32;  // sequences per rank per forward/backward
  int64_t steps = 1000;      // optimizer steps in the whole run

  // Optimisation.
  OptimizerOptions optimizer;       // "optimizer" (its kind), weight_decay, beta1, beta2, eps
  double lr = 1e-3;                 // peak learning rate
  int64_t warmup_steps = 100;       // linear warmup from lr/warmup_steps to lr
  std::string schedule = "linear";  // linear | cosine decay after warmup
  double min_lr_ratio = 0.0;        // final lr = lr * min_lr_ratio
  double clip_norm = 1.0;           // global gradient-norm clip; 0 = off
  bool bf16 = false;                // bf16 autocast (CPU; CUDA when built with it)
  std::string kernels = "auto";     // auto | aten (kernels/ops.h's policy)

  // Masking (dynamic, in the loader).
  double mask_rate = 0.15;
  bool whole_word = false;

  uint64_t seed = 1;  // init, data order, masking and dropout

  // Intervals (in optimizer steps); 0 = never (a checkpoint is always written at the end).
  int64_t log_every = 10;
  int64_t eval_every = 200;
  int64_t eval_batches = 20;  // batches of the valid split per evaluation (per rank)
  int64_t checkpoint_every = 500;
  int64_t keep_checkpoints = 3;  // keep the newest K checkpoints

  // Distributed.
  double bucket_mb = 25.0;      // gradient allreduce bucket size
  int64_t dist_timeout_s = 60;  // a dead peer makes collectives fail after at most this
  double peak_gflops = 0.0;     // per rank, for MFU; 0 = measure a GEMM at start

  // The field list, once: calls visit(name, field, help) for every field, in this order, with
  // `self` a TrainConfig or a const one. ToJson, FromJson and `gmlp pretrain`'s flags are all
  // made from it, so a knob cannot be missing from one of them.
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("shard_dir", self.shard_dir, "Directory with manifest.json written by `gmlp prepare`.");
    visit("out_dir", self.out_dir, "Output: config.json, metrics.jsonl, checkpoints/step_NNNNNN/.");
    visit("init", self.init,
          "Start from exported weights (a `gmlp export` folder, a .safetensors file it wrote, or "
          "a Hugging Face BERT folder): architecture and weights from there, fresh optimizer. "
          "Empty: random init from --preset.");
    visit("tensorboard_dir", self.tensorboard_dir,
          "TensorBoard event files of every metrics.jsonl scalar (rank 0); empty = "
          "<out_dir>/tb, none = off.");
    visit("global_batch", self.global_batch,
          "Sequences per optimizer step over all ranks (= micro_batch x accumulation x ranks).");
    visit("micro_batch", self.micro_batch, "Sequences per rank per forward/backward.");
    visit("steps", self.steps, "Optimizer steps in the whole run.");
    visit("optimizer", self.optimizer.kind, "adamw | lamb.");
    visit("lr", self.lr, "Peak learning rate.");
    visit("warmup_steps", self.warmup_steps, "Linear warmup steps.");
    visit("schedule", self.schedule, "Decay after warmup: linear | cosine.");
    visit("min_lr_ratio", self.min_lr_ratio, "Final lr as a fraction of --lr.");
    visit("weight_decay", self.optimizer.weight_decay,
          "Decoupled weight decay (not on biases and LayerNorm weights).");
    visit("beta1", self.optimizer.beta1, "Adam beta1.");
    visit("beta2", self.optimizer.beta2, "Adam beta2.");
    visit("eps", self.optimizer.eps, "Adam epsilon.");
    visit("clip_norm", self.clip_norm, "Global gradient-norm clip; 0 = off.");
    visit("bf16", self.bf16,
          "bf16 autocast for the training forward passes: about 2x fp32 on CPUs with AVX-512 "
          "bf16; CUDA too when built with it. LayerNorm and losses stay fp32.");
    visit("kernels", self.kernels,
          "Which ops run gmlp's CPU kernels: auto (wherever one covers the operands, "
          "kernels/README.md) | aten (ATen's ops everywhere: A/B checks without a rebuild).");
    visit("mask_rate", self.mask_rate, "Fraction of tokens chosen for prediction.");
    visit("whole_word", self.whole_word, "Mask whole words.");
    visit("seed", self.seed, "Random seed: init, data order, masking and dropout.");
    visit("log_every", self.log_every, "Log every N steps; 0 = never.");
    visit("eval_every", self.eval_every, "Evaluate on the valid split every N steps.");
    visit("eval_batches", self.eval_batches, "Valid batches per evaluation (per rank).");
    visit("checkpoint_every", self.checkpoint_every,
          "Checkpoint every N steps (and always at the end).");
    visit("keep_checkpoints", self.keep_checkpoints, "Keep the newest K checkpoints.");
    visit("bucket_mb", self.bucket_mb, "Gradient allreduce bucket size (MB).");
    visit("dist_timeout_s", self.dist_timeout_s,
          "Seconds after which a collective with a dead peer fails.");
    visit("peak_gflops", self.peak_gflops,
          "Per-rank peak GFLOP/s for MFU; 0 = measure a GEMM at start.");
  }

  // InvalidArgument naming the first key whose value is out of range, as `origins` says it was
  // set: `--lr=2` for a flag (or a default), `FILE: "lr" 2` for a config file's key.
  absl::Status Validate(const KeyOrigins& origins = KeyOrigins()) const;
  nlohmann::json ToJson() const;
  // Reads the keys present in `j` over `base` (the defaults when omitted); an unknown key or a
  // value of the wrong type is InvalidArgument "<origin>: ..." naming the key.
  static absl::StatusOr<TrainConfig> FromJson(const nlohmann::json& j, const TrainConfig& base,
                                              absl::string_view origin = "training config");
  static absl::StatusOr<TrainConfig> FromJson(const nlohmann::json& j);
};

// Where the run writes TensorBoard event files: config.tensorboard_dir, <out_dir>/tb when that is
// empty, "" (none) when it is "none".
std::string TensorboardDir(const TrainConfig& config);

// Micro-batches each rank runs per optimizer step; InvalidArgument (naming the flags, or the
// file `origins` says set them) when global_batch is not a multiple of micro_batch x world_size.
absl::StatusOr<int64_t> AccumulationSteps(const TrainConfig& config, int world_size,
                                          const KeyOrigins& origins = KeyOrigins());

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_TRAIN_CONFIG_H_
