#include "pretrain/train_config.h"

#include "absl/strings/str_cat.h"
#include "common/field_json.h"

namespace gmlp::pretrain {

nlohmann::json TrainConfig::ToJson() const {
  nlohmann::json j;
  ForEachField(*this, [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  return j;
}

absl::StatusOr<TrainConfig> TrainConfig::FromJson(const nlohmann::json& j,
                                                  const TrainConfig& base) {
  TrainConfig c = base;
  // The encoder's section and preset name are PretrainConfig's.
  absl::Status st = FieldsFromJson(j, "training config", &c, {"model", "preset"});
  if (!st.ok()) return st;
  return c;
}

absl::StatusOr<TrainConfig> TrainConfig::FromJson(const nlohmann::json& j) {
  return FromJson(j, TrainConfig());
}

absl::Status TrainConfig::Validate() const {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (out_dir.empty()) return bad("--out_dir is empty; give an output directory");
  if (global_batch <= 0) return bad("--global_batch=", global_batch, " must be > 0");
  if (micro_batch <= 0) return bad("--micro_batch=", micro_batch, " must be > 0");
  if (steps <= 0) return bad("--steps=", steps, " must be > 0");
  if (optimizer != "adamw" && optimizer != "lamb") {
    return bad("--optimizer=", optimizer, " is not one of adamw, lamb");
  }
  if (schedule != "linear" && schedule != "cosine") {
    return bad("--schedule=", schedule, " is not one of linear, cosine");
  }
  if (!(lr > 0)) return bad("--lr=", lr, " must be > 0");
  if (warmup_steps < 0 || warmup_steps > steps) {
    return bad("--warmup_steps=", warmup_steps, " must be in [0, --steps=", steps, "]");
  }
  if (min_lr_ratio < 0 || min_lr_ratio > 1) {
    return bad("--min_lr_ratio=", min_lr_ratio, " must be in [0, 1]");
  }
  if (weight_decay < 0) return bad("--weight_decay=", weight_decay, " must be >= 0");
  if (!(beta1 >= 0 && beta1 < 1)) return bad("--beta1=", beta1, " must be in [0, 1)");
  if (!(beta2 >= 0 && beta2 < 1)) return bad("--beta2=", beta2, " must be in [0, 1)");
  if (!(eps > 0)) return bad("--eps=", eps, " must be > 0");
  if (clip_norm < 0) return bad("--clip_norm=", clip_norm, " must be >= 0 (0 = off)");
  if (!(mask_rate > 0 && mask_rate < 1))
    return bad("--mask_rate=", mask_rate, " must be in (0, 1)");
  if (log_every < 0 || eval_every < 0 || checkpoint_every < 0) {
    return bad("--log_every, --eval_every and --checkpoint_every must be >= 0 (0 = never)");
  }
  if (eval_batches <= 0) return bad("--eval_batches=", eval_batches, " must be > 0");
  if (keep_checkpoints <= 0) return bad("--keep_checkpoints=", keep_checkpoints, " must be > 0");
  if (!(bucket_mb > 0)) return bad("--bucket_mb=", bucket_mb, " must be > 0");
  if (dist_timeout_s <= 0) return bad("--dist_timeout_s=", dist_timeout_s, " must be > 0");
  if (peak_gflops < 0) return bad("--peak_gflops=", peak_gflops, " must be >= 0 (0 = measure)");
  return absl::OkStatus();
}

absl::StatusOr<int64_t> AccumulationSteps(const TrainConfig& config, int world_size) {
  const int64_t per_step = config.micro_batch * world_size;
  if (per_step <= 0 || config.global_batch % per_step != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--global_batch=", config.global_batch, " is not a multiple of --micro_batch=",
                     config.micro_batch, " x world size ", world_size, "; change one of them"));
  }
  return config.global_batch / per_step;
}

}  // namespace gmlp::pretrain
