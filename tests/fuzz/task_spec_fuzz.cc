// LoadTaskSpec: a user's task spec JSON (`gmlp finetune --task_spec`).
#include "finetune/task.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("spec.json", data, size);
  (void)gmlp::finetune::LoadTaskSpec(path);
  return 0;
}
