// `gmlp study`: the accuracy-vs-parameters experiment end to end (finetune/study.h). The
// finetuning knobs are `gmlp finetune`'s own flags (--lr, --epochs, ...), shared with it.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "cli/subcommands.h"
#include "finetune/finetune.h"
#include "finetune/study.h"

namespace {
const gmlp::finetune::StudyConfig kStudy;
std::string Join(const std::vector<std::string>& v) { return absl::StrJoin(v, ","); }
}  // namespace

// Defined in finetune_main.cc; the study's defaults are set before parsing.
ABSL_DECLARE_FLAG(std::string, output);
ABSL_DECLARE_FLAG(std::string, data_dir);
ABSL_DECLARE_FLAG(std::string, tokenizer);
ABSL_DECLARE_FLAG(std::string, seeds);
ABSL_DECLARE_FLAG(double, lr);
ABSL_DECLARE_FLAG(int64_t, batch_size);
ABSL_DECLARE_FLAG(int64_t, epochs);
ABSL_DECLARE_FLAG(double, warmup);
ABSL_DECLARE_FLAG(int64_t, max_len);
ABSL_DECLARE_FLAG(double, weight_decay);
ABSL_DECLARE_FLAG(int64_t, max_train_examples);
ABSL_DECLARE_FLAG(int64_t, max_eval_examples);
ABSL_DECLARE_FLAG(bool, bf16);  // cli/shared_flags.cc: pretraining and finetuning

ABSL_FLAG(bool, smoke, false,
          "a two-cell grid with a few steps (minutes): checks the whole pipeline end to end");
ABSL_FLAG(std::string, corpus, kStudy.corpus,
          "raw text for the tokenizer and shards (.xz/.gz/plain; relative to --data_dir)");
ABSL_FLAG(int64_t, corpus_mb, kStudy.corpus_mb,
          "MB of decompressed corpus text used, cut at a document end; 0 = all");
ABSL_DECLARE_FLAG(int32_t, vocab_size);  // cli/shared_flags.cc
ABSL_FLAG(std::string, shards, kStudy.shards,
          "an existing `gmlp prepare` shard directory: skips tokenizer training and prepare "
          "(give its --tokenizer too)");
ABSL_DECLARE_FLAG(int64_t, seq_len);  // cli/shared_flags.cc
ABSL_FLAG(std::string, archs, Join(kStudy.archs), "encoders: transformer,gmlp,amlp[,mixer]");
ABSL_FLAG(std::string, sizes, Join(kStudy.sizes),
          "preset sizes (tiny, mini, small, base): preset = <arch>-<size>");
ABSL_FLAG(std::string, sgu_variants, Join(kStudy.sgu_variants),
          "pretrain-only gMLP cells at the first size for the perplexity table (multiplicative, "
          "additive, linear); empty = none");
ABSL_FLAG(std::string, model_overrides, kStudy.model_overrides,
          "EncoderConfig overrides for every cell, 'key=value,...'");
ABSL_FLAG(int64_t, pretrain_steps, kStudy.pretrain_steps, "pretraining steps per cell");
ABSL_FLAG(int64_t, pretrain_batch, kStudy.pretrain_batch, "sequences per pretraining step");
ABSL_FLAG(double, pretrain_lr, kStudy.pretrain_lr, "peak pretraining learning rate");
ABSL_FLAG(int64_t, pretrain_warmup, kStudy.pretrain_warmup, "pretraining warmup steps");

ABSL_FLAG(int64_t, ppl_batches, kStudy.ppl_batches,
          "validation batches for the held-out MLM perplexity");
ABSL_FLAG(std::string, tasks, Join(kStudy.tasks),
          "study tasks: SST-2, CoLA (single-sentence); MNLI-like, SICK, RTE, SNLI-subset, STS-B "
          "(cross-sentence)");

namespace gmlp::cli {

int StudyMain(int argc, char** argv) {
  // The shared finetuning flags get the study's defaults (parsing overrides them).
  const finetune::FinetuneOptions& ft = kStudy.finetune;
  absl::SetFlag(&FLAGS_output, kStudy.output);
  absl::SetFlag(&FLAGS_data_dir, kStudy.data_dir);
  absl::SetFlag(&FLAGS_tokenizer, kStudy.tokenizer);
  absl::SetFlag(&FLAGS_seeds, absl::StrJoin(kStudy.seeds, ","));
  absl::SetFlag(&FLAGS_lr, ft.lr);
  absl::SetFlag(&FLAGS_batch_size, ft.batch_size);
  absl::SetFlag(&FLAGS_epochs, ft.epochs);
  absl::SetFlag(&FLAGS_warmup, ft.warmup);
  absl::SetFlag(&FLAGS_max_len, ft.max_len);
  absl::SetFlag(&FLAGS_weight_decay, ft.weight_decay);
  absl::SetFlag(&FLAGS_max_train_examples, kStudy.max_train_examples);
  absl::SetFlag(&FLAGS_max_eval_examples, kStudy.max_eval_examples);
  absl::SetFlag(&FLAGS_bf16, kStudy.pretrain_bf16);
  // Shared flags (cli/shared_flags.cc) take this subcommand's defaults.
  absl::SetFlag(&FLAGS_seq_len, kStudy.seq_len);
  absl::SetFlag(&FLAGS_vocab_size, kStudy.vocab_size);
  ParseSubcommandFlags(
      argc, argv,
      {"study_main.cc",
       {"batch_size", "bf16", "data_dir", "epochs", "lr", "max_eval_examples", "max_len",
        "max_train_examples", "output", "seeds", "seq_len", "tokenizer", "vocab_size", "warmup",
        "weight_decay"}},
      "gmlp study [--output=runs/study] [--smoke] [--archs --sizes --tasks --seeds ...]\n\n"
      "Runs the accuracy-vs-parameters study of \"Pay Attention to MLPs\" end to end on the "
      "shared data: tokenizer, shards, then per cell (encoder x size) MLM pretraining for the "
      "same steps, held-out perplexity and finetuning on each task with k seeds. Resumable: "
      "re-run the same command to continue. Writes results.csv, summary.csv, report.md and "
      "accuracy_vs_params.{png,svg}. The defaults take about 30 minutes on 2 cores. Finetuning "
      "knobs are `gmlp finetune`'s flags (--lr, --epochs, --batch_size, --max_len, --seeds, "
      "--max_train_examples, --max_eval_examples); --tokenizer names an existing .model.");
  finetune::StudyConfig c;
  if (absl::GetFlag(FLAGS_smoke)) {
    absl::Status st = finetune::ApplyStudyPreset("smoke", &c);
    if (!st.ok()) return Fail(argv[0], st);
  }
  // Flags given on the command line (or left at the default) override the preset's values;
  // with --smoke only explicitly different values do.
  auto list = [](const std::string& s) {
    return std::vector<std::string>(absl::StrSplit(s, ',', absl::SkipWhitespace()));
  };
  auto pick = [](auto flag_value, auto default_value, auto* field) {
    if (flag_value != default_value) *field = flag_value;
  };
  pick(absl::GetFlag(FLAGS_output), kStudy.output, &c.output);
  pick(absl::GetFlag(FLAGS_data_dir), kStudy.data_dir, &c.data_dir);
  pick(absl::GetFlag(FLAGS_tokenizer), kStudy.tokenizer, &c.tokenizer);
  pick(absl::GetFlag(FLAGS_corpus), kStudy.corpus, &c.corpus);
  pick(absl::GetFlag(FLAGS_corpus_mb), kStudy.corpus_mb, &c.corpus_mb);
  pick(absl::GetFlag(FLAGS_vocab_size), kStudy.vocab_size, &c.vocab_size);
  pick(absl::GetFlag(FLAGS_shards), kStudy.shards, &c.shards);
  pick(absl::GetFlag(FLAGS_seq_len), kStudy.seq_len, &c.seq_len);
  pick(list(absl::GetFlag(FLAGS_archs)), kStudy.archs, &c.archs);
  pick(list(absl::GetFlag(FLAGS_sizes)), kStudy.sizes, &c.sizes);
  pick(list(absl::GetFlag(FLAGS_sgu_variants)), kStudy.sgu_variants, &c.sgu_variants);
  pick(absl::GetFlag(FLAGS_model_overrides), kStudy.model_overrides, &c.model_overrides);
  pick(absl::GetFlag(FLAGS_pretrain_steps), kStudy.pretrain_steps, &c.pretrain_steps);
  pick(absl::GetFlag(FLAGS_pretrain_batch), kStudy.pretrain_batch, &c.pretrain_batch);
  pick(absl::GetFlag(FLAGS_pretrain_lr), kStudy.pretrain_lr, &c.pretrain_lr);
  pick(absl::GetFlag(FLAGS_pretrain_warmup), kStudy.pretrain_warmup, &c.pretrain_warmup);
  pick(absl::GetFlag(FLAGS_bf16), kStudy.pretrain_bf16, &c.pretrain_bf16);
  pick(absl::GetFlag(FLAGS_bf16), kStudy.finetune.bf16, &c.finetune.bf16);
  pick(absl::GetFlag(FLAGS_ppl_batches), kStudy.ppl_batches, &c.ppl_batches);
  pick(list(absl::GetFlag(FLAGS_tasks)), kStudy.tasks, &c.tasks);
  auto seeds = finetune::ParseSeeds(absl::GetFlag(FLAGS_seeds));
  if (!seeds.ok()) return Fail(argv[0], seeds.status());
  pick(*seeds, kStudy.seeds, &c.seeds);
  pick(absl::GetFlag(FLAGS_max_train_examples), kStudy.max_train_examples, &c.max_train_examples);
  pick(absl::GetFlag(FLAGS_max_eval_examples), kStudy.max_eval_examples, &c.max_eval_examples);
  pick(absl::GetFlag(FLAGS_lr), ft.lr, &c.finetune.lr);
  pick(absl::GetFlag(FLAGS_batch_size), ft.batch_size, &c.finetune.batch_size);
  pick(absl::GetFlag(FLAGS_epochs), ft.epochs, &c.finetune.epochs);
  pick(absl::GetFlag(FLAGS_warmup), ft.warmup, &c.finetune.warmup);
  pick(absl::GetFlag(FLAGS_max_len), ft.max_len, &c.finetune.max_len);
  pick(absl::GetFlag(FLAGS_weight_decay), ft.weight_decay, &c.finetune.weight_decay);
  auto report = finetune::RunStudy(c);
  if (!report.ok()) return Fail(argv[0], report.status());
  std::printf("study: report at %s\n", report->c_str());
  return 0;
}

}  // namespace gmlp::cli
