// The study's held-out measures (held_out.h).
#include "study/held_out.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/loader.h"
#include "data/masking.h"
#include "model/heads.h"
#include "model/provenance.h"
#include "model/serialize.h"
#include "pretrain/checkpoint.h"
#include "pretrain/mlm_eval.h"
#include "pretrain/pretrained.h"

namespace gmlp::study {
namespace {

// The held-out batches every cell is scored on: the validation split in order, its masking
// seeded the same way for every cell (so all cells predict the same positions).
data::LoaderOptions HeldOutLoaderOptions(const std::string& shard_dir, int64_t batch_size) {
  data::LoaderOptions lo;
  lo.shard_dir = shard_dir;
  lo.split = "valid";
  lo.batch_size = batch_size;
  lo.seed = 4242;
  lo.shuffle = false;
  lo.prefetch = 0;
  return lo;
}

int64_t HeldOutBatches(const data::MlmLoader& loader, int64_t batches) {
  return std::max<int64_t>(1, std::min(batches, loader.batches_per_epoch()));
}

// Per id: how often it occurs in the training split as written (nothing chosen, nothing
// replaced), read in batches of `batch_size` (the tail that fills no batch is left out): the
// frequencies a context-free predictor can learn.
absl::StatusOr<std::vector<int64_t>> TrainTokenCounts(const std::string& shard_dir,
                                                      int64_t batch_size) {
  data::LoaderOptions lo = HeldOutLoaderOptions(shard_dir, batch_size);
  lo.split = "train";
  lo.masking.mask_rate = 0;
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> train, data::MlmLoader::Open(lo));
  std::vector<int64_t> counts(static_cast<size_t>(train->vocab_size()), 0);
  for (int64_t b = train->batches_per_epoch(); b > 0; --b) {
    GMLP_ASSIGN_OR_RETURN(const data::MlmBatch batch, train->Next());
    for (int32_t id : batch.input_ids) ++counts[static_cast<size_t>(id)];
  }
  return counts;
}

// The context-free floor (data::ContextFreeMlmLoss) of a held-out loss: the predictor knows
// `train_counts` and is scored on the labels of the first `batches` batches of `held_out` (the
// positions that loss is measured on).
absl::StatusOr<double> ContextFreeFloor(const std::vector<int64_t>& train_counts,
                                        const data::LoaderOptions& held_out, int64_t batches) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> valid, data::MlmLoader::Open(held_out));
  std::vector<int64_t> target(static_cast<size_t>(valid->vocab_size()), 0);
  for (int64_t b = HeldOutBatches(*valid, batches); b > 0; --b) {
    GMLP_ASSIGN_OR_RETURN(const data::MlmBatch batch, valid->Next());
    for (int32_t id : batch.masked_labels) ++target[static_cast<size_t>(id)];
  }
  return data::ContextFreeMlmLoss(train_counts, target, held_out.masking);
}

}  // namespace

absl::StatusOr<double> HeldOutMlmLoss(const std::string& run_dir, const std::string& shard_dir,
                                      int64_t batch_size, int64_t batches) {
  GMLP_ASSIGN_OR_RETURN(const std::string ckpt, pretrain::ResolveCheckpoint(run_dir));
  GMLP_ASSIGN_OR_RETURN(pretrain::PretrainedEncoder pre, pretrain::LoadPretrainedEncoder(ckpt));
  model::MlmModel mlm(pre.config);
  GMLP_RETURN_IF_ERROR(model::LoadModule(*mlm, JoinPath(ckpt, pretrain::kModelFile)));
  mlm->eval();
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<data::MlmLoader> loader,
                        data::MlmLoader::Open(HeldOutLoaderOptions(shard_dir, batch_size)));
  const int64_t n = HeldOutBatches(*loader, batches);
  auto forward = [&mlm](const model::EncoderInput& in, const torch::Tensor& masked) {
    return mlm->forward(in, masked);
  };
  GMLP_ASSIGN_OR_RETURN(pretrain::MlmEval eval,
                        pretrain::EvaluateMlm(forward, *loader, n, torch::kCPU, /*bf16=*/false));
  if (eval.masked_tokens == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(shard_dir, ": the validation split has no masked tokens; prepare more text"));
  }
  return eval.loss;
}

absl::Status AddContextFreeFloors(const StudyConfig& config, const std::string& shard_dir,
                                  const pretrain::TrainConfig& train, ReportContext* context) {
  GMLP_ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                        TrainTokenCounts(shard_dir, config.pretraining.global_batch));
  data::LoaderOptions curve = HeldOutLoaderOptions(shard_dir, train.micro_batch);
  curve.seed = train.seed;
  curve.masking.mask_rate = train.mask_rate;
  curve.masking.whole_word = train.whole_word;
  GMLP_ASSIGN_OR_RETURN(
      context->context_free_loss,
      ContextFreeFloor(counts, HeldOutLoaderOptions(shard_dir, config.pretraining.global_batch),
                       config.pretraining.eval_batches));
  GMLP_ASSIGN_OR_RETURN(context->curve_context_free_loss,
                        ContextFreeFloor(counts, curve, train.eval_batches));
  return absl::OkStatus();
}

// A bad floors.json: what to do.
constexpr char kFloorsFix[] =
    "delete it (the report then has no floor) and report again where the shards are";

std::string FloorsFile(const std::string& output) { return JoinPath(output, "floors.json"); }

absl::Status WriteFloors(const std::string& path, const ReportContext& floors) {
  nlohmann::json j = {{"context_free_loss", floors.context_free_loss},
                      {"curve_context_free_loss", floors.curve_context_free_loss}};
  j[model::kMadeByKey] = nlohmann::json::parse(model::Provenance().dump());
  return WriteFileAtomic(path, j.dump(2) + "\n");
}

absl::Status ReadFloors(const std::string& path, ReportContext* context) {
  GMLP_ASSIGN_OR_RETURN(const nlohmann::json j, ReadJsonFile(path, kFloorsFix));
  try {
    context->context_free_loss = j.at("context_free_loss").get<double>();
    context->curve_context_free_loss = j.at("curve_context_free_loss").get<double>();
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(
        absl::StrCat(path, ": not the study's floors (", e.what(), "); ", kFloorsFix));
  }
  return absl::OkStatus();
}

}  // namespace gmlp::study
