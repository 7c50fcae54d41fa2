#include "study/probe.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/mix64.h"
#include "common/rng.h"
#include "common/status.h"
#include "finetune/task.h"
#include "tokenizer/corpus_reader.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::study {
namespace {

constexpr char kSame[] = "same";
constexpr char kReplaced[] = "replaced";
constexpr int64_t kMaxVocabWordBytes = 12;

// Stream salts: each random choice has its own SplitMix64 stream, so adding one never moves
// another (the aligned version does not depend on the filler draws).
constexpr uint64_t kSentenceSalt = 0x5e17e9ce5a17ULL;
constexpr uint64_t kLabelSalt = 0x1abe15a17ULL;
constexpr uint64_t kExampleSalt = 0xe8a3b1e5a17ULL;
constexpr uint64_t kShiftSalt = 0x5b1f75a17ULL;
// The shift-k versions' streams.
constexpr uint64_t kPieceLabelSalt = 0x91ece1abe1ULL;
constexpr uint64_t kPieceExampleSalt = 0x91ece5a17ULL;
constexpr uint64_t kPieceFillerSalt = 0x91ecef111ULL;

using Rng = SplitMix64Rng;

uint64_t StreamSeed(uint64_t seed, uint64_t salt, uint64_t i) {
  return SplitMix64At(Mix64(seed ^ salt), i);
}

bool IsAsciiAlphaWord(absl::string_view w) {
  if (w.size() < 2) return false;
  for (char c : w) {
    if (!absl::ascii_isalpha(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool IsVocabWord(absl::string_view w) {
  if (w.size() < 2 || static_cast<int64_t>(w.size()) > kMaxVocabWordBytes) return false;
  for (char c : w) {
    if (c < 'a' || c > 'z') return false;
  }
  return true;
}

// Cuts a piece of text into sentences: after '.', '!' or '?' followed by a space and an
// uppercase letter, or at the end of the piece.
std::vector<std::string> SplitSentences(absl::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '.' && c != '!' && c != '?') continue;
    const bool at_end = i + 1 == text.size();
    if (!at_end && !(text[i + 1] == ' ' && i + 2 < text.size() &&
                     absl::ascii_isupper(static_cast<unsigned char>(text[i + 2])))) {
      continue;
    }
    out.emplace_back(absl::StripAsciiWhitespace(text.substr(start, i + 1 - start)));
    start = i + 1;
  }
  return out;
}

// The sentence's words (whitespace-separated) when it is usable, else empty.
std::vector<std::string> UsableWords(const std::string& sentence, const ProbeOptions& o) {
  if (static_cast<int64_t>(sentence.size()) > o.max_sentence_bytes || sentence.empty()) return {};
  if (!absl::ascii_isupper(static_cast<unsigned char>(sentence.front()))) return {};
  for (char c : sentence) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') return {};  // control characters
  }
  std::vector<std::string> words =
      absl::StrSplit(sentence, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  const int64_t n = static_cast<int64_t>(words.size());
  if (n < o.min_words || n > o.max_words) return {};
  if (std::none_of(words.begin(), words.end(), IsAsciiAlphaWord)) return {};
  return words;
}

// `word` with the capitalisation of `like`'s first letter.
std::string MatchCase(std::string word, absl::string_view like) {
  if (!like.empty() && absl::ascii_isupper(static_cast<unsigned char>(like.front()))) {
    word[0] = absl::ascii_toupper(static_cast<unsigned char>(word[0]));
  }
  return word;
}

struct Candidates {
  std::vector<std::vector<std::string>> sentences;  // distinct, in corpus order
  std::vector<std::string> vocabulary;              // sorted
};

tokenizer::CorpusOptions ReadOptions(const ProbeOptions& o) {
  tokenizer::CorpusOptions read;
  read.format = o.format;
  read.text_field = o.text_field;
  return read;
}

absl::StatusOr<Candidates> ReadCandidates(const ProbeOptions& o, CorpusHoldout* holdout) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::CorpusReader> reader,
                        tokenizer::CorpusReader::Open(o.corpus, ReadOptions(o)));
  Candidates c;
  std::set<std::string> seen;
  std::map<std::string, int64_t> counts;
  std::string piece;
  bool new_document = false;
  int64_t document = -1;
  for (;;) {
    GMLP_ASSIGN_OR_RETURN(const bool got, reader->Next(&piece, &new_document));
    if (!got) break;
    if (new_document) ++document;
    if (document < holdout->first_holdout_document) {
      holdout->text_bytes_before_holdout += static_cast<int64_t>(piece.size()) + 1;
      continue;
    }
    for (std::string& s : SplitSentences(piece)) {
      std::vector<std::string> words = UsableWords(s, o);
      if (words.empty()) continue;
      std::string normalized = absl::StrJoin(words, " ");
      if (!seen.insert(normalized).second) continue;
      for (const std::string& w : words) {
        if (IsVocabWord(w)) ++counts[w];
      }
      c.sentences.push_back(std::move(words));
    }
  }
  for (const auto& [word, count] : counts) {
    if (count >= o.min_word_count) c.vocabulary.push_back(word);
  }
  return c;
}

// Half "same" (the first (n + 1) / 2), half "replaced", shuffled by the stream `seed`.
std::vector<uint8_t> BalancedLabels(int64_t n, uint64_t seed) {
  std::vector<uint8_t> same(n);
  for (int64_t i = 0; i < n; ++i) same[i] = i < (n + 1) / 2;
  Rng(seed).Shuffle(&same);
  return same;
}

// Two different words of `vocab` (u, then v), neither `original`.
std::pair<std::string, std::string> DrawReplacements(const std::vector<std::string>& vocab,
                                                     const std::string& original, Rng& rng) {
  std::string u, v;
  do u = vocab[rng.Uniform(vocab.size())];
  while (u == original);
  do v = vocab[rng.Uniform(vocab.size())];
  while (v == original || v == u);
  return {u, v};
}

// The pair built from sentence `words` for label `same`, with its own random stream.
ProbeExample MakePair(const std::vector<std::string>& words, bool same,
                      const std::vector<std::string>& vocab, Rng& rng) {
  std::vector<int64_t> positions;
  for (size_t i = 0; i < words.size(); ++i) {
    if (IsAsciiAlphaWord(words[i])) positions.push_back(static_cast<int64_t>(i));
  }
  const int64_t pos = positions[rng.Uniform(positions.size())];
  const auto [u, v] = DrawReplacements(vocab, absl::AsciiStrToLower(words[pos]), rng);
  std::vector<std::string> a = words, b = words;
  a[pos] = MatchCase(u, words[pos]);
  b[pos] = MatchCase(v, words[pos]);
  ProbeExample e;
  e.sentence1 = absl::StrJoin(a, " ");
  e.sentence2 = same ? e.sentence1 : absl::StrJoin(b, " ");
  e.label = same ? kSame : kReplaced;
  e.position = pos;
  return e;
}

// Pieces of a text under the tokenizer; words are cached (a slice repeats them).
class PieceCounter {
 public:
  explicit PieceCounter(const tokenizer::Tokenizer& tok) : tok_(tok) {}

  absl::StatusOr<int64_t> Word(const std::string& word) {
    auto it = words_.find(word);
    if (it != words_.end()) return it->second;
    GMLP_ASSIGN_OR_RETURN(const int64_t n, Text(word));
    words_.emplace(word, n);
    return n;
  }

  absl::StatusOr<int64_t> Text(absl::string_view text) {
    ids_.clear();
    GMLP_RETURN_IF_ERROR(tok_.Encode(text, &ids_));
    return static_cast<int64_t>(ids_.size());
  }

 private:
  const tokenizer::Tokenizer& tok_;
  std::map<std::string, int64_t> words_;
  std::vector<int32_t> ids_;
};

// The shift-k versions of one pair: A and B of exactly m pieces, `filler` one-piece words.
struct PiecePair {
  std::string a, b;
  int64_t position = 0;
  std::vector<std::string> filler;  // F words: version k puts the first k before B, the rest after
};

// Builds the pair from `words` (cut to the words that fit in m pieces, then padded with
// one-piece words), or returns false when the sentence cannot give one: no one-piece lowercase
// word within its first m pieces, a prefix already used (`seen`), or a text whose pieces are not
// the sum of its words' (the checks below make every kept pair exact by construction).
absl::StatusOr<bool> MakePiecePair(const std::vector<std::string>& words, bool same, int64_t m,
                                   int64_t filler_pieces, const std::vector<std::string>& one_piece,
                                   PieceCounter& pieces, std::set<std::string>* seen, Rng& rng,
                                   Rng& filler_rng, PiecePair* out) {
  std::vector<std::string> seg;
  std::vector<int64_t> positions;
  int64_t used = 0;
  for (const std::string& w : words) {
    GMLP_ASSIGN_OR_RETURN(const int64_t n, pieces.Word(w));
    if (used + n > m) break;
    if (n == 1 && IsVocabWord(w)) positions.push_back(static_cast<int64_t>(seg.size()));
    seg.push_back(w);
    used += n;
  }
  if (positions.empty() || !seen->insert(absl::StrJoin(seg, " ")).second) return false;
  while (used < m) {
    seg.push_back(one_piece[rng.Uniform(one_piece.size())]);
    ++used;
  }
  const int64_t pos = positions[rng.Uniform(positions.size())];
  const auto [u, v] = DrawReplacements(one_piece, seg[pos], rng);
  std::vector<std::string> a = seg, b = seg;
  a[pos] = u;
  b[pos] = v;
  out->a = absl::StrJoin(a, " ");
  out->b = same ? out->a : absl::StrJoin(b, " ");
  out->position = pos;
  out->filler.clear();
  for (int64_t k = 0; k < filler_pieces; ++k) {
    out->filler.push_back(one_piece[filler_rng.Uniform(one_piece.size())]);
  }
  GMLP_ASSIGN_OR_RETURN(const int64_t a_pieces, pieces.Text(out->a));
  GMLP_ASSIGN_OR_RETURN(const int64_t b_pieces,
                        pieces.Text(absl::StrCat(absl::StrJoin(out->filler, " "),
                                                 out->filler.empty() ? "" : " ", out->b)));
  return a_pieces == m && b_pieces == m + filler_pieces;
}

// The shift-k versions of every split, drawn from `order` (the slice's shuffled sentences).
absl::Status GenerateShiftVersions(const ProbeOptions& o, const Candidates& c,
                                   const std::vector<int64_t>& order, ProbeData* data) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                        tokenizer::Tokenizer::Load(o.tokenizer));
  PieceCounter pieces(*tok);
  std::vector<std::string> one_piece;
  for (const std::string& w : c.vocabulary) {
    GMLP_ASSIGN_OR_RETURN(const int64_t n, pieces.Word(w));
    if (n == 1) one_piece.push_back(w);
  }
  data->one_piece_words = static_cast<int64_t>(one_piece.size());
  if (one_piece.size() < 3) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.corpus, ": only ", one_piece.size(), " of the held-out slice's ",
                     c.vocabulary.size(), " vocabulary words are one piece under ", o.tokenizer,
                     "; the shift-k versions need at least 3 (a larger --vocab_size, or lower "
                     "--min_word_count)"));
  }
  std::set<std::string> seen;
  size_t cursor = 0;
  int64_t made = 0;
  for (size_t s = 0; s < data->splits.size(); ++s) {
    ProbeSplit& split = data->splits[s];
    const int64_t n = static_cast<int64_t>(split.aligned.size());
    const std::vector<uint8_t> same = BalancedLabels(n, StreamSeed(o.seed, kPieceLabelSalt, s));
    for (int64_t i = 0; i < n; ++i) {
      PiecePair pair;
      for (;;) {
        if (cursor == order.size()) {
          return absl::FailedPreconditionError(absl::StrCat(
              o.corpus, ": the held-out slice's ", order.size(), " usable sentences give only ",
              made, " of the ", o.train_examples + o.dev_examples + o.test_examples,
              " shift-k pairs asked for (", data->skipped_sentences,
              " have no one-piece lowercase word in their first --segment_pieces pieces or "
              "repeat another's); raise --holdout_fraction or ask for fewer examples"));
        }
        const uint64_t draw = cursor;
        Rng rng(StreamSeed(o.seed, kPieceExampleSalt, draw));
        Rng filler(StreamSeed(o.seed, kPieceFillerSalt, draw));
        GMLP_ASSIGN_OR_RETURN(
            const bool ok,
            MakePiecePair(c.sentences[order[cursor++]], same[i], o.segment_pieces, o.filler_pieces,
                          one_piece, pieces, &seen, rng, filler, &pair));
        if (ok) break;
        ++data->skipped_sentences;
      }
      ++made;
      for (const uint64_t k : o.shifts) {
        ProbeExample e;
        e.index = i;
        e.sentence1 = pair.a;
        std::vector<std::string> words(pair.filler.begin(), pair.filler.begin() + k);
        words.push_back(pair.b);
        words.insert(words.end(), pair.filler.begin() + k, pair.filler.end());
        e.sentence2 = absl::StrJoin(words, " ");
        e.label = same[i] ? kSame : kReplaced;
        e.offset = static_cast<int64_t>(k);
        e.position = pair.position;
        split.by_shift[e.offset].push_back(std::move(e));
      }
    }
  }
  return absl::OkStatus();
}

// A version's examples in one split: the word-offset versions, or shift k >= 0.
constexpr int64_t kAlignedVersion = -2;
constexpr int64_t kShiftedVersion = -1;
const std::vector<ProbeExample>& VersionExamples(const ProbeSplit& s, int64_t version) {
  if (version == kAlignedVersion) return s.aligned;
  if (version == kShiftedVersion) return s.shifted;
  return s.by_shift.at(version);
}

std::string AbsolutePath(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

finetune::TaskSpec ProbeTaskSpec(const std::string& name, const std::string& dir) {
  auto split = [&](const std::string& split_name) {
    finetune::SplitSpec s;
    s.name = split_name;
    s.file = JoinPath(dir, split_name + ".tsv");
    s.sentence1 = "sentence1";
    s.sentence2 = "sentence2";
    s.label = "label";
    s.index = "index";
    return s;
  };
  finetune::TaskSpec t;
  t.name = name;
  t.labels = {kSame, kReplaced};
  t.metrics = {"accuracy"};
  t.train = split("train");
  t.eval = {split("dev"), split("test")};
  return t;
}

// Longest [CLS] a [SEP] b [SEP] in tokens over every pair; error past max_len.
absl::StatusOr<int64_t> CheckTokenLengths(const ProbeData& data, const ProbeOptions& o) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                        tokenizer::Tokenizer::Load(o.tokenizer));
  int64_t longest = 0;
  std::vector<int32_t> ids;
  for (const ProbeSplit& s : data.splits) {
    std::vector<const std::vector<ProbeExample>*> versions;
    if (o.word_versions) versions = {&s.aligned, &s.shifted};
    for (const auto& [k, examples] : s.by_shift) versions.push_back(&examples);
    for (const auto* version : versions) {
      for (const ProbeExample& e : *version) {
        ids.clear();
        GMLP_RETURN_IF_ERROR(tok->Encode(e.sentence1, &ids));
        GMLP_RETURN_IF_ERROR(tok->Encode(e.sentence2, &ids));
        const int64_t n = static_cast<int64_t>(ids.size()) + 3;
        longest = std::max(longest, n);
        if (n > o.max_len) {
          return absl::FailedPreconditionError(
              absl::StrCat("probe ", s.name, " pair ", e.index, " (offset ", e.offset, ") is ", n,
                           " tokens, over --max_len=", o.max_len,
                           "; lower --max_sentence_bytes, --max_shift or --segment_pieces"));
        }
      }
    }
  }
  return longest;
}

nlohmann::json SplitSummary(const std::vector<ProbeExample>& v) {
  int64_t same = 0, min_off = INT64_MAX, max_off = 0;
  for (const ProbeExample& e : v) {
    same += e.label == kSame;
    min_off = std::min(min_off, e.offset);
    max_off = std::max(max_off, e.offset);
  }
  return {{"examples", v.size()},
          {"same", same},
          {"replaced", static_cast<int64_t>(v.size()) - same},
          {"min_offset", v.empty() ? 0 : min_off},
          {"max_offset", max_off}};
}

}  // namespace

absl::Status ProbeOptions::Validate() const {
  if (corpus.empty()) return absl::InvalidArgumentError("probe: give --corpus=<text/.gz/.xz/.zst>");
  if (!(holdout_fraction > 0 && holdout_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("probe: --holdout_fraction must be in (0, 1), got ", holdout_fraction));
  }
  if (train_examples < 2 || dev_examples < 2 || test_examples < 2) {
    return absl::InvalidArgumentError(
        "probe: --train_examples, --dev_examples and --test_examples must each be >= 2");
  }
  if (min_words < 2 || max_words < min_words) {
    return absl::InvalidArgumentError("probe: need 2 <= --min_words <= --max_words");
  }
  if (max_sentence_bytes != 0 && max_sentence_bytes < 8) {
    return absl::InvalidArgumentError(
        "probe: --max_sentence_bytes must be >= 8 (or 0: --max_len - 8)");
  }
  if (max_sentence_bytes == 0 && DefaultSentenceBytes(max_len) < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "probe: --max_len=", max_len, " leaves sentences under 8 bytes; raise --max_len"));
  }
  if (max_shift < 1) return absl::InvalidArgumentError("probe: --max_shift must be >= 1");
  if (!word_versions && shifts.empty()) {
    return absl::InvalidArgumentError(
        "probe: --word_versions=false and no --shifts leave nothing to write");
  }
  if (!shifts.empty()) {
    if (tokenizer.empty()) {
      return absl::InvalidArgumentError(
          "probe: --shifts needs --tokenizer=<SentencePiece model>: the shift-k versions count "
          "offsets in its pieces");
    }
    if (segment_pieces < 4) {
      return absl::InvalidArgumentError(
          absl::StrCat("probe: --segment_pieces must be >= 4, got ", segment_pieces));
    }
    std::set<uint64_t> seen;
    for (const uint64_t k : shifts) {
      if (k > static_cast<uint64_t>(kMaxProbeShift)) {
        return absl::InvalidArgumentError(
            absl::StrCat("probe: --shifts: k = ", k, " is over ", kMaxProbeShift));
      }
      if (!seen.insert(k).second) {
        return absl::InvalidArgumentError(absl::StrCat("probe: --shifts lists k = ", k, " twice"));
      }
    }
    if (filler_pieces < 0 || filler_pieces > kMaxProbeShift) {
      return absl::InvalidArgumentError(absl::StrCat("probe: --filler_pieces must be in [0, ",
                                                     kMaxProbeShift, "], got ", filler_pieces));
    }
    if (static_cast<int64_t>(*seen.rbegin()) > filler_pieces) {
      return absl::InvalidArgumentError(absl::StrCat(
          "probe: --shifts: k = ", *seen.rbegin(), " is over --filler_pieces=", filler_pieces,
          " (k of them go before B); raise --filler_pieces"));
    }
    const int64_t need = ShiftPairTokens(segment_pieces, filler_pieces);
    if (need > max_len) {
      return absl::InvalidArgumentError(absl::StrCat(
          "probe: 3 special tokens + 2 x --segment_pieces=", segment_pieces,
          " + --filler_pieces=", filler_pieces, " = ", need, " tokens, over --max_len=", max_len,
          "; lower --segment_pieces or --filler_pieces"));
    }
  }
  if (min_word_count < 1) return absl::InvalidArgumentError("probe: --min_word_count must be >= 1");
  if (max_len < 8) return absl::InvalidArgumentError("probe: --max_len must be >= 8");
  GMLP_RETURN_IF_ERROR(tokenizer::ValidateCorpusFormat(format, text_field));
  return absl::OkStatus();
}

ProbeOptions ProbeOptions::Resolved() const {
  ProbeOptions o = *this;
  if (o.max_sentence_bytes == 0) o.max_sentence_bytes = DefaultSentenceBytes(o.max_len);
  return o;
}

absl::StatusOr<CorpusHoldout> FindCorpusHoldout(const std::string& corpus, double fraction,
                                                const tokenizer::CorpusOptions& read) {
  GMLP_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::CorpusReader> reader,
                        tokenizer::CorpusReader::Open(corpus, read));
  CorpusHoldout h;
  std::string piece;
  bool new_document = false;
  for (;;) {
    GMLP_ASSIGN_OR_RETURN(const bool got, reader->Next(&piece, &new_document));
    if (!got) break;
    h.documents += new_document;
    h.text_bytes += static_cast<int64_t>(piece.size()) + 1;
  }
  if (h.documents == 0) {
    return absl::InvalidArgumentError(absl::StrCat(corpus, ": no text; the probe needs a corpus"));
  }
  const int64_t held = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(fraction * static_cast<double>(h.documents))));
  h.first_holdout_document = std::max<int64_t>(0, h.documents - held);
  return h;
}

absl::StatusOr<ProbeData> GenerateProbe(const ProbeOptions& given) {
  GMLP_RETURN_IF_ERROR(given.Validate());
  const ProbeOptions o = given.Resolved();
  ProbeData data;
  GMLP_ASSIGN_OR_RETURN(data.holdout,
                        FindCorpusHoldout(o.corpus, o.holdout_fraction, ReadOptions(o)));
  GMLP_ASSIGN_OR_RETURN(Candidates c, ReadCandidates(o, &data.holdout));
  data.candidate_sentences = static_cast<int64_t>(c.sentences.size());
  data.vocabulary_words = static_cast<int64_t>(c.vocabulary.size());
  const int64_t total = o.train_examples + o.dev_examples + o.test_examples;
  if (data.candidate_sentences < total) {
    return absl::FailedPreconditionError(absl::StrCat(
        o.corpus, ": the held-out slice (last ", o.holdout_fraction * 100, "% of ",
        data.holdout.documents, " documents) has ", data.candidate_sentences,
        " usable sentences, the probe needs ", total,
        "; raise --holdout_fraction or --max_words/--max_sentence_bytes, or ask for fewer "
        "examples"));
  }
  if (data.vocabulary_words < 3) {
    return absl::FailedPreconditionError(
        absl::StrCat(o.corpus, ": only ", data.vocabulary_words, " words occur --min_word_count=",
                     o.min_word_count, " times in the held-out slice; need at least 3"));
  }
  std::vector<int64_t> order(c.sentences.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  Rng(StreamSeed(o.seed, kSentenceSalt, 0)).Shuffle(&order);

  const std::vector<std::pair<std::string, int64_t>> sizes = {
      {"train", o.train_examples}, {"dev", o.dev_examples}, {"test", o.test_examples}};
  int64_t next = 0;
  for (size_t s = 0; s < sizes.size(); ++s) {
    ProbeSplit split;
    split.name = sizes[s].first;
    const int64_t n = sizes[s].second;
    const std::vector<uint8_t> same = BalancedLabels(n, StreamSeed(o.seed, kLabelSalt, s));
    for (int64_t i = 0; i < n; ++i, ++next) {
      const auto& words = c.sentences[order[next]];
      Rng rng(StreamSeed(o.seed, kExampleSalt, next));
      ProbeExample e = MakePair(words, same[i], c.vocabulary, rng);
      e.index = i;
      split.aligned.push_back(e);
      Rng shift(StreamSeed(o.seed, kShiftSalt, next));
      e.offset = 1 + static_cast<int64_t>(shift.Uniform(o.max_shift));
      std::vector<std::string> filler;
      for (int64_t k = 0; k < e.offset; ++k) {
        filler.push_back(c.vocabulary[shift.Uniform(c.vocabulary.size())]);
      }
      e.sentence2 = absl::StrCat(absl::StrJoin(filler, " "), " ", e.sentence2);
      split.shifted.push_back(std::move(e));
    }
    data.splits.push_back(std::move(split));
  }
  if (!o.shifts.empty()) GMLP_RETURN_IF_ERROR(GenerateShiftVersions(o, c, order, &data));
  return data;
}

std::string ProbeTsv(const std::vector<ProbeExample>& examples) {
  std::string out = "index\tsentence1\tsentence2\tlabel\toffset\tposition\n";
  for (const ProbeExample& e : examples) {
    absl::StrAppend(&out, e.index, "\t", e.sentence1, "\t", e.sentence2, "\t", e.label, "\t",
                    e.offset, "\t", e.position, "\n");
  }
  return out;
}

absl::StatusOr<ProbeData> WriteProbe(const ProbeOptions& given) {
  if (given.output.empty()) return absl::InvalidArgumentError("probe: give --output=<directory>");
  GMLP_ASSIGN_OR_RETURN(ProbeData data, GenerateProbe(given));
  const ProbeOptions o = given.Resolved();  // probe.json records the bytes used
  int64_t longest_tokens = 0;
  if (!o.tokenizer.empty()) {
    GMLP_ASSIGN_OR_RETURN(longest_tokens, CheckTokenLengths(data, o));
  }
  const std::string root = AbsolutePath(o.output);
  nlohmann::json options;
  ProbeOptions::ForEachField(
      o, [&](const char* name, const auto& field, const char*) { options[name] = field; });
  nlohmann::json manifest = {
      {"description",
       "Alignment probe (issue 12, item 4): is segment 2 (after any filler words) the same as "
       "segment 1, or segment 1 with one word replaced? Both segments carry one replaced word "
       "in both classes, so a single segment alone is at chance."},
      {"options", options},
      {"holdout",
       {{"documents", data.holdout.documents},
        {"first_holdout_document", data.holdout.first_holdout_document},
        {"text_bytes", data.holdout.text_bytes},
        {"text_bytes_before_holdout", data.holdout.text_bytes_before_holdout}}},
      {"candidate_sentences", data.candidate_sentences},
      {"vocabulary_words", data.vocabulary_words},
      {"labels", {kSame, kReplaced}}};
  if (!o.tokenizer.empty()) manifest["longest_pair_tokens"] = longest_tokens;
  if (!o.shifts.empty()) {
    manifest["one_piece_words"] = data.one_piece_words;
    manifest["shift_skipped_sentences"] = data.skipped_sentences;
  }
  struct Version {
    std::string dir, task;
    int64_t key;  // VersionExamples's
  };
  std::vector<Version> versions;
  if (o.word_versions) {
    versions.push_back({"aligned", kProbeAlignedTask, kAlignedVersion});
    versions.push_back({"shifted", kProbeShiftedTask, kShiftedVersion});
  }
  for (const uint64_t k : o.shifts) {
    const int64_t shift = static_cast<int64_t>(k);
    versions.push_back({absl::StrCat("shift-", k), ProbeShiftTask(shift), shift});
  }
  for (const Version& v : versions) {
    const std::string dir = JoinPath(root, v.dir);
    GMLP_RETURN_IF_ERROR(MakeDirs(dir));
    for (const ProbeSplit& s : data.splits) {
      const std::vector<ProbeExample>& examples = VersionExamples(s, v.key);
      const std::string path = JoinPath(dir, s.name + ".tsv");
      GMLP_RETURN_IF_ERROR(WriteFileAtomic(path, ProbeTsv(examples)));
      GMLP_ASSIGN_OR_RETURN(const std::string checksum, FileChecksum(path));
      nlohmann::json summary = SplitSummary(examples);
      summary["checksum"] = checksum;
      manifest["versions"][v.dir][s.name] = summary;
    }
    const finetune::TaskSpec spec = ProbeTaskSpec(v.task, dir);
    GMLP_RETURN_IF_ERROR(spec.Validate());
    nlohmann::json j = spec.ToJson();
    j["description"] = absl::StrCat(
        "Alignment probe, ", v.dir, " version (", o.train_examples, "/", o.dev_examples, "/",
        o.test_examples, " pairs, seed ", o.seed,
        "); written by `gmlp probe`, see probe.json. dev selects the epoch, test is reported.");
    GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "task.json"), j.dump(2) + "\n"));
    manifest["versions"][v.dir]["task_spec"] = JoinPath(dir, "task.json");
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(root, "probe.json"), manifest.dump(2) + "\n"));
  return data;
}

}  // namespace gmlp::study
