#include "study/tasks.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

}  // namespace gmlp::study
