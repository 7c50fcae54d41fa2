#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/checksum.h"
#include "common/file_util.h"
#include "common/status.h"
#include "tokenizer/spm_library.h"

namespace gmlp::tokenizer {
namespace {

// U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's word-boundary mark, in UTF-8.
constexpr absl::string_view kWordMark = "\xE2\x96\x81";

constexpr const char* kSpecialPieces[kNumSpecialIds] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",
                                                        "[MASK]"};

void AppendIds(void* user, const int32_t* ids, size_t n) {
  auto* out = static_cast<std::vector<int32_t>*>(user);
  out->insert(out->end(), ids, ids + n);
}

void AppendBytes(void* user, const char* data, size_t n) {
  static_cast<std::string*>(user)->append(data, n);
}

// Words the cache holds: printable ASCII without spaces, which SentencePiece's normalizer leaves
// as they are, so a word's ids do not depend on its neighbours.
constexpr size_t kMaxCachedWordBytes = 32;
// Entries per thread before the cache starts over (about 50 MB at most).
constexpr size_t kMaxCachedWords = 1 << 19;

bool IsCacheableWord(absl::string_view word) {
  if (word.size() > kMaxCachedWordBytes) return false;
  for (char c : word) {
    if (c < 0x21 || c > 0x7E) return false;
  }
  return true;
}

std::atomic<uint64_t> next_tokenizer_id{1};

// A per-thread cache of word -> ids, so encoding needs no locks. SentencePiece never makes a piece
// that spans a space (pieces only start with U+2581), so a line's ids are its space-separated
// words' ids one after the other, each word encoded as if it began the text -- as long as no
// choice inside a word is close enough for float rounding to decide it. SentencePiece's Viterbi
// search adds scores in float, so each comparison inside a word carries the rounding error of the
// score accumulated before it (larger further into a long line). Each cached word keeps the
// smallest score gap between competing candidates in its lattice (Impl::DecisionMargin); a line
// whose words' gaps are not all well above its rounding error is encoded whole by SentencePiece.
struct WordCache {
  uint64_t owner = 0;  // Impl::id of the tokenizer the entries belong to
  struct Span {
    uint32_t begin;
    uint32_t size;
    float margin;  // Impl::DecisionMargin of the word
  };
  absl::flat_hash_map<std::string, Span> words;
  std::vector<int32_t> ids;  // the spans index into this
};

}  // namespace

struct Tokenizer::Impl {
  ~Impl() {
    if (processor != nullptr) lib->free(processor);
  }

  const SpmLibrary* lib = nullptr;
  GmlpSpmProcessor* processor = nullptr;
  std::string model_path;
  std::string checksum;
  std::vector<std::string> pieces;  // by id
  std::vector<uint8_t> word_start;  // by id
  uint64_t id = next_tokenizer_id.fetch_add(1);
  absl::flat_hash_map<std::string, float> normal_piece_score;  // pieces Viterbi may use
  float max_abs_score = 0;

  // The smallest gap, over the lattice of "U+2581 word", between the best and the second-best
  // candidate score at any position (0 when a position has no piece: unknown characters). If it
  // is larger than the rounding error of the score accumulated before the word, SentencePiece
  // segments the word the same in any context.
  float DecisionMargin(absl::string_view word) const {
    const std::string target = absl::StrCat(kWordMark, word);
    const size_t n = target.size();
    constexpr double kNone = -1e30;
    std::vector<double> best(n + 1, kNone);
    best[0] = 0;
    double margin = 1e30;
    for (size_t end = 1; end <= n; ++end) {
      double top1 = kNone, top2 = kNone;
      for (size_t begin = 0; begin < end; ++begin) {
        if (best[begin] == kNone) continue;
        const auto it =
            normal_piece_score.find(absl::string_view(target).substr(begin, end - begin));
        if (it == normal_piece_score.end()) continue;
        const double score = best[begin] + it->second;
        if (score > top1) {
          top2 = top1;
          top1 = score;
        } else if (score > top2) {
          top2 = score;
        }
      }
      best[end] = top1;
      // Positions inside the 3-byte mark are never reached; any other unreachable position means
      // an unknown character, whose handling the cache does not model.
      if (top1 == kNone) {
        if (end >= 3) return 0;
        continue;
      }
      if (top2 != kNone) margin = std::min(margin, top1 - top2);
    }
    return static_cast<float>(margin);
  }

  // The rounding error SentencePiece's float Viterbi may make anywhere in a text of `bytes`
  // bytes: scores accumulate to at most max_abs_score per byte; 8 float ulps of that, plus slack.
  float RequiredMargin(size_t bytes) const {
    const double magnitude = std::max(1.0, static_cast<double>(max_abs_score) * (bytes + 3));
    return static_cast<float>(magnitude * 8 * 1.2e-7 + 1e-4);
  }

  // SentencePiece's ids for `text`, appended to `out`.
  absl::Status EncodeUncached(absl::string_view text, std::vector<int32_t>* out) const {
    char err[512] = {0};
    if (lib->encode(processor, text.data(), text.size(), AppendIds, out, err, sizeof(err)) != 0) {
      return absl::InternalError(absl::StrCat("SentencePiece encode failed: ", err));
    }
    return absl::OkStatus();
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& model_path) {
  if (!PathExists(model_path)) {
    return absl::NotFoundError(
        absl::StrCat(model_path,
                     ": no such tokenizer model; train one with `gmlp tokenizer train "
                     "--input=... --model_prefix=PREFIX` (it writes PREFIX.model)"));
  }
  GMLP_ASSIGN_OR_RETURN(const SpmLibrary* lib, GetSpmLibrary());
  auto impl = std::make_unique<Impl>();
  impl->lib = lib;
  impl->model_path = model_path;
  char err[1024] = {0};
  impl->processor = lib->load(model_path.c_str(), err, sizeof(err));
  if (impl->processor == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_path, ": not a readable SentencePiece model (", err,
                     "); pass the .model file that `gmlp tokenizer train` wrote"));
  }
  const int32_t n = lib->piece_size(impl->processor);
  impl->pieces.resize(n);
  impl->word_start.assign(n, 0);
  for (int32_t id = 0; id < n; ++id) {
    size_t size = 0;
    const char* piece = lib->id_to_piece(impl->processor, id, &size);
    impl->pieces[id].assign(piece, size);
    const int type = lib->piece_type(impl->processor, id);
    if (type == 0) {
      const float score = lib->piece_score(impl->processor, id);
      impl->normal_piece_score.emplace(impl->pieces[id], score);
      impl->max_abs_score = std::max(impl->max_abs_score, std::abs(score));
    }
    impl->word_start[id] =
        type == 0 && absl::string_view(impl->pieces[id]).substr(0, 3) == kWordMark;
  }
  // Every stage relies on the fixed special ids; a model from elsewhere would silently break them.
  for (int32_t id = 0; id < kNumSpecialIds; ++id) {
    if (id >= n || impl->pieces[id] != kSpecialPieces[id]) {
      return absl::FailedPreconditionError(
          absl::StrCat(model_path, ": id ", id, " is '", id < n ? impl->pieces[id] : "(none)",
                       "' but gmlp needs ", kSpecialPieces[id],
                       " there; use a model trained by `gmlp tokenizer train`"));
    }
  }
  GMLP_ASSIGN_OR_RETURN(impl->checksum, FileChecksum(model_path));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

absl::Status Tokenizer::Encode(absl::string_view text, std::vector<int32_t>* out) const {
  thread_local WordCache cache;
  if (cache.owner != impl_->id || cache.words.size() >= kMaxCachedWords) {
    cache.words.clear();
    cache.ids.clear();
    cache.owner = impl_->id;
  }
  const size_t out_begin = out->size();
  const float required = impl_->RequiredMargin(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    if (text[pos] == ' ') {
      ++pos;
      continue;
    }
    size_t end = text.find(' ', pos);
    if (end == absl::string_view::npos) end = text.size();
    const absl::string_view word = text.substr(pos, end - pos);
    // Other words (non-ASCII, long) are left to SentencePiece, with the whole line.
    if (!IsCacheableWord(word)) break;
    auto it = cache.words.find(word);
    if (it == cache.words.end()) {
      const size_t begin = cache.ids.size();
      GMLP_RETURN_IF_ERROR(impl_->EncodeUncached(word, &cache.ids));
      it = cache.words
               .emplace(word, WordCache::Span{static_cast<uint32_t>(begin),
                                              static_cast<uint32_t>(cache.ids.size() - begin),
                                              impl_->DecisionMargin(word)})
               .first;
    }
    if (it->second.margin <= required) break;  // rounding could decide this word in context
    const int32_t* ids = cache.ids.data() + it->second.begin;
    out->insert(out->end(), ids, ids + it->second.size);
    pos = end;
  }
  if (pos >= text.size()) return absl::OkStatus();
  out->resize(out_begin);
  return impl_->EncodeUncached(text, out);
}

absl::Status Tokenizer::EncodeUncached(absl::string_view text, std::vector<int32_t>* out) const {
  return impl_->EncodeUncached(text, out);
}

std::vector<int32_t> Tokenizer::Encode(absl::string_view text) const {
  std::vector<int32_t> ids;
  const absl::Status st = Encode(text, &ids);
  if (!st.ok()) {
    std::fprintf(stderr, "gmlp tokenizer: fatal: %s\n", std::string(st.message()).c_str());
    std::abort();
  }
  return ids;
}

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
  // SentencePiece fails on an out-of-range id; such ids read as [UNK] instead.
  std::vector<int32_t> checked(ids);
  for (int32_t& id : checked) {
    if (id < 0 || id >= vocab_size()) id = kUnkId;
  }
  std::string text;
  char err[512] = {0};
  if (impl_->lib->decode(impl_->processor, checked.data(), checked.size(), AppendBytes, &text, err,
                         sizeof(err)) != 0) {
    std::fprintf(stderr, "gmlp tokenizer: fatal: SentencePiece decode failed: %s\n", err);
    std::abort();
  }
  return text;
}

int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->pieces.size()); }

std::string Tokenizer::IdToPiece(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::string();
  return impl_->pieces[id];
}

bool Tokenizer::IsWordStart(int32_t id) const {
  return id >= 0 && id < vocab_size() && impl_->word_start[id] != 0;
}

const std::string& Tokenizer::checksum() const { return impl_->checksum; }
const std::string& Tokenizer::model_path() const { return impl_->model_path; }

}  // namespace gmlp::tokenizer
