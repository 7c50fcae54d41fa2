#include "study/tasks.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_util.h"

namespace gmlp::study {
namespace {

const std::vector<StudyTask>& StudyTaskTable() {
  static const auto* t = new std::vector<StudyTask>{
      // name          GLUE task  task spec                            kind      reported split
      {"SST-2", "SST-2", "", "single", "dev"},
      {"CoLA", "CoLA", "", "single", "dev"},
      {"MNLI-like", "", "finetune/tasks/MNLI-like.json", "cross", "xnli_en_test"},
      {"SICK", "", "finetune/tasks/SICK.json", "cross", "test"},
      {"RTE", "RTE", "", "cross", "dev"},
      {"SNLI-subset", "", "finetune/tasks/SNLI-subset.json", "cross", "dev"},
      {"STS-B", "STS-B", "", "cross", "dev"},
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

finetune::FinetuneJob StudyTaskJob(const StudyTask& task, const std::string& data_root) {
  finetune::FinetuneJob job;
  job.task = task.glue_task;
  job.task_spec = task.task_spec;
  if (!task.task_spec.empty() && !PathExists(task.task_spec)) {
    // Relative to the repo root: found from the build directory (build/gmlp) or the source
    // tree this was built from when the study runs elsewhere (tests).
    const std::string beside = JoinPath(JoinPath(ExecutableDir(), ".."), task.task_spec);
    job.task_spec = PathExists(beside) ? beside : JoinPath(GMLP_STUDY_SOURCE_DIR, task.task_spec);
  }
  job.data_root = data_root;
  return job;
}

}  // namespace gmlp::study
