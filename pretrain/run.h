// The `gmlp pretrain` job of one rank: rendezvous, shard loaders, the MlmModel, the trainer.
#ifndef GMLP_PRETRAIN_RUN_H_
#define GMLP_PRETRAIN_RUN_H_

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pretrain/config.h"
#include "pretrain/dist.h"

namespace gmlp::pretrain {

// The device a rank trains on: cuda:(LOCAL_RANK mod GPUs) when this LibTorch sees a GPU (a CUDA
// build; CUDA_VISIBLE_DEVICES= forces the CPU), else the CPU. Checkpoints hold CPU tensors
// either way, so runs move between GPU and CPU machines.
torch::Device TrainingDevice(const DistEnv& env);

// What to do with an out_dir that already holds checkpoints.
enum class ResumeMode {
  kAuto,   // continue from its newest complete checkpoint when there is one, else start afresh
  kNever,  // start afresh; an out_dir that is not empty is an error
};
// "auto" / "never"; InvalidArgument otherwise.
absl::StatusOr<ResumeMode> ParseResumeMode(absl::string_view text);

// Keys of a run's config.json that may change when it resumes (the length of the run, where
// files are, how often it logs, evaluates and checkpoints, per-rank batch and communication
// settings); every other key, the model's included, must be the same.
bool MayChangeOnResume(absl::string_view key);

// `now` against the `saved` config.json of the checkpoint being resumed (PretrainConfig::ToJson
// layouts): FailedPrecondition naming the first key, as a JSON path, that differs and may not.
// Keys only one side has (a checkpoint from an older gmlp) are not compared.
absl::Status CheckSameRun(const nlohmann::json& saved, const nlohmann::json& now,
                          const std::string& saved_path);

// Trains `config` as the rank the environment names (see DistEnvFromEnvironment; one process
// when none). vocab_size and max_seq_len are taken from the shard manifest. With kAuto, the
// newest complete checkpoint in config.train.out_dir is continued when it belongs to the same
// run (CheckSameRun), so re-running a killed or preempted command continues it, and a job
// restarted by its launcher (torchrun --max-restarts, --nproc --max_restarts) picks up where it
// stopped. Rank 0 prints the resolved config to stderr. A preempted run returns Cancelled
// after writing its checkpoint (preempt.h), rank 0 having printed the status's line.
absl::Status RunPretraining(PretrainConfig config, ResumeMode resume = ResumeMode::kAuto);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_RUN_H_
