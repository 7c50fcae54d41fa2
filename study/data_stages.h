// The study's data stages: the corpus extract without its held-out tail, the tokenizer, the
// shards and the alignment probe, each skipped when its output is there, their times kept.
#ifndef GMLP_STUDY_DATA_STAGES_H_
#define GMLP_STUDY_DATA_STAGES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "study/config.h"
#include "study/progress.h"
#include "study/report.h"

namespace gmlp::study {

// Where the data stages put their outputs, or the existing ones the config names.
struct StudyData {
  std::string tokenizer_model;
  std::string shard_dir;
  std::string probe_dir;  // the alignment probe's task specs, when a probe task runs
};

// The data paths a study uses: the tokenizer and shards the config names, else those its data
// stages write under <output>/data.
StudyData DataPaths(const StudyConfig& config);

// The data stages' wall times, kept in data/stages.json across invocations (a resumed study
// reports the stages an earlier invocation ran).
class StageLog {
 public:
  explicit StageLog(std::string path);
  // Runs `stage` and records its time; `work` is read after it ran.
  absl::Status Time(const std::string& name, const std::function<absl::Status()>& stage,
                    const double* work = nullptr, const std::string& unit = "");
  const std::vector<StageTiming>& stages() const { return stages_; }

 private:
  std::string path_;
  std::vector<StageTiming> stages_;
};

// Corpus extract (without the held-out tail), tokenizer, shards, probe; each skipped when
// already there.
absl::StatusOr<StudyData> PrepareData(const StudyConfig& config, const Progress& progress,
                                      StageLog* log);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_DATA_STAGES_H_
