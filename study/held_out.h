// The study's held-out measures: each cell's masked-token loss on the same held-out batches,
// and the context-free floors (the loss of a predictor that knows only the training split's
// token frequencies) the report judges them against.
#ifndef GMLP_STUDY_HELD_OUT_H_
#define GMLP_STUDY_HELD_OUT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pretrain/train_config.h"
#include "study/config.h"
#include "study/report.h"

namespace gmlp::study {

// Masked-token cross-entropy of the run's final checkpoint on `batches` held-out batches (the
// validation split in order, masked alike for every cell).
absl::StatusOr<double> HeldOutMlmLoss(const std::string& run_dir, const std::string& shard_dir,
                                      int64_t batch_size, int64_t batches);

// Both floors the report uses: at the final loss's positions (HeldOutMlmLoss) and at the
// learning curves' (the trainer's evaluation batches, as pretrain/run.cc opens them: the
// cell's seed and masking, the same for every cell). The training split is read once.
absl::Status AddContextFreeFloors(const StudyConfig& config, const std::string& shard_dir,
                                  const pretrain::TrainConfig& train, ReportContext* context);

// <output>/floors.json: the floors as the last report computed them from the shards, so that a
// report made where the shards are gone (an exported study under --report_only) still judges
// the cells against them.
std::string FloorsFile(const std::string& output);
absl::Status WriteFloors(const std::string& path, const ReportContext& floors);
// Sets context_free_loss and curve_context_free_loss from `path`; an error names the file.
absl::Status ReadFloors(const std::string& path, ReportContext* context);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_HELD_OUT_H_
