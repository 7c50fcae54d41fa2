// Reading a task split into examples. GLUE TSVs are tab-separated with quoting off (a quote is a
// literal character); the readers accept a UTF-8 byte-order mark, CRLF line ends, a missing final
// newline and trailing spaces around fields (SST-2 keeps one before the tab). A malformed row is
// one error naming the file, the line and what was expected. Torch-free.
#ifndef GMLP_FINETUNE_READER_H_
#define GMLP_FINETUNE_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "finetune/task.h"

namespace gmlp::finetune {

struct Example {
  std::string id;  // the index column, else the 0-based row number within the split
  std::string text_a;
  std::string text_b;  // empty for single-sentence tasks
  int64_t label = -1;  // class index into TaskSpec::labels; -1 = unlabeled or regression
  double score = 0;    // regression target
  int64_t line = 0;    // 1-based line in the file (JSON object layout: entry number)
};

struct SplitData {
  std::string name;
  std::string path;  // resolved file path
  bool labeled = false;
  std::vector<Example> examples;
  int64_t skipped_rows = 0;       // malformed rows skipped (TaskSpec::skip_malformed_rows)
  int64_t invalid_utf8_rows = 0;  // lines of invalid UTF-8 skipped (see ReadOptions)
};

struct ReadOptions {
  // Invalid UTF-8: by default the offending line is counted and skipped (as prepare and the
  // tokenizer do); strict makes it an error naming the file and line. A header line, or any
  // line of a json_object file, is always an error (no row can be dropped there).
  bool strict_utf8 = false;
};

// Reads one split of `task`; relative file names resolve against `data_dir`. Labels must be in
// task.labels (case-insensitive) or, for regression, numbers.
absl::StatusOr<SplitData> ReadSplit(const TaskSpec& task, const SplitSpec& split,
                                    const std::string& data_dir, const ReadOptions& options = {});

// Splits one TSV line on tabs, quoting off; a trailing '\r' is dropped. Exposed for tests.
std::vector<std::string> SplitTsvLine(absl::string_view line);

}  // namespace gmlp::finetune

#endif  // GMLP_FINETUNE_READER_H_
