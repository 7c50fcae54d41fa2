#include "finetune/options.h"

#include "absl/strings/str_cat.h"
#include "kernels/policy.h"

namespace gmlp::finetune {

absl::Status FinetuneOptions::Validate(const KeyOrigins& origins) const {
  // bad(key, value, what is wrong...): one line naming the key as its source set it.
  auto bad = [&origins](const char* key, const nlohmann::json& value, auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(origins.Subject(key, value), parts...));
  };
  if (!IsValidLr(lr)) return bad("lr", lr, " must be in (0, 1]");
  if (batch_size < 1) return bad("batch_size", batch_size, " must be >= 1");
  if (epochs < 1) return bad("epochs", epochs, " must be >= 1");
  if (!(warmup >= 0 && warmup <= 1)) {
    return bad("warmup", warmup, " is a fraction of all steps, in [0, 1]");
  }
  if (max_len != 0 && max_len < 3) {
    return bad("max_len", max_len,
               " must be >= 3 ([CLS] a [SEP]), or 0 for the encoder's max_seq_len");
  }
  if (!(weight_decay >= 0)) return bad("weight_decay", weight_decay, " must be >= 0");
  if (!(clip_norm >= 0)) return bad("clip_norm", clip_norm, " must be >= 0 (0 = off)");
  if (eval_batch_size < 1) return bad("eval_batch_size", eval_batch_size, " must be >= 1");
  if (!kernels::ParsePolicy(kernels)) return bad("kernels", kernels, " is not one of auto, aten");
  return absl::OkStatus();
}

nlohmann::json FinetuneOptions::ToJson() const {
  nlohmann::json j;
  ForEachField(*this, [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  j.erase("log_every");
  return j;
}

}  // namespace gmlp::finetune
