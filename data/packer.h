// Packs a stream of documents' token ids into fixed-length sequences, RoBERTa "full-sentences"
// style: every sequence starts with [CLS] and is filled to seq_len; documents are separated by
// [SEP]; a document longer than the room left continues in the next sequence; the last sequence
// is padded with [PAD]. There is no next-sentence objective, so no segment structure is kept.
#ifndef GMLP_DATA_PACKER_H_
#define GMLP_DATA_PACKER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmlp::data {

class SequencePacker {
 public:
  explicit SequencePacker(int64_t seq_len);

  // The ids added next belong to a new document. A [SEP] goes in before its first id unless that
  // id opens a sequence (after [CLS] a separator would only waste a position). Documents without
  // ids leave no trace.
  void StartDocument();
  void Add(const int32_t* ids, size_t n);
  // Pads the open sequence, if any, with [PAD].
  void Finish();

  const std::vector<int32_t>& ids() const { return ids_; }
  int64_t num_sequences() const { return static_cast<int64_t>(ids_.size()) / seq_len_; }
  // Ids that are not [PAD] (counting [CLS] and [SEP]).
  int64_t num_tokens() const { return num_tokens_; }

 private:
  void Emit(int32_t id);

  int64_t seq_len_;
  std::vector<int32_t> ids_;
  int64_t fill_ = 0;  // ids in the open sequence; 0 = none open
  bool pending_sep_ = false;
  bool any_ids_ = false;
  int64_t num_tokens_ = 0;
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_PACKER_H_
