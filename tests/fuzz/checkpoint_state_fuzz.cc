// A checkpoint's state.json as resuming and LoadPretrainedEncoder read it: ReadJsonFile, then
// ParseCheckpointState.
#include "common/json_file.h"
#include "pretrain/checkpoint_state.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("state.json", data, size);
  auto j = gmlp::ReadJsonFile(path, "fuzz");
  if (j.ok()) (void)gmlp::pretrain::ParseCheckpointState(*j, path);
  return 0;
}
