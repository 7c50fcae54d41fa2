// The study's outputs from made-up cells and a synthetic results.csv: the table rows (seeds,
// controls, majority rows), the verdicts the report computes from results.csv with a known gap,
// per-stage times, the perplexity ordering statement, and the gnuplot rendering.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "study/held_out.h"
#include "study/plot.h"
#include "study/report.h"
#include "study/results_table.h"

namespace gmlp::study {
namespace {

TaskScore Score(const std::string& task, const std::string& kind, const std::string& split,
                double value, double majority, const std::string& control = "none") {
  TaskScore s;
  s.task = task;
  s.kind = kind;
  s.split = split;
  s.metric = "accuracy";
  s.seeds = {1, 2, 3};
  s.values = {value - 0.005, value, value + 0.005};
  s.majority = majority;
  s.control = control;
  s.n_examples = 5000;
  s.train_examples = 6000;
  s.seconds = 40;
  return s;
}

CellResult Cell(const std::string& arch, const std::string& size, int64_t params, double sst,
                double nli, const std::string& sgu = "", double ppl = 50) {
  CellResult c;
  c.arch = arch;
  c.encoder = arch;
  c.size = size;
  c.sgu = sgu.empty() && arch != "transformer" ? "split" : sgu;
  c.name = absl::StrCat(arch, "-", size, sgu.empty() || sgu == "split" ? "" : "-sgu-" + sgu);
  c.params = params;
  c.mlm_perplexity = ppl;
  c.mlm_loss = std::log(ppl);
  c.pretrain_steps = 100;
  c.pretrain_tokens = 100 * 32 * 128;
  c.pretrain_seconds = 60;
  c.curve = {{25, std::log(ppl) + 3},
             {50, std::log(ppl) + 2},
             {75, std::log(ppl) + 1},
             {100, std::log(ppl)}};
  if (sgu.empty() || sgu == "split") {
    c.scores.push_back(Score("SST-2", "single", "dev", sst, 0.509));
    c.scores.push_back(Score("MNLI-like", "cross", "xnli_en_test", nli, 0.334));
    if (arch == "transformer") {
      c.scores.push_back(
          Score("MNLI-like", "cross", "xnli_en_test", nli - 0.15, 0.334, "second_only"));
    }
  }
  return c;
}

std::vector<CellResult> PaperLike() {
  // gMLP = Transformer on SST-2, 10 points worse on NLI; aMLP best on NLI.
  return {Cell("transformer", "tiny", 1000000, 0.80, 0.60),
          Cell("gmlp", "tiny", 1100000, 0.80, 0.50),
          Cell("amlp", "tiny", 1200000, 0.81, 0.62),
          Cell("transformer", "mini", 3000000, 0.82, 0.62),
          Cell("gmlp", "mini", 3100000, 0.83, 0.52),
          Cell("amlp", "mini", 3200000, 0.83, 0.64),
          Cell("gmlp", "tiny", 1100000, 0, 0, "multiplicative", 55),
          Cell("gmlp", "tiny", 1100000, 0, 0, "linear", 70),
          Cell("gmlp", "tiny", 1100000, 0, 0, "additive", 60)};
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Counts of one size (within 1.25x) share one label at their geometric middle, each an
// unlabelled minor tic; a count alone keeps its own label. (The cpu-3h plot's labels overlapped:
// 1.76M, 1.80M, 1.85M, 1.91M at one size.)
// floors.json: what a report made without the shards reads back; a bad one is one line naming
// the file and the fix.
TEST(StudyReportTest, FloorsRoundTripAndABadFileNamesItself) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/study_floors_", getpid());
  ASSERT_TRUE(MakeDirs(dir).ok());
  const std::string path = FloorsFile(dir);
  ReportContext floors;
  floors.context_free_loss = 6.4931;
  floors.curve_context_free_loss = 6.5012;
  ASSERT_TRUE(WriteFloors(path, floors).ok());
  ReportContext back;
  ASSERT_TRUE(ReadFloors(path, &back).ok());
  EXPECT_EQ(back.context_free_loss, 6.4931);
  EXPECT_EQ(back.curve_context_free_loss, 6.5012);
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"made_by\""), std::string::npos) << *text;

  ASSERT_TRUE(WriteFileAtomic(path, "{\"context_free_loss\": 6.4}").ok());
  absl::Status st = ReadFloors(path, &back);
  EXPECT_NE(st.message().find(path + ": not the study's floors"), std::string::npos) << st;
  EXPECT_NE(st.message().find("delete it"), std::string::npos) << st;
  ASSERT_TRUE(WriteFileAtomic(path, "6.4 nats").ok());
  st = ReadFloors(path, &back);
  EXPECT_NE(st.message().find(path + ": not valid JSON"), std::string::npos) << st;
  ASSERT_TRUE(RemoveTree(dir).ok());
}

TEST(StudyReportTest, ParameterAxisGroupsCountsOfOneSize) {
  EXPECT_EQ(ParamsXTics({1760000, 1910000, 3050000, 3280000, 950000}),
            "'950k' 950000, '1.76M-1.91M' 1833467, '' 1760000 1, '' 1910000 1, "
            "'3.05M-3.28M' 3162910, '' 3050000 1, '' 3280000 1");
  EXPECT_EQ(ParamsXTics({1000000, 1250000, 1250001}),
            "'1.00M-1.25M' 1118034, '' 1000000 1, '' 1250000 1, '1.25M' 1250001");
  EXPECT_EQ(ParamsXTics({}), "");
}

TEST(StudyReportTest, CellJsonRoundTrip) {
  CellResult c = Cell("transformer", "tiny", 123, 0.7, 0.6);
  c.encoder = "transformer";
  c.scores[0].predictions = {"a/seed-1/dev.tsv", "a/seed-2/dev.tsv", "a/seed-3/dev.tsv"};
  auto back = CellResult::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  EXPECT_EQ(back->scores[2].control, "second_only");
  EXPECT_EQ(back->curve.size(), 4u);
  EXPECT_EQ(back->scores[0].predictions[1], "a/seed-2/dev.tsv");
  EXPECT_FALSE(CellResult::FromJson(nlohmann::json::object()).ok());
}

TEST(StudyReportTest, ResultRowsHaveEverySeedControlAndOneMajorityRowPerSplit) {
  std::vector<CellResult> cells = PaperLike();
  cells[2].encoder = "amlp-attn16";
  const std::vector<ResultRow> rows = ResultRows(cells);
  // 6 main cells x 2 tasks x 3 seeds, 2 Transformer cells x 1 control x 3 seeds, 2 majority.
  ASSERT_EQ(rows.size(), 6u * 2 * 3 + 2 * 3 + 2);
  int controls = 0, majority = 0, attn16 = 0;
  for (const ResultRow& r : rows) {
    controls += r.control == "second_only";
    attn16 += r.encoder == "amlp-attn16";
    if (r.control == "majority") {
      ++majority;
      EXPECT_EQ(r.encoder, "majority");
      EXPECT_TRUE(r.size.empty());
    }
  }
  EXPECT_EQ(controls, 6);
  EXPECT_EQ(majority, 2);
  EXPECT_EQ(attn16, 6);
  EXPECT_EQ(rows.back().task, "MNLI-like");
  EXPECT_DOUBLE_EQ(rows.back().value, 0.334);
  // The table's text reads back to the same rows.
  auto back = ParseResultsTable(FormatResultsTable(rows), "<test>");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), rows.size());
}

TEST(StudyReportTest, SummaryHasMeansAndIntervals) {
  const std::string summary = SummaryCsv(ResultRows(PaperLike()));
  const std::vector<std::string> lines = Lines(summary);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_NE(lines[0].find("ci95_lo,ci95_hi"), std::string::npos);
  // Transformer-tiny on MNLI-like: mean 0.6 of 3 seeds on 5000 examples; the interval holds it
  // and is at most a few points wide.
  bool found = false;
  for (const std::string& l : lines) {
    if (l.rfind("transformer,tiny,1000000,MNLI-like,cross,xnli_en_test,none,", 0) != 0) continue;
    found = true;
    std::vector<std::string> f = absl::StrSplit(l, ',');
    ASSERT_GE(f.size(), 17u);
    EXPECT_EQ(f[8], "3");
    EXPECT_DOUBLE_EQ(std::stod(f[10]), 0.6);
    EXPECT_LT(std::stod(f[15]), 0.6);
    EXPECT_GT(std::stod(f[16]), 0.6);
    EXPECT_LT(std::stod(f[16]) - std::stod(f[15]), 0.05);
  }
  EXPECT_TRUE(found) << summary;
}

// The plot's error bars are summary.csv's intervals. Three seeds that got the same examples
// right: resampling the shared test examples moves every seed at once, so the interval is about
// sqrt(3) wider than if the seeds were independent binomial draws (which the plot once used).
TEST(StudyReportTest, PlotBarsAreTheSummaryIntervals) {
  std::vector<ResultRow> rows;
  std::vector<uint8_t> correct(200, 0);
  for (size_t i = 0; i < correct.size(); i += 10) {
    for (size_t k = i; k < i + 7; ++k) correct[k] = 1;  // 70% right
  }
  for (uint64_t seed : {1, 2, 3}) {
    ResultRow r;
    r.encoder = "gmlp";
    r.size = "tiny";
    r.params = 1000000;
    r.task = "SST-2";
    r.kind = "single";
    r.split = "dev";
    r.seed = seed;
    r.value = 0.7;
    r.n_examples = static_cast<int64_t>(correct.size());
    r.correct = correct;
    rows.push_back(r);
  }
  char tmpl[] = "/tmp/gmlp_study_plot_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  (void)WritePlot(rows, dir, "acc");  // the data files come first; gnuplot may be missing
  auto dat = ReadFile(JoinPath(dir, "acc_SST_2_gmlp.dat"));
  ASSERT_TRUE(dat.ok()) << dat.status();
  const std::vector<std::string> dat_lines = Lines(*dat);
  ASSERT_EQ(dat_lines.size(), 2u) << *dat;
  const std::vector<std::string> bar = absl::StrSplit(dat_lines[1], ' ');
  ASSERT_EQ(bar.size(), 4u);
  const std::vector<std::string> summary = Lines(SummaryCsv(rows));
  ASSERT_EQ(summary.size(), 2u);
  const std::vector<std::string> f = absl::StrSplit(summary[1], ',');
  ASSERT_GE(f.size(), 18u);
  EXPECT_EQ(f[17], "seeds+examples (paired)");
  EXPECT_NEAR(std::stod(bar[1]), 100 * std::stod(f[10]), 1e-3);  // mean
  EXPECT_NEAR(std::stod(bar[2]), 100 * std::stod(f[15]), 1e-3);  // ci95_lo
  EXPECT_NEAR(std::stod(bar[3]), 100 * std::stod(f[16]), 1e-3);  // ci95_hi
  // About +-6.4 points (one test set of 200), not the +-3.7 of three independent ones.
  EXPECT_GT(std::stod(bar[3]) - std::stod(bar[2]), 10.0);
  std::system(("rm -rf '" + dir + "'").c_str());
}

// The probe's curve (issue 39, item 3): one point per k per encoder, its bar the same interval
// as everywhere else, from scratch dashed beside pretrained, the majority class in every panel;
// nothing without shift-k rows.
TEST(StudyReportTest, ProbeCurveIsAccuracyAgainstShift) {
  std::vector<ResultRow> rows;
  auto add = [&rows](const std::string& encoder, const std::string& control, int64_t k, int right) {
    for (uint64_t seed : {1, 2}) {
      ResultRow r;
      r.encoder = encoder;
      r.size = control == "majority" ? "" : "tiny";
      r.params = control == "majority" ? 0 : 1000000;
      r.task = absl::StrCat("probe-shift-", k);
      r.kind = "probe";
      r.split = "test";
      r.seed = seed;
      r.control = control;
      r.correct.assign(100, 0);
      for (int i = 0; i < right; ++i) r.correct[i * 100 / right] = 1;
      r.value = right / 100.0;
      r.n_examples = 100;
      rows.push_back(r);
    }
  };
  for (int64_t k : {0, 4, 16}) {
    add("gmlp", "none", k, 90 - static_cast<int>(k));
    add("gmlp", "scratch", k, 80);
    add("transformer", "none", k, 70);
    add("", "majority", k, 50);
  }
  char tmpl[] = "/tmp/gmlp_probe_plot_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const absl::Status plotted = WriteProbeShiftPlot(rows, dir, "pc");
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {  // the data files come first
    EXPECT_TRUE(plotted.ok()) << plotted;
    EXPECT_TRUE(ReadFile(JoinPath(dir, "pc.png")).ok());
  }
  auto dat = ReadFile(JoinPath(dir, "pc_tiny_gmlp_none.dat"));
  ASSERT_TRUE(dat.ok()) << dat.status();
  const std::vector<std::string> lines = Lines(*dat);
  ASSERT_EQ(lines.size(), 4u) << *dat;
  const int64_t ks[] = {0, 4, 16};
  for (int i = 0; i < 3; ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i + 1], ' ');
    ASSERT_EQ(f.size(), 4u) << lines[i + 1];
    EXPECT_EQ(std::stoll(f[0]), ks[i]);
    EXPECT_NEAR(std::stod(f[1]), 90 - ks[i], 1e-6);
    EXPECT_LT(std::stod(f[2]), std::stod(f[1]));
    EXPECT_GT(std::stod(f[3]), std::stod(f[1]));
  }
  for (const char* file :
       {"pc_tiny_gmlp_scratch.dat", "pc_tiny_transformer_none.dat", "pc_tiny_majority.dat"}) {
    EXPECT_TRUE(ReadFile(JoinPath(dir, file)).ok()) << file;
  }
  auto gp = ReadFile(JoinPath(dir, "pc.gp"));
  ASSERT_TRUE(gp.ok()) << gp.status();
  EXPECT_NE(gp->find("set title 'tiny'"), std::string::npos) << *gp;
  EXPECT_NE(gp->find("dt 3 lc rgb '#009e73' title 'gMLP (from scratch)'"), std::string::npos)
      << *gp;
  EXPECT_NE(gp->find("set xtics (0, 4, 16)"), std::string::npos) << *gp;
  EXPECT_NE(ReportMarkdown({}, rows, ReportContext(), "acc").find("(probe_vs_shift.png)"),
            std::string::npos);

  // No shift-k rows: nothing written, and no image named in the report.
  for (ResultRow& r : rows) r.task = "probe-aligned";
  const std::string none = JoinPath(dir, "none");
  EXPECT_TRUE(WriteProbeShiftPlot(rows, none, "pc").ok());
  EXPECT_FALSE(ReadFile(JoinPath(none, "pc.gp")).ok());
  EXPECT_EQ(ReportMarkdown({}, rows, ReportContext(), "acc").find("probe_vs_shift"),
            std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

// The check: a synthetic results.csv with a known gap gives the known verdict in the
// report (gMLP 10 points behind on the cross-sentence task, level on the single one).
TEST(StudyReportTest, ReportVerdictsComeFromResultsCsv) {
  char tmpl[] = "/tmp/gmlp_study_verdict_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = JoinPath(tmpl, "results.csv");
  ASSERT_TRUE(WriteFileAtomic(path, FormatResultsTable(ResultRows(PaperLike()))).ok());
  auto rows = ReadResultsTable(path);
  std::system(absl::StrCat("rm -rf '", tmpl, "'").c_str());
  ASSERT_TRUE(rows.ok()) << rows.status();
  const std::string md = ReportMarkdown({}, *rows, ReportContext(), "plot");
  EXPECT_NE(md.find("| tiny | MNLI-like | xnli_en_test | gmlp | -10.0 ["), std::string::npos) << md;
  EXPECT_NE(md.find("| behind |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny | SST-2 | dev | gmlp | +0.0 ["), std::string::npos) << md;
  EXPECT_NE(md.find("**tiny, cross_vs_single** (gMLP lags the Transformer more on "
                    "cross-sentence than on single-sentence tasks): holds."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**mini, amlp_closes_gap** (aMLP beats gMLP on cross-sentence tasks): holds"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| *majority class* |  | 50.9 | 33.4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| Transformer-tiny *(second segment only)* | 1.00M | – | 45.0 ["),
            std::string::npos)
      << md;

  // The same table with gMLP level on NLI: the pattern is not resolved, not "holds".
  std::vector<CellResult> level = PaperLike();
  level[1].scores[1] = Score("MNLI-like", "cross", "xnli_en_test", 0.60, 0.334);
  level[4].scores[1] = Score("MNLI-like", "cross", "xnli_en_test", 0.62, 0.334);
  const std::string md2 = ReportMarkdown({}, ResultRows(level), ReportContext(), "plot");
  EXPECT_NE(md2.find("**tiny, cross_vs_single** (gMLP lags the Transformer more on "
                     "cross-sentence than on single-sentence tasks): not resolved."),
            std::string::npos)
      << md2;
}

TEST(StudyReportTest, TimingsShowSharesAndRates) {
  ReportContext context;
  // The shards stage ran twice (a resumed study re-checked its data): one row, summed.
  context.stages = {
      {"shards", 6, 6e5, "tokens"}, {"tokenizer training", 0, 0, ""}, {"shards", 4, 4e5, "tokens"}};
  for (StageTiming& t : CellTimings(PaperLike())) context.stages.push_back(t);
  // 9 cells x 60 s pretraining; 2 tasks + 1 control x 40 s x their cells of finetuning.
  const std::string md = ReportMarkdown(PaperLike(), ResultRows(PaperLike()), context, "plot");
  EXPECT_NE(md.find("| shards (2 runs) | 0.2 min | 1% | 100000 tokens/s |"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("| shards |"), std::string::npos) << md;
  EXPECT_NE(md.find("| pretraining gmlp-tiny | 1.0 min | "), std::string::npos) << md;
  EXPECT_NE(md.find("| finetuning MNLI-like (second segment only) | 1.3 min |"), std::string::npos)
      << md;
  // 540 s pretraining of 10 + 540 + 6 x 40 x 2 + 2 x 40 = 1110 s.
  EXPECT_NE(md.find("Pretraining took 49% of the recorded stage time"), std::string::npos) << md;
}

TEST(StudyReportTest, PerplexityTableAndSguOrder) {
  const std::string md = ReportMarkdown(PaperLike(), {}, ReportContext(), "plot");
  EXPECT_NE(md.find("split < multiplicative < additive < linear. This **matches**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| gmlp-tiny | split | 1.10M | 0.41M | 6.91, 5.91, 4.91 | 3.912 | 50.0 |"),
            std::string::npos)
      << md;
  std::vector<CellResult> cells = {Cell("gmlp", "tiny", 1000, 0.8, 0.6, "split", 40),
                                   Cell("gmlp", "tiny", 1000, 0, 0, "linear", 30)};
  const std::string md2 = ReportMarkdown(cells, {}, ReportContext(), "plot");
  EXPECT_NE(md2.find("linear < split"), std::string::npos) << md2;
  EXPECT_NE(md2.find("**does not match**"), std::string::npos) << md2;
  // No floor known: no floor line, no column.
  EXPECT_EQ(md.find("Context-free floor"), std::string::npos);
  // With the context-free floor: how far below it each cell ended (4.5 - ln 50 = +0.588).
  ReportContext with_floor;
  with_floor.context_free_loss = 4.5;
  const std::string md3 = ReportMarkdown(PaperLike(), {}, with_floor, "plot");
  EXPECT_NE(md3.find("**Context-free floor: 4.500 nats** (perplexity 90.0)"), std::string::npos)
      << md3;
  EXPECT_NE(md3.find("| gmlp-tiny | split | 1.10M | 0.41M | 6.91, 5.91, 4.91 | 3.912 | 50.0 | "
                     "+0.588 |"),
            std::string::npos)
      << md3;
  // Every cell is below 4.5: no caveat. With the floor at 3.95 (the made-up finetuned cells are at
  // ln 50 = 3.912; two are raised to 4.0) those two are named, the Transformer as the caveat;
  // the pretrain-only SGU variants (ln 55-70) are not finetuned cells and are not named.
  EXPECT_EQ(md3.find("Caveat: the baseline learned nothing"), std::string::npos) << md3;
  std::vector<CellResult> raised = PaperLike();
  for (CellResult& c : raised) {
    if (c.name == "transformer-tiny" || c.name == "amlp-mini") c.mlm_loss = 4.0;
  }
  ReportContext low_floor;
  low_floor.context_free_loss = 3.95;
  const std::string md4 = ReportMarkdown(raised, {}, low_floor, "plot");
  EXPECT_NE(md4.find("**Caveat: the baseline learned nothing from context in pretraining.** "
                     "transformer-tiny (4.000) ended at or above the context-free floor (3.950"),
            std::string::npos)
      << md4;
  EXPECT_NE(md4.find("Also at or above the context-free floor (3.950 nats): amlp-mini (4.000)."),
            std::string::npos)
      << md4;
  EXPECT_EQ(md4.find("sgu-linear ("), std::string::npos) << md4;
}

TEST(StudyReportTest, EncoderLabelsNameTheVariant) {
  EXPECT_EQ(EncoderLabel("transformer", "mini"), "Transformer-mini");
  EXPECT_EQ(EncoderLabel("gmlp"), "gMLP");
  EXPECT_EQ(EncoderLabel("amlp-attn16", "tiny"), "aMLP-tiny (attention 16)");
  EXPECT_EQ(EncoderLabel("amlp-attn16"), "aMLP (attention 16)");
  EXPECT_EQ(EncoderLabel("gmlp-sgu-linear", "tiny"), "gMLP-tiny (SGU linear)");
  EXPECT_EQ(EncoderLabel("transformer-alibi", "tiny"), "Transformer-tiny (ALiBi)");
}

// The verdicts compare with the baseline the context names: with the ALiBi Transformer as the
// baseline, the learned-position Transformer is one more encoder measured against it, and the
// floor caveat names the baseline's cell, not every Transformer's.
TEST(StudyReportTest, VerdictsUseTheNamedBaseline) {
  std::vector<CellResult> cells = PaperLike();
  CellResult alibi = Cell("transformer", "tiny", 1000000, 0.80, 0.70);
  alibi.encoder = "transformer-alibi";
  alibi.name = "transformer-tiny-alibi";
  cells.push_back(alibi);
  ReportContext ctx;
  ctx.baseline = "transformer-alibi";
  ctx.context_free_loss = 3.95;
  for (CellResult& c : cells) {
    if (c.name == "transformer-tiny") c.mlm_loss = 4.0;  // the learned one on the floor
  }
  const std::vector<ResultRow> rows = ResultRows(cells);
  const std::string md = ReportMarkdown(cells, rows, ctx, "plot");
  EXPECT_NE(md.find("The Transformer here is the baseline, Transformer (ALiBi) "
                    "(`transformer-alibi` in results.csv)."),
            std::string::npos)
      << md;
  // gMLP-tiny on MNLI-like: 0.50 against the ALiBi baseline's 0.70 (against the learned one's
  // 0.60 it would read -10.0); the learned Transformer is 10 points behind the baseline.
  EXPECT_NE(md.find("| tiny | MNLI-like | xnli_en_test | gmlp | -20.0"), std::string::npos) << md;
  EXPECT_NE(md.find("| tiny | MNLI-like | xnli_en_test | transformer | -10.0"), std::string::npos)
      << md;
  // In the scores table a variant sits after its arch: Transformer-tiny, Transformer-tiny
  // (ALiBi), then gMLP-tiny.
  const size_t learned_row = md.find("| Transformer-tiny | ");
  const size_t alibi_row = md.find("| Transformer-tiny (ALiBi) | ");
  const size_t gmlp_row = md.find("| gMLP-tiny | ");
  ASSERT_NE(alibi_row, std::string::npos) << md;
  EXPECT_LT(learned_row, alibi_row);
  EXPECT_LT(alibi_row, gmlp_row);
  // Mini has no ALiBi cell: nothing is judged there against the learned Transformer.
  EXPECT_EQ(md.find("| mini | MNLI-like"), std::string::npos) << md;
  EXPECT_EQ(md.find("Caveat: the baseline learned nothing"), std::string::npos) << md;
  EXPECT_NE(md.find("Also at or above the context-free floor (3.950 nats): transformer-tiny"),
            std::string::npos)
      << md;
}

TEST(StudyReportTest, WritesCsvReportAndPlots) {
  char tmpl[] = "/tmp/gmlp_study_report_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ReportContext context;
  context.context_free_loss = 4.5;
  context.curve_context_free_loss = 4.25;  // the curves' positions: the plot's line
  absl::Status st = WriteStudyOutputs(PaperLike(), context, dir);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    EXPECT_FALSE(st.ok());
    GTEST_SKIP() << "gnuplot is not installed: " << st;
  }
  ASSERT_TRUE(st.ok()) << st;
  for (const char* f : {"results.csv", "summary.csv", "cells.csv", "curves.csv", "report.md",
                        "accuracy_vs_params.png", "accuracy_vs_params.svg", "learning_curves.png",
                        "plot/accuracy_vs_params.gp"}) {
    auto size = FileSize(JoinPath(dir, f));
    ASSERT_TRUE(size.ok()) << f;
    EXPECT_GT(*size, 100) << f;
  }
  auto png = ReadFile(JoinPath(dir, "accuracy_vs_params.png"));
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(png->substr(1, 3), "PNG");
  auto gp = ReadFile(JoinPath(dir, "plot/accuracy_vs_params.gp"));
  ASSERT_TRUE(gp.ok());
  // The parameter axis is labelled with the cells' counts (one range per size, each count a
  // minor tic); the floors are drawn.
  EXPECT_NE(gp->find("'1.00M-1.20M' 1095445, '' 1000000 1"), std::string::npos) << *gp;
  EXPECT_NE(gp->find("title 'majority class'"), std::string::npos);
  // The second-segment control is drawn per baseline size, not pooled over sizes.
  EXPECT_NE(gp->find("title 'second segment only (Transformer-tiny)'"), std::string::npos);
  EXPECT_NE(gp->find("title 'second segment only (Transformer-mini)'"), std::string::npos);
  EXPECT_NE(gp->find("45.000000 with lines"), std::string::npos) << *gp;  // tiny: 0.60 - 0.15
  EXPECT_NE(gp->find("47.000000 with lines"), std::string::npos) << *gp;  // mini: 0.62 - 0.15
  EXPECT_EQ(gp->find("46.000000 with lines"), std::string::npos) << *gp;  // not their mean
  auto svg = ReadFile(JoinPath(dir, "accuracy_vs_params.svg"));
  ASSERT_TRUE(svg.ok());
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  EXPECT_NE(svg->find("MNLI-like"), std::string::npos);
  EXPECT_EQ(Lines(*ReadFile(JoinPath(dir, "curves.csv"))).size(), 9u * 4 + 1);
  // The learning curves carry the context-free floor as a line at its height.
  auto curves_gp = ReadFile(JoinPath(dir, "plot/learning_curves.gp"));
  ASSERT_TRUE(curves_gp.ok());
  EXPECT_NE(curves_gp->find("4.25 with lines dt 2"), std::string::npos) << *curves_gp;
  EXPECT_NE(curves_gp->find("context-free floor (4.250)"), std::string::npos) << *curves_gp;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace gmlp::study
