// StudyConfig: every setting of `gmlp study` (study.h), with one field list (ForEachField)
// that makes its JSON (study.json) and its flags, and the named presets.
#ifndef GMLP_STUDY_CONFIG_H_
#define GMLP_STUDY_CONFIG_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/field_json.h"
#include "data/prepare.h"
#include "finetune/options.h"
#include "kernels/policy.h"
#include "pretrain/train_config.h"
#include "study/probe.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::study {

struct StudyConfig {
  std::string output = "runs/study";
  std::string data_dir = "../shared/data";  // the shared data root
  // Raw text for the tokenizer and the shards (relative to data_dir unless absolute), of which
  // the first corpus_mb MB of decompressed text are used (0 = all), cut at a document end.
  std::string corpus = "corpus/wikipedia-en/enwiki_extract.txt.xz";
  int64_t corpus_mb = 30;
  std::string tokenizer;  // an existing .model: skips tokenizer training
  // The tokenizer the study trains otherwise, of which it exposes vocab_size; the data stage
  // sets the inputs and the output.
  tokenizer::TrainOptions tokenizer_training = [] {
    tokenizer::TrainOptions o;
    o.vocab_size = 8192;
    o.input_sentence_size = 300000;
    return o;
  }();
  std::string shards;  // an existing shard directory: skips prepare (its seq_len wins)
  // `gmlp prepare`'s options for the study's shards, of which it exposes seq_len; the data
  // stage sets the input, tokenizer and output.
  data::PrepareOptions sharding = [] {
    data::PrepareOptions o;
    o.seq_len = 128;
    o.valid_fraction = 0.02;
    o.progress = false;
    return o;
  }();

  // The held-out tail of the corpus's documents: the tokenizer and the shards never see it, the
  // alignment probe is drawn from it (study/probe.h).
  double holdout_fraction = 0.1;

  std::vector<std::string> archs = {"transformer", "gmlp", "amlp"};
  std::vector<std::string> sizes = {"tiny"};  // preset = "<arch>-<size>"
  // Pretrain-only gMLP cells at sizes[0] for the SGU ablation's perplexity table ("split" is
  // the main gMLP cell).
  std::vector<std::string> sgu_variants = {};
  // "key=value,..." EncoderConfig overrides applied to every cell (e.g. "n_layers=2" for tests).
  std::string model_overrides;
  // The Transformer baseline is pre-LN: post-LN (BERT's) collapsed to the majority class at this
  // scale (study/README.md, "Why these defaults").
  bool transformer_pre_ln = true;
  // The Transformer's positions, one Transformer cell per value; the first is the baseline every
  // encoder is compared with (and gets the controls). "learned" is BERT's position table (cell
  // "transformer-<size>"), "alibi" a distance bias on the attention scores instead (cell
  // "transformer-<size>-alibi", encoder "transformer-alibi"). ALiBi by default: at this scale
  // learned positions did not leave the context-free floor (study/README.md).
  std::vector<std::string> transformer_positions = {"alibi"};
  // aMLP's tiny-attention width, one aMLP cell per value; the first is the main "amlp" encoder,
  // the others are reported as "amlp-attn<N>". The paper: 64 at d_model 512-1024 (1/8-1/16).
  std::vector<uint64_t> amlp_attn_sizes = {64};

  // Every cell's pretraining, of which the study exposes steps (pretrain_steps), global_batch
  // (pretrain_batch; micro_batch follows it), lr (pretrain_lr), warmup_steps, bf16, kernels and
  // eval_batches (ppl_batches); the cell sets its model, lr by size, output and the evaluation
  // and checkpoint intervals (study/cells.cc).
  // - bf16 autocast (and finetune.bf16 for finetuning; `--bf16` sets both): about 2x the tokens
  //   per second of fp32 on an AVX-512-bf16 CPU, same loss to 4 decimals at the first step
  //   (bench/RESULTS.md). On by default where bf16 is native (kernels::Bf16IsFast): a CPU
  //   without it runs bf16 matmuls 20-90x slower than fp32.
  // - kernels: kernels/ops.h's policy (and finetune.kernels; `--kernels` sets both).
  // - eval_batches: validation batches (of pretrain_batch) for the perplexity table too.
  // - steps 0 (the default): sized by budget_minutes (study/budget.h), the same for every cell.
  gmlp::pretrain::TrainConfig pretraining = [] {
    gmlp::pretrain::TrainConfig o;
    o.steps = 0;
    o.global_batch = o.micro_batch = 32;
    o.lr = 2e-3;
    o.warmup_steps = 100;
    o.bf16 = kernels::Bf16IsFast();
    o.kernels = "auto";
    o.eval_batches = 16;
    o.keep_checkpoints = 1;
    o.seed = 1;
    return o;
  }();
  // "size=lr" entries: the peak pretraining lr of every cell of that size (all its encoders,
  // so the recipe stays the same for every encoder at a size); other sizes use pretrain_lr.
  // Wider models want a lower lr (study/README.md, "Why these defaults"). Each cell checks the lr
  // its pretraining recorded, so changing an entry affects only that size's cells.
  std::vector<std::string> pretrain_lr_by_size = {};
  // The wall-clock minutes the whole study should take on this machine, when pretraining.steps
  // is 0: after the data stages the study times each cell's pretraining step, estimates its
  // finetuning, and gives every cell the steps that fill most of the budget (study/budget.h).
  // A resumed study keeps the steps it recorded.
  double budget_minutes = 60;
  int64_t curve_points = 8;  // held-out MLM loss measured this many times while pretraining

  // SICK: the cross-sentence task this scale judged in the long run; MNLI-like did not. The
  // alignment probe is not among the defaults: the baseline read no version of it in any
  // default run or at any budget the calibration tried (study/README, "The alignment probe"),
  // and it took 17% of the fp32 default's hour (results/2026-12-07-default-avx2-capped), which
  // pretraining now gets. Add probe-shift-<k> tasks (or probe-aligned, probe-shifted) to run it.
  std::vector<std::string> tasks = {"SST-2", "MNLI-like", "SICK"};
  // Second-segment-only runs of the baseline on every pair task (the hypothesis-only control):
  // a cross-sentence comparison is judged only where the baseline beats it (study/verdict.h).
  bool controls = true;
  // Every encoder also finetuned on every probe task from random weights (its architecture and
  // the study's tokenizer; control "scratch"): what the architecture reads without pretraining.
  bool probe_scratch = false;
  // The alignment probe's settings (study/probe.h), of which the study exposes the sizes (pairs
  // per version), max_sentence_bytes, segment_pieces and filler_pieces (the shift-k versions) as
  // probe_* keys: two sentences and the filler must fit in finetune.max_len tokens with this
  // tokenizer (the probe checks; a small vocabulary needs shorter ones); max_sentence_bytes 0 =
  // follows finetune.max_len (study::DefaultSentenceBytes: 120 at 128). The study sets the rest
  // (corpus, output, holdout_fraction, tokenizer, max_len) when it runs.
  ProbeOptions probe = [] {
    ProbeOptions o;
    o.train_examples = 1000;
    o.dev_examples = 500;
    o.test_examples = 1000;
    return o;
  }();
  // The probe tasks' finetuning epochs and peak lr; 0 = finetune's. Its pairs are probe_train_
  // examples, beyond max_train_examples. Not calibrated yet: study/README.md has the runs so far
  // (issue 39).
  int64_t probe_epochs = 0;
  double probe_lr = 0;
  std::vector<uint64_t> seeds = {1, 2, 3};
  // Peak finetuning lrs each seed tries, keeping the run its selection split scores best
  // (FinetuneJob::lr_grid), so each encoder finetunes at its own lr; empty = finetune.lr alone.
  // A --lr (or a settings file's "finetune" lr) without an lr_grid empties it: that lr alone.
  // The grid doubles finetuning's cost. Why these two: study/README.md.
  std::vector<double> lr_grid = {1e-3, 3e-3};
  int64_t max_train_examples = 1000;  // per task, a fixed random subset; 0 = all
  int64_t max_eval_examples = 0;      // per eval split, the first N; 0 = all (full splits)
  // finetune.max_len 0 (the default) follows seq_len, or the shards' seq_len with `shards`
  // (WithDerivedDefaults).
  // lr, epochs, batch size...: small, briefly pretrained encoders want a higher lr
  // than BERT-base's 2e-5..1e-4 (measured: gmlp-tiny after 300 pretraining steps stayed at
  // chance on SST-2 with 2 epochs at 3e-4, and reached 0.70 with 3 epochs at 1e-3).
  finetune::FinetuneOptions finetune = [] {
    finetune::FinetuneOptions o;
    o.lr = 1e-3;
    o.epochs = 3;
    o.batch_size = 32;
    o.bf16 = kernels::Bf16IsFast();
    return o;
  }();

  // The field list, once, for every field but `finetune` (FinetuneOptions has its own):
  // visit(name, field, help), in the order of study.json. ToJson and `gmlp study`'s flags are
  // made from it.
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    ForEachDataField(self, visit);
    ForEachCellField(self, visit);
    ForEachPretrainField(self, visit);
    ForEachTaskField(self, visit);
  }

  // Where the data comes from: the output, the corpus, tokenizer and shards.
  template <typename Self, typename Visit>
  static void ForEachDataField(Self& self, Visit& visit) {
    visit("output", self.output, "study directory (re-run the same command to resume)");
    visit("data_dir", self.data_dir, "the shared data root (corpus, GLUE and NLI data)");
    visit("corpus", self.corpus,
          "raw text for the tokenizer and shards (.xz/.gz/plain; relative to --data_dir)");
    visit("corpus_mb", self.corpus_mb,
          "MB of decompressed corpus text used, cut at a document end; 0 = all before the "
          "held-out tail");
    visit("holdout_fraction", self.holdout_fraction,
          "the last fraction of the corpus's documents, never pretrained on: the probe's source");
    visit("tokenizer", self.tokenizer,
          "an existing SentencePiece .model: skips tokenizer training");
    visit("vocab_size", self.tokenizer_training.vocab_size, "tokenizer vocabulary size");
    visit("shards", self.shards,
          "an existing `gmlp prepare` shard directory: skips tokenizer training and prepare "
          "(give its --tokenizer too)");
    visit("seq_len", self.sharding.seq_len,
          "sequence length of the shards (the encoders' max_seq_len)");
  }

  // Which encoders make the cells.
  template <typename Self, typename Visit>
  static void ForEachCellField(Self& self, Visit& visit) {
    visit("archs", self.archs,
          "encoders, rows of the arch table: transformer, gmlp, amlp, mixer, fnet");
    visit("sizes", self.sizes, "preset sizes (tiny, mini, small, base): preset = <arch>-<size>");
    visit("sgu_variants", self.sgu_variants,
          "pretrain-only gMLP cells at the first size for the perplexity table (multiplicative, "
          "additive, linear); empty = none");
    visit("model_overrides", self.model_overrides,
          "EncoderConfig overrides for every cell, 'key=value,...'");
    visit("transformer_pre_ln", self.transformer_pre_ln,
          "pre-LN Transformer baseline (post-LN collapses at this scale)");
    visit("transformer_positions", self.transformer_positions,
          "Transformer positions, one Transformer cell each (first = the baseline): alibi, "
          "learned (BERT's table)");
    visit("amlp_attn_sizes", self.amlp_attn_sizes,
          "aMLP tiny-attention widths, one aMLP cell each (first = the main aMLP)");
  }

  // Each cell's pretraining and its held-out evaluation.
  template <typename Self, typename Visit>
  static void ForEachPretrainField(Self& self, Visit& visit) {
    visit("budget", self.budget_minutes,
          "minutes the study should take on this machine: with --pretrain_steps=0, pretraining "
          "gets the steps per cell that fill most of it after the measured data stages and the "
          "estimated finetuning");
    visit("pretrain_steps", self.pretraining.steps,
          "pretraining steps per cell; 0 = as many as --budget allows");
    visit("pretrain_batch", self.pretraining.global_batch, "sequences per pretraining step");
    visit("pretrain_lr", self.pretraining.lr, "peak pretraining learning rate");
    visit("pretrain_lr_by_size", self.pretrain_lr_by_size,
          "per-size peak pretraining lr, 'size=lr,...' (e.g. mini=0.001); other sizes use "
          "--pretrain_lr");
    visit("pretrain_warmup", self.pretraining.warmup_steps, "pretraining warmup steps");
    visit("pretrain_bf16", self.pretraining.bf16, "bf16 autocast for pretraining");
    visit("pretrain_kernels", self.pretraining.kernels,
          "which ops of pretraining run gmlp's CPU kernels: auto | aten");
    visit("ppl_batches", self.pretraining.eval_batches,
          "validation batches for the held-out MLM perplexity");
    visit("curve_points", self.curve_points,
          "held-out MLM loss evaluations during pretraining (the learning-curve plot)");
  }

  // The finetuning tasks, controls, probe and seeds.
  template <typename Self, typename Visit>
  static void ForEachTaskField(Self& self, Visit& visit) {
    visit("tasks", self.tasks,
          "study tasks: SST-2, CoLA (single-sentence); MNLI-like, SICK, RTE, SNLI-subset, STS-B "
          "(cross-sentence); probe-aligned, probe-shifted, probe-shift-<k> (the alignment "
          "probe; k filler pieces before segment 2)");
    visit("controls", self.controls, "second-segment-only runs of the baseline on every pair task");
    visit("probe_scratch", self.probe_scratch,
          "also finetune every encoder on every probe task from random weights (control "
          "\"scratch\")");
    visit("probe_train_examples", self.probe.train_examples, "alignment probe: training pairs");
    visit("probe_dev_examples", self.probe.dev_examples,
          "alignment probe: dev pairs (select the epoch)");
    visit("probe_test_examples", self.probe.test_examples,
          "alignment probe: test pairs (reported)");
    visit("probe_max_sentence_bytes", self.probe.max_sentence_bytes,
          "alignment probe: longest sentence in bytes (pairs must fit in --max_len tokens); "
          "0 = --max_len - 8");
    visit("probe_segment_pieces", self.probe.segment_pieces,
          "alignment probe, probe-shift-<k> tasks: both segments are exactly this many pieces "
          "(3 + twice this + --probe_filler_pieces must fit in --max_len)");
    visit("probe_filler_pieces", self.probe.filler_pieces,
          "alignment probe, probe-shift-<k> tasks: one-piece filler words in segment 2, k "
          "before B and the rest after (at least the largest k)");
    visit("probe_epochs", self.probe_epochs,
          "alignment probe: finetuning epochs on its tasks; 0 = --epochs");
    visit("probe_lr", self.probe_lr, "alignment probe: peak finetuning lr on its tasks; 0 = --lr");
    visit("seeds", self.seeds, "comma-separated finetuning seeds, one run each per task");
    visit("lr_grid", self.lr_grid,
          "comma-separated peak finetuning lrs: each seed trains at every one and keeps the run "
          "its selection split scores best (the probe's tasks: --probe_lr alone when set); "
          "empty = --lr alone, as is --lr given without --lr_grid");
    visit("max_train_examples", self.max_train_examples,
          "> 0: finetune on a fixed random subset of this many examples per task (the probe's "
          "tasks: at least --probe_train_examples)");
    visit("max_eval_examples", self.max_eval_examples,
          "> 0: evaluate on the first N examples of each eval split");
  }

  // Where each setting came from (a --config file, --smoke, or its own flag), for errors;
  // not a setting. MergeJson and ApplyStudyPreset record theirs; `gmlp study` takes back the
  // keys its flags set again.
  KeyOrigins origins;
  KeyOrigins finetune_origins;  // the same for the keys of "finetune"

  // InvalidArgument naming the first bad setting as its source set it (`FILE: "seeds" ...`,
  // `--smoke: ...` or `--pretrain_lr=...`).
  absl::Status Validate() const;
  // This config with the defaults that follow other settings filled in: finetune.max_len 0 =
  // seq_len (the manifest's seq_len when `shards` names a shard directory), then
  // probe_max_sentence_bytes 0 = DefaultSentenceBytes(max_len) (still 0 where that is under 8:
  // Validate refuses such a study when it runs the probe). RunStudy and the report work on
  // it, and study.json records it. An unreadable shard manifest is an error naming it.
  absl::StatusOr<StudyConfig> WithDerivedDefaults() const;
  // The peak pretraining lr of the cells of `size` (pretrain_lr_by_size, else pretrain_lr).
  absl::StatusOr<double> PretrainLr(const std::string& size) const;
  nlohmann::json ToJson() const;
  // Sets the fields `j` names (keys as ToJson's; "finetune" holds FinetuneOptions keys) over
  // `*this`, recording `origin` as their source. Errors name `origin`.
  absl::Status MergeJson(const nlohmann::json& j, const std::string& origin);
};

// Whether the study's tasks include the alignment probe.
bool UsesProbe(const StudyConfig& config);

// The results table's encoder of the baseline's (the Transformer's) cell with `position`: the
// arch itself for BERT's learned positions, "<arch>-<position>" otherwise ("transformer-alibi").
std::string TransformerEncoder(const std::string& position);
// The encoder every other is compared with: the Transformer with transformer_positions[0].
std::string BaselineEncoder(const StudyConfig& config);

// Reads a study configuration file (a JSON object of field names, as study.json holds them, and
// an optional "comment") over `*config`: `gmlp study --config=study/configs/cpu-3h.json`.
absl::Status ApplyStudyConfigFile(const std::string& path, StudyConfig* config);

// Applies a named study preset: "default-small" = the defaults above (three tiny cells, most of
// the time spent pretraining; the README gives the measured time); "smoke" = two one-layer
// cells, a few steps (`gmlp study --smoke`, tests).
absl::Status ApplyStudyPreset(const std::string& name, StudyConfig* config);

// The settings that change results, from a StudyConfig::ToJson(): a study directory is only
// resumed with the same ones. pretrain_lr_by_size is not among them: each cell checks its own
// pretraining's lr (so a new entry for one size redoes only that size's cells).
nlohmann::json Fingerprint(nlohmann::json config_json);

// How `now` differs from the settings a study directory recorded (its study.json), as
// " key: old -> new;" items; empty when it may be resumed. A setting the recording lacks (added
// to gmlp after the study started) counts as its default, which is what that run used: a new
// field's default must keep the old behaviour.
std::string SettingsChanges(const nlohmann::json& recorded, const StudyConfig& now);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_CONFIG_H_
