// Hugging Face tokenizer files from a gmlp SentencePiece model: tokenizer.json (the `tokenizers`
// library's fast-tokenizer format), tokenizer_config.json and special_tokens_map.json, so that
// `transformers.AutoTokenizer.from_pretrained(dir)` gives the ids gmlp trains and finetunes on:
// `[CLS] a [SEP]` and `[CLS] a [SEP] b [SEP]`, token_type_ids 0 over `[CLS] a [SEP]`, 1 over
// `b [SEP]` (finetune/encode.h). Torch-free.
//
// The .model file is read here (a small protobuf wire-format reader; SentencePiece's own headers
// clash with Abseil's) and translated as transformers' convert_slow_tokenizer does it for a
// SentencePiece model (SpmConverter.build_tokenizer_from_spm_proto): the Unigram vocabulary and
// scores (or, for --model_type=bpe, BPE with merges ranked by piece score) with byte fallback;
// the normalizer as SentencePiece's (its precompiled NFKC charsmap, then removal of leading,
// trailing and repeated spaces, spaces escaped as U+2581, the dummy prefix); a Metaspace
// pre-tokenizer and decoder; a TemplateProcessing post-processor for the layout above; and the
// five special tokens as added tokens.
//
// Tested against gmlp's own ids (tests/export_hf_tokenizer_test.cc: transformers 5.25 and
// tokenizers 0.23 on 902 SST-2 dev and hard-case sentences and 554 NLI and hard-case pairs, unigram
// and BPE models). The ids are the same except in these classes of input, which the files cannot
// change:
//  - Unigram ties. Two segmentations of the same text with the same score in exact arithmetic
//    ("000" as "0" "00" or as "00" "0") are told apart by float32 rounding of SentencePiece's
//    running path score, while tokenizers adds in float64 (exactly, for these scores) and keeps
//    the first. About 1 sentence in 1,000 of SST-2 and NLI text, every one seen a run of zeros
//    ("20,000"); both segmentations decode to the same text. BPE has no ties (ranks are distinct).
//  - Text that spells a special token ("[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]") gets its id
//    in transformers, as with any BERT tokenizer there (fill-mask pipelines rely on it); gmlp
//    never makes special ids from text. Unigram only: text that spells a byte piece ("<0x41>")
//    gets that piece, which SentencePiece keeps for byte fallback.
// And two of transformers' own behaviours, not the files': `tok(a, "")` takes "" for no second
// sentence (the list form `tok([a], [""])` gives `[CLS] a [SEP] [SEP]` as gmlp does), and
// truncation=True ("longest_first") gives the odd token of an odd budget, when both sentences
// are cut, to the longer one (b on a tie), where finetune::PackExample gives it to a.
#ifndef GMLP_EXPORT_HF_TOKENIZER_H_
#define GMLP_EXPORT_HF_TOKENIZER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace gmlp::exporter {

// gMLP's spatial projection is n x n: a model takes no more tokens than the max_seq_len it was
// built with (model/config.h's default, 128). Exporters pass the model's own value.
inline constexpr int64_t kDefaultHfModelMaxLength = 128;

// Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into the existing
// directory `out_dir`, each atomically, for the model at `spm_model_path` (a unigram or BPE model
// `gmlp tokenizer train` wrote: ids 0-4 are [PAD] [UNK] [CLS] [SEP] [MASK]). model_max_length
// goes into tokenizer_config.json (what truncation=True cuts to). Errors are one line naming
// the file: DataLoss for a file that is not a SentencePiece model (truncated varint, length past
// the end, ...), FailedPrecondition for a model this export does not handle.
absl::Status WriteHfTokenizerFiles(const std::string& spm_model_path, const std::string& out_dir,
                                   int64_t model_max_length = kDefaultHfModelMaxLength);

}  // namespace gmlp::exporter

#endif  // GMLP_EXPORT_HF_TOKENIZER_H_
