// `gmlp finetune`: finetune a pretrained encoder on a GLUE task or a task spec, k seeds.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/flag_set.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "finetune/finetune.h"

namespace gmlp::cli {

int FinetuneMain(int argc, char** argv) {
  const std::string usage = absl::StrCat(
      "gmlp finetune --task=SST-2 --init=runs/pretrain/gmlp-tiny --output=runs/ft/sst2 "
      "[--seeds=1,2,3] [--lr --batch_size --epochs --warmup --max_len]\n"
      "gmlp finetune --task_spec=finetune/tasks/MNLI-like.json --init=... --output=...\n\n"
      "Finetunes a pretrained encoder on a GLUE task (",
      absl::StrJoin(finetune::GlueTaskNames(), ", "),
      ") or a task spec, with k seeds; writes results.json (every seed, median, mean, std of "
      "best-epoch dev metrics), dev predictions, GLUE-format test predictions and the best "
      "model (for `gmlp predict`).");
  finetune::FinetuneJob job;
  FlagSet flags(argv[0], usage);
  auto add = [&flags](const char* name, auto& field, const char* help) {
    flags.Add(name, &field, help);
  };
  finetune::FinetuneJob::ForEachField(job, add);
  finetune::FinetuneOptions::ForEachField(job.options, add);
  flags.SetDefaultText("tensorboard_dir", "<output>/tb");
  flags.SetDefaultText("max_len",
                       "the encoder's max_seq_len (the seq_len it was pretrained at; from "
                       "scratch, the preset's)");
  ParseSubcommandFlags(flags, argc, argv);
  auto result = finetune::RunFinetune(job);
  if (!result.ok()) return Fail(argv[0], result.status());
  std::printf("finetune: results in %s/%s\n", job.output.c_str(), finetune::kResultsFile);
  return 0;
}

}  // namespace gmlp::cli
