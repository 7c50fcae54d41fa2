#include "study/results_table.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/status.h"

namespace gmlp::study {
namespace {

const std::vector<std::string>& Columns() {
  static const auto* c = new std::vector<std::string>{
      "encoder", "size",   "params", "task",       "kind",        "split",   "seed",
      "control", "metric", "value",  "n_examples", "predictions", "reported"};
  return *c;
}

const std::set<std::string>& RequiredColumns() {
  static const auto* c =
      new std::set<std::string>{"encoder", "size",    "task",   "kind",  "split",
                                "seed",    "control", "metric", "value", "n_examples"};
  return *c;
}

std::string Quote(const std::string& field) {
  if (field.find_first_of(",\"\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// One CSV line into fields ("..." quoting with "" for a quote; no newlines inside fields).
absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  if (quoted) return absl::InvalidArgumentError("unterminated quoted field");
  return fields;
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

absl::Status LoadPredictions(const std::string& csv_dir, ResultRow* row) {
  const std::string path = !row->predictions.empty() && row->predictions.front() == '/'
                               ? row->predictions
                               : JoinPath(csv_dir, row->predictions);
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 || line.empty()) continue;  // header
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    if (f.size() < 3) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": expected index<TAB>prediction<TAB>gold, found ",
                       f.size(), " field(s)"));
    }
    row->example_ids.emplace_back(absl::StripAsciiWhitespace(f[0]));
    row->correct.push_back(
        absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(f[1]), absl::StripAsciiWhitespace(f[2])));
  }
  if (static_cast<int64_t>(row->correct.size()) != row->n_examples) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", row->correct.size(), " predictions, but results.csv says ",
                     row->n_examples, " examples for ", row->encoder, " ", row->task));
  }
  return absl::OkStatus();
}

}  // namespace

const char* ControlDescription(const std::string& control) {
  if (control == "second_only") return "second segment only";
  if (control == "scratch") return "from scratch";
  if (control == "majority") return "majority class";
  return "";
}

std::string ResultsTableHeader() { return absl::StrJoin(Columns(), ","); }

std::string FormatResultsTable(const std::vector<ResultRow>& rows) {
  std::string out = ResultsTableHeader() + "\n";
  for (const ResultRow& r : rows) {
    const std::vector<std::string> f = {r.encoder,
                                        r.size,
                                        std::to_string(r.params),
                                        r.task,
                                        r.kind,
                                        r.split,
                                        std::to_string(r.seed),
                                        r.control,
                                        r.metric,
                                        absl::StrFormat("%.10g", r.value),
                                        std::to_string(r.n_examples),
                                        r.predictions,
                                        r.reported ? "1" : "0"};
    std::vector<std::string> quoted;
    for (const std::string& s : f) quoted.push_back(Quote(s));
    absl::StrAppend(&out, absl::StrJoin(quoted, ","), "\n");
  }
  return out;
}

namespace {

using ColumnIndex = std::map<std::string, size_t>;

// The header line: every required column present.
absl::StatusOr<ColumnIndex> ReadHeader(const std::vector<std::string>& fields,
                                       absl::string_view origin) {
  ColumnIndex col;
  for (size_t i = 0; i < fields.size(); ++i) {
    col[std::string(absl::StripAsciiWhitespace(fields[i]))] = i;
  }
  for (const std::string& c : RequiredColumns()) {
    if (!col.count(c)) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":1: no \"", c,
                                                     "\" column; results.csv needs ",
                                                     absl::StrJoin(RequiredColumns(), ", ")));
    }
  }
  return col;
}

// One data line; an error names origin:line and the column.
absl::StatusOr<ResultRow> ReadRow(const std::vector<std::string>& fields, const ColumnIndex& col,
                                  absl::string_view origin, int64_t line_no) {
  auto get = [&](const char* name) -> std::string {
    auto it = col.find(name);
    if (it == col.end() || it->second >= fields.size()) return "";
    return std::string(absl::StripAsciiWhitespace(fields[it->second]));
  };
  auto bad = [&](const char* name) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ":", line_no, ": bad ", name, " '", get(name), "'"));
  };
  ResultRow r;
  r.encoder = get("encoder");
  r.size = get("size");
  r.task = get("task");
  r.kind = get("kind");
  r.split = get("split");
  r.control = get("control");
  r.metric = get("metric");
  r.predictions = get("predictions");
  if (r.control.empty()) r.control = "none";
  if (!get("params").empty() && !absl::SimpleAtoi(get("params"), &r.params)) return bad("params");
  if (!absl::SimpleAtoi(get("seed"), &r.seed)) return bad("seed");
  if (!absl::SimpleAtod(get("value"), &r.value)) return bad("value");
  if (!absl::SimpleAtoi(get("n_examples"), &r.n_examples) || r.n_examples < 0) {
    return bad("n_examples");
  }
  const std::string reported = get("reported");
  if (!reported.empty() && reported != "0" && reported != "1") return bad("reported");
  r.reported = reported != "0";
  if (r.kind != "single" && r.kind != "cross" && r.kind != "probe") return bad("kind");
  if (r.control != "none" && r.control != "second_only" && r.control != "scratch" &&
      r.control != "majority") {
    return bad("control");
  }
  if (r.task.empty()) return bad("task");
  return r;
}

}  // namespace

absl::StatusOr<std::vector<ResultRow>> ParseResultsTable(absl::string_view text,
                                                         absl::string_view origin) {
  std::vector<ResultRow> rows;
  ColumnIndex col;
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_no == 1 && absl::StartsWith(line, "\xEF\xBB\xBF")) line.remove_prefix(3);
    if (line.empty()) continue;
    auto fields = SplitCsvLine(line);
    if (!fields.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", line_no, ": ", fields.status().message()));
    }
    if (col.empty()) {
      GMLP_ASSIGN_OR_RETURN(col, ReadHeader(*fields, origin));
      continue;
    }
    GMLP_ASSIGN_OR_RETURN(ResultRow r, ReadRow(*fields, col, origin, line_no));
    rows.push_back(std::move(r));
  }
  if (col.empty()) return absl::InvalidArgumentError(absl::StrCat(origin, ": empty results table"));
  return rows;
}

absl::StatusOr<std::vector<ResultRow>> ReadResultsTable(const std::string& path) {
  GMLP_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  GMLP_ASSIGN_OR_RETURN(std::vector<ResultRow> rows, ParseResultsTable(text, path));
  const std::string dir = Dirname(path);
  for (ResultRow& r : rows) {
    if (!r.predictions.empty()) GMLP_RETURN_IF_ERROR(LoadPredictions(dir, &r));
  }
  return rows;
}

void AddSeedRow(const ResultRow& row, SeedRuns* runs) {
  runs->values.push_back(row.value);
  runs->n_examples.push_back(row.n_examples);
  runs->correct.push_back(row.correct);
  runs->proportion = row.metric == "accuracy";
  runs->pairing_key = row.task + "/" + row.split;
}

void FinishSeedRuns(SeedRuns* runs) {
  bool every = runs->proportion;
  for (const auto& c : runs->correct) every = every && !c.empty();
  if (!every) runs->correct.clear();  // mixed: binomial draws for every seed
}

}  // namespace gmlp::study
