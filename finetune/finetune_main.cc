// `gmlp finetune`: finetune a pretrained encoder on a GLUE task or a task spec, k seeds.
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "finetune/finetune.h"

namespace {
const gmlp::finetune::FinetuneJob kJob;
const gmlp::finetune::FinetuneOptions& kOpt = kJob.options;
}  // namespace

ABSL_FLAG(std::string, task, kJob.task,
          "GLUE task: CoLA, SST-2, MRPC, QQP, STS-B, MNLI, QNLI, RTE or WNLI (or use --task_spec)");
ABSL_FLAG(std::string, task_spec, kJob.task_spec,
          "task spec JSON file describing any other dataset (e.g. finetune/tasks/SICK.json)");
ABSL_FLAG(std::string, data_dir, kJob.data_dir,
          "GLUE: the task's folder (default ../shared/data/glue/<task>); task spec: the root its "
          "relative file names resolve against (default ../shared/data)");
ABSL_FLAG(std::string, init, kJob.init,
          "pretrained encoder: a `gmlp pretrain` output or checkpoint directory");
ABSL_FLAG(std::string, preset, kJob.preset,
          "only without --init: finetune a randomly initialized encoder of this preset");
ABSL_DECLARE_FLAG(std::string, tokenizer);  // cli/shared_flags.cc
ABSL_DECLARE_FLAG(std::string, output);     // cli/shared_flags.cc
ABSL_DECLARE_FLAG(bool, bf16);              // cli/shared_flags.cc
ABSL_FLAG(std::string, seeds, "1", "comma-separated seeds, one finetuning run each (e.g. 1,2,3)");
ABSL_FLAG(double, lr, kOpt.lr, "peak learning rate (AdamW, linear warmup then linear decay)");
ABSL_FLAG(int64_t, batch_size, kOpt.batch_size, "training examples per step");
ABSL_FLAG(int64_t, epochs, kOpt.epochs, "passes over the training data");
ABSL_FLAG(double, warmup, kOpt.warmup, "fraction of all steps spent warming the lr up");
ABSL_FLAG(int64_t, max_len, kOpt.max_len,
          "tokens per input incl. [CLS]/[SEP], truncated longest-first; <= the encoder's "
          "max_seq_len");
ABSL_FLAG(double, weight_decay, kOpt.weight_decay, "AdamW decoupled weight decay");
ABSL_FLAG(double, clip_norm, kOpt.clip_norm, "global gradient-norm clip; 0 = off");
ABSL_FLAG(int64_t, eval_batch_size, kOpt.eval_batch_size, "examples per evaluation batch");
ABSL_FLAG(int64_t, log_every, kOpt.log_every, "steps between progress lines; 0 = per epoch only");
ABSL_FLAG(int64_t, max_train_examples, kJob.max_train_examples,
          "> 0: train on a fixed random subset of this many examples");
ABSL_FLAG(int64_t, max_eval_examples, kJob.max_eval_examples,
          "> 0: evaluate on the first N examples of each eval split");
ABSL_FLAG(bool, save_model, kJob.save_model, "save the best seed's model for `gmlp predict`");

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
  // Shared flags (cli/shared_flags.cc) take this subcommand's defaults.
  absl::SetFlag(&FLAGS_output, kJob.output);
  absl::SetFlag(&FLAGS_tokenizer, kJob.tokenizer);
  ParseSubcommandFlags(argc, argv, {"finetune_main.cc", {"bf16", "output", "tokenizer"}}, usage);
  finetune::FinetuneJob job;
  job.task = absl::GetFlag(FLAGS_task);
  job.task_spec = absl::GetFlag(FLAGS_task_spec);
  job.data_dir = absl::GetFlag(FLAGS_data_dir);
  job.init = absl::GetFlag(FLAGS_init);
  job.preset = absl::GetFlag(FLAGS_preset);
  job.tokenizer = absl::GetFlag(FLAGS_tokenizer);
  job.output = absl::GetFlag(FLAGS_output);
  auto seeds = finetune::ParseSeeds(absl::GetFlag(FLAGS_seeds));
  if (!seeds.ok()) return Fail(argv[0], seeds.status());
  job.seeds = *seeds;
  job.max_train_examples = absl::GetFlag(FLAGS_max_train_examples);
  job.max_eval_examples = absl::GetFlag(FLAGS_max_eval_examples);
  job.save_model = absl::GetFlag(FLAGS_save_model);
  finetune::FinetuneOptions& o = job.options;
  o.lr = absl::GetFlag(FLAGS_lr);
  o.batch_size = absl::GetFlag(FLAGS_batch_size);
  o.epochs = absl::GetFlag(FLAGS_epochs);
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.max_len = absl::GetFlag(FLAGS_max_len);
  o.weight_decay = absl::GetFlag(FLAGS_weight_decay);
  o.clip_norm = absl::GetFlag(FLAGS_clip_norm);
  o.eval_batch_size = absl::GetFlag(FLAGS_eval_batch_size);
  o.log_every = absl::GetFlag(FLAGS_log_every);
  o.bf16 = absl::GetFlag(FLAGS_bf16);
  auto result = finetune::RunFinetune(job);
  if (!result.ok()) return Fail(argv[0], result.status());
  std::printf("finetune: results in %s/%s\n", job.output.c_str(), finetune::kResultsFile);
  return 0;
}

}  // namespace gmlp::cli
