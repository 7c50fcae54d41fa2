// `gmlp study`: the paper's accuracy-vs-parameters experiment end to end. From a raw corpus it
// trains a tokenizer and prepares shards (each skipped when its output exists), then for every
// cell of the grid (encoder x size, plus pretrain-only SGU variants) pretrains on the same
// shards for the same number of steps, measures held-out MLM perplexity, and finetunes on each
// study task with k seeds. Every finished step leaves a marker written atomically, so a killed
// study resumes where it stopped, losing at most the step in progress. Finally writes
// results.csv, summary.csv, report.md and the plot (report.h).
#ifndef GMLP_STUDY_STUDY_H_
#define GMLP_STUDY_STUDY_H_

#include <string>

#include "absl/status/statusor.h"
#include "study/config.h"

namespace gmlp::study {

// Runs (or resumes) the study and returns the path of report.md.
absl::StatusOr<std::string> RunStudy(const StudyConfig& config);

// Writes report.md, the tables and plots from the cells an earlier (or still running) RunStudy
// in config.output has finished, running nothing; the report names the cells not finished yet.
// For a long run in parts: what it says so far. Refused when the settings differ from the
// study's or no cell has finished.
absl::StatusOr<std::string> ReportStudySoFar(const StudyConfig& config);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_STUDY_H_
