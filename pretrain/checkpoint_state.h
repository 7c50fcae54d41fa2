// A checkpoint's state.json (the step, the loader's position, the world that wrote it), read
// and checked without LibTorch so the fuzz targets can reach it (tests/fuzz).
#ifndef GMLP_PRETRAIN_CHECKPOINT_STATE_H_
#define GMLP_PRETRAIN_CHECKPOINT_STATE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"

namespace gmlp::pretrain {

struct CheckpointState {
  int64_t step = 0;  // optimizer steps done
  int64_t loader_epoch = 0;
  int64_t loader_position = 0;
  int64_t world_size = 1;  // ranks that wrote it
  double elapsed_s = -1;   // wall seconds of the run so far; -1 when not recorded (older gmlp)
};

// `j` as state.json holds it; DataLoss naming `path` and the key when a field is missing, of the
// wrong type or out of range.
absl::StatusOr<CheckpointState> ParseCheckpointState(const nlohmann::json& j,
                                                     const std::string& path);

}  // namespace gmlp::pretrain

#endif  // GMLP_PRETRAIN_CHECKPOINT_STATE_H_
