// Fixtures shared by the tokenizer tests: temporary directories, gzip/xz/zstd writers, a generated
// pseudo-English corpus.
#ifndef GMLP_TESTS_TOKENIZER_TEST_UTIL_H_
#define GMLP_TESTS_TOKENIZER_TEST_UTIL_H_

#include <lzma.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "tests/file_test_util.h"

namespace gmlp::tokenizer::testing {

using gmlp::testing::MakeTempDir;
using gmlp::testing::ReadBytes;
using gmlp::testing::RemoveTempDir;
using gmlp::testing::WriteBytes;

// One gzip member holding `text`.
inline std::string GzipCompress(absl::string_view text) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, text.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

inline std::string XzCompress(absl::string_view text) {
  std::string out(lzma_stream_buffer_bound(text.size()), '\0');
  size_t pos = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr,
                                    reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                    reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()),
            LZMA_OK);
  out.resize(pos);
  return out;
}

// One zstd frame holding `text` (libzstd, level 3).
inline std::string ZstdCompress(absl::string_view text, int level = 3) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), level);
  EXPECT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// `lines` lines of pseudo-English (words built from syllables, Zipf-like frequencies), one
// paragraph per line, blank lines between groups of 5 (so documents in the plain layout).
inline std::string GeneratedCorpus(int lines, uint32_t seed = 7) {
  static const char* kSyllables[] = {
      "the", "an", "ing", "ed", "er", "re", "in", "on", "at", "en", "ti", "es", "or", "te",
      "of",  "is", "it",  "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou", "io",
      "le",  "ve", "co",  "me", "de", "hi", "ri", "ro", "ic", "ne", "ea", "ra", "ce", "li",
      "ch",  "ll", "be",  "ma", "si", "om", "ur", "ca", "el", "ta", "la", "ns", "di", "fo",
      "ho",  "pe", "ec",  "pr", "no", "ct", "us", "ac", "ot", "il", "tr", "ly", "nc", "et"};
  constexpr int kNumSyllables = sizeof(kSyllables) / sizeof(kSyllables[0]);
  std::mt19937 rng(seed);
  // A fixed lexicon of 2000 words; sentences draw from it with a Zipf-like skew.
  std::vector<std::string> lexicon;
  std::uniform_int_distribution<int> syl(0, kNumSyllables - 1), nsyl(1, 4);
  for (int i = 0; i < 2000; ++i) {
    std::string w;
    for (int k = nsyl(rng); k > 0; --k) w += kSyllables[syl(rng)];
    lexicon.push_back(w);
  }
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> nwords(6, 20);
  std::string out;
  for (int l = 0; l < lines; ++l) {
    const int n = nwords(rng);
    for (int i = 0; i < n; ++i) {
      const double x = u(rng);
      const size_t idx = static_cast<size_t>(x * x * x * lexicon.size()) % lexicon.size();
      if (i > 0) out += ' ';
      out += lexicon[idx];
    }
    out += ".\n";
    if (l % 5 == 4) out += '\n';
  }
  return out;
}

}  // namespace gmlp::tokenizer::testing

#endif  // GMLP_TESTS_TOKENIZER_TEST_UTIL_H_
