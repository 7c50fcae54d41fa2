// The alignment probe (issue 12, item 4): a sentence-pair task whose label depends on matching
// content across the two segments, generated from a held-out slice of a corpus in two versions
// that differ only in where the second segment's words sit.
//
// Each example starts from one corpus sentence S and one of its word positions i, and draws two
// different replacement words u and v from the slice's vocabulary:
//   A = S with word i replaced by u
//   B = A                          (label "same")
//   B = S with word i replaced by v (label "replaced": A and B differ in exactly word i)
// So each segment alone is identically distributed under both labels (one odd word in both):
// a second-segment-only model is at chance by construction, and only matching A against B helps.
//   aligned: segment 2 is B: B's words sit at the same offsets after [SEP] as A's after [CLS],
//            so mixing by position alone can solve it.
//   shifted: segment 2 is k filler words (drawn from the same vocabulary, k uniform in
//            [1, max_shift]) followed by B: matching needs content.
// The two versions share every sentence, position, word and label; only the filler differs.
//
// Shift-k versions (issue 39), with `shifts` and a tokenizer: offsets counted in the tokenizer's
// pieces, so each version has one constant offset. A is cut to exactly segment_pieces (m)
// pieces: the sentence's words while they fit, then one-piece filler words; u and v are
// one-piece lowercase words replacing a one-piece lowercase word of the sentence, so A and B
// are both m pieces, aligned piece by piece. Segment 2 of every version is B and the same
// filler_pieces (F) one-piece filler words, one draw per pair: version k puts the first k
// before B and the other F - k after it. So B's piece j sits k + m + 1 tokens after A's piece j,
// for every pair, and the versions differ in nothing but that offset: the same words, the same
// length (3 + 2m + F tokens), the same sentences, positions and labels. (With the filler before
// B only, k = 0 had none: there a bag-of-words rule, "segment 2 has a word A lacks", solved the
// task, and at k > 0 it did not.) These sentences are drawn apart from the aligned/shifted
// versions'.
// Deterministic from `seed` (SplitMix64 streams, no std:: distributions). Torch-free.
#ifndef GMLP_STUDY_PROBE_H_
#define GMLP_STUDY_PROBE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tokenizer/corpus_reader.h"

namespace gmlp::study {

// What the probe's calibration measured (study/README.md, "Not calibrated"; pair presentations =
// training pairs x epochs): the pre-LN ALiBi Transformer-tiny from scratch stayed at chance on
// every piece-offset version through 32,000 x 8, and read the aligned one (k = 0) just above
// chance (test 0.530) at 96,000 x 8, where the shifted one (k = 16) stayed at chance (0.503).
// The study's report quotes them beside its own probe budget.
inline constexpr int64_t kProbeBaselineChanceThrough = 32000 * 8;
inline constexpr int64_t kProbeBaselineReadsAlignedAt = 96000 * 8;

struct ProbeOptions {
  // Plain text, .gz, .xz or .zst: WikiExtractor <doc> blocks, blank-line documents or JSON lines.
  std::string corpus;
  std::string output;  // writes aligned/, shifted/ and probe.json here
  uint64_t seed = 1;
  // The last holdout_fraction of the corpus's documents are the slice the probe is drawn from;
  // the study must train its tokenizer and pretrain on documents before it (probe.json says
  // which).
  double holdout_fraction = 0.1;
  int64_t train_examples = 4000;
  int64_t dev_examples = 1000;   // selects the epoch
  int64_t test_examples = 2000;  // reported
  // Sentences of min_words..max_words whitespace words and at most max_sentence_bytes bytes
  // (0 = DefaultSentenceBytes(max_len)): at 120 bytes, with max_shift filler words of at most
  // 12 bytes, [CLS] A [SEP] filler B [SEP] stays under 128 tokens with an 8k-piece vocabulary
  // (checked against a tokenizer with `tokenizer`).
  int64_t min_words = 8;
  int64_t max_words = 20;
  int64_t max_sentence_bytes = 0;
  int64_t max_shift = 8;  // shifted: 1..max_shift filler words before B
  // Shift-k versions (0 <= k <= kMaxProbeShift, no repeats), written to shift-<k>/ as task
  // probe-shift-<k>; they need `tokenizer`, and 3 + 2 segment_pieces + the largest k <= max_len.
  std::vector<uint64_t> shifts;
  int64_t segment_pieces = 24;
  // Filler pieces in every shift-k version's segment 2 (k before B, the rest after); at least
  // the largest k. Fixed rather than the largest k so that adding a shift leaves the others'
  // bytes as they were.
  int64_t filler_pieces = 16;
  // Whether to write the aligned and shifted versions (offsets in words) too.
  bool word_versions = true;
  // Replacement and filler words: lowercase ASCII words of 2..12 letters seen at least this
  // often in the slice's sentences.
  int64_t min_word_count = 2;
  // Optional: a SentencePiece model; every pair's [CLS] a [SEP] b [SEP] length is then checked
  // against max_len and the longest is recorded in probe.json.
  std::string tokenizer;
  int64_t max_len = 128;
  std::string format = "auto";      // corpus format: auto | text | jsonl (see CorpusOptions)
  std::string text_field = "text";  // JSONL: the text's field, a dotted path

  template <typename Self, typename Visit>
  static void ForEachField(Self& self, Visit&& visit) {
    visit("corpus", self.corpus, "corpus to draw the probe from (plain, .gz, .xz or .zst)");
    visit("output", self.output, "output directory: aligned/, shifted/, probe.json");
    visit("seed", self.seed, "generator seed: the same seed gives the same bytes");
    visit("holdout_fraction", self.holdout_fraction,
          "the probe uses only the last fraction of the corpus's documents");
    visit("train_examples", self.train_examples, "training pairs per version (half each label)");
    visit("dev_examples", self.dev_examples, "dev pairs per version (select the epoch)");
    visit("test_examples", self.test_examples, "test pairs per version (reported)");
    visit("min_words", self.min_words, "shortest sentence used, in words");
    visit("max_words", self.max_words, "longest sentence used, in words");
    visit("max_sentence_bytes", self.max_sentence_bytes,
          "longest sentence used, in bytes; 0 = --max_len - 8");
    visit("max_shift", self.max_shift, "shifted version: 1..max_shift filler words before B");
    visit("shifts", self.shifts,
          "shift-k versions: comma-separated k, filler pieces before B (needs --tokenizer)");
    visit("segment_pieces", self.segment_pieces,
          "shift-k versions: A and B are exactly this many pieces");
    visit("filler_pieces", self.filler_pieces,
          "shift-k versions: one-piece filler words in segment 2, k before B and the rest after "
          "(at least the largest k)");
    visit("word_versions", self.word_versions,
          "write the aligned and shifted versions (offsets in words) too");
    visit("min_word_count", self.min_word_count,
          "replacement/filler words must occur this often in the slice");
    visit("tokenizer", self.tokenizer,
          "optional SentencePiece model: check every pair fits in --max_len tokens");
    visit("max_len", self.max_len, "token limit checked with --tokenizer");
    visit("format", self.format,
          "corpus format: auto (JSON lines when the first non-blank line starts with {), text "
          "or jsonl");
    visit("text_field", self.text_field,
          "JSONL: the field holding the document text; a dotted path (meta.body)");
  }

  absl::Status Validate() const;
  // These options with the defaults that follow others filled in (max_sentence_bytes).
  ProbeOptions Resolved() const;
};

// The longest probe sentence, in bytes, that a max_len-token pair leaves room for by default:
// max_len - 8 (120 at 128, 56 at 64; how that was measured: study/README.md, "Why these
// defaults").
inline int64_t DefaultSentenceBytes(int64_t max_len) { return max_len - 8; }

// The shift-k probe's task names: probe-shift-<k>.
inline constexpr char kProbeShiftTaskPrefix[] = "probe-shift-";
inline constexpr int64_t kMaxProbeShift = 64;
inline std::string ProbeShiftTask(int64_t k) { return absl::StrCat(kProbeShiftTaskPrefix, k); }
// The k of a task named `prefix` followed by decimal digits only (at most 9), or -1. Inline: the
// study config's fuzz target reads task names without the generator.
inline int64_t ProbeShiftOf(const std::string& task,
                            const std::string& prefix = kProbeShiftTaskPrefix) {
  if (prefix.empty() || task.size() <= prefix.size() || task.rfind(prefix, 0) != 0) return -1;
  const size_t digits = task.size() - prefix.size();
  if (digits > 9) return -1;
  int64_t k = 0;
  for (size_t i = prefix.size(); i < task.size(); ++i) {
    if (task[i] < '0' || task[i] > '9') return -1;
    k = 10 * k + (task[i] - '0');
  }
  return k;
}

// Whether `task` names a shift-k version the study and the generator take (k <= kMaxProbeShift).
inline bool IsProbeShiftTask(const std::string& task) {
  const int64_t k = ProbeShiftOf(task);
  return k >= 0 && k <= kMaxProbeShift;
}
// Tokens of every shift-k pair: [CLS] A [SEP] filler B filler [SEP].
inline int64_t ShiftPairTokens(int64_t segment_pieces, int64_t filler_pieces) {
  return 3 + 2 * segment_pieces + filler_pieces;
}

// One generated pair (the aligned and shifted versions differ only in `offset`; the shift-k
// versions in `offset` = k).
struct ProbeExample {
  int64_t index = 0;
  std::string sentence1;  // A
  std::string sentence2;  // aligned: B; shifted: filler words then B
  std::string label;      // "same" | "replaced"
  int64_t offset = 0;     // filler words before B (0 in the aligned version)
  int64_t position = 0;   // 0-based word of A that u replaced (and v in "replaced" pairs)
};

// Where the held-out slice starts, from a first pass over the corpus.
struct CorpusHoldout {
  int64_t documents = 0;               // in the whole corpus (CorpusReader's count)
  int64_t first_holdout_document = 0;  // 0-based: documents from here on are the probe's
  int64_t text_bytes = 0;              // bytes of document text (CorpusReader pieces)
  int64_t text_bytes_before_holdout = 0;
};

// Counts the corpus's documents and picks the held-out tail (at least one document).
absl::StatusOr<CorpusHoldout> FindCorpusHoldout(const std::string& corpus, double fraction,
                                                const tokenizer::CorpusOptions& read = {});

struct ProbeSplit {
  std::string name;  // train | dev | test
  std::vector<ProbeExample> aligned;
  std::vector<ProbeExample> shifted;
  std::map<int64_t, std::vector<ProbeExample>> by_shift;  // k -> the shift-k version
};

struct ProbeData {
  CorpusHoldout holdout;
  int64_t candidate_sentences = 0;  // usable distinct sentences in the slice
  int64_t vocabulary_words = 0;     // replacement/filler vocabulary size
  int64_t one_piece_words = 0;      // shift-k versions: vocabulary words that are one piece
  int64_t skipped_sentences = 0;    // shift-k versions: sentences without a one-piece word
  std::vector<ProbeSplit> splits;   // train, dev, test
};

// Generates the probe in memory (no files written).
absl::StatusOr<ProbeData> GenerateProbe(const ProbeOptions& options);

// The TSV of one split, as `gmlp finetune` reads it: a header
// "index sentence1 sentence2 label offset position" (tab-separated), one row per pair.
std::string ProbeTsv(const std::vector<ProbeExample>& examples);

// The task names of the two versions.
inline constexpr char kProbeAlignedTask[] = "probe-aligned";
inline constexpr char kProbeShiftedTask[] = "probe-shifted";

// Generates the probe and writes, atomically each:
//   <output>/aligned/{train,dev,test}.tsv, <output>/aligned/task.json (task "probe-aligned")
//   <output>/shifted/{train,dev,test}.tsv, <output>/shifted/task.json (task "probe-shifted")
//   <output>/shift-<k>/... (task "probe-shift-<k>") for each k of `shifts`
//   <output>/probe.json: the options, the held-out slice, counts, label balance, checksums
// A task.json names its files by absolute path, so `gmlp finetune --task_spec=.../task.json`
// runs it as is; dev selects the epoch, test is reported. Returns what was generated.
absl::StatusOr<ProbeData> WriteProbe(const ProbeOptions& options);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_PROBE_H_
