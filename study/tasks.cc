#include "study/tasks.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"
#include "study/probe.h"

namespace gmlp::study {
namespace {

const std::vector<StudyTask>& StudyTaskTable() {
  static const auto* t = new std::vector<StudyTask>{
      // name        GLUE task  task spec                             kind    reported  select
      {"SST-2", "SST-2", "", "single", "dev", 1000},
      {"CoLA", "CoLA", "", "single", "dev", 1000},
      {"MNLI-like", "", "finetune/tasks/MNLI-like.json", "cross", "xnli_en_test", 0},
      {"SICK", "", "finetune/tasks/SICK.json", "cross", "test", 0},
      {"RTE", "RTE", "", "cross", "dev", 250},
      {"SNLI-subset", "", "finetune/tasks/SNLI-subset.json", "cross", "dev", 0},
      {"STS-B", "STS-B", "", "cross", "dev", 500},
      {kProbeAlignedTask, "", "aligned/task.json", "probe", "test", 0},
      {kProbeShiftedTask, "", "shifted/task.json", "probe", "test", 0},
  };
  return *t;
}

}  // namespace

absl::StatusOr<StudyTask> FindStudyTask(const std::string& name) {
  for (const StudyTask& t : StudyTaskTable()) {
    if (absl::EqualsIgnoreCase(t.name, name)) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--tasks: unknown study task '", name, "'; known: ", absl::StrJoin(StudyTaskNames(), ", ")));
}

std::vector<std::string> StudyTaskNames() {
  std::vector<std::string> out;
  for (const StudyTask& t : StudyTaskTable()) out.push_back(t.name);
  return out;
}

bool IsProbeTask(const std::string& name) {
  return absl::EqualsIgnoreCase(name, kProbeAlignedTask) ||
         absl::EqualsIgnoreCase(name, kProbeShiftedTask);
}

finetune::FinetuneJob StudyTaskJob(const StudyTask& task, const std::string& data_root,
                                   const std::string& probe_dir) {
  finetune::FinetuneJob job;
  job.task = task.glue_task;
  job.task_spec = task.task_spec;
  job.select_from_train = task.select_from_train;
  if (IsProbeTask(task.name)) {
    job.task_spec = JoinPath(probe_dir, task.task_spec);
  } else if (!task.task_spec.empty() && !PathExists(task.task_spec)) {
    // Relative to the repo root: found from the build directory (build/gmlp) or the source
    // tree this was built from when the study runs elsewhere (tests).
    const std::string beside = JoinPath(JoinPath(ExecutableDir(), ".."), task.task_spec);
    job.task_spec = PathExists(beside) ? beside : JoinPath(GMLP_STUDY_SOURCE_DIR, task.task_spec);
  }
  job.data_root = data_root;
  return job;
}

}  // namespace gmlp::study
