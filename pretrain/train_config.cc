#include "pretrain/train_config.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/field_json.h"
#include "common/file_util.h"
#include "common/status.h"
#include "kernels/policy.h"

namespace gmlp::pretrain {

nlohmann::json TrainConfig::ToJson() const {
  nlohmann::json j;
  ForEachField(*this, [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  return j;
}

absl::StatusOr<TrainConfig> TrainConfig::FromJson(const nlohmann::json& j, const TrainConfig& base,
                                                  absl::string_view origin) {
  TrainConfig c = base;
  // The encoder's section and preset name are PretrainConfig's.
  absl::Status st = FieldsFromJson(j, origin, &c, {"model", "preset", "made_by"});
  if (!st.ok()) return st;
  return c;
}

absl::StatusOr<TrainConfig> TrainConfig::FromJson(const nlohmann::json& j) {
  return FromJson(j, TrainConfig());
}

namespace {

// bad(key, value, what is wrong...): one line naming the key as its source set it.
template <typename... Parts>
absl::Status Bad(const KeyOrigins& origins, const char* key, const nlohmann::json& value,
                 const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(origins.Subject(key, value), parts...));
}

// The optimizer's rates and the schedule's steps.
absl::Status ValidateRates(const TrainConfig& c, const KeyOrigins& origins) {
  auto bad = [&origins](const char* key, const nlohmann::json& value, const auto&... parts) {
    return Bad(origins, key, value, parts...);
  };
  // The upper bounds are far above any useful value, and keep out the ones (lr 1e300) that
  // turn the first step's weights into inf.
  if (!(c.lr > 0 && c.lr <= 1)) return bad("lr", c.lr, " must be in (0, 1]");
  if (c.warmup_steps < 0 || c.warmup_steps > c.steps) {
    return bad("warmup_steps", c.warmup_steps, " must be in [0, ",
               origins.Mention("steps", c.steps), "]");
  }
  if (!(c.min_lr_ratio >= 0 && c.min_lr_ratio <= 1)) {
    return bad("min_lr_ratio", c.min_lr_ratio, " must be in [0, 1]");
  }
  const OptimizerOptions& o = c.optimizer;
  if (!(o.weight_decay >= 0 && o.weight_decay <= 1)) {
    return bad("weight_decay", o.weight_decay, " must be in [0, 1]");
  }
  if (!(o.beta1 >= 0 && o.beta1 < 1)) return bad("beta1", o.beta1, " must be in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) return bad("beta2", o.beta2, " must be in [0, 1)");
  if (!(o.eps > 0 && o.eps <= 1)) return bad("eps", o.eps, " must be in (0, 1]");
  if (!(c.clip_norm >= 0 && std::isfinite(c.clip_norm))) {
    return bad("clip_norm", c.clip_norm, " must be finite and >= 0 (0 = off)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TrainConfig::Validate(const KeyOrigins& origins) const {
  auto bad = [&origins](const char* key, const nlohmann::json& value, const auto&... parts) {
    return Bad(origins, key, value, parts...);
  };
  // A batch is a tensor dimension: the model's bound (model/config.cc).
  constexpr int64_t kMaxBatch = int64_t{1} << 20;
  if (out_dir.empty()) return bad("out_dir", out_dir, " is empty; give an output directory");
  if (global_batch <= 0 || global_batch > kMaxBatch) {
    return bad("global_batch", global_batch, " must be in [1, ", kMaxBatch, "] (2^20)");
  }
  if (micro_batch <= 0 || micro_batch > kMaxBatch) {
    return bad("micro_batch", micro_batch, " must be in [1, ", kMaxBatch, "] (2^20)");
  }
  if (steps <= 0) return bad("steps", steps, " must be > 0");
  if (optimizer.kind != "adamw" && optimizer.kind != "lamb") {
    return bad("optimizer", optimizer.kind, " is not one of adamw, lamb");
  }
  if (schedule != "linear" && schedule != "cosine") {
    return bad("schedule", schedule, " is not one of linear, cosine");
  }
  if (!kernels::ParsePolicy(kernels)) return bad("kernels", kernels, " is not one of auto, aten");
  GMLP_RETURN_IF_ERROR(ValidateRates(*this, origins));
  if (!(mask_rate > 0 && mask_rate < 1)) return bad("mask_rate", mask_rate, " must be in (0, 1)");
  for (const auto& [key, every] : {std::pair<const char*, int64_t>{"log_every", log_every},
                                   {"eval_every", eval_every},
                                   {"checkpoint_every", checkpoint_every}}) {
    if (every < 0) return bad(key, every, " must be >= 0 (0 = never)");
  }
  if (eval_batches <= 0) return bad("eval_batches", eval_batches, " must be > 0");
  if (keep_checkpoints <= 0) return bad("keep_checkpoints", keep_checkpoints, " must be > 0");
  if (!(bucket_mb > 0 && bucket_mb <= 65536)) {
    return bad("bucket_mb", bucket_mb, " must be in (0, 65536]");
  }
  // A year: longer ones overflow when converted to the milliseconds c10d counts in.
  constexpr int64_t kMaxTimeout = int64_t{365} * 24 * 3600;
  if (dist_timeout_s <= 0 || dist_timeout_s > kMaxTimeout) {
    return bad("dist_timeout_s", dist_timeout_s, " must be in [1, ", kMaxTimeout, "] (a year)");
  }
  if (!(peak_gflops >= 0 && std::isfinite(peak_gflops))) {
    return bad("peak_gflops", peak_gflops, " must be finite and >= 0 (0 = measure)");
  }
  return absl::OkStatus();
}

std::string TensorboardDir(const TrainConfig& config) {
  if (config.tensorboard_dir == "none") return "";
  if (config.tensorboard_dir.empty()) return JoinPath(config.out_dir, "tb");
  return config.tensorboard_dir;
}

absl::StatusOr<int64_t> AccumulationSteps(const TrainConfig& config, int world_size,
                                          const KeyOrigins& origins) {
  const int64_t per_step = config.micro_batch * world_size;
  if (per_step <= 0 || config.global_batch % per_step != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(origins.Subject("global_batch", config.global_batch), " is not a multiple of ",
                     origins.Mention("micro_batch", config.micro_batch), " x world size ",
                     world_size, "; change one of them"));
  }
  return config.global_batch / per_step;
}

}  // namespace gmlp::pretrain
