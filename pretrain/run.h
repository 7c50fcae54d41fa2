// The `gmlp pretrain` job of one rank: rendezvous, shard loaders, the MlmModel, the trainer.
#ifndef GMLP_PRETRAIN_RUN_H_
#define GMLP_PRETRAIN_RUN_H_

#include <torch/torch.h>

#include "absl/status/status.h"
#include "pretrain/config.h"
#include "pretrain/dist.h"

namespace gmlp::pretrain {

// The device a rank trains on: cuda:(LOCAL_RANK mod GPUs) when this LibTorch sees a GPU (a CUDA
// build; CUDA_VISIBLE_DEVICES= forces the CPU), else the CPU. Checkpoints hold CPU tensors
// either way, so runs move between GPU and CPU machines.
torch::Device TrainingDevice(const DistEnv& env);

// Trains `config` as the rank the environment names (see DistEnvFromEnvironment; one process
// when none). vocab_size and max_seq_len are taken from the shard manifest. With `resume`, the
// newest complete checkpoint in config.train.out_dir is continued (its architecture wins over
// `config.model`); when there is none yet the run starts afresh, so a preempted job can always
// be restarted with --resume. Rank 0 prints the resolved config to stderr.
absl::Status RunPretraining(PretrainConfig config, bool resume);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_RUN_H_
