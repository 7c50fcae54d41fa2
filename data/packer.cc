#include "data/packer.h"

#include "tokenizer/tokenizer.h"

namespace gmlp::data {

using tokenizer::kClsId;
using tokenizer::kPadId;
using tokenizer::kSepId;

SequencePacker::SequencePacker(int64_t seq_len) : seq_len_(seq_len) {}

void SequencePacker::StartDocument() { pending_sep_ = any_ids_; }

void SequencePacker::Emit(int32_t id) {
  if (fill_ == 0) {
    ids_.push_back(kClsId);
    ++num_tokens_;
    fill_ = 1;
  }
  ids_.push_back(id);
  ++num_tokens_;
  if (++fill_ == seq_len_) fill_ = 0;
}

void SequencePacker::Add(const int32_t* ids, size_t n) {
  if (n == 0) return;
  if (pending_sep_) {
    pending_sep_ = false;
    if (fill_ > 1) Emit(kSepId);
  }
  any_ids_ = true;
  for (size_t i = 0; i < n; ++i) Emit(ids[i]);
}

void SequencePacker::Finish() {
  if (fill_ == 0) return;
  ids_.resize(ids_.size() + static_cast<size_t>(seq_len_ - fill_), kPadId);
  fill_ = 0;
}

}  // namespace gmlp::data
