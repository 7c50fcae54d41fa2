// `gmlp study`: the accuracy-vs-parameters experiment end to end (study/study.h). Its flags are
// StudyConfig's field list plus the finetuning knobs of FinetuneOptions the study exposes.
#include <cstdio>
#include <set>
#include <string>

#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "common/file_util.h"
#include "kernels/policy.h"
#include "study/config.h"
#include "study/study.h"

namespace gmlp::cli {
namespace {

constexpr char kUsage[] =
    "gmlp study [--output=runs/study] [--smoke] [--archs --sizes --tasks --seeds ...]\n\n"
    "Runs the accuracy-vs-parameters study of \"Pay Attention to MLPs\" end to end on the "
    "shared data: tokenizer, shards, then per cell (encoder x size) MLM pretraining for the "
    "same steps, held-out perplexity and finetuning on each task with k seeds. Resumable: "
    "re-run the same command to continue. Writes results.csv, summary.csv, report.md and "
    "accuracy_vs_params.{png,svg}; study/README.md says what the defaults cost. --smoke "
    "starts from the smoke preset and --config=FILE from a settings file; flags given with "
    "them still win. --tokenizer names an existing .model.";

// Registers every flag of `gmlp study`, bound to `c`.
void AddStudyFlags(study::StudyConfig* c, bool* smoke, bool* report_only, std::string* config_file,
                   FlagSet* flags) {
  flags->Add("report_only", report_only,
             "run nothing: write the report, tables and plots of the cells finished so far in "
             "--output, naming those not finished yet; the settings are those the study recorded "
             "in <output>/study.json unless --config or --smoke is given");
  flags->Add("smoke", smoke,
             "start from the smoke preset: a two-cell grid with a few steps (minutes) that checks "
             "the whole pipeline end to end");
  flags->Add("config", config_file,
             "a JSON file of study settings (keys = these flag names, \"finetune\": {...}), "
             "applied over the defaults (or --smoke); flags given still win. Named ones: "
             "study/configs/cpu-3h.json, study/configs/cpu-2h.json, study/configs/gpu-base.json");
  study::StudyConfig::ForEachField(*c, [&](const char* name, auto& field, const char* help) {
    // --bf16 and --kernels (below) set pretraining's and finetuning's together.
    if (std::string(name) != "pretrain_bf16" && std::string(name) != "pretrain_kernels") {
      flags->Add(name, &field, help);
    }
  });
  static const std::set<std::string> kFinetuneFlags = {"lr",     "batch_size", "epochs",
                                                       "warmup", "max_len",    "weight_decay"};
  finetune::FinetuneOptions::ForEachField(c->finetune,
                                          [&](const char* name, auto& field, const char* help) {
                                            if (kFinetuneFlags.count(name) > 0)
                                              flags->Add(name, &field, help);
                                          });
  flags->SetDefaultText("max_len", "--seq_len (the shards' seq_len with --shards)");
  flags->SetDefaultText("probe_max_sentence_bytes", "--max_len - 8 (120 at 128)");
  flags->AddCustom("bf16",
                   "bf16 autocast for pretraining and finetuning forward passes: about 2x fp32 on "
                   "CPUs with AVX-512 bf16, 20-90x slower than fp32 on CPUs without it; on by "
                   "default where a GPU is visible or the CPU has native bf16. LayerNorm and "
                   "losses stay fp32",
                   FlagCodec<bool>::Print(c->pretraining.bf16), /*is_bool=*/true,
                   [c](absl::string_view text) {
                     return FlagCodec<bool>::Parse(text, &c->pretraining.bf16) &&
                            FlagCodec<bool>::Parse(text, &c->finetune.bf16);
                   });
  flags->AddCustom("kernels",
                   "which ops of pretraining and finetuning run gmlp's CPU kernels: auto "
                   "(wherever one covers the operands, kernels/README.md) | aten (ATen's ops "
                   "everywhere: A/B checks without a rebuild)",
                   c->pretraining.kernels, /*is_bool=*/false, [c](absl::string_view text) {
                     if (!kernels::ParsePolicy(std::string_view(text.data(), text.size()))) {
                       return false;
                     }
                     c->pretraining.kernels = c->finetune.kernels = std::string(text);
                     return true;
                   });
}

}  // namespace

int StudyMain(int argc, char** argv) {
  study::StudyConfig c;
  bool smoke = false, report_only = false;
  std::string config_file;
  FlagSet flags(argv[0], kUsage);
  AddStudyFlags(&c, &smoke, &report_only, &config_file, &flags);
  ParseSubcommandFlags(flags, argc, argv);
  // A report of an existing study uses the settings it recorded, unless told otherwise.
  const std::string recorded = JoinPath(c.output, "study.json");
  if (report_only && !smoke && config_file.empty() && PathExists(recorded)) config_file = recorded;
  if (smoke || !config_file.empty()) {
    // Defaults, then the preset, then the file; the flags given on the command line are set
    // again over them.
    c = study::StudyConfig();
    absl::Status st = smoke ? study::ApplyStudyPreset("smoke", &c) : absl::OkStatus();
    if (st.ok() && !config_file.empty()) st = study::ApplyStudyConfigFile(config_file, &c);
    if (st.ok()) st = flags.Reapply();
    if (!st.ok()) return Fail(argv[0], st);
    // What the command line set again is named as its flag in errors.
    study::StudyConfig::ForEachField(c, [&](const char* name, auto&, const char*) {
      if (flags.Given(name)) c.origins.SetByFlag(name);
    });
    finetune::FinetuneOptions::ForEachField(c.finetune, [&](const char* name, auto&, const char*) {
      if (flags.Given(name)) c.finetune_origins.SetByFlag(name);
    });
  }
  // --lr without --lr_grid: that lr alone.
  if (flags.Given("lr") && !flags.Given("lr_grid")) c.lr_grid.clear();
  auto report = report_only ? study::ReportStudySoFar(c) : study::RunStudy(c);
  if (!report.ok()) return Fail(argv[0], report.status());
  std::printf("study: report at %s\n", report->c_str());
  return 0;
}

}  // namespace gmlp::cli
