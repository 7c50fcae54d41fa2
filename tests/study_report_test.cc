// The study's outputs from made-up cell results: CSV rows, the finding section's arithmetic and
// verdicts, the perplexity ordering statement, and the gnuplot rendering to PNG and SVG.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "study/plot.h"
#include "study/report.h"

namespace gmlp::study {
namespace {

CellResult Cell(const std::string& arch, const std::string& size, int64_t params, double sst,
                double nli, const std::string& sgu = "", double ppl = 50) {
  CellResult c;
  c.arch = arch;
  c.size = size;
  c.sgu = sgu.empty() && arch != "transformer" ? "split" : sgu;
  c.name = absl::StrCat(arch, "-", size, sgu.empty() || sgu == "split" ? "" : "-sgu-" + sgu);
  c.params = params;
  c.mlm_perplexity = ppl;
  c.mlm_loss = std::log(ppl);
  c.pretrain_steps = 100;
  if (sgu.empty() || sgu == "split") {
    c.scores.push_back({"SST-2", "single", "dev", "accuracy", {1, 2}, {sst - 0.005, sst + 0.005}});
    c.scores.push_back(
        {"MNLI-like", "cross", "xnli_en_test", "accuracy", {1, 2}, {nli - 0.005, nli + 0.005}});
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

TEST(StudyReportTest, CellJsonRoundTrip) {
  const CellResult c = Cell("amlp", "tiny", 123, 0.7, 0.6);
  auto back = CellResult::FromJson(c.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), c.ToJson());
  EXPECT_FALSE(CellResult::FromJson(nlohmann::json::object()).ok());
}

TEST(StudyReportTest, ResultsCsvHasOneRowPerSeed) {
  const std::string csv = ResultsCsv(PaperLike());
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  // 6 main cells x 2 tasks x 2 seeds + 3 pretrain-only cells + header.
  EXPECT_EQ(lines.size(), 6u * 2 * 2 + 3 + 1);
  EXPECT_EQ(lines[0].substr(0, 9), "cell,arch");
  EXPECT_NE(csv.find("transformer-tiny,transformer,tiny,,1000000,"), std::string::npos);
  const std::string summary = SummaryCsv(PaperLike());
  EXPECT_NE(summary.find("gmlp-tiny,gmlp,tiny,split,1100000,SST-2,single,dev,accuracy,2,0.8,0.8,"),
            std::string::npos)
      << summary;
}

TEST(StudyReportTest, FindingComputesDifferencesAndStatesPattern) {
  const std::string md = ReportMarkdown(PaperLike(), ReportContext(), "plot");
  // tiny: gMLP - T single = 0.0, cross = -10.0; aMLP - T cross = +2.0. Spread: both seeds
  // differ by 0.01 -> std 0.00707 per cell -> sqrt(2) * 0.707 = 1.0 points.
  EXPECT_NE(md.find("| tiny | +0.0 ± 1.0 | -10.0 ± 1.0 | +1.0 ± 1.0 | +2.0 ± 1.0 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Pattern **appears** at this size"), std::string::npos) << md;
  EXPECT_NE(md.find("appears at every size"), std::string::npos) << md;
  EXPECT_NE(md.find("split < multiplicative < additive < linear. This **matches**"),
            std::string::npos)
      << md;
}

TEST(StudyReportTest, NoPatternWhenDifferencesAreNoise) {
  std::vector<CellResult> cells = {Cell("transformer", "tiny", 1000, 0.80, 0.60),
                                   Cell("gmlp", "tiny", 1000, 0.80, 0.60, "split", 40),
                                   Cell("amlp", "tiny", 1000, 0.80, 0.60),
                                   Cell("gmlp", "tiny", 1000, 0, 0, "linear", 30)};
  const std::string md = ReportMarkdown(cells, ReportContext(), "plot");
  EXPECT_NE(md.find("does not appear at the scale run here"), std::string::npos) << md;
  EXPECT_NE(md.find("linear < split"), std::string::npos) << md;
  EXPECT_NE(md.find("**does not match**"), std::string::npos) << md;
}

TEST(StudyReportTest, MajorityClassRowShowsTheFloor) {
  std::vector<CellResult> cells = PaperLike();
  for (CellResult& c : cells) {
    for (TaskScore& s : c.scores) {
      if (s.task == "MNLI-like") s.majority = 0.334;
    }
  }
  auto back = CellResult::FromJson(cells[0].ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(back->scores[1].majority, 0.334);
  const std::string md = ReportMarkdown(cells, ReportContext(), "plot");
  EXPECT_NE(md.find("| *majority class* | | – | 33.4 |"), std::string::npos) << md;
  EXPECT_EQ(ReportMarkdown(PaperLike(), ReportContext(), "plot").find("majority class"),
            std::string::npos);
}

// A cell at the majority-class floor learned nothing: a huge "gMLP - T" against it is not the
// paper's pattern, so that size is not judged.
TEST(StudyReportTest, CellsAtTheMajorityFloorAreNotEvidence) {
  std::vector<CellResult> cells = PaperLike();
  for (CellResult& c : cells) {
    for (TaskScore& s : c.scores) s.majority = s.task == "SST-2" ? 0.509 : 0.334;
  }
  // The mini Transformer failed SST-2: it scores the majority class (both seeds 0.509).
  cells[3].scores[0].values = {0.509, 0.509};
  const std::string md = ReportMarkdown(cells, ReportContext(), "plot");
  EXPECT_NE(md.find("| mini | SST-2 | single | 50.9 | 83.0 | 83.0 | n/a (floor) | n/a (floor) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- **mini**: cannot judge"), std::string::npos) << md;
  EXPECT_NE(md.find("Pattern **appears** at this size"), std::string::npos) << md;  // tiny
  EXPECT_NE(md.find("appears at every size that could be judged; 1 of 2 sizes could not be "
                    "judged"),
            std::string::npos)
      << md;
}

TEST(StudyReportTest, WritesCsvReportAndPlots) {
  char tmpl[] = "/tmp/gmlp_study_report_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  absl::Status st = WriteStudyOutputs(PaperLike(), ReportContext(), dir);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    EXPECT_FALSE(st.ok());
    GTEST_SKIP() << "gnuplot is not installed: " << st;
  }
  ASSERT_TRUE(st.ok()) << st;
  for (const char* f : {"results.csv", "summary.csv", "report.md", "accuracy_vs_params.png",
                        "accuracy_vs_params.svg", "plot/accuracy_vs_params.gp"}) {
    auto size = FileSize(JoinPath(dir, f));
    ASSERT_TRUE(size.ok()) << f;
    EXPECT_GT(*size, 100) << f;
  }
  auto png = ReadFile(JoinPath(dir, "accuracy_vs_params.png"));
  ASSERT_TRUE(png.ok());
  EXPECT_EQ(png->substr(1, 3), "PNG");
  auto svg = ReadFile(JoinPath(dir, "accuracy_vs_params.svg"));
  ASSERT_TRUE(svg.ok());
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  EXPECT_NE(svg->find("MNLI-like"), std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace gmlp::study
