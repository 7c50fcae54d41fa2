// ShardReader::Open and every sequence of a shard that opens: header, sizes, checksums.
#include <vector>

#include "data/shard.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("input.shard", data, size);
  auto reader = gmlp::data::ShardReader::Open(path);
  if (!reader.ok()) return 0;
  const auto& meta = (*reader)->meta();
  std::vector<int32_t> ids(static_cast<size_t>(meta.seq_len));
  for (int64_t i = 0; i < meta.num_sequences; ++i) (*reader)->CopySequence(i, ids.data());
  return 0;
}
