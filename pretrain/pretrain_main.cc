// `gmlp pretrain`: MLM-pretrains an encoder on shards from `gmlp prepare`, on 1..N ranks.
// Flags only; the work is in run.cc (RunPretraining) and trainer.cc.
#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/internal/parse.h"
#include "absl/flags/reflection.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "pretrain/config.h"
#include "pretrain/launcher.h"
#include "pretrain/run.h"
#include "pretrain/train_config.h"

namespace {
const gmlp::pretrain::TrainConfig kDefaults;
}  // namespace

// Knobs `gmlp pretrain` shares with other subcommands are one flag each (Abseil flag names are
// global to the binary), defined where they first appeared; their defaults there do not matter
// here: only values given on the command line are read, over TrainConfig's defaults.
ABSL_DECLARE_FLAG(std::string, preset);           // finetune_main.cc
ABSL_DECLARE_FLAG(double, lr);                    // finetune_main.cc
ABSL_DECLARE_FLAG(double, weight_decay);          // finetune_main.cc
ABSL_DECLARE_FLAG(double, clip_norm);             // finetune_main.cc
ABSL_DECLARE_FLAG(int64_t, log_every);            // finetune_main.cc
ABSL_DECLARE_FLAG(std::string, model_overrides);  // study_main.cc
ABSL_DECLARE_FLAG(uint64_t, seed);                // prepare_main.cc / tokenizer_main.cc

ABSL_FLAG(std::string, config, "",
          "JSON config file (e.g. an earlier run's config.json): training keys plus \"preset\" "
          "and \"model\". Flags given on the command line override it.");
ABSL_FLAG(bool, resume, false,
          "Continue from the newest complete checkpoint in --out_dir (starts afresh if none).");
ABSL_FLAG(int, nproc, 1, "Spawn this many local ranks (no launcher needed); 1 = this process.");

ABSL_FLAG(std::string, shard_dir, kDefaults.shard_dir,
          "Directory with manifest.json written by `gmlp prepare`.");
ABSL_FLAG(std::string, out_dir, kDefaults.out_dir,
          "Output: config.json, metrics.jsonl, checkpoints/step_NNNNNN/.");
ABSL_FLAG(int64_t, global_batch, kDefaults.global_batch,
          "Sequences per optimizer step over all ranks (= micro_batch x accumulation x ranks).");
ABSL_FLAG(int64_t, micro_batch, kDefaults.micro_batch, "Sequences per rank per forward/backward.");
ABSL_FLAG(int64_t, steps, kDefaults.steps, "Optimizer steps in the whole run.");
ABSL_FLAG(std::string, optimizer, kDefaults.optimizer, "adamw | lamb.");
ABSL_FLAG(int64_t, warmup_steps, kDefaults.warmup_steps, "Linear warmup steps.");
ABSL_FLAG(std::string, schedule, kDefaults.schedule, "Decay after warmup: linear | cosine.");
ABSL_FLAG(double, min_lr_ratio, kDefaults.min_lr_ratio, "Final lr as a fraction of --lr.");
ABSL_FLAG(double, beta1, kDefaults.beta1, "Adam beta1.");
ABSL_FLAG(double, beta2, kDefaults.beta2, "Adam beta2.");
ABSL_FLAG(double, eps, kDefaults.eps, "Adam epsilon.");
ABSL_DECLARE_FLAG(bool, bf16);  // cli/shared_flags.cc
ABSL_FLAG(double, mask_rate, kDefaults.mask_rate, "Fraction of tokens chosen for prediction.");
ABSL_FLAG(bool, whole_word, kDefaults.whole_word, "Mask whole words.");
ABSL_FLAG(int64_t, eval_every, kDefaults.eval_every, "Evaluate on the valid split every N steps.");
ABSL_FLAG(int64_t, eval_batches, kDefaults.eval_batches,
          "Valid batches per evaluation (per rank).");
ABSL_FLAG(int64_t, checkpoint_every, kDefaults.checkpoint_every,
          "Checkpoint every N steps (and always at the end).");
ABSL_FLAG(int64_t, keep_checkpoints, kDefaults.keep_checkpoints, "Keep the newest K checkpoints.");
ABSL_FLAG(double, bucket_mb, kDefaults.bucket_mb, "Gradient allreduce bucket size (MB).");
ABSL_FLAG(int64_t, dist_timeout_s, kDefaults.dist_timeout_s,
          "Seconds after which a collective with a dead peer fails.");
ABSL_FLAG(double, peak_gflops, kDefaults.peak_gflops,
          "Per-rank peak GFLOP/s for MFU; 0 = measure a GEMM at start.");

namespace gmlp::cli {
namespace {

constexpr char kUsage[] =
    "gmlp pretrain --shard_dir=DIR --out_dir=DIR [--preset=gmlp-tiny] [--model_overrides=k=v,...] "
    "[--config=FILE] [--resume] [--nproc=N] [flags]\n\n"
    "MLM-pretrains an encoder on shards from `gmlp prepare`. Distributed: --nproc=N, or under "
    "torchrun --no_python / srun (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS with "
    "MASTER_ADDR/MASTER_PORT). See pretrain/README.md.";

// The training flags given on the command line, as a TrainConfig JSON object.
nlohmann::json TrainFlagsJson() {
  nlohmann::json j = nlohmann::json::object();
#define GMLP_FLAG_TO_JSON_(name)                              \
  if (absl::flags_internal::WasPresentOnCommandLine(#name)) { \
    j[#name] = absl::GetFlag(FLAGS_##name);                   \
  }
  GMLP_FLAG_TO_JSON_(shard_dir)
  GMLP_FLAG_TO_JSON_(out_dir)
  GMLP_FLAG_TO_JSON_(global_batch)
  GMLP_FLAG_TO_JSON_(micro_batch)
  GMLP_FLAG_TO_JSON_(steps)
  GMLP_FLAG_TO_JSON_(optimizer)
  GMLP_FLAG_TO_JSON_(lr)
  GMLP_FLAG_TO_JSON_(warmup_steps)
  GMLP_FLAG_TO_JSON_(schedule)
  GMLP_FLAG_TO_JSON_(min_lr_ratio)
  GMLP_FLAG_TO_JSON_(weight_decay)
  GMLP_FLAG_TO_JSON_(beta1)
  GMLP_FLAG_TO_JSON_(beta2)
  GMLP_FLAG_TO_JSON_(eps)
  GMLP_FLAG_TO_JSON_(clip_norm)
  GMLP_FLAG_TO_JSON_(bf16)
  GMLP_FLAG_TO_JSON_(mask_rate)
  GMLP_FLAG_TO_JSON_(whole_word)
  GMLP_FLAG_TO_JSON_(seed)
  GMLP_FLAG_TO_JSON_(log_every)
  GMLP_FLAG_TO_JSON_(eval_every)
  GMLP_FLAG_TO_JSON_(eval_batches)
  GMLP_FLAG_TO_JSON_(checkpoint_every)
  GMLP_FLAG_TO_JSON_(keep_checkpoints)
  GMLP_FLAG_TO_JSON_(bucket_mb)
  GMLP_FLAG_TO_JSON_(dist_timeout_s)
  GMLP_FLAG_TO_JSON_(peak_gflops)
#undef GMLP_FLAG_TO_JSON_
  return j;
}

}  // namespace

int PretrainMain(int argc, char** argv) {
  const std::vector<std::string> positional =
      ParseSubcommandFlags(argc, argv,
                           {"pretrain_main.cc",
                            {"bf16", "clip_norm", "log_every", "lr", "model_overrides", "preset",
                             "seed", "weight_decay"}},
                           kUsage);
  if (!positional.empty()) {
    return Fail(argv[0], absl::InvalidArgumentError(
                             "unexpected argument \"" + positional[0] +
                             "\"; every input is a flag (see `gmlp pretrain --help`)"));
  }
  const int nproc = absl::GetFlag(FLAGS_nproc);
  if (nproc < 1) {
    return Fail(argv[0], absl::InvalidArgumentError("--nproc must be >= 1"));
  }
  pretrain::ConfigSources sources;
  sources.config_file = absl::GetFlag(FLAGS_config);
  if (absl::flags_internal::WasPresentOnCommandLine("preset")) {
    sources.preset = absl::GetFlag(FLAGS_preset);
  }
  if (absl::flags_internal::WasPresentOnCommandLine("model_overrides")) {
    sources.model_overrides = absl::GetFlag(FLAGS_model_overrides);
  }
  sources.train_flags = TrainFlagsJson();
  absl::StatusOr<pretrain::PretrainConfig> config = pretrain::ResolveConfig(sources);
  if (!config.ok()) return Fail(argv[0], config.status());
  if (nproc > 1 && !pretrain::IsSpawnedRank()) {
    // Check what can be checked once, before starting N processes that would all fail.
    absl::Status st = config->train.Validate();
    if (st.ok()) st = pretrain::AccumulationSteps(config->train, nproc).status();
    if (!st.ok()) return Fail(argv[0], st);
    return pretrain::SpawnLocalRanks(nproc);
  }
  absl::Status st = pretrain::RunPretraining(*std::move(config), absl::GetFlag(FLAGS_resume));
  if (!st.ok()) return Fail(argv[0], st);
  return 0;
}

}  // namespace gmlp::cli
