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

}  // namespace

int PretrainMain(int argc, char** argv) {
  // Flags fill these; only the ones the command line gives override the config file and preset.
  pretrain::ConfigSources sources;
  pretrain::PretrainConfig defaults;
  std::string preset = defaults.preset;
  pretrain::ResumeMode resume = pretrain::ResumeMode::kAuto;
  int nproc = 1;
  int max_restarts = 0;
  pretrain::TrainConfig train;
  FlagSet flags(argv[0], kUsage);
  flags.Add("config", &sources.config_file,
            "JSON config file (e.g. an earlier run's config.json): training keys plus \"preset\" "
            "and \"model\". Flags given on the command line override it.");
  flags.Add("preset", &preset,
            absl::StrCat("Encoder preset <arch>-{tiny,mini,small,base}, <arch> one of ",
                         absl::StrJoin(model::ArchNames(), ", "),
                         "; overrides --config's preset and model section."));
  flags.Add("model_overrides", &sources.model_overrides,
            "EncoderConfig overrides, 'key=value,...' (e.g. n_layers=2,d_ffn=512).");
  flags.AddCustom(
      "resume",
      "auto: continue the run in --out_dir from its newest complete checkpoint (afresh when it "
      "has none; a different configuration is refused, naming the key); never: --out_dir must "
      "be empty. A bare --resume is auto",
      "auto", /*is_bool=*/true, [&resume](absl::string_view text) {
        auto mode = pretrain::ParseResumeMode(text);
        if (mode.ok()) resume = *mode;
        return mode.ok();
      });
  flags.Add("nproc", &nproc, "Spawn this many local ranks (no launcher needed); 1 = this process.");
  flags.Add("max_restarts", &max_restarts,
            "With --nproc: when a rank fails, stop the others and start all again, at most this "
            "many times (as torchrun --max-restarts); each start continues from the last "
            "checkpoint.");
  flags.AddFields(train);
  flags.SetDefaultText("tensorboard_dir", "<out_dir>/tb");
  const std::vector<std::string> positional = ParseSubcommandFlags(flags, argc, argv);
  if (!positional.empty()) {
    return Fail(argv[0], absl::InvalidArgumentError(
                             "unexpected argument \"" + positional[0] +
                             "\"; every input is a flag (see `gmlp pretrain --help`)"));
  }
  if (nproc < 1) {
    return Fail(argv[0], absl::InvalidArgumentError("--nproc must be >= 1"));
  }
  if (max_restarts < 0) {
    return Fail(argv[0], absl::InvalidArgumentError("--max_restarts must be >= 0"));
  }
  if (flags.Given("init") && (flags.Given("preset") || flags.Given("model_overrides"))) {
    return Fail(argv[0], absl::InvalidArgumentError(
                             "--init takes the architecture from the exported weights: drop "
                             "--preset and --model_overrides (or drop --init to start afresh)"));
  }
  if (flags.Given("preset")) sources.preset = preset;
  const nlohmann::json train_json = train.ToJson();
  for (const auto& [key, value] : train_json.items()) {
    if (flags.Given(key)) sources.train_flags[key] = value;
  }
  absl::StatusOr<pretrain::PretrainConfig> config = pretrain::ResolveConfig(sources);
  if (!config.ok()) return Fail(argv[0], config.status());
  if (nproc > 1 && !pretrain::IsSpawnedRank()) {
    // Check what can be checked once (ResolveConfig validated the rest), before starting N
    // processes that would all fail.
    const absl::Status st =
        pretrain::AccumulationSteps(config->train, nproc, config->origins).status();
    if (!st.ok()) return Fail(argv[0], st);
    return pretrain::SpawnLocalRanks(nproc, max_restarts);
  }
  pretrain::InstallStopSignalHandlers();
  absl::Status st = pretrain::RunPretraining(*std::move(config), resume);
  // Preempted: RunPretraining has written the checkpoint and said so.
  if (absl::IsCancelled(st)) return pretrain::kExitPreempted;
  if (!st.ok()) return Fail(argv[0], st);
  return 0;
}

}  // namespace gmlp::cli
