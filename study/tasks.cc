#include "study/tasks.h"

#include <algorithm>

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
  if (IsProbeShiftTask(name)) {
    const int64_t k = ProbeShiftOf(name);
    return StudyTask{ProbeShiftTask(k), "",     absl::StrCat("shift-", k, "/task.json"),
                     "probe",           "test", 0};
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--tasks: unknown study task '", name, "'; known: ", absl::StrJoin(StudyTaskNames(), ", ")));
}

std::vector<std::string> StudyTaskNames() {
  std::vector<std::string> out;
  for (const StudyTask& t : StudyTaskTable()) out.push_back(t.name);
  out.push_back(absl::StrCat(kProbeShiftTaskPrefix, "<k> (k = 0..", kMaxProbeShift, ")"));
  return out;
}

bool IsProbeTask(const std::string& name) {
  return absl::EqualsIgnoreCase(name, kProbeAlignedTask) ||
         absl::EqualsIgnoreCase(name, kProbeShiftedTask) || IsProbeShiftTask(name);
}

std::vector<uint64_t> ProbeShifts(const std::vector<std::string>& tasks) {
  std::vector<uint64_t> out;
  for (const std::string& t : tasks) {
    if (!IsProbeShiftTask(t)) continue;
    const uint64_t k = static_cast<uint64_t>(ProbeShiftOf(t));
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

}  // namespace gmlp::study
