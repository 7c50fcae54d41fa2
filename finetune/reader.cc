#include "finetune/reader.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/json_file.h"
#include "common/status.h"
#include "tokenizer/utf8.h"

namespace gmlp::finetune {
namespace {

constexpr absl::string_view kBom = "\xEF\xBB\xBF";

// The roles a split reads, in a fixed order; an empty column name means "not read".
enum Role { kSentence1 = 0, kSentence2, kLabel, kIndex, kSplit, kNumRoles };
constexpr const char* kRoleNames[kNumRoles] = {"sentence1", "sentence2", "label", "index",
                                               "split_column"};

std::vector<std::string> RoleColumns(const SplitSpec& s) {
  return {s.sentence1, s.sentence2, s.label, s.index, s.split_column};
}

bool IsNumber(absl::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One row as the fields of each role ("" where the role is not read).
struct RawRow {
  int64_t line = 0;
  std::string fields[kNumRoles];
};

class ExampleBuilder {
 public:
  ExampleBuilder(const TaskSpec& task, const SplitSpec& split, SplitData* out)
      : task_(task), split_(split), out_(out) {
    for (size_t i = 0; i < task.labels.size(); ++i) {
      label_index_[absl::AsciiStrToLower(task.labels[i])] = static_cast<int64_t>(i);
    }
  }

  absl::Status Add(RawRow row) {
    if (!split_.split_column.empty() &&
        absl::StripAsciiWhitespace(row.fields[kSplit]) != split_.split_value) {
      return absl::OkStatus();
    }
    if (split_.max_examples > 0 &&
        static_cast<int64_t>(out_->examples.size()) >= split_.max_examples) {
      return absl::OkStatus();
    }
    Example e;
    e.line = row.line;
    e.text_a = std::string(absl::StripAsciiWhitespace(row.fields[kSentence1]));
    e.text_b = std::string(absl::StripAsciiWhitespace(row.fields[kSentence2]));
    e.id = split_.index.empty() ? std::to_string(out_->examples.size())
                                : std::string(absl::StripAsciiWhitespace(row.fields[kIndex]));
    if (!split_.label.empty()) {
      const std::string label(absl::StripAsciiWhitespace(row.fields[kLabel]));
      if (task_.is_regression()) {
        if (!absl::SimpleAtod(label, &e.score)) {
          return absl::InvalidArgumentError(
              absl::StrCat(out_->path, ":", row.line, ": label '", label, "' in column '",
                           split_.label, "' is not a number; this task is a regression"));
        }
      } else {
        auto it = label_index_.find(absl::AsciiStrToLower(label));
        if (it == label_index_.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              out_->path, ":", row.line, ": label '", label, "' in column '", split_.label,
              "' is not one of the task's labels [", absl::StrJoin(task_.labels, ", "),
              "]; fix the row or the task's \"labels\""));
        }
        e.label = it->second;
      }
    }
    out_->examples.push_back(std::move(e));
    return absl::OkStatus();
  }

 private:
  const TaskSpec& task_;
  const SplitSpec& split_;
  SplitData* out_;
  std::map<std::string, int64_t> label_index_;
};

// Lines of a text, numbered from 1.
class LineCursor {
 public:
  explicit LineCursor(absl::string_view text) : text_(text) {}
  bool Next(absl::string_view* line) {
    if (pos_ >= text_.size()) return false;
    size_t nl = text_.find('\n', pos_);
    if (nl == absl::string_view::npos) nl = text_.size();
    *line = text_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    ++line_no_;
    return true;
  }
  int64_t line_no() const { return line_no_; }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int64_t line_no_ = 0;
};

// The 0-based column of each role (-1: the split does not read it), by header name or number.
absl::Status FindRoleColumns(const SplitSpec& split, const std::vector<std::string>& header,
                             const std::string& path, int (&col_index)[kNumRoles]) {
  const std::vector<std::string> role_cols = RoleColumns(split);
  for (int r = 0; r < kNumRoles; ++r) {
    col_index[r] = -1;
    const std::string& col = role_cols[r];
    if (col.empty()) continue;
    auto it = std::find(header.begin(), header.end(), col);
    if (it != header.end()) {
      col_index[r] = static_cast<int>(it - header.begin());
    } else if (IsNumber(col)) {
      col_index[r] = std::stoi(col);
    } else if (split.header) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":1: the header has no column '", col, "' (for ", kRoleNames[r],
          "); columns are: ", absl::StrJoin(header, ", "), ". Fix the task spec or the file"));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": column '", col, "' (for ", kRoleNames[r],
                       ") is a name, but this split has no header; give a 0-based column number"));
    }
  }
  return absl::OkStatus();
}

// The error for a row with fewer than `needed` fields, naming the columns it lacks.
absl::Status ShortRow(const std::string& path, int64_t line_no, int needed, size_t found,
                      const int (&col_index)[kNumRoles]) {
  std::vector<std::string> want;
  for (int r = 0; r < kNumRoles; ++r) {
    if (col_index[r] >= 0)
      want.push_back(absl::StrCat(kRoleNames[r], " in column ", col_index[r] + 1));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", line_no, ": expected at least ", needed, " tab-separated fields (",
                   absl::StrJoin(want, ", "), "), found ", found,
                   ". GLUE files are tab-separated without quoting; fix or remove this row"));
}

absl::Status ReadTsv(const std::string& text, const TaskSpec& task, const SplitSpec& split,
                     SplitData* out) {
  ExampleBuilder builder(task, split, out);
  LineCursor lines(text);
  std::vector<std::string> header;
  absl::string_view line;
  if (split.header) {
    if (!lines.Next(&line)) {
      return absl::InvalidArgumentError(
          absl::StrCat(out->path, ": empty file; expected a header line then rows"));
    }
    header = SplitTsvLine(line);
    for (std::string& h : header) h = std::string(absl::StripAsciiWhitespace(h));
  }
  int col_index[kNumRoles];
  GMLP_RETURN_IF_ERROR(FindRoleColumns(split, header, out->path, col_index));
  int needed = 0;  // fields a row must have
  for (int r = 0; r < kNumRoles; ++r) needed = std::max(needed, col_index[r] + 1);

  while (lines.Next(&line)) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (absl::StripAsciiWhitespace(line).empty()) continue;  // blank (e.g. final) lines
    std::vector<std::string> fields = SplitTsvLine(line);
    if (static_cast<int>(fields.size()) < needed) {
      if (!task.skip_malformed_rows) {
        return ShortRow(out->path, lines.line_no(), needed, fields.size(), col_index);
      }
      ++out->skipped_rows;
      continue;
    }
    RawRow row;
    row.line = lines.line_no();
    for (int r = 0; r < kNumRoles; ++r) {
      if (col_index[r] >= 0) row.fields[r] = std::move(fields[col_index[r]]);
    }
    GMLP_RETURN_IF_ERROR(builder.Add(std::move(row)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> JsonField(const nlohmann::json& obj, const std::string& key,
                                      const std::string& where) {
  if (!obj.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected a JSON object per example"));
  }
  auto it = obj.find(key);
  if (it == obj.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": no key \"", key, "\"; fix the row or the task spec's columns"));
  }
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return absl::StrCat(it->get<double>());
  if (it->is_null()) return std::string();
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": key \"", key, "\" holds ", it->type_name(), ", expected text"));
}

absl::Status AddJsonRow(const nlohmann::json& obj, int64_t line, const std::string& where,
                        const SplitSpec& split, ExampleBuilder* builder) {
  const std::vector<std::string> role_cols = RoleColumns(split);
  RawRow row;
  row.line = line;
  for (int r = 0; r < kNumRoles; ++r) {
    if (role_cols[r].empty()) continue;
    GMLP_ASSIGN_OR_RETURN(row.fields[r], JsonField(obj, role_cols[r], where));
  }
  return builder->Add(std::move(row));
}

absl::Status ReadJsonl(const std::string& text, const TaskSpec& task, const SplitSpec& split,
                       SplitData* out) {
  ExampleBuilder builder(task, split, out);
  int64_t line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::string where = absl::StrCat(out->path, ":", line_no);
    nlohmann::json obj;
    try {
      obj = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object (", e.what(),
                                                     "); jsonl wants one object per line"));
    }
    if (const size_t nul = NulAfterJson(line); nul != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": bytes after the JSON object (a NUL at byte ", nul,
                       " of the line); jsonl wants one object per line"));
    }
    GMLP_RETURN_IF_ERROR(AddJsonRow(obj, line_no, where, split, &builder));
  }
  return absl::OkStatus();
}

absl::Status ReadJsonObject(const std::string& text, const TaskSpec& task, const SplitSpec& split,
                            SplitData* out) {
  ExampleBuilder builder(task, split, out);
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(out->path, ": not valid JSON (", e.what(), ")"));
  }
  if (const size_t nul = NulAfterJson(text); nul != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(out->path, ": not valid JSON (", BytesAfterJsonValue(text, nul), ")"));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        out->path, ": json_object layout wants one object keyed \"0\"..\"N-1\"; found ",
        root.type_name(), " (use jsonl for one object per line)"));
  }
  // nlohmann sorts keys as strings ("10" < "2"): order by number so row ids follow the file.
  std::vector<std::pair<int64_t, const nlohmann::json*>> rows;
  for (const auto& [key, value] : root.items()) {
    int64_t k = 0;
    if (!absl::SimpleAtoi(key, &k)) {
      return absl::InvalidArgumentError(absl::StrCat(
          out->path, ": key \"", key, "\" is not a number; json_object wants keys \"0\"..\"N-1\""));
    }
    rows.emplace_back(k, &value);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [k, value] : rows) {
    const std::string where = absl::StrCat(out->path, ": entry \"", k, "\"");
    GMLP_RETURN_IF_ERROR(AddJsonRow(*value, k + 1, where, split, &builder));
  }
  return absl::OkStatus();
}

// Blanks (the readers skip blank lines, so line numbers stay right) and counts each line of
// invalid UTF-8 in `text`, or fails on the first one (see ReadOptions). `*first` says where the
// first dropped one is ("<path>:<line>, byte <b>"), for the error when nothing else is left.
absl::Status DropInvalidUtf8Lines(const SplitSpec& split, const ReadOptions& options,
                                  std::string* text, SplitData* out, std::string* first) {
  size_t pos = 0;
  for (int64_t line_no = 1; pos < text->size(); ++line_no) {
    size_t nl = text->find('\n', pos);
    if (nl == std::string::npos) nl = text->size();
    size_t bad = 0;
    if (!tokenizer::IsValidUtf8(text->data() + pos, nl - pos, &bad)) {
      const bool droppable = split.layout != "json_object" && !(split.header && line_no == 1);
      if (options.strict_utf8 || !droppable) {
        return absl::InvalidArgumentError(absl::StrCat(
            out->path, ":", line_no, ": invalid UTF-8 at byte ", bad + 1, " of the line",
            options.strict_utf8 && droppable
                ? " (without --strict_utf8 such lines are counted and skipped)"
                : "; re-encode the file as UTF-8"));
      }
      std::fill(text->begin() + pos, text->begin() + nl, ' ');
      if (out->invalid_utf8_rows++ == 0)
        *first = absl::StrCat(out->path, ":", line_no, ", byte ", bad + 1);
    }
    pos = nl + 1;
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> SplitTsvLine(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return absl::StrSplit(line, '\t');
}

absl::StatusOr<SplitData> ReadSplit(const TaskSpec& task, const SplitSpec& split,
                                    const std::string& data_dir, const ReadOptions& options) {
  SplitData out;
  out.name = split.name;
  out.path = ResolveDataPath(data_dir, split.file);
  out.labeled = !split.label.empty();
  GMLP_ASSIGN_OR_RETURN(std::string text, ReadFile(out.path));
  if (absl::StartsWith(text, kBom)) text.erase(0, kBom.size());
  std::string first_invalid_utf8;
  GMLP_RETURN_IF_ERROR(DropInvalidUtf8Lines(split, options, &text, &out, &first_invalid_utf8));
  if (split.layout == "tsv") {
    GMLP_RETURN_IF_ERROR(ReadTsv(text, task, split, &out));
  } else if (split.layout == "jsonl") {
    GMLP_RETURN_IF_ERROR(ReadJsonl(text, task, split, &out));
  } else if (split.layout == "json_object") {
    GMLP_RETURN_IF_ERROR(ReadJsonObject(text, task, split, &out));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(out.path, ": unknown layout '", split.layout,
                                                   "'; use tsv, jsonl or json_object"));
  }
  if (out.examples.empty()) {
    // Say what was skipped: a file of nothing but bad rows is another fix than an empty one.
    std::string skipped;
    if (out.invalid_utf8_rows > 0) {
      absl::StrAppend(&skipped, "; ", out.invalid_utf8_rows,
                      " rows of invalid UTF-8 were skipped (the first at ", first_invalid_utf8,
                      "): re-encode the file as UTF-8");
    }
    if (out.skipped_rows > 0) {
      absl::StrAppend(&skipped, "; ", out.skipped_rows,
                      " malformed rows were skipped (skip_malformed_rows)");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        out.path, ": split '", split.name, "' has no examples",
        split.split_column.empty()
            ? ""
            : absl::StrCat(" with ", split.split_column, " = '", split.split_value, "'"),
        skipped.empty() ? "; check the file and the task spec" : skipped));
  }
  return out;
}

}  // namespace gmlp::finetune
