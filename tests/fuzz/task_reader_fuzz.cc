// ReadSplit over a fuzzed data file in each layout: the first byte picks TSV (with a header and a
// split column), JSONL or a JSON object of rows; the rest is the file.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "finetune/reader.h"
#include "finetune/task.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

gmlp::finetune::TaskSpec Spec(const char* layout) {
  const nlohmann::json j = {
      {"name", "fuzz"},
      {"layout", layout},
      {"labels", {"no", "yes"}},
      {"metrics", {"accuracy"}},
      {"sentence1", "a"},
      {"sentence2", "b"},
      {"label", "label"},
      {"index", "id"},
      {"train", {{"file", "input.data"}}},
      {"eval", {{{"name", "dev"}, {"file", "input.data"}}}},
  };
  auto spec = gmlp::finetune::TaskSpec::FromJson(j, "fuzz");
  if (!spec.ok()) {
    std::fprintf(stderr, "the harness's spec is refused: %s\n", spec.status().ToString().c_str());
    std::abort();
  }
  return *spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const gmlp::finetune::TaskSpec kSpecs[] = {Spec("tsv"), Spec("jsonl"),
                                                    Spec("json_object")};
  const gmlp::finetune::TaskSpec& spec = kSpecs[data[0] % 3];
  gmlp::fuzz::WriteInput("input.data", data + 1, size - 1);
  for (bool strict : {false, true}) {
    gmlp::finetune::ReadOptions options;
    options.strict_utf8 = strict;
    (void)gmlp::finetune::ReadSplit(spec, spec.train, gmlp::fuzz::ScratchDir(), options);
  }
  return 0;
}
