// ReadJsonFile: every JSON file gmlp reads (configs, specs, manifests, checkpoint state).
#include "common/json_file.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("input.json", data, size);
  auto j = gmlp::ReadJsonFile(path, "fuzz");
  if (j.ok()) (void)j->dump();
  return 0;
}
