#include "finetune/encode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::finetune {

EncodedExample PackExample(std::vector<int32_t> a, std::vector<int32_t> b, bool pair,
                           int64_t max_len) {
  EncodedExample e;
  if (pair) {
    const size_t budget = static_cast<size_t>(std::max<int64_t>(max_len - 3, 0));
    while (a.size() + b.size() > budget) {
      if (a.size() > b.size()) {
        a.pop_back();
      } else {
        b.pop_back();
      }
    }
  } else {
    b.clear();
    const size_t budget = static_cast<size_t>(std::max<int64_t>(max_len - 2, 0));
    if (a.size() > budget) a.resize(budget);
  }
  e.ids.reserve(a.size() + b.size() + 3);
  e.ids.push_back(tokenizer::kClsId);
  e.ids.insert(e.ids.end(), a.begin(), a.end());
  e.ids.push_back(tokenizer::kSepId);
  e.segments.assign(e.ids.size(), 0);
  if (pair) {
    e.ids.insert(e.ids.end(), b.begin(), b.end());
    e.ids.push_back(tokenizer::kSepId);
    e.segments.resize(e.ids.size(), 1);
  }
  return e;
}

absl::StatusOr<std::vector<EncodedExample>> EncodeSplit(const SplitData& split, bool pair,
                                                        int64_t max_len,
                                                        const TokenizeFn& tokenize) {
  std::vector<EncodedExample> out;
  out.reserve(split.examples.size());
  std::vector<int32_t> a, b;
  for (const Example& ex : split.examples) {
    a.clear();
    b.clear();
    absl::Status st = tokenize(ex.text_a, &a);
    if (st.ok() && pair) st = tokenize(ex.text_b, &b);
    if (!st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(split.path, ":", ex.line, ": cannot tokenize: ", st.message()));
    }
    EncodedExample e = PackExample(a, b, pair, max_len);
    e.label = ex.label;
    e.score = ex.score;
    out.push_back(std::move(e));
  }
  return out;
}

PaddedBatch MakeBatch(const std::vector<EncodedExample>& examples,
                      const std::vector<int64_t>& index, size_t begin, size_t end) {
  PaddedBatch b;
  b.batch = static_cast<int64_t>(end - begin);
  for (size_t i = begin; i < end; ++i) {
    b.len = std::max<int64_t>(b.len, static_cast<int64_t>(examples[index[i]].ids.size()));
  }
  const size_t cells = static_cast<size_t>(b.batch * b.len);
  b.ids.assign(cells, tokenizer::kPadId);
  b.segments.assign(cells, 0);
  b.mask.assign(cells, 0);
  for (size_t i = begin; i < end; ++i) {
    const EncodedExample& e = examples[index[i]];
    const size_t row = (i - begin) * static_cast<size_t>(b.len);
    for (size_t t = 0; t < e.ids.size(); ++t) {
      b.ids[row + t] = e.ids[t];
      b.segments[row + t] = e.segments[t];
      b.mask[row + t] = 1;
    }
    b.labels.push_back(e.label);
    b.scores.push_back(static_cast<float>(e.score));
  }
  return b;
}

}  // namespace gmlp::finetune
