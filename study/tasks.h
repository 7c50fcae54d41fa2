// The study's tasks: which finetuning task each is, which split is reported, and whether it is
// single-sentence or cross-sentence (the paper's split of GLUE). The metric (the task's primary
// one) and the data folder come from finetune/, not from this table.
#ifndef GMLP_STUDY_TASKS_H_
#define GMLP_STUDY_TASKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "finetune/task.h"

namespace gmlp::study {

struct StudyTask {
  std::string name;       // "SST-2", "MNLI-like", ...
  std::string glue_task;  // a GLUE task name, or
  std::string task_spec;  // a task spec file (relative to the repo root or absolute)
  std::string kind;       // single | cross | probe
  std::string report_split;
  // > 0: training examples held out to select the epoch (FinetuneJob::select_from_train), for
  // tasks whose one labelled eval split is the reported one.
  int64_t select_from_train = 0;
};

// The alignment probe's tasks (probe-aligned, probe-shifted, probe-shift-<k>): their specs are
// generated into the study's data folder.
bool IsProbeTask(const std::string& name);
// The k of every probe-shift-<k> task among `tasks`, in order, without repeats.
std::vector<uint64_t> ProbeShifts(const std::vector<std::string>& tasks);

// The built-in study tasks: SST-2 and CoLA (single); MNLI-like (train MNLI subset, report XNLI
// English test), SICK, RTE, SNLI-subset and STS-B (cross); the probe's versions.
absl::StatusOr<StudyTask> FindStudyTask(const std::string& name);
std::vector<std::string> StudyTaskNames();

}  // namespace gmlp::study

#endif  // GMLP_STUDY_TASKS_H_
