// The GLUE task table: the task specs of finetune/tasks/glue/, compiled in (glue_specs.h).
#include <cstdio>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "finetune/glue_specs.h"
#include "finetune/task.h"

namespace gmlp::finetune {
namespace {

const std::vector<TaskSpec>& GlueTable() {
  static const auto* const kTable = [] {
    auto* tasks = new std::vector<TaskSpec>;
    for (const EmbeddedTaskSpec& spec : GlueTaskSpecTexts()) {
      // Shipped files, checked by tests/finetune_reader_test.cc: a failure here is a build of a
      // broken file, not a user's input.
      const nlohmann::json j =
          nlohmann::json::parse(spec.json, nullptr, /*allow_exceptions=*/false);
      absl::StatusOr<TaskSpec> task = TaskSpec::FromJson(j, spec.path);
      if (!task.ok()) {
        std::fprintf(stderr, "gmlp: the built-in GLUE task spec %s is broken: %s\n", spec.path,
                     std::string(task.status().message()).c_str());
        std::abort();
      }
      tasks->push_back(*std::move(task));
    }
    return tasks;
  }();
  return *kTable;
}

}  // namespace

absl::StatusOr<TaskSpec> GlueTask(absl::string_view name) {
  for (const TaskSpec& t : GlueTable()) {
    if (absl::EqualsIgnoreCase(t.name, name)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown GLUE task '", name, "'; known: ", absl::StrJoin(GlueTaskNames(), ", "),
                   " (or describe your data with --task_spec=file.json)"));
}

std::vector<std::string> GlueTaskNames() {
  std::vector<std::string> names;
  for (const TaskSpec& t : GlueTable()) names.push_back(t.name);
  return names;
}

}  // namespace gmlp::finetune
