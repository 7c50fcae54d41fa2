#include "study/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/file_util.h"
#include "common/status.h"
#include "finetune/metrics.h"
#include "model/arch.h"
#include "study/plot.h"
#include "study/probe.h"
#include "study/roles.h"
#include "study/stats.h"
#include "study/verdict.h"

namespace gmlp::study {

using finetune::SeedStats;
using finetune::Summarize;

namespace {

// Sizes in growing order; unknown sizes sort last, by name.
int SizeRank(const std::string& size) {
  static const std::vector<std::string> kOrder = {"nano",   "tiny", "mini", "small",
                                                  "medium", "base", "large"};
  auto it = std::find(kOrder.begin(), kOrder.end(), size);
  return it == kOrder.end() ? 100 : static_cast<int>(it - kOrder.begin());
}

std::string Params(int64_t n) {
  if (n >= 1000000) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1000) return absl::StrFormat("%.0fk", n / 1e3);
  return absl::StrCat(n);
}

// Scores are shown in points (x100): accuracy 0.853 -> 85.3.
std::string Pts(double v) { return absl::StrFormat("%.1f", 100 * v); }

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

}  // namespace

std::string EncoderLabel(const std::string& encoder, const std::string& size) {
  const size_t dash = encoder.find('-');
  std::string label = model::ArchLabel(encoder.substr(0, dash));
  if (!size.empty()) absl::StrAppend(&label, "-", size);
  if (dash == std::string::npos) return label;
  const std::string variant = encoder.substr(dash + 1);
  if (absl::StartsWith(variant, "attn")) {
    return absl::StrCat(label, " (attention ", variant.substr(4), ")");
  }
  if (absl::StartsWith(variant, "sgu-"))
    return absl::StrCat(label, " (SGU ", variant.substr(4), ")");
  if (variant == "alibi") return absl::StrCat(label, " (ALiBi)");
  return absl::StrCat(label, " (", variant, ")");
}

bool IsMainCell(const CellResult& c) {
  const model::ArchSpec* arch = model::FindArch(c.arch);
  return c.sgu.empty() || c.sgu == "split" || arch == nullptr || !arch->has_sgu;
}

const TaskScore* FindScore(const CellResult& c, const std::string& task) {
  for (const TaskScore& s : c.scores) {
    if (s.task == task && s.control == "none") return &s;
  }
  return nullptr;
}

std::vector<CellResult> SortedCells(std::vector<CellResult> cells) {
  std::stable_sort(cells.begin(), cells.end(), [](const CellResult& a, const CellResult& b) {
    if (SizeRank(a.size) != SizeRank(b.size)) return SizeRank(a.size) < SizeRank(b.size);
    const int ra = model::ArchRank(a.arch), rb = model::ArchRank(b.arch);
    if (ra != rb) return ra < rb;
    return a.name < b.name;
  });
  return cells;
}

std::vector<const TaskScore*> TaskOrder(const std::vector<CellResult>& cells) {
  std::vector<const TaskScore*> out;
  std::set<std::string> seen;
  for (const CellResult& c : cells) {
    for (const TaskScore& s : c.scores) {
      if (seen.insert(s.task).second) out.push_back(&s);
    }
  }
  return out;
}

nlohmann::json CellResult::ToJson() const {
  nlohmann::json j = {{"name", name},
                      {"encoder", encoder},
                      {"arch", arch},
                      {"size", size},
                      {"sgu", sgu},
                      {"params", params},
                      {"non_embedding_params", non_embedding_params},
                      {"pretrain_steps", pretrain_steps},
                      {"pretrain_tokens", pretrain_tokens},
                      {"mlm_loss", mlm_loss},
                      {"mlm_perplexity", mlm_perplexity},
                      {"pretrain_seconds", pretrain_seconds},
                      {"finetune_seconds", finetune_seconds}};
  j["curve"] = nlohmann::json::array();
  for (const CurvePoint& p : curve) j["curve"].push_back({p.step, p.loss});
  j["scores"] = nlohmann::json::array();
  for (const TaskScore& s : scores) {
    j["scores"].push_back({{"task", s.task},
                           {"kind", s.kind},
                           {"split", s.split},
                           {"metric", s.metric},
                           {"seeds", s.seeds},
                           {"values", s.values},
                           {"majority", s.majority},
                           {"control", s.control},
                           {"n_examples", s.n_examples},
                           {"predictions", s.predictions},
                           {"train_examples", s.train_examples},
                           {"seconds", s.seconds}});
  }
  return j;
}

absl::StatusOr<CellResult> CellResult::FromJson(const nlohmann::json& j) {
  CellResult c;
  try {
    c.name = j.at("name").get<std::string>();
    c.arch = j.at("arch").get<std::string>();
    c.encoder = j.value("encoder", c.arch);
    c.size = j.at("size").get<std::string>();
    c.sgu = j.value("sgu", std::string());
    c.params = j.at("params").get<int64_t>();
    c.non_embedding_params = j.value("non_embedding_params", int64_t{0});
    c.pretrain_steps = j.value("pretrain_steps", int64_t{0});
    c.pretrain_tokens = j.value("pretrain_tokens", int64_t{0});
    for (const auto& p : j.value("curve", nlohmann::json::array())) {
      c.curve.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>()});
    }
    c.mlm_loss = j.value("mlm_loss", 0.0);
    c.mlm_perplexity = j.value("mlm_perplexity", 0.0);
    c.pretrain_seconds = j.value("pretrain_seconds", 0.0);
    c.finetune_seconds = j.value("finetune_seconds", 0.0);
    for (const auto& s : j.value("scores", nlohmann::json::array())) {
      TaskScore t;
      t.task = s.at("task").get<std::string>();
      t.kind = s.at("kind").get<std::string>();
      t.split = s.at("split").get<std::string>();
      t.metric = s.at("metric").get<std::string>();
      t.seeds = s.at("seeds").get<std::vector<uint64_t>>();
      t.values = s.at("values").get<std::vector<double>>();
      t.majority = s.value("majority", -1.0);
      t.control = s.value("control", std::string("none"));
      t.n_examples = s.value("n_examples", int64_t{0});
      t.predictions = s.value("predictions", std::vector<std::string>());
      t.train_examples = s.value("train_examples", int64_t{0});
      t.seconds = s.value("seconds", 0.0);
      c.scores.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed cell result (", e.what(), ")"));
  }
  return c;
}

std::vector<ResultRow> ResultRows(const std::vector<CellResult>& unsorted) {
  std::vector<ResultRow> rows;
  std::vector<ResultRow> majority;
  std::set<std::pair<std::string, std::string>> majority_seen;
  for (const CellResult& c : SortedCells(unsorted)) {
    if (!IsMainCell(c) && c.scores.empty()) continue;
    for (const TaskScore& s : c.scores) {
      for (size_t i = 0; i < s.values.size(); ++i) {
        ResultRow r;
        r.encoder = c.encoder.empty() ? c.arch : c.encoder;
        r.size = c.size;
        r.params = c.params;
        r.task = s.task;
        r.kind = s.kind;
        r.split = s.split;
        r.seed = i < s.seeds.size() ? s.seeds[i] : i;
        r.control = s.control;
        r.metric = s.metric;
        r.value = s.values[i];
        r.n_examples = s.n_examples;
        if (i < s.predictions.size()) r.predictions = s.predictions[i];
        rows.push_back(std::move(r));
      }
      if (s.majority >= 0 && majority_seen.insert({s.task, s.split}).second) {
        ResultRow m;
        m.encoder = "majority";
        m.task = s.task;
        m.kind = s.kind;
        m.split = s.split;
        m.control = "majority";
        m.metric = "accuracy";
        m.value = s.majority;
        m.n_examples = s.n_examples;
        majority.push_back(std::move(m));
      }
    }
  }
  rows.insert(rows.end(), majority.begin(), majority.end());
  return rows;
}

std::string CellsCsv(const std::vector<CellResult>& cells) {
  std::string out =
      "cell,encoder,arch,size,sgu,params,non_embedding_params,pretrain_steps,pretrain_tokens,"
      "mlm_loss,mlm_perplexity,pretrain_seconds,finetune_seconds\n";
  for (const CellResult& c : SortedCells(cells)) {
    absl::StrAppend(&out, CsvField(c.name), ",", CsvField(c.encoder), ",", c.arch, ",", c.size, ",",
                    c.sgu, ",", c.params, ",", c.non_embedding_params, ",", c.pretrain_steps, ",",
                    c.pretrain_tokens, ",", Num(c.mlm_loss), ",", Num(c.mlm_perplexity), ",",
                    Num(c.pretrain_seconds), ",", Num(c.finetune_seconds), "\n");
  }
  return out;
}

std::string CurvesCsv(const std::vector<CellResult>& cells) {
  std::string out = "cell,step,mlm_loss\n";
  for (const CellResult& c : SortedCells(cells)) {
    for (const CurvePoint& p : c.curve) {
      absl::StrAppend(&out, CsvField(c.name), ",", p.step, ",", Num(p.loss), "\n");
    }
  }
  return out;
}

namespace {

// The rows of one encoder (or control) on one task split, grouped for intervals.
struct RunGroup {
  std::string encoder, size, task, kind, split, control, metric;
  int64_t params = 0;
  SeedRuns runs;
};

// Groups rows by (encoder, size, task, split, control), in table order; the first metric of a
// task split only (as the verdicts do).
std::vector<RunGroup> GroupRows(const std::vector<ResultRow>& rows) {
  std::vector<RunGroup> groups;
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, size_t>
      index;
  std::map<std::pair<std::string, std::string>, std::string> metric;
  for (const ResultRow& r : rows) {
    if (!r.reported) continue;
    auto m = metric.emplace(std::make_pair(r.task, r.split), r.metric).first;
    if (m->second != r.metric) continue;
    auto [it, fresh] = index.emplace(std::make_tuple(r.encoder, r.size, r.task, r.split, r.control),
                                     groups.size());
    if (fresh) {
      groups.push_back(
          RunGroup{r.encoder, r.size, r.task, r.kind, r.split, r.control, r.metric, r.params, {}});
    }
    AddSeedRow(r, &groups[it->second].runs);
  }
  for (RunGroup& g : groups) FinishSeedRuns(&g.runs);
  return groups;
}

// The 95% interval of a group's mean over seeds (seeds and examples resampled).
Interval MeanInterval(const SeedRuns& runs) { return BootstrapContrast({{1.0, &runs}}); }

std::string PointsInterval(const Interval& i) {
  return absl::StrFormat("%.1f [%.1f, %.1f]", 100 * i.estimate, 100 * i.lo, 100 * i.hi);
}

std::string RowLabel(const RunGroup& g) {
  if (g.control == "majority") return "*majority class*";
  std::string label = EncoderLabel(g.encoder, g.size);
  if (g.control != "none") absl::StrAppend(&label, " *(", ControlDescription(g.control), ")*");
  return label;
}

}  // namespace

std::string SummaryCsv(const std::vector<ResultRow>& rows) {
  std::string out =
      "encoder,size,params,task,kind,split,control,metric,seeds,n_examples,mean,median,std,min,"
      "max,ci95_lo,ci95_hi,ci_method\n";
  for (const RunGroup& g : GroupRows(rows)) {
    const SeedStats st = Summarize(g.runs.values);
    const Interval ci = MeanInterval(g.runs);
    absl::StrAppend(&out, CsvField(g.encoder), ",", g.size, ",", g.params, ",", CsvField(g.task),
                    ",", g.kind, ",", CsvField(g.split), ",", g.control, ",", g.metric, ",", st.n,
                    ",", g.runs.n_examples.empty() ? 0 : g.runs.n_examples.front(), ",",
                    Num(st.mean), ",", Num(st.median), ",", Num(st.std), ",", Num(st.min), ",",
                    Num(st.max), ",", Num(ci.lo), ",", Num(ci.hi), ",", CsvField(ci.method), "\n");
  }
  return out;
}

std::vector<StageTiming> CellTimings(const std::vector<CellResult>& cells) {
  std::vector<StageTiming> stages;
  std::map<std::string, StageTiming> finetune;  // per task (and control), over cells
  std::vector<std::string> order;
  for (const CellResult& c : SortedCells(cells)) {
    stages.push_back({absl::StrCat("pretraining ", c.name), c.pretrain_seconds,
                      static_cast<double>(c.pretrain_tokens), "tokens"});
    for (const TaskScore& s : c.scores) {
      const std::string key = absl::StrCat(
          "finetuning ", s.task,
          s.control == "none" ? "" : absl::StrCat(" (", ControlDescription(s.control), ")"));
      if (finetune.count(key) == 0) order.push_back(key);
      StageTiming& t = finetune[key];
      t.stage = key;
      t.seconds += s.seconds;
      // Training examples over every epoch and seed; the time includes evaluating.
      t.work += static_cast<double>(s.train_examples * static_cast<int64_t>(s.values.size()));
      t.unit = "training examples";
    }
  }
  for (const std::string& k : order) stages.push_back(finetune[k]);
  return stages;
}

namespace {

void AppendSetup(const ReportContext& context, const std::string& plot_basename, bool probe_curve,
                 std::string* md) {
  *md = "# Accuracy vs parameters: Transformer, gMLP, aMLP\n\n";
  absl::StrAppend(
      md,
      "Each cell of the grid is an encoder at a size, MLM-pretrained on the same shards with the "
      "same recipe, then finetuned on every task with each seed. Scores are the reported split's "
      "value at the epoch chosen on a different split, in points (x100): the mean over seeds "
      "with its 95% interval, which resamples both the seeds and the test examples "
      "(study/stats.h). Every number below is computed from `results.csv`. This reproduces the "
      "experiment of \"Pay Attention to MLPs\" (Liu et al. 2021, Fig. 4 and Table 4) at a far "
      "smaller scale.\n\n## Setup\n\n");
  for (const auto& [k, v] : context.settings.items()) {
    absl::StrAppend(md, "- ", k, ": ", v.is_string() ? v.get<std::string>() : v.dump(), "\n");
  }
  for (const std::string& note : context.notes) absl::StrAppend(md, "- ", note, "\n");
  if (context.total_seconds > 0) {
    absl::StrAppend(md, "- wall time of this invocation: ",
                    absl::StrFormat("%.1f min", context.total_seconds / 60), "\n");
  }
  absl::StrAppend(md, "\n![accuracy vs parameters](", plot_basename, ".png)\n\n",
                  "![held-out MLM loss while pretraining](learning_curves.png)\n\n",
                  probe_curve ? absl::StrCat("![alignment probe: accuracy vs shift](",
                                             kProbeShiftPlot, ".png)\n\n")
                              : "",
                  "Files: `results.csv` (every seed, control and majority row; per-seed "
                  "predictions under `cells/`), `summary.csv` (means and intervals), `cells.csv`, "
                  "`curves.csv`, the plots (gnuplot scripts under `plot/`).\n\n");
}

// Stage, seconds, share of the total, rate.
void AppendTimings(const ReportContext& context, std::string* md) {
  if (context.stages.empty()) return;
  double total = 0;
  for (const StageTiming& t : context.stages) total += t.seconds;
  absl::StrAppend(md, "## Where the time went\n\n| stage | wall time | share | rate |\n",
                  "|---|---:|---:|---:|\n");
  // A stage that ran in several invocations (a resumed study re-checking its data) is one row:
  // its times and work summed, the count named.
  std::vector<StageTiming> merged;
  std::vector<int> runs;
  for (const StageTiming& t : context.stages) {
    auto same = std::find_if(merged.begin(), merged.end(),
                             [&](const StageTiming& m) { return m.stage == t.stage; });
    if (same == merged.end()) {
      merged.push_back(t);
      runs.push_back(1);
    } else {
      same->seconds += t.seconds;
      same->work += t.work;
      ++runs[same - merged.begin()];
    }
  }
  double pretrain = 0;
  for (size_t i = 0; i < merged.size(); ++i) {
    const StageTiming& t = merged[i];
    if (absl::StartsWith(t.stage, "pretraining")) pretrain += t.seconds;
    const std::string name = runs[i] > 1 ? absl::StrCat(t.stage, " (", runs[i], " runs)") : t.stage;
    const std::string rate = t.work > 0 && t.seconds > 0
                                 ? absl::StrFormat("%.0f %s/s", t.work / t.seconds, t.unit)
                                 : std::string("–");
    absl::StrAppend(md, "| ", name, " | ", absl::StrFormat("%.1f min", t.seconds / 60), " | ",
                    absl::StrFormat("%.0f%%", total > 0 ? 100 * t.seconds / total : 0), " | ", rate,
                    " |\n");
  }
  absl::StrAppend(md, "\nPretraining took ",
                  absl::StrFormat("%.0f%%", total > 0 ? 100 * pretrain / total : 0),
                  " of the recorded stage time (", absl::StrFormat("%.1f min", total / 60),
                  ", summed over every invocation that did the work).\n\n");
}

// Rows: each (size, encoder), the controls, the majority class; columns: the task splits.
void AppendScores(const std::vector<RunGroup>& groups, std::string* md) {
  std::vector<std::pair<std::string, std::string>> columns;  // task, split
  std::vector<std::string> rows;
  std::map<std::pair<std::string, std::pair<std::string, std::string>>, const RunGroup*> cell;
  std::map<std::pair<std::string, std::string>, const RunGroup*> first;
  std::vector<const RunGroup*> ordered;
  for (const RunGroup& g : groups) ordered.push_back(&g);
  std::stable_sort(ordered.begin(), ordered.end(), [](const RunGroup* a, const RunGroup* b) {
    auto rank = [](const RunGroup* g) {  // a variant ("transformer-alibi") after its arch
      const std::string arch = g->encoder.substr(0, g->encoder.find('-'));
      return std::make_tuple(g->control == "majority", SizeRank(g->size), g->control != "none",
                             model::ArchRank(arch), g->encoder);
    };
    return rank(a) < rank(b);
  });
  for (const RunGroup* g : ordered) {
    const auto ts = std::make_pair(g->task, g->split);
    if (first.emplace(ts, g).second) columns.push_back(ts);
    const std::string label = RowLabel(*g);
    if (std::find(rows.begin(), rows.end(), label) == rows.end()) rows.push_back(label);
    cell[{label, ts}] = g;
  }
  absl::StrAppend(md, "## Finetuning scores\n\n| encoder | params |");
  for (const auto& ts : columns) {
    const RunGroup* g = first[ts];
    absl::StrAppend(md, " ", g->task, " (", g->kind, ", ", g->split, " ", g->metric, ") |");
  }
  absl::StrAppend(md, "\n|---|---:|");
  for (size_t i = 0; i < columns.size(); ++i) absl::StrAppend(md, "---:|");
  absl::StrAppend(md, "\n");
  for (const std::string& label : rows) {
    std::string params = "";
    std::string line;
    for (const auto& ts : columns) {
      auto it = cell.find({label, ts});
      if (it == cell.end()) {
        absl::StrAppend(&line, " – |");
        continue;
      }
      if (it->second->params > 0) params = Params(it->second->params);
      absl::StrAppend(&line, " ",
                      it->second->control == "majority"
                          ? Pts(it->second->runs.values.front())
                          : PointsInterval(MeanInterval(it->second->runs)),
                      " |");
    }
    absl::StrAppend(md, "| ", label, " | ", params, " |", line, "\n");
  }
  absl::StrAppend(
      md,
      "\n*majority class*: always answering the reported split's most frequent label. "
      "*second segment only*: the Transformer trained and scored on the second segment alone "
      "(hypothesis-only for NLI). A cross-sentence comparison is judged only where the "
      "Transformer beats both by more than its interval.\n\n");
}

// The verdicts (study/verdict.h) and a plain summary of the pattern verdicts.
void AppendVerdicts(const std::vector<ResultRow>& rows, const std::string& baseline,
                    std::string* md) {
  absl::StrAppend(md, "## Finding: attention-free vs Transformer, single- vs cross-sentence\n\n");
  absl::StrAppend(
      md,
      "The paper's pattern: at equal size gMLP matches the Transformer on single-sentence tasks "
      "(SST-2) but trails it on cross-sentence tasks (MNLI), and aMLP (gMLP with a tiny "
      "attention) closes or reverses that gap; on the alignment probe, the hypothesis predicts "
      "gMLP near the others on the aligned version and behind them on the shifted one. Gaps are "
      "encoder minus Transformer in points with 95% intervals; a verdict needs an interval that "
      "excludes zero. The Transformer here is the baseline, ",
      EncoderLabel(baseline), " (`", baseline, "` in results.csv).\n\n");
  VerdictOptions options;
  options.baseline = baseline;
  options.gmlp = Roles().gating;
  options.amlp = Roles().gating_attention;
  auto verdicts = ComputeVerdicts(rows, options);
  if (!verdicts.ok()) {
    absl::StrAppend(md, "No verdicts: ", verdicts.status().message(), "\n\n");
    return;
  }
  absl::StrAppend(md, FormatVerdicts(*verdicts), "\n");
  std::map<std::string, int> count;
  std::vector<std::string> names;  // the patterns, in their order
  for (const PatternVerdict& p : verdicts->patterns) {
    ++count[p.verdict];
    if (std::find(names.begin(), names.end(), p.pattern) == names.end()) names.push_back(p.pattern);
  }
  absl::StrAppend(md, "**Plainly:** of ", verdicts->patterns.size(),
                  " pattern verdicts (per size: ", absl::StrJoin(names, ", "), "), ",
                  count["holds"], " hold, ", count["does not hold"], " go against the paper, ",
                  count["not resolved"], " are not resolved by the intervals and ",
                  count["cannot judge"], " cannot be judged (each line above says why).\n\n");
}

// Under the verdicts: the finetuned cells whose pretraining did not take their held-out loss
// below the context-free floor (it learned nothing from context there), the Transformer first,
// since every gap above is measured against it.
void AppendFloorCaveat(const std::vector<CellResult>& cells, double floor,
                       const std::string& baseline, std::string* md) {
  if (floor <= 0) return;
  std::vector<std::string> baselines, others;
  for (const CellResult& c : cells) {
    if (!IsMainCell(c) || c.scores.empty() || c.mlm_loss < floor) continue;
    (c.encoder == baseline ? baselines : others)
        .push_back(absl::StrFormat("%s (%.3f)", c.name, c.mlm_loss));
  }
  if (!baselines.empty()) {
    absl::StrAppend(
        md, absl::StrFormat(
                "**Caveat: the baseline learned nothing from context in pretraining.** %s ended "
                "at or above the context-free floor (%.3f nats, see \"Held-out MLM "
                "perplexity\"): every gap at that size compares with a Transformer whose "
                "attention was learned during finetuning alone.\n\n",
                absl::StrJoin(baselines, ", "), floor));
  }
  if (!others.empty()) {
    absl::StrAppend(
        md, absl::StrFormat("Also at or above the context-free floor (%.3f nats): %s.\n\n", floor,
                            absl::StrJoin(others, ", ")));
  }
}

// The pretraining loss nearest 1/4, 1/2 and 3/4 of a cell's steps ("–" without a curve).
std::string CurveMarks(const CellResult& c) {
  std::vector<std::string> marks;
  for (double f : {0.25, 0.5, 0.75}) {
    const CurvePoint* best = nullptr;
    for (const CurvePoint& p : c.curve) {
      if (best == nullptr ||
          std::abs(p.step - f * c.pretrain_steps) < std::abs(best->step - f * c.pretrain_steps)) {
        best = &p;
      }
    }
    marks.push_back(best ? absl::StrFormat("%.2f", best->loss) : std::string("–"));
  }
  return absl::StrJoin(marks, ", ");
}

// The gMLP SGU variants of each size, best to worst held-out perplexity, against the paper's
// order (Table 3).
void AppendSguOrder(const std::vector<CellResult>& cells, std::string* md) {
  std::map<std::pair<int, std::string>, std::vector<const CellResult*>> by_size;
  for (const CellResult& c : cells) {
    if (c.arch == Roles().gating) by_size[{SizeRank(c.size), c.size}].push_back(&c);
  }
  const std::vector<std::string> paper = {"split", "multiplicative", "additive", "linear"};
  for (auto& [key, list] : by_size) {
    if (list.size() < 2) continue;
    std::sort(list.begin(), list.end(), [](const CellResult* a, const CellResult* b) {
      return a->mlm_perplexity < b->mlm_perplexity;
    });
    std::vector<std::string> observed;
    for (const CellResult* c : list) observed.push_back(c->sgu.empty() ? "split" : c->sgu);
    std::vector<std::string> expected;
    for (const std::string& p : paper) {
      if (std::find(observed.begin(), observed.end(), p) != observed.end()) expected.push_back(p);
    }
    absl::StrAppend(md, "\nSGU variants of gMLP-", key.second,
                    ", best to worst: ", absl::StrJoin(observed, " < "), ". ",
                    observed == expected ? "This **matches** the paper's order."
                                         : absl::StrCat("The paper's order would be ",
                                                        absl::StrJoin(expected, " < "),
                                                        "; it **does not match** at this scale."),
                    "\n");
  }
}

// Every cell's held-out MLM loss and perplexity, its curve, and the SGU variants' order.
void AppendPerplexity(const std::vector<CellResult>& cells, double floor, std::string* md) {
  absl::StrAppend(md, "## Held-out MLM perplexity\n\n");
  absl::StrAppend(md,
                  "Masked-token cross-entropy on the shards' validation split, the same masked "
                  "positions for every cell; the curve columns are the loss while pretraining "
                  "(`curves.csv`, plotted above): a curve that flattens early at a high loss "
                  "has learned little beyond word frequencies. The paper's SGU ablation (Table 3) "
                  "orders the variants split < multiplicative < "
                  "additive < linear (lower is better).\n\n");
  if (floor > 0) {
    absl::StrAppend(
        md, absl::StrFormat(
                "**Context-free floor: %.3f nats** (perplexity %.1f): the expected loss on these "
                "positions of the best predictor that sees only the token at the position "
                "([MASK], a random id or the original, as the masking left it) and the "
                "training split's token frequencies, none of its neighbours "
                "(`data::ContextFreeMlmLoss`). A cell not below it has learned nothing from "
                "context; the last column is how far below it each cell ended.\n\n",
                floor, std::exp(floor)));
  }
  absl::StrAppend(md,
                  "| encoder | SGU | params | pretraining tokens | loss at 1/4, 1/2, 3/4 of the "
                  "steps | final MLM loss | perplexity |",
                  floor > 0 ? " below the floor |\n|---|---|---:|---:|---|---:|---:|---:|\n"
                            : "\n|---|---|---:|---:|---|---:|---:|\n");
  for (const CellResult& c : cells) {
    absl::StrAppend(md, "| ", c.name, " | ", c.sgu.empty() ? "–" : c.sgu, " | ", Params(c.params),
                    " | ", absl::StrFormat("%.2fM", c.pretrain_tokens / 1e6), " | ", CurveMarks(c),
                    " | ", absl::StrFormat("%.3f", c.mlm_loss), " | ",
                    absl::StrFormat("%.1f", c.mlm_perplexity), " |",
                    floor > 0 ? absl::StrFormat(" %+.3f |", floor - c.mlm_loss) : "", "\n");
  }
  AppendSguOrder(cells, md);
}

}  // namespace

std::string ReportMarkdown(const std::vector<CellResult>& unsorted,
                           const std::vector<ResultRow>& rows, const ReportContext& context,
                           const std::string& plot_basename) {
  const std::vector<CellResult> cells = SortedCells(unsorted);
  std::string md;
  const bool probe_curve = std::any_of(rows.begin(), rows.end(), [](const ResultRow& r) {
    return r.reported && ProbeShiftOf(r.task) >= 0;
  });
  AppendSetup(context, plot_basename, probe_curve, &md);
  AppendTimings(context, &md);
  AppendScores(GroupRows(rows), &md);
  AppendVerdicts(rows, context.baseline, &md);
  AppendFloorCaveat(cells, context.context_free_loss, context.baseline, &md);
  AppendPerplexity(cells, context.context_free_loss, &md);
  return md;
}

absl::Status WriteStudyOutputs(const std::vector<CellResult>& cells, const ReportContext& context,
                               const std::string& dir) {
  GMLP_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string results = JoinPath(dir, "results.csv");
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(results, FormatResultsTable(ResultRows(cells))));
  // Everything below is computed from the file as written (and the predictions it names).
  GMLP_ASSIGN_OR_RETURN(const std::vector<ResultRow> rows, ReadResultsTable(results));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "summary.csv"), SummaryCsv(rows)));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "cells.csv"), CellsCsv(cells)));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "curves.csv"), CurvesCsv(cells)));
  const std::string basename = "accuracy_vs_params";
  std::string md = ReportMarkdown(cells, rows, context, basename);
  const std::string plot_dir = JoinPath(dir, "plot");
  absl::Status plot = WritePlot(rows, plot_dir, basename);
  if (plot.ok()) {
    plot = WriteCurvesPlot(cells, context.curve_context_free_loss, plot_dir, "learning_curves");
  }
  if (plot.ok()) plot = WriteProbeShiftPlot(rows, plot_dir, kProbeShiftPlot);
  if (plot.ok()) {
    for (const std::string& name :
         {basename, std::string("learning_curves"), std::string(kProbeShiftPlot)}) {
      for (const char* ext : {".png", ".svg"}) {
        auto bytes = ReadFile(JoinPath(plot_dir, name + ext));
        if (bytes.ok()) {
          GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, name + ext), *bytes));
        }
      }
    }
  } else {
    absl::StrAppend(&md, "\n**Plot not rendered:** ", plot.message(), "\n");
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "report.md"), md));
  return plot;
}

}  // namespace gmlp::study
