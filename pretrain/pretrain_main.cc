// `gmlp pretrain`: MLM-pretrains an encoder on shards from `gmlp prepare`, on 1..N ranks.
// Flags only; the work is in run.cc (RunPretraining) and trainer.cc.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "model/arch.h"
#include "pretrain/config.h"
#include "pretrain/launcher.h"
#include "pretrain/preempt.h"
#include "pretrain/run.h"
#include "pretrain/train_config.h"

namespace gmlp::cli {
namespace {

constexpr char kUsage[] =
    "gmlp pretrain --shard_dir=DIR --out_dir=DIR [--preset=gmlp-tiny] [--model_overrides=k=v,...] "
    "[--config=FILE] [--resume=auto|never] [--nproc=N [--max_restarts=K]] [flags]\n\n"
    "MLM-pretrains an encoder on shards from `gmlp prepare`. Re-running the same command "
    "continues the run in --out_dir. Distributed: --nproc=N, or under torchrun --no_python / "
    "srun (RANK/WORLD_SIZE or SLURM_PROCID/SLURM_NTASKS with MASTER_ADDR/MASTER_PORT). SIGTERM "
    "or SIGUSR1 stops every rank after one step with a checkpoint, exit status 75. See "
    "pretrain/README.md.";

// What `gmlp pretrain`'s flags fill; only the ones the command line gives override the config
// file and preset.
struct PretrainFlags {
  pretrain::ConfigSources sources;
  std::string preset = pretrain::PretrainConfig().preset;
  pretrain::ResumeMode resume = pretrain::ResumeMode::kAuto;
  int nproc = 1;
  int max_restarts = 0;
  pretrain::TrainConfig train;
};

void AddFlags(FlagSet& flags, PretrainFlags& f) {
  flags.Add("config", &f.sources.config_file,
            "JSON config file (e.g. an earlier run's config.json): training keys plus \"preset\" "
            "and \"model\". Flags given on the command line override it.");
  flags.Add("preset", &f.preset,
            absl::StrCat("Encoder preset <arch>-{tiny,mini,small,base}, <arch> one of ",
                         absl::StrJoin(model::ArchNames(), ", "),
                         "; overrides --config's preset and model section."));
  flags.Add("model_overrides", &f.sources.model_overrides,
            "EncoderConfig overrides, 'key=value,...' (e.g. n_layers=2,d_ffn=512).");
  flags.AddCustom(
      "resume",
      "auto: continue the run in --out_dir from its newest complete checkpoint (afresh when it "
      "has none; a different configuration is refused, naming the key); never: --out_dir must "
      "be empty. A bare --resume is auto",
      "auto", /*is_bool=*/true, [&f](absl::string_view text) {
        auto mode = pretrain::ParseResumeMode(text);
        if (mode.ok()) f.resume = *mode;
        return mode.ok();
      });
  flags.Add("nproc", &f.nproc,
            "Spawn this many local ranks (no launcher needed); 1 = this process.");
  flags.Add("max_restarts", &f.max_restarts,
            "With --nproc: when a rank fails, stop the others and start all again, at most this "
            "many times (as torchrun --max-restarts); each start continues from the last "
            "checkpoint.");
  flags.AddFields(f.train);
  flags.SetDefaultText("tensorboard_dir", "<out_dir>/tb");
}

// The checks of flags against each other, and the config sources they make.
absl::StatusOr<pretrain::ConfigSources> Sources(const FlagSet& flags, const PretrainFlags& f,
                                                const std::vector<std::string>& positional) {
  if (!positional.empty()) {
    return absl::InvalidArgumentError("unexpected argument \"" + positional[0] +
                                      "\"; every input is a flag (see `gmlp pretrain --help`)");
  }
  if (f.nproc < 1) return absl::InvalidArgumentError("--nproc must be >= 1");
  if (f.max_restarts < 0) return absl::InvalidArgumentError("--max_restarts must be >= 0");
  if (flags.Given("init") && (flags.Given("preset") || flags.Given("model_overrides"))) {
    return absl::InvalidArgumentError(
        "--init takes the architecture from the exported weights: drop --preset and "
        "--model_overrides (or drop --init to start afresh)");
  }
  pretrain::ConfigSources sources = f.sources;
  if (flags.Given("preset")) sources.preset = f.preset;
  const nlohmann::json train_json = f.train.ToJson();
  for (const auto& [key, value] : train_json.items()) {
    if (flags.Given(key)) sources.train_flags[key] = value;
  }
  return sources;
}

}  // namespace

int PretrainMain(int argc, char** argv) {
  PretrainFlags f;
  FlagSet flags(argv[0], kUsage);
  AddFlags(flags, f);
  const std::vector<std::string> positional = ParseSubcommandFlags(flags, argc, argv);
  absl::StatusOr<pretrain::ConfigSources> sources = Sources(flags, f, positional);
  if (!sources.ok()) return Fail(argv[0], sources.status());
  absl::StatusOr<pretrain::PretrainConfig> config = pretrain::ResolveConfig(*sources);
  if (!config.ok()) return Fail(argv[0], config.status());
  if (f.nproc > 1 && !pretrain::IsSpawnedRank()) {
    // Check what can be checked once (ResolveConfig validated the rest), before starting N
    // processes that would all fail.
    const absl::Status st =
        pretrain::AccumulationSteps(config->train, f.nproc, config->origins).status();
    if (!st.ok()) return Fail(argv[0], st);
    return pretrain::SpawnLocalRanks(f.nproc, f.max_restarts);
  }
  pretrain::InstallStopSignalHandlers();
  absl::Status st = pretrain::RunPretraining(*std::move(config), f.resume);
  // Preempted: RunPretraining has written the checkpoint and said so.
  if (absl::IsCancelled(st)) return pretrain::kExitPreempted;
  if (!st.ok()) return Fail(argv[0], st);
  return 0;
}

}  // namespace gmlp::cli
