// ParseSafetensors: the header and layout checks of every .safetensors file `--init` reads. A
// parsed layout must describe byte ranges inside the file; the header writer's output for the
// parsed entries must parse again to the same layout.
#include <cstdlib>
#include <string>
#include <vector>

#include "common/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string file(reinterpret_cast<const char*>(data), size);
  auto layout = gmlp::ParseSafetensors(file, "fuzz.safetensors");
  if (!layout.ok()) return 0;
  uint64_t bytes = 0;
  for (const gmlp::SafetensorsEntry& e : layout->tensors) {
    if (e.begin > e.end || layout->data_start + e.end > size) std::abort();
    bytes += e.end - e.begin;
  }
  if (layout->data_start + bytes != size) std::abort();
  std::vector<gmlp::SafetensorsEntry> entries = layout->tensors;
  const std::string again =
      gmlp::SafetensorsHeader(entries, layout->metadata) + file.substr(layout->data_start);
  auto reparsed = gmlp::ParseSafetensors(again, "rewritten.safetensors");
  if (!reparsed.ok() || reparsed->tensors.size() != layout->tensors.size() ||
      reparsed->metadata != layout->metadata) {
    std::abort();
  }
  return 0;
}
