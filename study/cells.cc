// The study's grid of cells (cells.h).
#include "study/cells.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "model/arch.h"
#include "model/config.h"
#include "study/progress.h"
#include "study/roles.h"

namespace gmlp::study {
namespace {

// An error in the configuration of cell `name`, naming it and the settings that made it (each
// as its source set it: a --config file, --smoke or a flag).
absl::Status CellError(const StudyConfig& c, const std::string& name, const std::string& arch,
                       const std::string& size, const absl::Status& st) {
  std::string made_by =
      absl::StrCat(c.origins.Mention("archs", c.archs), ", ", c.origins.Mention("sizes", c.sizes));
  if (!c.model_overrides.empty()) {
    absl::StrAppend(&made_by, ", ", c.origins.Mention("model_overrides", c.model_overrides));
  }
  return absl::InvalidArgumentError(absl::StrCat("cell ", name, " (arch ", arch, ", size ", size,
                                                 "; from ", made_by, "): ", st.message()));
}

// The pretraining configuration of every cell: "<arch>-<size>" with the study's overrides, on
// the study's shards for the same steps, at the size's lr.
absl::StatusOr<pretrain::PretrainConfig> CellPretrainConfig(const StudyConfig& c,
                                                            const std::string& arch,
                                                            const std::string& size,
                                                            const std::string& sgu) {
  const std::string preset = absl::StrCat(arch, "-", size);
  pretrain::PretrainConfig pc;
  pc.preset = preset;
  GMLP_ASSIGN_OR_RETURN(pc.model, model::Preset(preset));
  if (!c.model_overrides.empty()) {
    auto model = pretrain::ApplyModelOverrides(pc.model, c.model_overrides);
    if (!model.ok()) return CellError(c, preset, arch, size, model.status());
    pc.model = *std::move(model);
  }
  if (!sgu.empty()) pc.model.sgu = sgu;
  if (const model::ArchSpec* spec = model::FindArch(pc.model.arch); spec != nullptr) {
    if (spec->has_position_schemes) pc.model.pre_ln = c.transformer_pre_ln;
    if (spec->has_tiny_attention) pc.model.attn_size = static_cast<int64_t>(c.amlp_attn_sizes[0]);
  }
  pretrain::TrainConfig& t = pc.train;
  t = c.pretraining;
  t.micro_batch = t.global_batch;
  GMLP_ASSIGN_OR_RETURN(t.lr, c.PretrainLr(size));
  t.warmup_steps = std::min(t.warmup_steps, t.steps);
  // The learning curve: held-out loss at curve_points evenly spaced steps (and the last).
  t.eval_every = std::max<int64_t>(1, t.steps / c.curve_points);
  t.checkpoint_every = std::max<int64_t>(50, t.steps / 4);
  t.log_every = std::max<int64_t>(10, t.steps / 10);
  return pc;
}

}  // namespace

absl::StatusOr<std::vector<CellSpec>> Cells(const StudyConfig& c) {
  std::vector<CellSpec> cells;
  for (const std::string& size : c.sizes) {
    for (const std::string& arch : c.archs) {
      const model::ArchSpec* spec = model::FindArch(arch);
      if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown arch ", arch));
      const std::string preset = absl::StrCat(arch, "-", size);
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, CellPretrainConfig(c, arch, size, ""));
      if (spec->has_position_schemes) {  // one cell per position scheme, the baseline's first
        for (const std::string& position : c.transformer_positions) {
          pc.model.position = position;
          const std::string name =
              position == "learned" ? preset : absl::StrCat(preset, "-", position);
          cells.push_back({name, TransformerEncoder(position), arch, size, "", pc, true});
        }
        continue;
      }
      cells.push_back({preset, arch, arch, size, spec->has_sgu ? "split" : "", pc, true});
      if (!spec->has_tiny_attention) continue;
      for (size_t i = 1; i < c.amlp_attn_sizes.size(); ++i) {  // the other attention widths
        const std::string suffix = absl::StrCat("attn", c.amlp_attn_sizes[i]);
        pc.model.attn_size = static_cast<int64_t>(c.amlp_attn_sizes[i]);
        cells.push_back({absl::StrCat(preset, "-", suffix), absl::StrCat(arch, "-", suffix), arch,
                         size, "split", pc, true});
      }
    }
  }
  if (!c.sizes.empty()) {
    const std::string& size = c.sizes.front();
    for (const std::string& v : c.sgu_variants) {
      if (v == "split") continue;  // that is the main gMLP cell
      const std::string& arch = Roles().gating;
      GMLP_ASSIGN_OR_RETURN(pretrain::PretrainConfig pc, CellPretrainConfig(c, arch, size, v));
      cells.push_back({absl::StrCat(arch, "-", size, "-sgu-", v), absl::StrCat(arch, "-sgu-", v),
                       arch, size, v, std::move(pc), false});
    }
  }
  // Every cell is checked before any work starts (the study's own keys bound what it sets).
  for (const CellSpec& cell : cells) {
    absl::Status st = cell.pretrain.model.Validate();
    pretrain::TrainConfig train = cell.pretrain.train;
    train.steps = std::max<int64_t>(train.steps, 1);  // 0: sized by --budget later
    if (st.ok()) st = train.Validate();
    if (!st.ok()) return CellError(c, cell.name, cell.arch, cell.size, st);
  }
  return cells;
}

std::string CellDir(const StudyConfig& config, const CellSpec& cell) {
  return JoinPath(JoinPath(config.output, "cells"), cell.name);
}

absl::Status CheckCellLearningRates(const StudyConfig& config, const std::vector<CellSpec>& cells) {
  for (const CellSpec& cell : cells) {
    const std::string cell_dir = CellDir(config, cell);
    for (const char* sub : {"pretrain", "pretrain.exported"}) {
      const std::string path = JoinPath(JoinPath(cell_dir, sub), "config.json");
      if (!PathExists(path)) continue;
      GMLP_ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path, kRedo));
      if (!j.contains("lr") || !j["lr"].is_number()) {
        return absl::DataLossError(absl::StrCat(path, ": no \"lr\"; ", kRedo));
      }
      const double recorded = j["lr"].get<double>();
      if (recorded != cell.pretrain.train.lr) {
        return absl::FailedPreconditionError(absl::StrCat(
            cell_dir, " was pretrained at peak lr ", recorded, "; this study gives its size (",
            cell.size, ") lr ", cell.pretrain.train.lr,
            " (--pretrain_lr, --pretrain_lr_by_size). Move that folder out of ", config.output,
            "/cells to redo the cell at the new lr, or run with the lr it was started with"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gmlp::study
