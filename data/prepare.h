// `gmlp prepare`: raw text -> tokenized, packed, checksummed shards and a manifest.
//
// How the work is cut, so that output is byte-identical whatever --workers and resumable:
// each input file is read in order (tokenizer/corpus_reader.h) and cut into blocks of about
// --shard_input_bytes of text (at piece boundaries, so one huge line is cut too). Block b of file f
// becomes `train-FFFFF-BBBBB.bin` and, when it holds validation documents, `valid-FFFFF-BBBBB.bin`,
// plus a record `block-FFFFF-BBBBB.json` with their checksums, written last. A block depends only
// on its own text and the settings, so workers take whole blocks in any order. Memory is bounded by
// 2 * workers + 1 blocks (queued, being encoded, being read), whatever the corpus size.
//
// A document goes to the validation split when a hash of (seed, file index, document index)
// falls under --valid_fraction: deterministic, spread over the corpus, never mixed with training.
//
// --part=i/N: with at least N input files, part i takes the files f with f % N == i (and reads
// only those); with fewer files, every part reads every file and part i takes blocks g with
// g % N == i (g numbers blocks across files). Each part writes manifest.part-i-of-N.json; the last
// part to finish (or `gmlp prepare --merge`) combines them into manifest.json.
//
// Re-running skips every block whose record matches the settings and whose shards still match
// their checksums; anything else is rewritten.
#ifndef GMLP_DATA_PREPARE_H_
#define GMLP_DATA_PREPARE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/manifest.h"

namespace gmlp::data {

struct PrepareOptions {
  std::vector<std::string> input;  // files or globs: plain text, .gz, .xz, .zst; text or JSONL
  std::string tokenizer;           // SentencePiece .model from `gmlp tokenizer train`
  std::string output;              // shard directory (created)
  int64_t seq_len = 128;
  int workers = 0;  // tokenizing threads; 0 = all cores
  double valid_fraction = 0.01;
  uint64_t seed = 1;
  int64_t shard_input_bytes = 4 << 20;  // text per block (= per shard pair)
  std::string part = "0/1";             // i/N
  bool strict_utf8 = false;             // invalid UTF-8 is fatal instead of counted and skipped
  int64_t max_piece_bytes = 1 << 20;    // longer lines are cut into pieces (bounded memory)
  std::string format = "auto";          // auto | text | jsonl (tokenizer::CorpusOptions)
  std::string text_field = "text";      // JSONL: the text's field, a dotted path
  bool progress = true;                 // MB/s lines on stderr

  // The field list, once: calls visit(name, field, help) for every field, with `self` a
  // PrepareOptions or a const one. `gmlp prepare`'s flags and the manifest's record of the
  // settings are made from it.
  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("input", self.input,
          "Text or JSONL files or globs, comma-separated (plain, .gz, .xz, .zst).");
    visit("tokenizer", self.tokenizer,
          "SentencePiece .model file written by `gmlp tokenizer train`.");
    visit("output", self.output, "Shard directory (created).");
    visit("seq_len", self.seq_len, "Sequence length in ids, [CLS] included.");
    visit("workers", self.workers, "Tokenizing threads; 0 = all cores.");
    visit("valid_fraction", self.valid_fraction,
          "Fraction of documents held out as the validation split.");
    visit("seed", self.seed, "Random seed (the validation split).");
    visit("shard_input_bytes", self.shard_input_bytes,
          "Bytes of text per block; each block becomes one train (and one valid) shard.");
    visit("part", self.part,
          "i/N: this process writes part i of N disjoint parts (e.g. a Slurm array); the last "
          "part to finish merges the manifests.");
    visit("strict_utf8", self.strict_utf8,
          "Stop at the first line of invalid UTF-8 (default: count and skip such lines).");
    visit("max_piece_bytes", self.max_piece_bytes,
          "Longer lines are cut into pieces of at most this many bytes (bounded memory).");
    visit("format", self.format,
          "Input format: auto (JSON lines when the first non-blank line starts with {), text "
          "(plain text or WikiExtractor <doc> blocks) or jsonl (one JSON object per line).");
    visit("text_field", self.text_field,
          "JSONL: the field holding the document text; a dotted path for nested objects "
          "(meta.body).");
    visit("progress", self.progress, "Log progress (MB/s) to stderr.");
  }

  absl::Status Validate() const;
};

// What prepare needs from a tokenizer; LoadTextEncoder wraps gmlp::tokenizer::Tokenizer, and
// tests substitute a fake.
class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  // Appends the ids of `text`. Called from several threads at once.
  virtual absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual bool IsWordStart(int32_t id) const = 0;
  virtual std::string checksum() const = 0;
};

absl::StatusOr<std::unique_ptr<TextEncoder>> LoadTextEncoder(const std::string& model_path);

struct PrepareResult {
  Manifest manifest;  // this part's manifest (the merged one when merged)
  std::string manifest_path;
  int64_t blocks_written = 0;
  int64_t blocks_skipped = 0;  // already complete from an earlier run
  int64_t text_bytes = 0;      // text given to the tokenizer (or skipped) by this part
  double seconds = 0;
  bool merged = false;  // manifest.json was written
};

// Runs prepare for `options` with the tokenizer at options.tokenizer.
absl::StatusOr<PrepareResult> Prepare(const PrepareOptions& options);
// Same, with a given encoder (options.tokenizer is then only recorded in the manifest).
absl::StatusOr<PrepareResult> Prepare(const PrepareOptions& options, const TextEncoder& encoder);

// Combines the N part manifests in `output` into manifest.json. Fails, naming the missing parts,
// unless all are present and were made with the same settings.
absl::StatusOr<Manifest> MergeParts(const std::string& output);

}  // namespace gmlp::data

#endif  // GMLP_DATA_PREPARE_H_
