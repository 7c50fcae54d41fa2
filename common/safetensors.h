// The safetensors file format (https://github.com/huggingface/safetensors), torch-free: 8 bytes of
// little-endian u64 header length N, N bytes of JSON (an object: tensor name -> {"dtype", "shape",
// "data_offsets": [begin, end]} with offsets into the data that follows, plus an optional
// "__metadata__" object of strings; padded with spaces to a multiple of 8 so the data is aligned),
// then the tensors' bytes, little-endian, row-major, with no holes. This file checks and writes
// the layout; model/safetensors.h moves tensors in and out.
#ifndef GMLP_COMMON_SAFETENSORS_H_
#define GMLP_COMMON_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gmlp {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // "F32", "BF16", "I64", ... (SafetensorsDtypeSize knows them)
  std::vector<int64_t> shape;  // [] is a scalar
  uint64_t begin = 0;          // byte range in the data section
  uint64_t end = 0;
};

struct SafetensorsLayout {
  std::vector<SafetensorsEntry> tensors;  // in the order of their data
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data section: 8 + N
};

// Bytes per element of a safetensors dtype name ("F32" -> 4), 0 for a name it does not define.
int SafetensorsDtypeSize(absl::string_view dtype);

// The largest header read (the reference implementation's limit): a bigger N is a corrupt file.
inline constexpr uint64_t kMaxSafetensorsHeader = 100 << 20;

// Checks `file` (a whole safetensors file; `origin` names it in errors) and returns its layout.
// Refused, in one line naming the file and, where there is one, the tensor: fewer than 8 bytes, N
// past the end or over kMaxSafetensorsHeader, a header that is not a JSON object, a tensor entry
// without exactly dtype/shape/data_offsets, an unknown dtype, a negative or overflowing shape,
// offsets whose length is not shape x dtype size or that run past the file, data with holes or
// overlaps, metadata values that are not strings.
absl::StatusOr<SafetensorsLayout> ParseSafetensors(absl::string_view file,
                                                   const std::string& origin);

// The first 8 + N bytes of a file holding `tensors` in this order (their begin/end are set here,
// back to back from 0) and `metadata` (omitted when empty); the data follows.
std::string SafetensorsHeader(std::vector<SafetensorsEntry>& tensors,
                              const std::map<std::string, std::string>& metadata);

}  // namespace gmlp

#endif  // GMLP_COMMON_SAFETENSORS_H_
