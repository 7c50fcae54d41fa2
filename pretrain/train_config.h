// TrainConfig: every pretraining knob that is not the encoder's architecture (data, optimisation,
// schedule, masking, intervals, distributed settings). Field name = JSON key = `gmlp pretrain`
// flag name. Model-free so the trainer and its tests do not need the model library.
#ifndef GMLP_PRETRAIN_TRAIN_CONFIG_H_
#define GMLP_PRETRAIN_TRAIN_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::pretrain {

struct TrainConfig {
  // Data and output.
  std::string shard_dir;                  // directory with manifest.json from `gmlp prepare`
  std::string out_dir = "runs/pretrain";  // checkpoints/, metrics.jsonl, config.json

  // Batch: global_batch = micro_batch x accumulation steps x world size (sequences per step).
  int64_t global_batch = 32;
  int64_t micro_batch = 32;  // sequences per rank per forward/backward
  int64_t steps = 1000;      // optimizer steps in the whole run

  // Optimisation.
  std::string optimizer = "adamw";  // adamw | lamb
  double lr = 1e-3;                 // peak learning rate
  int64_t warmup_steps = 100;       // linear warmup from lr/warmup_steps to lr
  std::string schedule = "linear";  // linear | cosine decay after warmup
  double min_lr_ratio = 0.0;        // final lr = lr * min_lr_ratio
  double weight_decay = 0.01;       // decoupled; not applied to biases and LayerNorm weights
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-6;
  double clip_norm = 1.0;  // global gradient-norm clip; 0 = off
  bool bf16 = false;       // bf16 autocast (CPU; CUDA when built with it)

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

  absl::Status Validate() const;
  nlohmann::json ToJson() const;
  // Reads the keys present in `j` over `base` (the defaults when omitted); unknown keys are
  // errors naming the key.
  static absl::StatusOr<TrainConfig> FromJson(const nlohmann::json& j, const TrainConfig& base);
  static absl::StatusOr<TrainConfig> FromJson(const nlohmann::json& j);
};

// Micro-batches each rank runs per optimizer step; InvalidArgument (naming the flags) when
// global_batch is not a multiple of micro_batch x world_size.
absl::StatusOr<int64_t> AccumulationSteps(const TrainConfig& config, int world_size);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_TRAIN_CONFIG_H_
