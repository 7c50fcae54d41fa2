// ApplyStudyConfigFile and StudyConfig::Validate: `gmlp study --config=FILE` (study/configs/*.json)
// and the study.json a study directory records, read back to resume it. A valid config must
// survive its own round trip (ToJson, then MergeJson over the defaults) unchanged, and a study
// recorded with it must be resumable by it (no SettingsChanges).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "study/config.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void CheckRoundTrip(const gmlp::study::StudyConfig& config) {
  const nlohmann::json written = config.ToJson();
  gmlp::study::StudyConfig reread;
  if (!reread.MergeJson(written, "round trip").ok() || !reread.Validate().ok() ||
      reread.ToJson() != written || !gmlp::study::SettingsChanges(written, reread).empty()) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = gmlp::fuzz::WriteInput("study.json", data, size);
  gmlp::study::StudyConfig config;
  if (!gmlp::study::ApplyStudyConfigFile(path, &config).ok() || !config.Validate().ok()) return 0;
  // WithDerivedDefaults reads the manifest of an existing shard directory: not this target's.
  if (!config.shards.empty()) return 0;
  auto derived = config.WithDerivedDefaults();
  if (!derived.ok()) std::abort();  // nothing but a manifest can fail
  CheckRoundTrip(*derived);
  return 0;
}
