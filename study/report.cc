#include "study/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

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

const CellResult* FindCell(const std::vector<CellResult>& cells, const std::string& arch,
                           const std::string& size) {
  for (const CellResult& c : cells) {
    if (c.arch == arch && c.size == size && IsMainCell(c)) return &c;
  }
  return nullptr;
}

std::string Params(int64_t n) {
  if (n >= 1000000) return absl::StrFormat("%.2fM", n / 1e6);
  if (n >= 1000) return absl::StrFormat("%.0fk", n / 1e3);
  return absl::StrCat(n);
}

// Scores are shown in points (x100): accuracy 0.853 -> 85.3.
std::string Pts(double v) { return absl::StrFormat("%.1f", 100 * v); }
std::string SignedPts(double v) { return absl::StrFormat("%+.1f", 100 * v); }

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

// Difference of medians (a - b) and its seed spread sqrt(std_a^2 + std_b^2).
struct Diff {
  double value = 0;
  double spread = 0;
  bool ok = false;
  bool at_floor = false;  // not ok because a side did not beat the majority class
};

// A score whose seed median is within a point of the majority-class accuracy learned nothing
// usable: differences against it say nothing about the architectures.
bool AtFloor(const TaskScore& s, double median) {
  return s.majority >= 0 && median <= s.majority + 0.01;
}

Diff DiffOf(const TaskScore* a, const TaskScore* b) {
  Diff d;
  if (a == nullptr || b == nullptr || a->values.empty() || b->values.empty()) return d;
  const SeedStats sa = Summarize(a->values), sb = Summarize(b->values);
  if (AtFloor(*a, sa.median) || AtFloor(*b, sb.median)) {
    d.at_floor = true;
    return d;
  }
  d.value = sa.median - sb.median;
  d.spread = std::sqrt(sa.std * sa.std + sb.std * sb.std);
  d.ok = true;
  return d;
}

// Mean of several task differences; spread of the mean = sqrt(sum spread^2) / n.
Diff MeanDiff(const std::vector<Diff>& diffs) {
  Diff m;
  double var = 0;
  int n = 0;
  for (const Diff& d : diffs) {
    if (!d.ok) continue;
    m.value += d.value;
    var += d.spread * d.spread;
    ++n;
  }
  if (n == 0) return m;
  m.value /= n;
  m.spread = std::sqrt(var) / n;
  m.ok = true;
  return m;
}

std::string DiffText(const Diff& d) {
  if (!d.ok) return d.at_floor ? "n/a (floor)" : "n/a";
  return absl::StrCat(SignedPts(d.value), " ± ", Pts(d.spread));
}

}  // namespace

bool IsMainCell(const CellResult& c) {
  const model::ArchSpec* arch = model::FindArch(c.arch);
  return c.sgu.empty() || c.sgu == "split" || arch == nullptr || !arch->has_sgu;
}

const TaskScore* FindScore(const CellResult& c, const std::string& task) {
  for (const TaskScore& s : c.scores) {
    if (s.task == task) return &s;
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
                      {"arch", arch},
                      {"size", size},
                      {"sgu", sgu},
                      {"params", params},
                      {"non_embedding_params", non_embedding_params},
                      {"pretrain_steps", pretrain_steps},
                      {"mlm_loss", mlm_loss},
                      {"mlm_perplexity", mlm_perplexity},
                      {"pretrain_seconds", pretrain_seconds},
                      {"finetune_seconds", finetune_seconds}};
  j["scores"] = nlohmann::json::array();
  for (const TaskScore& s : scores) {
    j["scores"].push_back({{"task", s.task},
                           {"kind", s.kind},
                           {"split", s.split},
                           {"metric", s.metric},
                           {"seeds", s.seeds},
                           {"values", s.values},
                           {"majority", s.majority}});
  }
  return j;
}

absl::StatusOr<CellResult> CellResult::FromJson(const nlohmann::json& j) {
  CellResult c;
  try {
    c.name = j.at("name").get<std::string>();
    c.arch = j.at("arch").get<std::string>();
    c.size = j.at("size").get<std::string>();
    c.sgu = j.value("sgu", std::string());
    c.params = j.at("params").get<int64_t>();
    c.non_embedding_params = j.value("non_embedding_params", int64_t{0});
    c.pretrain_steps = j.value("pretrain_steps", int64_t{0});
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
      c.scores.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("malformed cell result (", e.what(), ")"));
  }
  return c;
}

std::string ResultsCsv(const std::vector<CellResult>& cells) {
  std::string out =
      "cell,arch,size,sgu,params,non_embedding_params,pretrain_steps,mlm_loss,mlm_perplexity,"
      "task,kind,split,metric,seed,value\n";
  for (const CellResult& c : SortedCells(cells)) {
    const std::string head =
        absl::StrCat(CsvField(c.name), ",", c.arch, ",", c.size, ",", c.sgu, ",", c.params, ",",
                     c.non_embedding_params, ",", c.pretrain_steps, ",", Num(c.mlm_loss), ",",
                     Num(c.mlm_perplexity));
    if (c.scores.empty()) {
      absl::StrAppend(&out, head, ",,,,,,\n");
      continue;
    }
    for (const TaskScore& s : c.scores) {
      for (size_t i = 0; i < s.values.size(); ++i) {
        absl::StrAppend(&out, head, ",", CsvField(s.task), ",", s.kind, ",", CsvField(s.split), ",",
                        s.metric, ",", i < s.seeds.size() ? s.seeds[i] : i, ",", Num(s.values[i]),
                        "\n");
      }
    }
  }
  return out;
}

std::string SummaryCsv(const std::vector<CellResult>& cells) {
  std::string out =
      "cell,arch,size,sgu,params,task,kind,split,metric,seeds,median,mean,std,min,max\n";
  for (const CellResult& c : SortedCells(cells)) {
    for (const TaskScore& s : c.scores) {
      const SeedStats st = Summarize(s.values);
      absl::StrAppend(&out, CsvField(c.name), ",", c.arch, ",", c.size, ",", c.sgu, ",", c.params,
                      ",", CsvField(s.task), ",", s.kind, ",", CsvField(s.split), ",", s.metric,
                      ",", st.n, ",", Num(st.median), ",", Num(st.mean), ",", Num(st.std), ",",
                      Num(st.min), ",", Num(st.max), "\n");
    }
  }
  return out;
}

namespace {

// One size's comparison: mean differences to the Transformer over single- and cross-sentence
// tasks, for gMLP and aMLP.
struct SizeFinding {
  std::string size;
  Diff g_single, g_cross, a_single, a_cross;
};

// Title, description, setup list and the plot.
void AppendSetup(const ReportContext& context, const std::string& plot_basename, std::string* md) {
  *md = "# Accuracy vs parameters: Transformer, gMLP, aMLP\n\n";
  absl::StrAppend(
      md,
      "Each cell of the grid is an encoder at a size, MLM-pretrained on the same shards for the "
      "same number of steps, then finetuned on every task with each seed. Scores are the "
      "best-epoch value of the reported split, in points (x100); `median ± std` is over seeds. "
      "This reproduces the experiment of \"Pay Attention to MLPs\" (Liu et al. 2021, Fig. 4 and "
      "Table 4) at a far smaller scale.\n\n");

  absl::StrAppend(md, "## Setup\n\n");
  for (const auto& [k, v] : context.settings.items()) {
    absl::StrAppend(md, "- ", k, ": ", v.is_string() ? v.get<std::string>() : v.dump(), "\n");
  }
  if (context.total_seconds > 0) {
    absl::StrAppend(md, "- wall time of this invocation: ",
                    absl::StrFormat("%.1f min", context.total_seconds / 60), "\n");
  }
  absl::StrAppend(md, "\n![accuracy vs parameters](", plot_basename, ".png)\n\n");
  absl::StrAppend(md, "Files: `results.csv` (every seed), `summary.csv`, `", plot_basename,
                  ".png` / `", plot_basename, ".svg` (gnuplot script `plot/", plot_basename,
                  ".gp`).\n\n");
}

// One row per finetuned cell: median ± std per task, then the majority-class row.
void AppendScores(const std::vector<CellResult>& cells, const std::vector<const TaskScore*>& tasks,
                  std::string* md) {
  absl::StrAppend(md, "## Finetuning scores\n\n| encoder | params |");
  for (const TaskScore* t : tasks) {
    absl::StrAppend(md, " ", t->task, " (", t->kind, ", ", t->split, " ", t->metric, ") |");
  }
  absl::StrAppend(md, "\n|---|---:|");
  for (size_t i = 0; i < tasks.size(); ++i) absl::StrAppend(md, "---:|");
  absl::StrAppend(md, "\n");
  for (const CellResult& c : cells) {
    if (c.scores.empty()) continue;
    absl::StrAppend(md, "| ", c.name, " | ", Params(c.params), " |");
    for (const TaskScore* t : tasks) {
      const TaskScore* s = FindScore(c, t->task);
      if (s == nullptr || s->values.empty()) {
        absl::StrAppend(md, " – |");
        continue;
      }
      const SeedStats st = Summarize(s->values);
      absl::StrAppend(md, " ", Pts(st.median), " ± ", Pts(st.std), " |");
    }
    absl::StrAppend(md, "\n");
  }
  bool any_majority = false;
  for (const TaskScore* t : tasks) any_majority = any_majority || t->majority >= 0;
  if (any_majority) {
    absl::StrAppend(md, "| *majority class* | |");
    for (const TaskScore* t : tasks) {
      absl::StrAppend(md, " ", t->majority >= 0 ? Pts(t->majority) : std::string("–"), " |");
    }
    absl::StrAppend(md,
                    "\n\n*majority class*: the score of always answering the reported "
                    "split's most frequent label; a cell at that level has learned nothing "
                    "usable for the task.\n");
  }
}

// The finding's tables: per size and task the medians and differences to the Transformer, then
// per size the mean differences. Returns the per-size means.
std::vector<SizeFinding> AppendFindingTables(const std::vector<CellResult>& cells,
                                             const std::vector<const TaskScore*>& tasks,
                                             std::string* md) {
  absl::StrAppend(md, "\n## Finding: attention-free vs Transformer, single- vs cross-sentence\n\n");
  absl::StrAppend(
      md,
      "The paper's pattern: at equal size gMLP matches the Transformer on single-sentence tasks "
      "(SST-2) but trails it on cross-sentence tasks (MNLI), and aMLP (gMLP with a tiny "
      "attention) closes or reverses that gap. Below, `gMLP − T` is the difference of seed "
      "medians in points; `±` is the seed spread sqrt(std_a² + std_b²) (for a group of tasks: "
      "that of the mean). `n/a (floor)`: one of the two cells is within a point of the "
      "majority-class score, so the difference says nothing about the architectures and is "
      "left out of the verdict.\n\n");
  std::set<std::string> sizes_seen;
  std::vector<std::string> sizes;
  for (const CellResult& c : cells) {
    if (sizes_seen.insert(c.size).second) sizes.push_back(c.size);
  }
  absl::StrAppend(md, "| size | task | kind | Transformer | gMLP | aMLP | gMLP − T | aMLP − T |\n");
  absl::StrAppend(md, "|---|---|---|---:|---:|---:|---:|---:|\n");
  std::vector<SizeFinding> findings;
  for (const std::string& size : sizes) {
    const CellResult* t = FindCell(cells, "transformer", size);
    const CellResult* g = FindCell(cells, "gmlp", size);
    const CellResult* a = FindCell(cells, "amlp", size);
    if (t == nullptr || (g == nullptr && a == nullptr)) continue;
    std::vector<Diff> gs, gc, as, ac;
    for (const TaskScore* task : tasks) {
      const TaskScore* st = FindScore(*t, task->task);
      const TaskScore* sg = g ? FindScore(*g, task->task) : nullptr;
      const TaskScore* sa = a ? FindScore(*a, task->task) : nullptr;
      if (st == nullptr) continue;
      const Diff dg = DiffOf(sg, st), da = DiffOf(sa, st);
      auto med = [](const TaskScore* s) {
        return s && !s->values.empty() ? Pts(Summarize(s->values).median) : std::string("–");
      };
      absl::StrAppend(md, "| ", size, " | ", task->task, " | ", task->kind, " | ", med(st), " | ",
                      med(sg), " | ", med(sa), " | ", DiffText(dg), " | ", DiffText(da), " |\n");
      (task->kind == "single" ? gs : gc).push_back(dg);
      (task->kind == "single" ? as : ac).push_back(da);
    }
    findings.push_back({size, MeanDiff(gs), MeanDiff(gc), MeanDiff(as), MeanDiff(ac)});
  }
  absl::StrAppend(md,
                  "\n| size | gMLP − T, single | gMLP − T, cross | aMLP − T, single | aMLP − T, "
                  "cross |\n|---|---:|---:|---:|---:|\n");
  for (const SizeFinding& f : findings) {
    absl::StrAppend(md, "| ", f.size, " | ", DiffText(f.g_single), " | ", DiffText(f.g_cross),
                    " | ", DiffText(f.a_single), " | ", DiffText(f.a_cross), " |\n");
  }
  absl::StrAppend(md, "\n");
  return findings;
}

// (a) of the paper's pattern: gMLP's deficit is larger on cross-sentence tasks than on
// single-sentence ones. Sets *holds.
std::string GapText(const SizeFinding& f, bool* holds) {
  const double gap = f.g_cross.value - f.g_single.value;
  const double gap_spread =
      std::sqrt(f.g_cross.spread * f.g_cross.spread + f.g_single.spread * f.g_single.spread);
  std::string a_text;
  *holds = false;
  if (gap < -gap_spread) {
    *holds = true;
    a_text = absl::StrCat(
        "gMLP trails the Transformer more on cross-sentence tasks than on "
        "single-sentence ones (by ",
        Pts(-gap), " points, spread ", Pts(gap_spread), ")");
  } else if (gap > gap_spread) {
    a_text = absl::StrCat("gMLP does relatively *better* on cross-sentence tasks (by ", Pts(gap),
                          " points, spread ", Pts(gap_spread), "), the opposite of the paper");
  } else {
    a_text = absl::StrCat("the cross- vs single-sentence difference of gMLP − T (", SignedPts(gap),
                          " points) is within the seed spread (", Pts(gap_spread), ")");
  }
  return a_text;
}

// (b): aMLP gains over gMLP on cross-sentence tasks. Sets *holds.
std::string GainText(const SizeFinding& f, bool* holds) {
  std::string b_text;
  *holds = false;
  if (f.a_cross.ok) {
    const double gain = f.a_cross.value - f.g_cross.value;
    const double gain_spread =
        std::sqrt(f.a_cross.spread * f.a_cross.spread + f.g_cross.spread * f.g_cross.spread);
    if (gain > gain_spread) {
      *holds = true;
      b_text = absl::StrCat("aMLP gains ", Pts(gain),
                            " points over gMLP on cross-sentence tasks "
                            "(spread ",
                            Pts(gain_spread), ")");
    } else {
      b_text = absl::StrCat("aMLP vs gMLP on cross-sentence tasks: ", SignedPts(gain),
                            " points, not beyond the spread (", Pts(gain_spread), ")");
    }
  } else {
    b_text = "no aMLP cell at this size";
  }
  return b_text;
}

// The verdict per size, then the plain summary over sizes.
void AppendVerdicts(const std::vector<SizeFinding>& findings, std::string* md) {
  int appears = 0, judged = 0;
  for (const SizeFinding& f : findings) {
    if (!f.g_single.ok || !f.g_cross.ok) {
      absl::StrAppend(md, "- **", f.size,
                      "**: cannot judge (needs gMLP and the Transformer above the majority-class "
                      "floor on both a single-sentence and a cross-sentence task).\n");
      continue;
    }
    ++judged;
    bool a_holds = false, b_holds = false;
    const std::string a_text = GapText(f, &a_holds);
    const std::string b_text = GainText(f, &b_holds);
    const bool holds = a_holds && b_holds;
    appears += holds;
    absl::StrAppend(
        md, "- **", f.size, "**: ", a_text, "; ", b_text, ". Pattern ",
        holds ? "**appears**" : (a_holds || b_holds ? "**partly appears**" : "**does not appear**"),
        " at this size.\n");
  }
  absl::StrAppend(md, "\n**Plainly:** ");
  const int sizes_run = static_cast<int>(findings.size());
  if (judged == 0) {
    absl::StrAppend(md,
                    "not enough cells finished above the majority-class floor to judge the "
                    "paper's pattern.\n");
  } else {
    if (appears == judged) {
      absl::StrAppend(md,
                      "the paper's pattern (gMLP weaker on cross-sentence tasks, fixed by a "
                      "tiny attention) appears at every size ",
                      judged < sizes_run ? "that could be judged" : "run here");
    } else if (appears > 0) {
      absl::StrAppend(md, "the paper's pattern appears at ", appears, " of the ", judged,
                      " sizes that could be judged, not at the others");
    } else {
      absl::StrAppend(md,
                      "the paper's pattern does not appear at the scale run here (tiny models, "
                      "short pretraining, small finetuning sets: differences are mostly "
                      "within seed noise)");
    }
    if (judged < sizes_run) {
      absl::StrAppend(md, "; ", sizes_run - judged, " of ", sizes_run,
                      " sizes could not be judged (cells at the majority-class floor)");
    }
    absl::StrAppend(md, ".\n");
  }
}

// Every cell's held-out MLM loss and perplexity, and the SGU variants' order vs the paper's.
void AppendPerplexity(const std::vector<CellResult>& cells, std::string* md) {
  absl::StrAppend(md, "\n## Held-out MLM perplexity\n\n");
  absl::StrAppend(md,
                  "Masked-token cross-entropy on the shards' validation split, the same masked "
                  "positions for every cell. The paper's SGU ablation (Table 3) orders the "
                  "variants split < multiplicative < additive < linear (lower is better).\n\n");
  absl::StrAppend(md,
                  "| encoder | arch | SGU | params | pretrain steps | MLM loss | perplexity |\n");
  absl::StrAppend(md, "|---|---|---|---:|---:|---:|---:|\n");
  for (const CellResult& c : cells) {
    absl::StrAppend(md, "| ", c.name, " | ", model::ArchLabel(c.arch), " | ",
                    c.sgu.empty() ? "–" : c.sgu, " | ", Params(c.params), " | ", c.pretrain_steps,
                    " | ", absl::StrFormat("%.3f", c.mlm_loss), " | ",
                    absl::StrFormat("%.1f", c.mlm_perplexity), " |\n");
  }
  std::map<std::pair<int, std::string>, std::vector<const CellResult*>> by_size;
  for (const CellResult& c : cells) {
    if (c.arch == "gmlp") by_size[{SizeRank(c.size), c.size}].push_back(&c);
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

}  // namespace

std::string ReportMarkdown(const std::vector<CellResult>& unsorted, const ReportContext& context,
                           const std::string& plot_basename) {
  const std::vector<CellResult> cells = SortedCells(unsorted);
  const std::vector<const TaskScore*> tasks = TaskOrder(cells);
  std::string md;
  AppendSetup(context, plot_basename, &md);
  AppendScores(cells, tasks, &md);
  AppendVerdicts(AppendFindingTables(cells, tasks, &md), &md);
  AppendPerplexity(cells, &md);
  return md;
}

absl::Status WriteStudyOutputs(const std::vector<CellResult>& cells, const ReportContext& context,
                               const std::string& dir) {
  GMLP_RETURN_IF_ERROR(MakeDirs(dir));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "results.csv"), ResultsCsv(cells)));
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "summary.csv"), SummaryCsv(cells)));
  const std::string basename = "accuracy_vs_params";
  std::string md = ReportMarkdown(cells, context, basename);
  absl::Status plot = WritePlot(cells, JoinPath(dir, "plot"), basename);
  if (plot.ok()) {
    for (const char* ext : {".png", ".svg"}) {
      auto bytes = ReadFile(JoinPath(JoinPath(dir, "plot"), basename + ext));
      if (bytes.ok()) {
        GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, basename + ext), *bytes));
      }
    }
  } else {
    absl::StrAppend(&md, "\n**Plot not rendered:** ", plot.message(), "\n");
  }
  GMLP_RETURN_IF_ERROR(WriteFileAtomic(JoinPath(dir, "report.md"), md));
  return plot;
}

}  // namespace gmlp::study
