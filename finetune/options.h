// FinetuneOptions: the finetuning knobs of `gmlp finetune` and `gmlp study` (the trainer's
// settings besides the job: task, data, seeds). Torch-free, so the study's config parses and is
// fuzzed without LibTorch (tests/fuzz).
#ifndef GMLP_FINETUNE_OPTIONS_H_
#define GMLP_FINETUNE_OPTIONS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "common/field_json.h"

namespace gmlp::finetune {

// A peak learning rate finetuning accepts (--lr, each of --lr_grid): in (0, 1].
inline bool IsValidLr(double lr) { return lr > 0 && lr <= 1; }

struct FinetuneOptions {
  double lr = 1e-4;  // peak learning rate
  int64_t batch_size = 32;
  int64_t epochs = 3;
  double warmup = 0.1;  // fraction of all optimizer steps spent warming up linearly
  // Tokens per input incl. [CLS]/[SEP]; <= the encoder's max_seq_len, 0 = that max_seq_len
  // (RunFinetune resolves it before encoding; results.json records the value used).
  int64_t max_len = 0;
  double weight_decay = 0.01;  // AdamW, not on biases and LayerNorm weights
  double clip_norm = 1.0;      // global gradient-norm clip; 0 = off
  int64_t eval_batch_size = 128;
  int64_t log_every = 100;       // optimizer steps between progress lines; 0 = only per epoch
  bool quiet = false;            // no progress lines at all (tests)
  bool bf16 = false;             // bf16 autocast for the training forward passes
  std::string kernels = "auto";  // auto | aten (kernels/ops.h's policy)
  // Training batches of similar lengths: each epoch's shuffled order is cut into pools of 50
  // batches, each pool sorted by length and cut into batches, and the batches shuffled. Far less
  // padding (batches pad to their longest member) for the same examples per epoch.
  bool group_by_length = true;

  // The field list, once (quiet is for tests: no flag, no JSON key): calls
  // visit(name, field, help) for each; ToJson and the finetuning flags of `gmlp finetune` and
  // `gmlp study` are made from it. log_every only changes progress output and is left out of
  // the JSON (results.json, the study's settings).
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("lr", self.lr, "peak learning rate (AdamW, linear warmup then linear decay)");
    visit("batch_size", self.batch_size, "training examples per step");
    visit("epochs", self.epochs, "passes over the training data");
    visit("warmup", self.warmup, "fraction of all steps spent warming the lr up");
    visit("max_len", self.max_len,
          "tokens per input incl. [CLS]/[SEP], truncated longest-first; <= the encoder's "
          "max_seq_len; 0 = the encoder's max_seq_len");
    visit("weight_decay", self.weight_decay, "AdamW decoupled weight decay");
    visit("clip_norm", self.clip_norm, "global gradient-norm clip; 0 = off");
    visit("eval_batch_size", self.eval_batch_size, "examples per evaluation batch");
    visit("log_every", self.log_every, "steps between progress lines; 0 = per epoch only");
    visit("group_by_length", self.group_by_length,
          "training batches of similar lengths (pools of 50 batches sorted by length, batches "
          "shuffled): less padding");
    visit("bf16", self.bf16,
          "bf16 autocast for the training forward passes: about 2x fp32 on CPUs with AVX-512 "
          "bf16; LayerNorm and losses stay fp32");
    visit("kernels", self.kernels,
          "which ops run gmlp's CPU kernels: auto (wherever one covers the operands, "
          "kernels/README.md) | aten (ATen's ops everywhere: A/B checks without a rebuild)");
  }

  // InvalidArgument naming the first bad value as `origins` says it was set (a file and key,
  // or the flag).
  absl::Status Validate(const KeyOrigins& origins = KeyOrigins()) const;
  nlohmann::json ToJson() const;
};

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_OPTIONS_H_
