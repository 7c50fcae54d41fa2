// Checkpoint directories: <out_dir>/checkpoints/step_NNNNNN/ holding config.json, model.pt,
// optimizer.pt, state.json (written last) and tokenizer.model. A checkpoint is assembled in a
// hidden temporary directory, every file and the directory are fsynced, and then it is renamed
// into place, so a directory named step_* is always complete; a crash or a full disk leaves at
// most a stale temporary directory (removed on the next start) and the older checkpoints intact.
#ifndef GMLP_PRETRAIN_CHECKPOINT_H_
#define GMLP_PRETRAIN_CHECKPOINT_H_

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gmlp::pretrain {

inline constexpr char kCheckpointsSubdir[] = "checkpoints";
inline constexpr char kConfigFile[] = "config.json";
inline constexpr char kModelFile[] = "model.pt";
inline constexpr char kOptimizerFile[] = "optimizer.pt";
inline constexpr char kStateFile[] = "state.json";
inline constexpr char kTokenizerFile[] = "tokenizer.model";

// "step_000100".
std::string CheckpointName(int64_t step);

// Complete checkpoints under `checkpoints_dir`, (step, path), oldest first. A missing directory
// is an empty list.
std::vector<std::pair<int64_t, std::string>> ListCheckpoints(const std::string& checkpoints_dir);

// `path` is a checkpoint directory (holding state.json) or a run's out_dir: returns the
// checkpoint directory to load (the run's newest complete one). NotFound explains what is missing.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path);

// Creates a fresh temporary directory for checkpoint `step` under `checkpoints_dir`.
absl::StatusOr<std::string> BeginCheckpoint(const std::string& checkpoints_dir, int64_t step);
// fsyncs every file in `tmp_dir` and the directory, then renames it to its final name
// (replacing an existing checkpoint of the same step). Returns the final path.
absl::StatusOr<std::string> CommitCheckpoint(const std::string& tmp_dir,
                                             const std::string& checkpoints_dir, int64_t step);
// Deletes all but the newest `keep` complete checkpoints, and stale temporary directories.
absl::Status PruneCheckpoints(const std::string& checkpoints_dir, int64_t keep);

// Writes / reads every named parameter and buffer of `module` (torch::serialize archive keyed
// by the full dotted name). The trainer's default model format; the real pretrainer uses
// model::SaveModule / LoadModule, which store the same keys.
absl::Status SaveNamedTensors(const torch::nn::Module& module, const std::string& path);
absl::Status LoadNamedTensors(torch::nn::Module& module, const std::string& path);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_CHECKPOINT_H_
