// The study's verdicts, computed from results.csv alone (study/results_table.h) with the
// intervals of study/stats.h (issue 12, items 3 and 5):
//   - A comparison on a task is judged only where the baseline (the Transformer at that size)
//     beats the majority class and, on sentence-pair tasks (kind cross or probe), the
//     second-segment-only control, each by a margin whose 95% interval excludes zero (lower end
//     above 0). Otherwise it is "cannot judge" with the reason.
//   - A judged comparison is "behind" or "ahead" only when the gap's interval excludes zero, else
//     "no detectable gap".
//   - A pattern verdict is "holds" when its interval excludes zero in the paper's direction,
//     "does not hold" when it excludes zero the other way, "not resolved" when it contains zero,
//     and "cannot judge" when it has no judged task to rest on.
// The patterns, per size:
//   cross_vs_single: mean over judged cross tasks of (gMLP - T) minus the same over judged
//                    single tasks; the paper: below zero.
//   amlp_closes_gap: mean over judged cross tasks of (aMLP - gMLP); the paper: above zero.
//   probe_alignment: (gMLP - T) on the shifted probe minus (gMLP - T) on the aligned probe; the
//                    paper's hypothesis: below zero.
//   probe_slope, probe_slope_amlp (only where the table has shift-k probe tasks, named
//                    probe_shift_prefix + k, k >= 0 filler pieces before B): the least-squares
//                    slope over k of (gMLP - T), resp. (gMLP - aMLP), times the range of k, so in
//                    points: how much further gMLP falls from the smallest shift to the largest
//                    on the fitted line. The hypothesis: below zero. Judged only where the
//                    Transformer clears the floors on every shift (the probe is calibrated) and
//                    there are at least two shifts.
// Torch-free.
#ifndef GMLP_STUDY_VERDICT_H_
#define GMLP_STUDY_VERDICT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/probe.h"
#include "study/results_table.h"
#include "study/stats.h"

namespace gmlp::study {

// The encoders in each role (results-table names). The report fills them from the arch table
// (study/roles.h; this library is torch-free and does not read it); the defaults are the
// default study's, for readers of a results.csv.
struct VerdictOptions {
  std::string baseline = "transformer";
  std::string gmlp = "gmlp";
  std::string amlp = "amlp";
  std::string probe_aligned = "probe-aligned";
  std::string probe_shifted = "probe-shifted";
  std::string probe_shift_prefix = kProbeShiftTaskPrefix;
  BootstrapOptions bootstrap;
};

// Whether the baseline clears the floors on one task at one size.
struct FloorCheck {
  bool judged = false;
  std::string reason;            // why not, when not judged
  Interval over_majority;        // baseline - majority class
  bool has_second_only = false;  // pair tasks only
  Interval over_second_only;     // baseline - strongest second-segment-only run
};

// One encoder against the baseline on one task at one size.
struct TaskComparison {
  std::string size, task, kind, split, metric, encoder;
  Interval gap;         // encoder - baseline
  FloorCheck floor;     // the baseline's floors on this task
  std::string verdict;  // behind | ahead | no detectable gap | cannot judge
};

struct PatternVerdict {
  std::string size;
  std::string pattern;  // cross_vs_single | amlp_closes_gap | probe_alignment | probe_slope...
  std::string claim;    // the paper's claim in words
  Interval estimate;
  std::string verdict;             // holds | does not hold | not resolved | cannot judge
  std::string reason;              // the evidence or what is missing
  std::vector<std::string> tasks;  // the judged tasks it rests on
};

struct StudyVerdicts {
  std::vector<TaskComparison> comparisons;  // by size, task, encoder
  std::vector<PatternVerdict> patterns;     // by size, pattern
};

// Every comparison and pattern verdict of the table's reported rows (reported = 1). Where a task
// split has rows of several metrics, the first metric in the table is used. InvalidArgument when
// the table has no baseline rows.
absl::StatusOr<StudyVerdicts> ComputeVerdicts(const std::vector<ResultRow>& rows,
                                              const VerdictOptions& options = {});

// "−5.0 [−6.9, −3.1]": a fraction-valued interval in points.
std::string FormatPoints(const Interval& interval);

// Markdown: a table of the comparisons and one line per pattern verdict.
std::string FormatVerdicts(const StudyVerdicts& verdicts);

}  // namespace gmlp::study

#endif  // GMLP_STUDY_VERDICT_H_
