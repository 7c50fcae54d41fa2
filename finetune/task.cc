#include "finetune/task.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"

namespace gmlp::finetune {
namespace {

const std::set<std::string>& KnownMetrics() {
  static const auto* m = new std::set<std::string>{"accuracy", "f1", "mcc", "pearson", "spearman"};
  return *m;
}

const std::set<std::string>& KnownLayouts() {
  static const auto* m = new std::set<std::string>{"tsv", "jsonl", "json_object"};
  return *m;
}

absl::Status CheckSplit(const TaskSpec& task, const SplitSpec& s, bool needs_label) {
  const std::string where = absl::StrCat("task '", task.name, "', split '", s.name, "'");
  if (s.name.empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": split has no name"));
  if (s.file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": no \"file\"; name the data file"));
  }
  if (!KnownLayouts().count(s.layout)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": unknown layout '", s.layout, "'; use tsv, jsonl or json_object"));
  }
  if (s.sentence1.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no \"sentence1\" column; name the column holding the text"));
  }
  if (needs_label && s.label.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no \"label\" column; training and eval splits need labels"));
  }
  if (s.split_column.empty() != s.split_value.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": give both \"split_column\" and \"split_value\", or neither"));
  }
  if (!task.train.sentence2.empty() && s.sentence2.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        ": the task is a sentence-pair task (train has sentence2) but this split has no "
        "\"sentence2\" column"));
  }
  return absl::OkStatus();
}

// Whether `path`, joined to a directory, names something inside it: not empty, not absolute, no
// ".." component. Split names and submission names become files under --output.
bool StaysInside(absl::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return false;
  }
  return true;
}

// `key` at `path` ("eval[1].label"; the key alone at the spec's top level).
std::string KeyPath(const std::string& path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

// A split object names only a split's keys.
absl::Status CheckSplitKeys(const nlohmann::json& j, const std::string& path,
                            absl::string_view origin) {
  static const std::set<std::string> kSplitKeys = {
      "name",  "file",         "layout",      "header",     "sentence1", "sentence2",   "label",
      "index", "split_column", "split_value", "submission", "optional",  "max_examples"};
  for (const auto& item : j.items()) {
    if (!kSplitKeys.count(item.key())) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": unknown key \"", KeyPath(path, item.key()),
                       "\"; a split's keys are ", absl::StrJoin(kSplitKeys, ", ")));
    }
  }
  return absl::OkStatus();
}

// The string and bool fields `j` gives (a column may also be a number), over `s`.
absl::Status ReadSplitFields(const nlohmann::json& j, const std::string& path,
                             absl::string_view origin, SplitSpec* s) {
  std::string key;  // the key being read, for a type error
  try {
    auto str = [&](const char* k, std::string* out) {
      key = k;
      if (j.contains(k)) {
        const auto& v = j.at(k);
        *out = v.is_number_integer() ? std::to_string(v.get<int64_t>()) : v.get<std::string>();
      }
    };
    str("name", &s->name);
    str("file", &s->file);
    str("layout", &s->layout);
    str("sentence1", &s->sentence1);
    str("sentence2", &s->sentence2);
    str("label", &s->label);
    str("index", &s->index);
    str("split_column", &s->split_column);
    str("split_value", &s->split_value);
    str("submission", &s->submission);
    key = "header";
    if (j.contains(key)) s->header = j.at(key).get<bool>();
    key = "optional";
    if (j.contains(key)) s->optional = j.at(key).get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", KeyPath(path, key), " has ",
                                                   j.at(key).dump(), ", of the wrong type (",
                                                   e.what(), ")"));
  }
  return absl::OkStatus();
}

// max_examples: a whole number >= 0 (0 keeps every row; a negative or fractional count is a
// mistake, not "all").
absl::Status ReadMaxExamples(const nlohmann::json& j, const std::string& path,
                             absl::string_view origin, SplitSpec* s) {
  if (!j.contains("max_examples")) return absl::OkStatus();
  const nlohmann::json& v = j.at("max_examples");
  if (!v.is_number_integer() ||
      (v.is_number_unsigned()
           ? v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
           : v.get<int64_t>() < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", KeyPath(path, "max_examples"),
                                                   " is ", v.dump(),
                                                   "; give a whole number of rows >= 0 (0 = all)"));
  }
  s->max_examples = v.get<int64_t>();
  return absl::OkStatus();
}

// Layout fields of a split, from `j` where present, else from `defaults`. `path` is the split's
// JSON path in error messages ("train", "eval[1]"); empty for the spec's top level, whose other
// keys the caller checks.
absl::StatusOr<SplitSpec> SplitFromJson(const nlohmann::json& j, const SplitSpec& defaults,
                                        const std::string& default_name, const std::string& path,
                                        absl::string_view origin) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": ", path, " must be a JSON object like {\"file\": ...}"));
  }
  if (!path.empty()) GMLP_RETURN_IF_ERROR(CheckSplitKeys(j, path, origin));
  SplitSpec s = defaults;
  s.name = default_name;
  GMLP_RETURN_IF_ERROR(ReadSplitFields(j, path, origin, &s));
  GMLP_RETURN_IF_ERROR(ReadMaxExamples(j, path, origin, &s));
  // Split and submission names become files under --output.
  const std::pair<const char*, const std::string*> output_names[] = {{"name", &s.name},
                                                                     {"submission", &s.submission}};
  for (const auto& [k, value] : output_names) {
    if (!path.empty() && j.contains(k) && !StaysInside(*value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": ", KeyPath(path, k), " is \"", *value,
          "\", which names a file under --output: give a relative name without \"..\""));
    }
  }
  return s;
}

// The splits under `key` ("eval" or "test"): one split object, or a list of them named
// default_name, default_name2, ...; none when the key is absent.
absl::Status ReadSplitList(const nlohmann::json& j, const char* key, const SplitSpec& defaults,
                           const std::string& default_name, absl::string_view origin,
                           std::vector<SplitSpec>* out) {
  if (!j.contains(key)) return absl::OkStatus();
  const nlohmann::json& list = j.at(key);
  if (list.is_object()) {  // one split may be given without the list
    GMLP_ASSIGN_OR_RETURN(SplitSpec s, SplitFromJson(list, defaults, default_name, key, origin));
    out->push_back(s);
    return absl::OkStatus();
  }
  if (!list.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": \"", key, "\" must be a list of split objects"));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string name = i == 0 ? default_name : absl::StrCat(default_name, i + 1);
    GMLP_ASSIGN_OR_RETURN(SplitSpec s, SplitFromJson(list[i], defaults, name,
                                                     absl::StrCat(key, "[", i, "]"), origin));
    out->push_back(s);
  }
  return absl::OkStatus();
}

}  // namespace

nlohmann::json SplitSpec::ToJson() const {
  nlohmann::json j = {{"name", name},     {"file", file},           {"layout", layout},
                      {"header", header}, {"sentence1", sentence1}, {"sentence2", sentence2},
                      {"label", label},   {"index", index}};
  if (!split_column.empty()) {
    j["split_column"] = split_column;
    j["split_value"] = split_value;
  }
  if (!submission.empty()) j["submission"] = submission;
  if (optional) j["optional"] = true;
  if (max_examples > 0) j["max_examples"] = max_examples;
  return j;
}

absl::Status TaskSpec::Validate() const {
  if (name.empty()) return absl::InvalidArgumentError("task spec has no \"name\"");
  if (metrics.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task '", name, "': no \"metrics\"; list e.g. [\"accuracy\"] (the first selects epochs)"));
  }
  for (const std::string& m : metrics) {
    if (!KnownMetrics().count(m)) {
      return absl::InvalidArgumentError(
          absl::StrCat("task '", name, "': unknown metric '", m,
                       "'; use accuracy, f1, mcc, pearson or spearman"));
    }
    const bool regression_metric = m == "pearson" || m == "spearman";
    if (regression_metric != is_regression()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task '", name, "': metric '", m, "' ",
          is_regression() ? "needs class labels, but the task has no \"labels\" (regression)"
                          : "is for regression, but the task lists class \"labels\""));
    }
    if (m == "f1" && labels.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task '", name, "': f1 is binary F1 of the second label; the task needs 2 labels"));
    }
  }
  std::set<std::string> seen;
  for (const std::string& l : labels) {
    if (!seen.insert(absl::AsciiStrToLower(l)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("task '", name, "': label '", l, "' is listed twice (case-insensitive)"));
    }
  }
  GMLP_RETURN_IF_ERROR(CheckSplit(*this, train, true));
  if (eval.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task '", name, "': no eval split; the first one selects the best epoch"));
  }
  std::set<std::string> names = {train.name};
  for (const SplitSpec& s : eval) {
    GMLP_RETURN_IF_ERROR(CheckSplit(*this, s, true));
    if (!names.insert(s.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("task '", name, "': two splits are named '", s.name, "'"));
    }
  }
  for (const SplitSpec& s : test) {
    GMLP_RETURN_IF_ERROR(CheckSplit(*this, s, false));
    if (!names.insert(s.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("task '", name, "': two splits are named '", s.name, "'"));
    }
  }
  return absl::OkStatus();
}

nlohmann::json TaskSpec::ToJson() const {
  nlohmann::json j = {
      {"name", name}, {"labels", labels}, {"metrics", metrics}, {"train", train.ToJson()}};
  j["eval"] = nlohmann::json::array();
  for (const SplitSpec& s : eval) j["eval"].push_back(s.ToJson());
  j["test"] = nlohmann::json::array();
  for (const SplitSpec& s : test) j["test"].push_back(s.ToJson());
  if (skip_malformed_rows) j["skip_malformed_rows"] = true;
  if (!data_dir.empty()) j["data_dir"] = data_dir;
  return j;
}

absl::StatusOr<TaskSpec> TaskSpec::FromJson(const nlohmann::json& j, absl::string_view origin) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": a task spec is one JSON object"));
  }
  static const std::set<std::string> kKeys = {
      "name",   "labels",      "metrics",   "train",     "eval",  "test",  "skip_malformed_rows",
      "layout", "header",      "sentence1", "sentence2", "label", "index", "split_column",
      "file",   "description", "data_dir"};
  for (const auto& [key, value] : j.items()) {
    if (!kKeys.count(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": unknown key \"", key, "\"; known: ", absl::StrJoin(kKeys, ", ")));
    }
  }
  TaskSpec t;
  SplitSpec defaults;
  try {
    t.name = j.value("name", std::string());
    t.data_dir = j.value("data_dir", std::string());
    if (j.contains("labels")) t.labels = j.at("labels").get<std::vector<std::string>>();
    if (j.contains("metrics")) t.metrics = j.at("metrics").get<std::vector<std::string>>();
    t.skip_malformed_rows = j.value("skip_malformed_rows", false);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": wrong value type (", e.what(), ")"));
  }
  // Top-level layout fields are the defaults of every split.
  GMLP_ASSIGN_OR_RETURN(defaults, SplitFromJson(j, SplitSpec(), "", "", origin));
  defaults.file.clear();
  defaults.submission.clear();
  if (!j.contains("train")) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": no \"train\" split; add \"train\": {\"file\": ...}"));
  }
  GMLP_ASSIGN_OR_RETURN(t.train, SplitFromJson(j.at("train"), defaults, "train", "train", origin));
  GMLP_RETURN_IF_ERROR(ReadSplitList(j, "eval", defaults, "dev", origin, &t.eval));
  GMLP_RETURN_IF_ERROR(ReadSplitList(j, "test", defaults, "test", origin, &t.test));
  absl::Status st = t.Validate();
  if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", st.message()));
  return t;
}

absl::StatusOr<TaskSpec> SecondSegmentOnly(TaskSpec task) {
  if (!task.is_pair()) {
    return absl::InvalidArgumentError(absl::StrCat("--second_segment_only: ", task.name,
                                                   " is a single-sentence task (no sentence2)"));
  }
  auto second_only = [](SplitSpec& s) {
    s.sentence1 = s.sentence2;
    s.sentence2.clear();
  };
  second_only(task.train);
  for (SplitSpec& s : task.eval) second_only(s);
  for (SplitSpec& s : task.test) second_only(s);
  return task;
}

absl::StatusOr<TaskSpec> LoadTaskSpec(const std::string& path) {
  GMLP_ASSIGN_OR_RETURN(
      const nlohmann::json j,
      ReadJsonFile(path, "fix the task spec (finetune/tasks/*.json are examples)"));
  return TaskSpec::FromJson(j, path);
}

std::string ResolveDataPath(const std::string& data_dir, const std::string& file) {
  if (!file.empty() && file.front() == '/') return file;
  return JoinPath(data_dir, file);
}

}  // namespace gmlp::finetune
