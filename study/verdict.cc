#include "study/verdict.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "study/probe.h"

namespace gmlp::study {
namespace {

bool IsPairKind(const std::string& kind) { return kind == "cross" || kind == "probe"; }

// (encoder, size, task, split, control) -> runs; majority rows drop encoder and size.
using GroupKey = std::tuple<std::string, std::string, std::string, std::string, std::string>;

struct Table {
  std::map<GroupKey, SeedRuns> groups;
  std::map<std::pair<std::string, std::string>, std::string> kind;    // (task, split) -> kind
  std::map<std::pair<std::string, std::string>, std::string> metric;  // (task, split) -> metric
  std::vector<std::pair<std::string, std::string>> task_splits;       // in table order
  std::vector<std::string> sizes;                                     // baseline sizes, in order
  std::vector<std::string> encoders;                                  // non-baseline, in order
};

Table BuildTable(const std::vector<ResultRow>& rows, const VerdictOptions& o) {
  Table t;
  for (const ResultRow& r : rows) {
    if (!r.reported) continue;
    const auto ts = std::make_pair(r.task, r.split);
    if (!t.metric.count(ts)) {
      t.metric[ts] = r.metric;
      t.kind[ts] = r.kind;
      t.task_splits.push_back(ts);
    }
    if (t.metric[ts] != r.metric) continue;
    const bool majority = r.control == "majority";
    const GroupKey key{majority ? "" : r.encoder, majority ? "" : r.size, r.task, r.split,
                       r.control};
    AddSeedRow(r, &t.groups[key]);
    if (r.control == "none") {
      auto& list = r.encoder == o.baseline ? t.sizes : t.encoders;
      const std::string& item = r.encoder == o.baseline ? r.size : r.encoder;
      if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
    }
  }
  for (auto& [key, g] : t.groups) FinishSeedRuns(&g);
  return t;
}

const SeedRuns* Find(const Table& t, const std::string& encoder, const std::string& size,
                     const std::string& task, const std::string& split,
                     const std::string& control) {
  auto it = t.groups.find(GroupKey{encoder, size, task, split, control});
  return it == t.groups.end() ? nullptr : &it->second;
}

FloorCheck CheckFloors(const Table& t, const SeedRuns& baseline, const std::string& size,
                       const std::string& task, const std::string& split, const std::string& kind,
                       const VerdictOptions& o) {
  FloorCheck f;
  const SeedRuns* majority = Find(t, "", "", task, split, "majority");
  if (majority == nullptr) {
    f.reason = "no majority-class row in results.csv";
    return f;
  }
  f.over_majority = BootstrapGap(baseline, *majority, o.bootstrap);
  if (f.over_majority.lo <= 0) {
    f.reason = absl::StrCat(o.baseline, "-", size, " does not beat the majority class by more ",
                            "than its interval (", FormatPoints(f.over_majority), " points)");
    return f;
  }
  if (IsPairKind(kind)) {
    const SeedRuns* strongest = nullptr;  // the second-segment-only run with the best mean
    for (const auto& [key, g] : t.groups) {
      if (std::get<1>(key) == size && std::get<2>(key) == task && std::get<3>(key) == split &&
          std::get<4>(key) == "second_only" &&
          (strongest == nullptr || g.Mean() > strongest->Mean())) {
        strongest = &g;
      }
    }
    if (strongest == nullptr) {
      f.reason = absl::StrCat("no second-segment-only control at size ", size, " in results.csv");
      return f;
    }
    f.has_second_only = true;
    f.over_second_only = BootstrapGap(baseline, *strongest, o.bootstrap);
    if (f.over_second_only.lo <= 0) {
      f.reason = absl::StrCat(o.baseline, "-", size,
                              " does not beat the second-segment-only control by more than its "
                              "interval (",
                              FormatPoints(f.over_second_only), " points)");
      return f;
    }
  }
  f.judged = true;
  return f;
}

PatternVerdict NewPattern(const std::string& size, const char* pattern, const char* claim) {
  PatternVerdict p;
  p.size = size;
  p.pattern = pattern;
  p.claim = claim;
  return p;
}

// holds / does not hold / not resolved, for a claim that the estimate is below zero
// (`negative`) or above it.
void Decide(bool negative, PatternVerdict* p) {
  const bool paper_side = negative ? p->estimate.hi < 0 : p->estimate.lo > 0;
  const bool other_side = negative ? p->estimate.lo > 0 : p->estimate.hi < 0;
  p->verdict = paper_side ? "holds" : other_side ? "does not hold" : "not resolved";
  p->reason = absl::StrCat(FormatPoints(p->estimate), " points (", p->estimate.method, ")",
                           paper_side   ? ": the interval excludes 0 in the paper's direction"
                           : other_side ? ": the interval excludes 0 against the paper"
                                        : ": the interval contains 0, this run cannot tell");
}

using TaskSplit = std::pair<std::string, std::string>;

// Every encoder against the baseline on every task split at `size`, appended to `out`; returns
// which task splits the baseline's floors let be judged.
std::map<TaskSplit, bool> CompareTasks(const Table& t, const std::string& size,
                                       const VerdictOptions& o, std::vector<TaskComparison>* out) {
  std::map<TaskSplit, bool> judged;
  for (const TaskSplit& ts : t.task_splits) {
    const auto& [task, split] = ts;
    const SeedRuns* base = Find(t, o.baseline, size, task, split, "none");
    if (base == nullptr) continue;
    const std::string& kind = t.kind.at(ts);
    const FloorCheck floor = CheckFloors(t, *base, size, task, split, kind, o);
    judged[ts] = floor.judged;
    for (const std::string& enc : t.encoders) {
      const SeedRuns* runs = Find(t, enc, size, task, split, "none");
      if (runs == nullptr) continue;
      TaskComparison c;
      c.size = size;
      c.task = task;
      c.kind = kind;
      c.split = split;
      c.metric = t.metric.at(ts);
      c.encoder = enc;
      c.gap = BootstrapGap(*runs, *base, o.bootstrap);
      c.floor = floor;
      c.verdict = !floor.judged  ? "cannot judge"
                  : c.gap.hi < 0 ? "behind"
                  : c.gap.lo > 0 ? "ahead"
                                 : "no detectable gap";
      out->push_back(std::move(c));
    }
  }
  return judged;
}

// One size's table, the options and which task splits were judged: what each pattern reads.
struct SizeView {
  const Table& t;
  std::string size;
  const VerdictOptions& o;
  std::map<TaskSplit, bool> judged;

  const SeedRuns* Runs(const std::string& encoder, const TaskSplit& ts) const {
    return Find(t, encoder, size, ts.first, ts.second, "none");
  }
  bool Judged(const TaskSplit& ts) const {
    auto it = judged.find(ts);
    return it != judged.end() && it->second;
  }
};

// Adds `sign` x the mean over `tasks` of (encoder a - encoder b) to `terms`, and names the tasks.
void AddMeanGap(const SizeView& s, const std::string& a, const std::string& b,
                const std::vector<TaskSplit>& tasks, double sign, std::vector<ContrastTerm>* terms,
                PatternVerdict* p) {
  const double w = sign / static_cast<double>(tasks.size());
  for (const TaskSplit& ts : tasks) {
    terms->push_back({w, s.Runs(a, ts)});
    terms->push_back({-w, s.Runs(b, ts)});
    p->tasks.push_back(ts.first);
  }
}

PatternVerdict CrossVsSingle(const SizeView& s) {
  PatternVerdict p = NewPattern(s.size, "cross_vs_single",
                                "gMLP lags the Transformer more on cross-sentence than on "
                                "single-sentence tasks");
  std::vector<TaskSplit> cross, single;
  for (const TaskSplit& ts : s.t.task_splits) {
    if (!s.Judged(ts) || s.Runs(s.o.gmlp, ts) == nullptr || s.Runs(s.o.baseline, ts) == nullptr) {
      continue;
    }
    if (s.t.kind.at(ts) == "cross") cross.push_back(ts);
    if (s.t.kind.at(ts) == "single") single.push_back(ts);
  }
  if (cross.empty() || single.empty()) {
    p.verdict = "cannot judge";
    p.reason = absl::StrCat(
        "needs a judged cross-sentence and a judged single-sentence task with gMLP runs; have ",
        cross.size(), " and ", single.size());
    return p;
  }
  // (gMLP - Transformer) on cross-sentence tasks minus the same on single-sentence ones.
  std::vector<ContrastTerm> terms;
  AddMeanGap(s, s.o.gmlp, s.o.baseline, cross, 1, &terms, &p);
  AddMeanGap(s, s.o.gmlp, s.o.baseline, single, -1, &terms, &p);
  p.estimate = BootstrapContrast(terms, s.o.bootstrap);
  Decide(/*negative=*/true, &p);
  return p;
}

PatternVerdict AmlpClosesGap(const SizeView& s) {
  PatternVerdict p =
      NewPattern(s.size, "amlp_closes_gap", "aMLP beats gMLP on cross-sentence tasks");
  std::vector<TaskSplit> cross;
  for (const TaskSplit& ts : s.t.task_splits) {
    if (s.Judged(ts) && s.t.kind.at(ts) == "cross" && s.Runs(s.o.gmlp, ts) != nullptr &&
        s.Runs(s.o.amlp, ts) != nullptr) {
      cross.push_back(ts);
    }
  }
  if (cross.empty()) {
    p.verdict = "cannot judge";
    p.reason = "no judged cross-sentence task with both gMLP and aMLP runs";
    return p;
  }
  std::vector<ContrastTerm> terms;
  AddMeanGap(s, s.o.amlp, s.o.gmlp, cross, 1, &terms, &p);
  p.estimate = BootstrapContrast(terms, s.o.bootstrap);
  Decide(/*negative=*/false, &p);
  return p;
}

PatternVerdict ProbeAlignment(const SizeView& s) {
  PatternVerdict p = NewPattern(s.size, "probe_alignment",
                                "gMLP falls behind the Transformer on the shifted probe more "
                                "than on the aligned one");
  TaskSplit aligned, shifted;
  bool have_aligned = false, have_shifted = false;
  for (const TaskSplit& ts : s.t.task_splits) {
    if (ts.first == s.o.probe_aligned && !have_aligned) aligned = ts, have_aligned = true;
    if (ts.first == s.o.probe_shifted && !have_shifted) shifted = ts, have_shifted = true;
  }
  p.verdict = "cannot judge";
  if (!have_aligned || !have_shifted) {
    p.reason = "the probe's two versions are not both in results.csv";
  } else if (!s.Judged(aligned) || !s.Judged(shifted)) {
    p.reason = "the Transformer does not clear the floors on both probe versions";
  } else if (s.Runs(s.o.gmlp, aligned) == nullptr || s.Runs(s.o.gmlp, shifted) == nullptr) {
    p.reason = "no gMLP runs on both probe versions";
  } else {
    p.estimate = BootstrapContrast({{1, s.Runs(s.o.gmlp, shifted)},
                                    {-1, s.Runs(s.o.baseline, shifted)},
                                    {-1, s.Runs(s.o.gmlp, aligned)},
                                    {1, s.Runs(s.o.baseline, aligned)}},
                                   s.o.bootstrap);
    p.tasks = {aligned.first, shifted.first};
    Decide(/*negative=*/true, &p);
  }
  return p;
}

// The slope over the shift k of (a - b) on the shift-k probe tasks, times k's range, over the
// shifts the baseline ran.
PatternVerdict ProbeSlope(const SizeView& s, const std::string& a, const std::string& b,
                          const char* pattern, const char* claim) {
  PatternVerdict p = NewPattern(s.size, pattern, claim);
  p.verdict = "cannot judge";
  std::vector<std::pair<int64_t, TaskSplit>> shifts;  // one split per task: the first
  for (const TaskSplit& ts : s.t.task_splits) {
    const int64_t k = ProbeShiftOf(ts.first, s.o.probe_shift_prefix);
    const bool seen = std::any_of(shifts.begin(), shifts.end(),
                                  [&](const auto& e) { return e.second.first == ts.first; });
    if (k >= 0 && !seen && s.Runs(s.o.baseline, ts) != nullptr) shifts.push_back({k, ts});
  }
  std::sort(shifts.begin(), shifts.end());
  std::vector<std::string> unread, missing;
  for (const auto& [k, ts] : shifts) {
    if (!s.Judged(ts)) unread.push_back(absl::StrCat(k));
    for (const std::string& enc : {a, b}) {
      if (s.Runs(enc, ts) == nullptr) missing.push_back(absl::StrCat(enc, " at k = ", k));
    }
  }
  if (shifts.size() < 2) {
    p.reason = absl::StrCat("needs the Transformer on at least two shifts; has ", shifts.size());
  } else if (!unread.empty()) {
    p.reason = absl::StrCat(
        "the Transformer does not clear the floors at shift k = ", absl::StrJoin(unread, ", "),
        " (the probe is not calibrated; study/README.md has the calibration runs)");
  } else if (!missing.empty()) {
    p.reason = absl::StrCat("no runs of ", absl::StrJoin(missing, ", "));
  } else {
    double mean_k = 0;
    for (const auto& e : shifts) mean_k += static_cast<double>(e.first) / shifts.size();
    double sxx = 0;
    for (const auto& e : shifts) sxx += (e.first - mean_k) * (e.first - mean_k);
    const double range = static_cast<double>(shifts.back().first - shifts.front().first);
    std::vector<ContrastTerm> terms;
    for (const auto& [k, ts] : shifts) {
      const double w = (k - mean_k) * range / sxx;
      terms.push_back({w, s.Runs(a, ts)});
      terms.push_back({-w, s.Runs(b, ts)});
      p.tasks.push_back(ts.first);
    }
    p.estimate = BootstrapContrast(terms, s.o.bootstrap);
    Decide(/*negative=*/true, &p);
  }
  return p;
}

bool HasShiftProbe(const Table& t, const VerdictOptions& o) {
  return std::any_of(t.task_splits.begin(), t.task_splits.end(), [&](const TaskSplit& ts) {
    return ProbeShiftOf(ts.first, o.probe_shift_prefix) >= 0;
  });
}

}  // namespace

std::string FormatPoints(const Interval& i) {
  return absl::StrFormat("%+.1f [%+.1f, %+.1f]", 100 * i.estimate, 100 * i.lo, 100 * i.hi);
}

absl::StatusOr<StudyVerdicts> ComputeVerdicts(const std::vector<ResultRow>& rows,
                                              const VerdictOptions& o) {
  const Table t = BuildTable(rows, o);
  if (t.sizes.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("results table has no reported rows of the baseline encoder '", o.baseline,
                     "' (control none); the verdicts compare every encoder against it"));
  }
  StudyVerdicts v;
  for (const std::string& size : t.sizes) {
    const SizeView view{t, size, o, CompareTasks(t, size, o, &v.comparisons)};
    v.patterns.push_back(CrossVsSingle(view));
    v.patterns.push_back(AmlpClosesGap(view));
    v.patterns.push_back(ProbeAlignment(view));
    if (HasShiftProbe(t, o)) {
      v.patterns.push_back(ProbeSlope(view, o.gmlp, o.baseline, "probe_slope",
                                      "gMLP's probe accuracy falls with the shift k faster than "
                                      "the Transformer's"));
      v.patterns.push_back(ProbeSlope(view, o.gmlp, o.amlp, "probe_slope_amlp",
                                      "gMLP's probe accuracy falls with the shift k faster than "
                                      "aMLP's"));
    }
  }
  return v;
}

std::string FormatVerdicts(const StudyVerdicts& v) {
  std::string out =
      "| size | task | split | encoder | encoder - baseline (points, 95% CI) | baseline - majority "
      "| baseline - second-only | verdict |\n|---|---|---|---|---:|---:|---:|---|\n";
  for (const TaskComparison& c : v.comparisons) {
    absl::StrAppend(
        &out, "| ", c.size, " | ", c.task, " | ", c.split, " | ", c.encoder, " | ",
        FormatPoints(c.gap), " | ",
        c.floor.over_majority.method.empty() ? "n/a" : FormatPoints(c.floor.over_majority), " | ",
        c.floor.has_second_only ? FormatPoints(c.floor.over_second_only) : "n/a", " | ", c.verdict,
        c.floor.judged ? "" : absl::StrCat(" (", c.floor.reason, ")"), " |\n");
  }
  out += "\n";
  for (const PatternVerdict& p : v.patterns) {
    absl::StrAppend(&out, "- **", p.size, ", ", p.pattern, "** (", p.claim, "): ", p.verdict, ". ",
                    p.reason, "\n");
  }
  return out;
}

}  // namespace gmlp::study
