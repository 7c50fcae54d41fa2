// ReadManifest: a shard directory's manifest.json, as `gmlp pretrain` and the loader read it.
#include "data/manifest.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("manifest.json", data, size);
  auto m = gmlp::data::ReadManifest(path);
  if (m.ok()) (void)m->Totals("train");
  return 0;
}
