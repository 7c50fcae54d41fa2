// The study's grid: a cell per encoder and size (one per position scheme for the arch that has
// them, one per tiny-attention width for the one with tiny attention), plus the pretrain-only SGU
// variants, each with the pretraining configuration it runs.
#ifndef GMLP_STUDY_CELLS_H_
#define GMLP_STUDY_CELLS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pretrain/config.h"
#include "study/config.h"

namespace gmlp::study {

// One cell of the grid, with the pretraining configuration it runs.
struct CellSpec {
  std::string name;
  std::string encoder;  // the results table's encoder: the arch, "amlp-attn16", "transformer-alibi"
  std::string arch;
  std::string size;
  std::string sgu;  // "" for encoders without an SGU
  pretrain::PretrainConfig pretrain;
  bool finetune = true;
};

// Every cell of the study, each checked (model and training settings) before any work starts;
// an impossible cell is named with the settings that made it. With pretrain_steps 0 (not sized
// by --budget yet) the cells' steps are 0 too.
absl::StatusOr<std::vector<CellSpec>> Cells(const StudyConfig& c);

// <output>/cells/<cell name>.
std::string CellDir(const StudyConfig& config, const CellSpec& cell);

// Each cell whose pretraining started (its pretrain/config.json, or pretrain.exported/ while an
// exported cell is recovered) must have the peak lr the study gives it now: pretrain_lr_by_size
// is not in the study's fingerprint, so that a new entry redoes only its size's cells.
absl::Status CheckCellLearningRates(const StudyConfig& config, const std::vector<CellSpec>& cells);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_CELLS_H_
