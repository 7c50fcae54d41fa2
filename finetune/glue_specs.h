// The GLUE task specs, finetune/tasks/glue/*.json, compiled into the binary by the build
// (finetune/CMakeLists.txt writes glue_specs.cc from them), so `--task=SST-2` needs no file at
// run time and reads the same JSON through the same parser as any --task_spec file.
#ifndef GMLP_FINETUNE_GLUE_SPECS_H_
#define GMLP_FINETUNE_GLUE_SPECS_H_

#include <vector>

namespace gmlp::finetune {

struct EmbeddedTaskSpec {
  const char* path;  // in the source tree, for messages ("finetune/tasks/glue/SST-2.json")
  const char* json;  // the file's text
};

// In the GLUE benchmark's order: CoLA, SST-2, MRPC, QQP, STS-B, MNLI, QNLI, RTE, WNLI.
const std::vector<EmbeddedTaskSpec>& GlueTaskSpecTexts();

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_GLUE_SPECS_H_
