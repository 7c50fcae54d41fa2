#include "pretrain/run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/checksum.h"
#include "common/field_json.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "data/loader.h"
#include "data/manifest.h"
#include "kernels/policy.h"
#include "model/flops.h"
#include "model/heads.h"
#include "model/provenance.h"
#include "model/serialize.h"
#include "model/weights_folder.h"
#include "pretrain/checkpoint.h"
#include "pretrain/dist.h"
#include "pretrain/trainer.h"

namespace gmlp::pretrain {
namespace {

// The manifest records the tokenizer path prepare was given; it may be relative to where
// prepare ran, so the shard directory is tried too.
std::string FindTokenizer(const data::Manifest& manifest, const std::string& shard_dir) {
  if (manifest.tokenizer.empty()) return "";
  if (PathExists(manifest.tokenizer)) return manifest.tokenizer;
  const std::string base = manifest.tokenizer.substr(manifest.tokenizer.find_last_of('/') + 1);
  for (const std::string& p :
       {JoinPath(shard_dir, manifest.tokenizer), JoinPath(shard_dir, base)}) {
    if (PathExists(p)) return p;
  }
  return "";
}

// The first path under `prefix` where `saved` and `now` differ ("" when none); keys present on
// one side only are skipped.
std::string FirstDifference(const nlohmann::json& saved, const nlohmann::json& now,
                            const std::string& prefix) {
  if (saved.is_object() && now.is_object()) {
    for (const auto& [key, value] : saved.items()) {
      if (!now.contains(key)) continue;
      if (prefix.empty() && MayChangeOnResume(key)) continue;
      const std::string path = prefix.empty() ? key : absl::StrCat(prefix, ".", key);
      std::string diff = FirstDifference(value, now.at(key), path);
      if (!diff.empty()) return diff;
    }
    return "";
  }
  return saved == now ? "" : prefix;
}

const nlohmann::json& At(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* node = &j;
  for (absl::string_view key : absl::StrSplit(path, '.')) node = &node->at(std::string(key));
  return *node;
}

}  // namespace

absl::StatusOr<ResumeMode> ParseResumeMode(absl::string_view text) {
  if (text == "auto" || text == "true") return ResumeMode::kAuto;  // bare --resume: auto
  if (text == "never" || text == "false") return ResumeMode::kNever;
  return absl::InvalidArgumentError(
      absl::StrCat("--resume=", text,
                   ": expected auto (continue a run found in --out_dir) or "
                   "never (--out_dir must be empty)"));
}

bool MayChangeOnResume(absl::string_view key) {
  static constexpr absl::string_view kMayChange[] = {
      "shard_dir",        "out_dir",    "steps",          "micro_batch",
      "log_every",        "eval_every", "eval_batches",   "checkpoint_every",
      "keep_checkpoints", "bucket_mb",  "dist_timeout_s", "peak_gflops",
      "tensorboard_dir",  "kernels"};
  return std::find(std::begin(kMayChange), std::end(kMayChange), key) != std::end(kMayChange);
}

absl::Status CheckSameRun(const nlohmann::json& saved, const nlohmann::json& now,
                          const std::string& saved_path) {
  const std::string diff = FirstDifference(saved, now, "");
  if (diff.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      saved_path, ": the run in this out_dir has ", diff, " = ", JsonForMessage(At(saved, diff)),
      ", this command ", JsonForMessage(At(now, diff)),
      "; run the same configuration to continue it (e.g. --config=", saved_path,
      "), choose a new --out_dir, or remove the old run"));
}

torch::Device TrainingDevice(const DistEnv& env) {
  if (!torch::cuda::is_available()) return torch::kCPU;
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % gpus));
}

namespace {

// The weights of --init, checked against the shards it will train on: the same vocabulary (and
// tokenizer, when the folder has one) and sequence length.
absl::StatusOr<model::InitWeights> InitFrom(const std::string& path, const data::Manifest& manifest,
                                            const std::string& shard_dir) {
  GMLP_ASSIGN_OR_RETURN(model::InitWeights init, model::ReadInitWeights(path));
  const std::string manifest_path = JoinPath(shard_dir, data::kManifestFile);
  if (init.config.vocab_size != manifest.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--init=", path, " has vocab_size ", init.config.vocab_size, " but ",
                     manifest_path, " has ", manifest.vocab_size,
                     ": prepare the shards with the tokenizer.model of the export"));
  }
  if (init.config.max_seq_len != manifest.seq_len) {
    return absl::InvalidArgumentError(
        absl::StrCat("--init=", path, " has max_seq_len ", init.config.max_seq_len, " but ",
                     manifest_path, " has seq_len ", manifest.seq_len,
                     ": prepare the shards with --seq_len=", init.config.max_seq_len));
  }
  if (!init.tokenizer_path.empty()) {
    GMLP_ASSIGN_OR_RETURN(const std::string checksum, FileChecksum(init.tokenizer_path));
    if (checksum != manifest.tokenizer_checksum) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--init=", path, ": its tokenizer.model is not the tokenizer ", manifest_path,
          " was prepared with (checksums differ): the ids would mean other pieces"));
    }
  }
  return init;
}

// The run's model config completed from the shards (vocabulary, length) or --init, and the
// checkpoint it continues from ("" for a fresh run), checked against --resume and the saved
// config.
struct ResolvedRun {
  data::Manifest manifest;
  std::optional<model::InitWeights> init;
  std::string resume_from;
};

absl::StatusOr<ResolvedRun> ResolveRun(PretrainConfig& config, ResumeMode resume,
                                       const DistEnv& env) {
  const TrainConfig& tc = config.train;
  if (tc.shard_dir.empty()) {
    return absl::InvalidArgumentError(
        "--shard_dir is empty; give the directory `gmlp prepare` wrote (it holds manifest.json)");
  }
  GMLP_RETURN_IF_ERROR(tc.Validate(config.origins));
  GMLP_RETURN_IF_ERROR(AccumulationSteps(tc, env.world_size, config.origins).status());
  ResolvedRun run;
  GMLP_ASSIGN_OR_RETURN(run.manifest,
                        data::ReadManifest(JoinPath(tc.shard_dir, data::kManifestFile)));
  config.model.vocab_size = run.manifest.vocab_size;
  config.model.max_seq_len = run.manifest.seq_len;
  if (!tc.init.empty()) {
    GMLP_ASSIGN_OR_RETURN(run.init, InitFrom(tc.init, run.manifest, tc.shard_dir));
    config.model = run.init->config;
  }
  if (resume == ResumeMode::kNever) {
    // Rank 0 alone looks: the others could see the files it starts writing.
    if (env.rank == 0 && !ListDir(tc.out_dir).empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat(tc.out_dir,
                       ": not empty, and --resume=never starts afresh only in an empty --out_dir; "
                       "choose a new one, or --resume=auto to continue the run there"));
    }
  } else if (auto found = ResolveCheckpoint(tc.out_dir); found.ok()) {
    run.resume_from = *found;
    const std::string saved_path = JoinPath(run.resume_from, kConfigFile);
    GMLP_ASSIGN_OR_RETURN(const nlohmann::json saved,
                          ReadJsonFile(saved_path, "resume from an older checkpoint"));
    if (!saved.is_object() || !saved.contains("model")) {
      return absl::DataLossError(
          absl::StrCat(saved_path, ": malformed; resume from an older checkpoint"));
    }
    GMLP_RETURN_IF_ERROR(CheckSameRun(saved, config.ToJson(), saved_path));
    if (env.rank == 0) {
      std::fprintf(stderr, "gmlp pretrain: continuing the run in %s from %s\n", tc.out_dir.c_str(),
                   run.resume_from.c_str());
    }
  }
  GMLP_RETURN_IF_ERROR(config.Validate());
  return run;
}

// This rank's share of the training split, and the validation split (null when the shards have
// none: no evaluation).
struct Loaders {
  std::unique_ptr<data::MlmLoader> train, valid;
};

absl::StatusOr<Loaders> OpenLoaders(const TrainConfig& tc, const data::Manifest& manifest,
                                    const DistEnv& env) {
  data::LoaderOptions lo;
  lo.shard_dir = tc.shard_dir;
  lo.split = "train";
  lo.batch_size = tc.micro_batch;
  lo.rank = env.rank;
  lo.world_size = env.world_size;
  lo.seed = tc.seed;
  lo.masking.mask_rate = tc.mask_rate;
  lo.masking.whole_word = tc.whole_word;
  lo.expected_tokenizer_checksum = manifest.tokenizer_checksum;
  lo.expected_seq_len = manifest.seq_len;
  Loaders loaders;
  GMLP_ASSIGN_OR_RETURN(loaders.train, data::MlmLoader::Open(lo));
  if (manifest.Totals("valid").sequences > 0) {
    data::LoaderOptions vo = lo;
    vo.split = "valid";
    vo.shuffle = false;
    vo.prefetch = 0;
    GMLP_ASSIGN_OR_RETURN(loaders.valid, data::MlmLoader::Open(vo));
  } else if (env.rank == 0) {
    std::fprintf(stderr, "gmlp pretrain: %s has no valid split; no evaluation\n",
                 tc.shard_dir.c_str());
  }
  return loaders;
}

// The model every rank builds alike (rank 0's weights are broadcast anyway): seeded, or --init's
// weights on a fresh run, on this rank's device.
absl::StatusOr<model::MlmModel> BuildModel(const PretrainConfig& config, const ResolvedRun& run,
                                           const DistEnv& env, const torch::Device& device) {
  const bool rank0 = env.rank == 0;
  torch::manual_seed(config.train.seed);
  model::MlmModel mlm(config.model);
  if (run.init && run.resume_from.empty()) {
    const bool head = run.init->kind == model::kKindMlm;
    if (head) {
      GMLP_RETURN_IF_ERROR(model::LoadModuleFrom(*mlm, run.init->file));
    } else {
      GMLP_RETURN_IF_ERROR(model::LoadModuleFrom(*mlm->encoder(), run.init->file, "encoder."));
    }
    if (rank0) {
      std::fprintf(stderr, "gmlp pretrain: initialized from %s (%s format): encoder%s\n",
                   config.train.init.c_str(), run.init->format.c_str(),
                   head ? " and MLM head" : "; the MLM head starts fresh (a classifier's export)");
    }
  }
  mlm->to(device);
  if (rank0 && !device.is_cpu()) {
    std::fprintf(stderr, "gmlp pretrain: training on %s (one GPU per rank, by LOCAL_RANK)\n",
                 device.str().c_str());
  }
  return mlm;
}

TrainerOptions MakeTrainerOptions(const PretrainConfig& config, const data::Manifest& manifest,
                                  const std::string& tokenizer_model, const torch::Device& device,
                                  const DistEnv& env) {
  TrainerOptions to;
  to.config = config.train;
  to.config_json = config.ToJson();
  // Recorded for people, never compared on resume (config.ToJson() has no such key).
  to.config_json[model::kMadeByKey] =
      nlohmann::json::parse(model::Provenance(device, env.world_size).dump());
  to.tokenizer_model = tokenizer_model;
  to.flops_per_token =
      model::TrainingFlopsPerToken(config.model, manifest.seq_len, config.train.mask_rate);
  to.save_model = [](torch::nn::Module& m, const std::string& path) {
    return model::SaveModule(m, path);
  };
  to.load_model = [](torch::nn::Module& m, const std::string& path) {
    return model::LoadModule(m, path);
  };
  return to;
}

void PrintStart(const PretrainConfig& config, const data::Manifest& manifest,
                const std::string& tokenizer_model, const DistEnv& env) {
  if (env.rank != 0) return;
  std::fprintf(stderr, "gmlp pretrain: %d rank(s); config:\n%s\n", env.world_size,
               config.ToJson().dump(2).c_str());
  if (tokenizer_model.empty()) {
    std::fprintf(stderr,
                 "gmlp pretrain: warning: tokenizer %s not found; checkpoints will lack "
                 "tokenizer.model\n",
                 manifest.tokenizer.c_str());
  }
}

}  // namespace

absl::Status RunPretraining(PretrainConfig config, ResumeMode resume) {
  GMLP_ASSIGN_OR_RETURN(const DistEnv env, DistEnvFromEnvironment());
  GMLP_ASSIGN_OR_RETURN(const ResolvedRun run, ResolveRun(config, resume, env));
  const TrainConfig& tc = config.train;
  kernels::SetPolicy(*kernels::ParsePolicy(tc.kernels));
  const std::string tokenizer_model = FindTokenizer(run.manifest, tc.shard_dir);
  PrintStart(config, run.manifest, tokenizer_model, env);
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<Dist> dist,
                        Dist::Connect(env, std::chrono::seconds(tc.dist_timeout_s)));
  GMLP_ASSIGN_OR_RETURN(Loaders loaders, OpenLoaders(tc, run.manifest, env));
  const torch::Device device = TrainingDevice(env);
  GMLP_ASSIGN_OR_RETURN(model::MlmModel mlm, BuildModel(config, run, env, device));
  auto forward = [mlm](const model::EncoderInput& input,
                       const torch::Tensor& masked_index) mutable {
    return mlm->forward(input, masked_index);
  };
  Trainer trainer(MakeTrainerOptions(config, run.manifest, tokenizer_model, device, env), mlm.ptr(),
                  forward, loaders.train.get(), loaders.valid.get(), dist.get());
  // A dead peer surfaces as the transport's own exception from whichever collective notices it
  // (Gloo's "Connection closed by peer" is not a c10::Error): give it the same clear line
  // whether the ranks came from --nproc, torchrun, srun or variables set by hand.
  try {
    GMLP_RETURN_IF_ERROR(trainer.Init(run.resume_from));
    absl::Status st = trainer.Run();
    if (absl::IsCancelled(st) && env.rank == 0) {  // preempted, with a checkpoint: one line
      std::fprintf(stderr, "gmlp pretrain: %s\n", std::string(st.message()).c_str());
    }
    return st;
  } catch (const std::exception& e) {
    if (env.world_size <= 1) throw;
    return absl::UnavailableError(absl::StrCat(
        "rank ", env.rank, ": a collective failed: ", e.what(),
        " (a peer rank died or timed out; --resume continues from the last checkpoint)"));
  }
}

}  // namespace gmlp::pretrain
