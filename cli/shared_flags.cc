// Flags whose names several subcommands use. Abseil flag names are global to the binary, so each
// is defined once here; a subcommand that uses one declares it (ABSL_DECLARE_FLAG) and sets its
// own default with absl::SetFlag before parsing, so `gmlp <subcommand> --help` shows that
// subcommand's default as the flag's current value.
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, input, "",
          "Input: text files or globs, comma-separated (tokenizer, prepare), or a file of "
          "sentences, '-' = stdin (predict).");
ABSL_FLAG(std::string, output, "",
          "Output: a file ('-' = stdout; tokenizer encode) or directory (prepare, finetune).");
ABSL_FLAG(std::string, model, "",
          "Model to load: a SentencePiece .model (tokenizer encode) or a `gmlp finetune` output "
          "directory (predict).");
ABSL_FLAG(uint64_t, seed, 1, "Random seed.");
ABSL_FLAG(int64_t, seq_len, 128, "Sequence length in ids, [CLS] included.");
ABSL_FLAG(bool, strict_utf8, false,
          "Stop at the first line of invalid UTF-8 (default: count and skip such lines).");
ABSL_FLAG(
    bool, bf16, false,
    "bf16 autocast for training forward passes (pretrain, finetune, study): about 2x fp32 "
    "on CPUs with AVX-512 bf16; CUDA too when built with it. LayerNorm and losses stay fp32.");
ABSL_FLAG(std::string, tokenizer, "",
          "SentencePiece .model file written by `gmlp tokenizer train`.");
ABSL_FLAG(int32_t, vocab_size, 8192,
          "Tokenizer vocabulary size (the 5 special tokens and byte pieces included).");
