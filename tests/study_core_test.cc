// The study's torch-free parts: the alignment probe generator (determinism, balance, pair
// construction, offsets, the task spec through finetune's loader and reader, `gmlp probe` end to
// end), the results table, the two-level bootstrap and the verdict rules on synthetic tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/mix64.h"
#include "finetune/reader.h"
#include "finetune/task.h"
#include "study/probe.h"
#include "study/results_table.h"
#include "study/stats.h"
#include "study/verdict.h"
#include "tests/file_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::study {
namespace {

using gmlp::testing::MakeTempDir;
using gmlp::testing::ReadBytes;
using gmlp::testing::RemoveTempDir;
using gmlp::testing::WriteBytes;

// ---------------------------------------------------------------------------------------------
// Probe

// A plain-text corpus of `docs` blank-line-separated documents of 20 sentences each. Documents in
// the first half carry the word "prefixword" in every sentence, so a probe drawn from the last
// half must never contain it.
std::string FixtureCorpus(int docs) {
  static const char* kWords[] = {
      "river", "stone", "green", "house", "table", "light", "music", "paper", "water", "field",
      "quiet", "small", "north", "south", "early", "later", "horse", "cloud", "bread", "glass",
      "train", "plant", "metal", "sugar", "chair", "storm", "dream", "smile", "grass", "beach",
      "the",   "of",    "and",   "in",    "was",   "for",   "city",  "town",  "book",  "song"};
  const uint64_t n_words = sizeof(kWords) / sizeof(kWords[0]);
  std::string out;
  uint64_t r = 7;
  for (int d = 0; d < docs; ++d) {
    for (int s = 0; s < 20; ++s) {
      r = SplitMix64(r);
      const int len = 8 + static_cast<int>(r % 7);
      std::vector<std::string> w;
      for (int i = 0; i < len; ++i) {
        r = SplitMix64(r);
        w.push_back(kWords[r % n_words]);
      }
      if (d < docs / 2) w[1] = "prefixword";
      w[0][0] = static_cast<char>(w[0][0] - 'a' + 'A');
      absl::StrAppend(&out, absl::StrJoin(w, " "), s % 4 == 3 ? ".\n" : ". ");
    }
    out += "\n";
  }
  return out;
}

class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("probe_test");
    corpus_ = dir_ + "/corpus.txt";
    WriteBytes(corpus_, FixtureCorpus(40));
    options_.corpus = corpus_;
    options_.holdout_fraction = 0.5;
    options_.train_examples = 40;
    options_.dev_examples = 10;
    options_.test_examples = 20;
  }
  void TearDown() override { RemoveTempDir(dir_); }

  ProbeOptions Options(const std::string& out) const {
    ProbeOptions o = options_;
    o.output = dir_ + "/" + out;
    return o;
  }

  std::string dir_, corpus_;
  ProbeOptions options_;
};

std::vector<std::string> Words(const std::string& s) {
  return absl::StrSplit(s, ' ', absl::SkipEmpty());
}

TEST_F(ProbeTest, SameSeedSameBytesOtherSeedOtherBytes) {
  ASSERT_TRUE(WriteProbe(Options("a")).ok());
  ASSERT_TRUE(WriteProbe(Options("b")).ok());
  ProbeOptions c = Options("c");
  c.seed = 2;
  ASSERT_TRUE(WriteProbe(c).ok());
  for (const char* version : {"aligned", "shifted"}) {
    for (const char* split : {"train", "dev", "test"}) {
      const std::string file = absl::StrCat("/", version, "/", split, ".tsv");
      const std::string a = ReadBytes(dir_ + "/a" + file);
      ASSERT_FALSE(a.empty()) << file;
      EXPECT_EQ(a, ReadBytes(dir_ + "/b" + file)) << file;
      EXPECT_NE(a, ReadBytes(dir_ + "/c" + file)) << file;
    }
  }
}

TEST_F(ProbeTest, PairsBalancedAndBuiltAsStated) {
  auto data = GenerateProbe(options_);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->holdout.documents, 40);
  EXPECT_EQ(data->holdout.first_holdout_document, 20);
  ASSERT_EQ(data->splits.size(), 3u);
  std::set<std::string> sentences;
  for (const ProbeSplit& s : data->splits) {
    const size_t n = s.aligned.size();
    ASSERT_EQ(s.shifted.size(), n);
    int64_t same = 0;
    std::set<int64_t> offsets;
    for (size_t i = 0; i < n; ++i) {
      const ProbeExample& a = s.aligned[i];
      const ProbeExample& sh = s.shifted[i];
      same += a.label == "same";
      // The versions differ only in the filler.
      EXPECT_EQ(a.sentence1, sh.sentence1);
      EXPECT_EQ(a.label, sh.label);
      EXPECT_EQ(a.position, sh.position);
      EXPECT_EQ(a.offset, 0);
      EXPECT_GE(sh.offset, 1);
      EXPECT_LE(sh.offset, options_.max_shift);
      offsets.insert(sh.offset);
      const std::vector<std::string> wa = Words(a.sentence1);
      const std::vector<std::string> wb = Words(a.sentence2);
      std::vector<std::string> ws = Words(sh.sentence2);
      ASSERT_EQ(ws.size(), wb.size() + sh.offset);
      ws.erase(ws.begin(), ws.begin() + sh.offset);
      EXPECT_EQ(ws, wb) << "shifted B is filler + aligned B";
      ASSERT_EQ(wa.size(), wb.size());
      int differing = 0;
      for (size_t w = 0; w < wa.size(); ++w) differing += wa[w] != wb[w];
      if (a.label == "same") {
        EXPECT_EQ(a.sentence1, a.sentence2);
      } else {
        EXPECT_EQ(a.label, "replaced");
        EXPECT_EQ(differing, 1) << a.sentence1 << " | " << a.sentence2;
        EXPECT_NE(wa[a.position], wb[a.position]);
      }
      EXPECT_EQ(a.sentence1.find("prefixword"), std::string::npos) << "not from the holdout";
      EXPECT_EQ(sh.sentence2.find('\t'), std::string::npos);
      sentences.insert(a.sentence1);
    }
    EXPECT_EQ(same, static_cast<int64_t>(n / 2)) << s.name;
    EXPECT_GE(offsets.size(), 3u) << "shifted offsets vary";
  }
  EXPECT_EQ(sentences.size(), 70u) << "every pair comes from its own sentence";
}

TEST_F(ProbeTest, TaskSpecLoadsAndReadsThroughFinetune) {
  ASSERT_TRUE(WriteProbe(Options("out")).ok());
  for (const char* version : {"aligned", "shifted"}) {
    auto spec = finetune::LoadTaskSpec(absl::StrCat(dir_, "/out/", version, "/task.json"));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->name, std::string("probe-") + version);
    EXPECT_TRUE(spec->is_pair());
    EXPECT_EQ(spec->labels, (std::vector<std::string>{"same", "replaced"}));
    ASSERT_EQ(spec->eval.size(), 2u);
    EXPECT_EQ(spec->eval[0].name, "dev");
    EXPECT_EQ(spec->eval[1].name, "test");
    // Absolute paths: any data directory works.
    auto train = finetune::ReadSplit(*spec, spec->train, "/nonexistent");
    ASSERT_TRUE(train.ok()) << train.status();
    EXPECT_EQ(train->examples.size(), 40u);
    auto test = finetune::ReadSplit(*spec, spec->eval[1], "/nonexistent");
    ASSERT_TRUE(test.ok()) << test.status();
    EXPECT_EQ(test->examples.size(), 20u);
    int64_t same = 0;
    for (const auto& e : test->examples) same += e.label == 0;
    EXPECT_EQ(same, 10);
  }
  const std::string manifest = ReadBytes(dir_ + "/out/probe.json");
  EXPECT_NE(manifest.find("\"first_holdout_document\": 20"), std::string::npos) << manifest;
}

TEST_F(ProbeTest, TooSmallASliceIsOneClearError) {
  ProbeOptions o = options_;
  o.train_examples = 100000;
  auto data = GenerateProbe(o);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(data.status().message().find("raise --holdout_fraction"), std::string::npos);
}

TEST_F(ProbeTest, SubcommandEndToEnd) {
  const std::string gmlp = std::string(GMLP_BINARY_DIR) + "/gmlp";
  if (!std::ifstream(gmlp).good()) GTEST_SKIP() << gmlp << " not built (cmake --build build)";
  const std::string out = dir_ + "/cli";
  const std::string cmd =
      absl::StrCat(gmlp, " probe --corpus=", corpus_, " --output=", out,
                   " --seed=1 --holdout_fraction=0.5 --train_examples=40 --dev_examples=10 "
                   "--test_examples=20 --threads=1 > ",
                   dir_, "/cli.log 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadBytes(dir_ + "/cli.log");
  ASSERT_TRUE(WriteProbe(Options("lib")).ok());
  for (const char* file : {"/aligned/train.tsv", "/shifted/test.tsv"}) {
    EXPECT_EQ(ReadBytes(out + file), ReadBytes(dir_ + "/lib" + file)) << file;
  }
  auto spec = finetune::LoadTaskSpec(out + "/shifted/task.json");
  EXPECT_TRUE(spec.ok()) << spec.status();
  EXPECT_NE(ReadBytes(dir_ + "/cli.log").find("probe: task specs"), std::string::npos);
}

// The shift-k versions under a tokenizer trained on the fixture: offsets in pieces, exact.
TEST_F(ProbeTest, ShiftVersionsCountOffsetsInPieces) {
  tokenizer::TrainOptions t;
  t.inputs = {corpus_};
  t.model_prefix = dir_ + "/spm";
  t.vocab_size = 100;
  t.byte_fallback = false;
  t.num_threads = 1;
  const absl::Status trained = tokenizer::Train(t);
  ASSERT_TRUE(trained.ok()) << trained;
  auto tok = tokenizer::Tokenizer::Load(dir_ + "/spm.model");
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto pieces = [&](const std::string& text) { return (*tok)->Encode(text); };

  ProbeOptions o = Options("shift");
  o.tokenizer = dir_ + "/spm.model";
  o.segment_pieces = 12;
  o.shifts = {0, 2, 5};
  o.filler_pieces = 7;
  auto data = WriteProbe(o);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_GE(data->one_piece_words, 3);
  const int64_t m = o.segment_pieces;
  const int64_t f = o.filler_pieces;
  std::set<std::string> sentences;
  for (const ProbeSplit& s : data->splits) {
    ASSERT_EQ(s.by_shift.size(), 3u);
    const std::vector<ProbeExample>& aligned = s.by_shift.at(0);
    ASSERT_EQ(aligned.size(), s.aligned.size()) << s.name;
    int64_t same = 0;
    for (size_t i = 0; i < aligned.size(); ++i) {
      const ProbeExample& w = aligned[i];
      same += w.label == "same";
      const std::vector<int32_t> a = pieces(w.sentence1);
      const std::vector<int32_t> b0 = pieces(w.sentence2);
      ASSERT_EQ(static_cast<int64_t>(a.size()), m) << w.sentence1;
      ASSERT_EQ(static_cast<int64_t>(b0.size()), m + f) << w.sentence2;
      // At k = 0 segment 2 is B, aligned with A piece by piece, then all F filler pieces; B
      // differs from A in exactly one piece where the label says "replaced".
      int differing = 0;
      for (int64_t j = 0; j < m; ++j) differing += a[j] != b0[j];
      EXPECT_EQ(differing, w.label == "same" ? 0 : 1) << w.sentence1 << " | " << w.sentence2;
      EXPECT_EQ(w.sentence1.find("prefixword"), std::string::npos) << "not from the holdout";
      sentences.insert(w.sentence1);
      const std::vector<int32_t> filler(b0.begin() + m, b0.end());
      for (const auto& [k, version] : s.by_shift) {
        const ProbeExample& e = version[i];
        // Every version: the same A, label, position, length and filler words; only B's offset
        // differs: k filler pieces before it, the other F - k after it.
        EXPECT_EQ(e.offset, k);
        EXPECT_EQ(e.sentence1, w.sentence1);
        EXPECT_EQ(e.label, w.label);
        EXPECT_EQ(e.position, w.position);
        const std::vector<int32_t> b = pieces(e.sentence2);
        ASSERT_EQ(static_cast<int64_t>(b.size()), m + f) << e.sentence2;
        EXPECT_TRUE(std::equal(b.begin(), b.begin() + k, filler.begin())) << e.sentence2;
        EXPECT_TRUE(std::equal(b.begin() + k, b.begin() + k + m, b0.begin())) << e.sentence2;
        EXPECT_TRUE(std::equal(b.begin() + k + m, b.end(), filler.begin() + k)) << e.sentence2;
      }
    }
    EXPECT_EQ(same, static_cast<int64_t>(aligned.size() / 2)) << s.name;
  }
  EXPECT_EQ(sentences.size(), 70u) << "every pair comes from its own sentence";
  // Task specs named probe-shift-<k> that finetune reads.
  for (const int k : {0, 2, 5}) {
    auto spec = finetune::LoadTaskSpec(absl::StrCat(dir_, "/shift/shift-", k, "/task.json"));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->name, ProbeShiftTask(k));
    EXPECT_EQ(ProbeShiftOf(spec->name), k);
    auto test = finetune::ReadSplit(*spec, spec->eval[1], "/nonexistent");
    ASSERT_TRUE(test.ok()) << test.status();
    EXPECT_EQ(test->examples.size(), 20u);
  }
  const std::string manifest = ReadBytes(dir_ + "/shift/probe.json");
  EXPECT_NE(manifest.find("\"shift-5\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("\"one_piece_words\""), std::string::npos) << manifest;

  // Same options, same bytes.
  o.output = dir_ + "/shift_again";
  ASSERT_TRUE(WriteProbe(o).ok());
  EXPECT_EQ(ReadBytes(dir_ + "/shift/shift-2/train.tsv"),
            ReadBytes(dir_ + "/shift_again/shift-2/train.tsv"));
  // Without the word-offset versions: the same shift-k bytes, and no aligned/ or shifted/.
  o.output = dir_ + "/shift_only";
  o.word_versions = false;
  ASSERT_TRUE(WriteProbe(o).ok());
  EXPECT_EQ(ReadBytes(dir_ + "/shift/shift-5/test.tsv"),
            ReadBytes(dir_ + "/shift_only/shift-5/test.tsv"));
  EXPECT_FALSE(std::ifstream(dir_ + "/shift_only/aligned/task.json").good());
  EXPECT_FALSE(std::ifstream(dir_ + "/shift_only/shifted/task.json").good());
  ProbeOptions nothing = o;
  nothing.shifts.clear();
  EXPECT_NE(nothing.Validate().message().find("leave nothing to write"), std::string::npos);

  // Bad settings: one line naming the flag.
  const struct {
    std::vector<uint64_t> shifts;
    std::string tokenizer;
    int64_t segment_pieces;
    int64_t filler_pieces;
    std::string expect;
  } bad[] = {
      {{0, 4}, "", 12, 7, "--shifts needs --tokenizer"},
      {{0, 4, 4}, o.tokenizer, 12, 7, "--shifts lists k = 4 twice"},
      {{0, 65}, o.tokenizer, 12, 7, "k = 65 is over 64"},
      {{0, 16}, o.tokenizer, 60, 16, "+ --filler_pieces=16 = 139 tokens, over --max_len=128"},
      {{0, 8}, o.tokenizer, 12, 7, "k = 8 is over --filler_pieces=7"},
      {{0, 4}, o.tokenizer, 12, 65, "--filler_pieces must be in [0, 64], got 65"},
      {{0, 1}, o.tokenizer, 3, 7, "--segment_pieces must be >= 4"},
  };
  for (const auto& c : bad) {
    ProbeOptions b = o;
    b.shifts = c.shifts;
    b.tokenizer = c.tokenizer;
    b.segment_pieces = c.segment_pieces;
    b.filler_pieces = c.filler_pieces;
    const absl::Status st = b.Validate();
    EXPECT_FALSE(st.ok()) << c.expect;
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << st;
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st;
  }
}

// The default sizes from the last 10% of the shared Wikipedia extract (skipped without it).
TEST(ProbeSharedDataTest, DefaultSizesFromTheWikipediaTail) {
  const std::string corpus =
      std::string(GMLP_SOURCE_DIR) + "/../shared/data/corpus/wikipedia-en/enwiki_extract.txt.xz";
  if (!std::ifstream(corpus).good()) GTEST_SKIP() << "no shared corpus at " << corpus;
  ProbeOptions o;
  o.corpus = corpus;
  auto data = GenerateProbe(o);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_GT(data->holdout.first_holdout_document, 0.85 * data->holdout.documents);
  size_t longest_bytes = 0;
  int64_t longest_words = 0;
  for (const ProbeSplit& s : data->splits) {
    for (const ProbeExample& e : s.shifted) {
      longest_bytes = std::max(longest_bytes, e.sentence1.size() + e.sentence2.size());
      longest_words = std::max<int64_t>(
          longest_words,
          static_cast<int64_t>(Words(e.sentence1).size() + Words(e.sentence2).size()));
    }
  }
  EXPECT_EQ(data->splits[0].shifted.size(), 4000u);
  EXPECT_EQ(data->splits[2].aligned.size(), 2000u);
  std::printf(
      "wikipedia probe: %lld documents, slice from %lld (text bytes before it %lld), "
      "%lld usable sentences, %lld vocabulary words; longest shifted pair %zu bytes, "
      "%lld words\n",
      static_cast<long long>(data->holdout.documents),
      static_cast<long long>(data->holdout.first_holdout_document),
      static_cast<long long>(data->holdout.text_bytes_before_holdout),
      static_cast<long long>(data->candidate_sentences),
      static_cast<long long>(data->vocabulary_words), longest_bytes,
      static_cast<long long>(longest_words));
  std::printf("example shifted pair: %s | %s | %s\n", data->splits[2].shifted[0].sentence1.c_str(),
              data->splits[2].shifted[0].sentence2.c_str(),
              data->splits[2].shifted[0].label.c_str());
}

// ---------------------------------------------------------------------------------------------
// Bootstrap

SeedRuns Runs(std::vector<double> values, int64_t n, const std::string& key = "t/test") {
  SeedRuns r;
  r.values = std::move(values);
  r.n_examples.assign(r.values.size(), n);
  r.pairing_key = key;
  return r;
}

TEST(BootstrapTest, ZeroGapIntervalContainsZero) {
  const SeedRuns a = Runs({0.70, 0.71, 0.69}, 2000);
  const SeedRuns b = Runs({0.69, 0.70, 0.71}, 2000);
  const Interval i = BootstrapGap(a, b);
  EXPECT_NEAR(i.estimate, 0, 1e-12);
  EXPECT_LT(i.lo, 0);
  EXPECT_GT(i.hi, 0);
  EXPECT_EQ(i.method, "seeds+examples (binomial)");
}

TEST(BootstrapTest, IntervalShrinksWithMoreExamplesAndIsDeterministic) {
  const Interval small = BootstrapGap(Runs({0.70, 0.70, 0.70}, 500), Runs({0.65, 0.65, 0.65}, 500));
  const Interval large =
      BootstrapGap(Runs({0.70, 0.70, 0.70}, 8000), Runs({0.65, 0.65, 0.65}, 8000));
  EXPECT_NEAR(small.estimate, 0.05, 1e-12);
  EXPECT_GT(small.width(), 3 * large.width());  // ~ sqrt(16) = 4 times narrower
  const Interval again =
      BootstrapGap(Runs({0.70, 0.70, 0.70}, 8000), Runs({0.65, 0.65, 0.65}, 8000));
  EXPECT_EQ(large.lo, again.lo);
  EXPECT_EQ(large.hi, again.hi);
}

TEST(BootstrapTest, SeedSpreadWidensTheInterval) {
  const Interval tight = BootstrapGap(Runs({0.70, 0.70, 0.70}, 2000), Runs({0.65}, 2000));
  const Interval spread = BootstrapGap(Runs({0.60, 0.70, 0.80}, 2000), Runs({0.65}, 2000));
  EXPECT_GT(spread.width(), 2 * tight.width());
}

TEST(BootstrapTest, PairedExamplesShareTheTestSet) {
  // Two encoders that agree on all but 100 of 2000 examples, where a is right and b wrong: the
  // paired interval sits tightly around +5 points; the binomial one is much wider.
  const int n = 2000;
  SeedRuns a = Runs({0, 0, 0}, n), b = Runs({0, 0, 0}, n);
  for (int s = 0; s < 3; ++s) {
    std::vector<uint8_t> ca(n), cb(n);
    for (int i = 0; i < n; ++i) {
      ca[i] = i % 10 < 7 || (i >= 1000 && i < 1100);
      cb[i] = i % 10 < 7 && !(i >= 1000 && i < 1100);
    }
    a.values[s] = 0;
    b.values[s] = 0;
    for (int i = 0; i < n; ++i) a.values[s] += ca[i] / double(n), b.values[s] += cb[i] / double(n);
    a.correct.push_back(ca);
    b.correct.push_back(cb);
  }
  const Interval paired = BootstrapGap(a, b);
  EXPECT_EQ(paired.method, "seeds+examples (paired)");
  EXPECT_GT(paired.lo, 0.03);
  EXPECT_LT(paired.hi, 0.07);
  SeedRuns a2 = a, b2 = b;
  a2.correct.clear();
  b2.correct.clear();
  const Interval unpaired = BootstrapGap(a2, b2);
  EXPECT_GT(unpaired.width(), 1.5 * paired.width());
  EXPECT_NEAR(paired.estimate, unpaired.estimate, 1e-12);
}

// ---------------------------------------------------------------------------------------------
// Results table and verdicts

void AddRuns(std::vector<ResultRow>* rows, const std::string& encoder, const std::string& task,
             const std::string& kind, double value, const std::string& control = "none",
             int64_t n = 2000) {
  const bool majority = control == "majority";
  const std::vector<double> offsets =
      majority ? std::vector<double>{0} : std::vector<double>{-0.005, 0, 0.005};
  for (size_t s = 0; s < offsets.size(); ++s) {
    ResultRow r;
    r.encoder = majority ? "majority" : encoder;
    r.size = majority ? "" : "tiny";
    r.params = majority ? 0 : 1900000;
    r.task = task;
    r.kind = kind;
    r.split = "test";
    r.seed = majority ? 0 : s + 1;
    r.control = control;
    r.value = value + offsets[s];
    r.n_examples = n;
    rows->push_back(r);
  }
}

// gMLP 5 points behind the Transformer on a pair task, equal on a single-sentence task; aMLP
// equal to the Transformer on both; 3 seeds, 2,000 examples. `second_only` is the Transformer's
// second-segment-only score on the pair task.
std::vector<ResultRow> PaperLikeTable(double second_only) {
  std::vector<ResultRow> rows;
  AddRuns(&rows, "transformer", "SST-2", "single", 0.80);
  AddRuns(&rows, "gmlp", "SST-2", "single", 0.80);
  AddRuns(&rows, "amlp", "SST-2", "single", 0.80);
  AddRuns(&rows, "", "SST-2", "single", 0.51, "majority");
  AddRuns(&rows, "transformer", "MNLI-like", "cross", 0.70);
  AddRuns(&rows, "gmlp", "MNLI-like", "cross", 0.65);
  AddRuns(&rows, "amlp", "MNLI-like", "cross", 0.70);
  AddRuns(&rows, "", "MNLI-like", "cross", 0.34, "majority");
  AddRuns(&rows, "transformer", "MNLI-like", "cross", second_only, "second_only");
  return rows;
}

const TaskComparison& Comparison(const StudyVerdicts& v, const std::string& encoder,
                                 const std::string& task) {
  for (const TaskComparison& c : v.comparisons) {
    if (c.encoder == encoder && c.task == task) return c;
  }
  ADD_FAILURE() << "no comparison " << encoder << " " << task;
  return v.comparisons.front();
}

const PatternVerdict& Pattern(const StudyVerdicts& v, const std::string& name) {
  for (const PatternVerdict& p : v.patterns) {
    if (p.pattern == name) return p;
  }
  ADD_FAILURE() << "no pattern " << name;
  return v.patterns.front();
}

TEST(ResultsTableTest, RoundTripsAndRejectsBadRows) {
  const std::vector<ResultRow> rows = PaperLikeTable(0.5);
  auto parsed = ParseResultsTable(FormatResultsTable(rows), "results.csv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), rows.size());
  EXPECT_EQ((*parsed)[4].encoder, "gmlp");
  EXPECT_EQ((*parsed)[9].control, "majority");
  EXPECT_DOUBLE_EQ((*parsed)[2].value, rows[2].value);
  auto bad = ParseResultsTable(
      ResultsTableHeader() + "\ngmlp,tiny,1,SST-2,pair,test,1,none,accuracy,0.8,10,,1\n",
      "results.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("results.csv:2: bad kind 'pair'"), std::string::npos)
      << bad.status();
  std::vector<ResultRow> scratch = rows;
  scratch[3].control = "scratch";
  auto with_scratch = ParseResultsTable(FormatResultsTable(scratch), "results.csv");
  ASSERT_TRUE(with_scratch.ok()) << with_scratch.status();
  EXPECT_EQ((*with_scratch)[3].control, "scratch");
  EXPECT_STREQ(ControlDescription("scratch"), "from scratch");
  EXPECT_STREQ(ControlDescription("none"), "");
  auto missing = ParseResultsTable("encoder,size\n", "r.csv");
  EXPECT_FALSE(missing.ok());
}

TEST(VerdictTest, KnownGapFromAResultsCsvFile) {
  const std::string dir = MakeTempDir("verdict_test");
  WriteBytes(dir + "/results.csv", FormatResultsTable(PaperLikeTable(/*second_only=*/0.50)));
  auto rows = ReadResultsTable(dir + "/results.csv");
  RemoveTempDir(dir);
  ASSERT_TRUE(rows.ok()) << rows.status();
  auto v = ComputeVerdicts(*rows);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->comparisons.size(), 4u);  // {gmlp, amlp} x {SST-2, MNLI-like}

  const TaskComparison& g_nli = Comparison(*v, "gmlp", "MNLI-like");
  EXPECT_NEAR(g_nli.gap.estimate, -0.05, 1e-9);
  EXPECT_TRUE(g_nli.floor.judged) << g_nli.floor.reason;
  EXPECT_EQ(g_nli.verdict, "behind");
  EXPECT_EQ(Comparison(*v, "gmlp", "SST-2").verdict, "no detectable gap");
  EXPECT_EQ(Comparison(*v, "amlp", "MNLI-like").verdict, "no detectable gap");

  const PatternVerdict& cross = Pattern(*v, "cross_vs_single");
  EXPECT_NEAR(cross.estimate.estimate, -0.05, 1e-9);
  EXPECT_LT(cross.estimate.hi, 0);
  EXPECT_EQ(cross.verdict, "holds") << cross.reason;
  EXPECT_EQ(Pattern(*v, "amlp_closes_gap").verdict, "holds");
  EXPECT_EQ(Pattern(*v, "probe_alignment").verdict, "cannot judge");

  const std::string md = FormatVerdicts(*v);
  EXPECT_NE(md.find("| tiny | MNLI-like | test | gmlp | -5.0 ["), std::string::npos) << md;
  EXPECT_NE(md.find("cross_vs_single** (gMLP lags"), std::string::npos) << md;
}

TEST(VerdictTest, CannotJudgeWhereTheTransformerDoesNotBeatTheSecondSegmentControl) {
  auto v = ComputeVerdicts(PaperLikeTable(/*second_only=*/0.69));
  ASSERT_TRUE(v.ok()) << v.status();
  const TaskComparison& g_nli = Comparison(*v, "gmlp", "MNLI-like");
  EXPECT_EQ(g_nli.verdict, "cannot judge");
  EXPECT_NE(g_nli.floor.reason.find("second-segment-only control"), std::string::npos)
      << g_nli.floor.reason;
  EXPECT_EQ(Comparison(*v, "gmlp", "SST-2").verdict, "no detectable gap");  // still judged
  EXPECT_EQ(Pattern(*v, "cross_vs_single").verdict, "cannot judge");
  EXPECT_EQ(Pattern(*v, "amlp_closes_gap").verdict, "cannot judge");
}

TEST(VerdictTest, MissingControlsAndFloorsAreCannotJudge) {
  std::vector<ResultRow> rows;
  AddRuns(&rows, "transformer", "SICK", "cross", 0.58);  // 1 point over the majority class
  AddRuns(&rows, "gmlp", "SICK", "cross", 0.55);
  AddRuns(&rows, "", "SICK", "cross", 0.57, "majority");
  auto v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Comparison(*v, "gmlp", "SICK").verdict, "cannot judge");
  EXPECT_NE(Comparison(*v, "gmlp", "SICK").floor.reason.find("majority class"), std::string::npos);
  rows.clear();
  AddRuns(&rows, "transformer", "SICK", "cross", 0.70);
  AddRuns(&rows, "gmlp", "SICK", "cross", 0.55);
  AddRuns(&rows, "", "SICK", "cross", 0.57, "majority");
  v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok());
  EXPECT_NE(Comparison(*v, "gmlp", "SICK").floor.reason.find("no second-segment-only control"),
            std::string::npos);
}

TEST(VerdictTest, ProbePatternAndUnreportedSplitsLeftOut) {
  std::vector<ResultRow> rows = PaperLikeTable(0.5);
  for (const char* task : {"probe-aligned", "probe-shifted"}) {
    const bool shifted = std::string(task) == "probe-shifted";
    AddRuns(&rows, "transformer", task, "probe", 0.90);
    AddRuns(&rows, "gmlp", task, "probe", shifted ? 0.80 : 0.90);
    AddRuns(&rows, "", task, "probe", 0.50, "majority");
    AddRuns(&rows, "transformer", task, "probe", 0.50, "second_only");
    // From scratch, with an absurd gap: a control, not a comparison.
    AddRuns(&rows, "gmlp", task, "probe", shifted ? 0.10 : 0.99, "scratch");
  }
  // A dev split that selected the epoch, with an absurd gap: must not count.
  std::vector<ResultRow> dev;
  AddRuns(&dev, "gmlp", "SST-2", "single", 0.10);
  for (ResultRow& r : dev) {
    r.split = "dev";
    r.reported = false;
    rows.push_back(r);
  }
  auto v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok()) << v.status();
  const PatternVerdict& probe = Pattern(*v, "probe_alignment");
  EXPECT_NEAR(probe.estimate.estimate, -0.10, 1e-9);
  EXPECT_EQ(probe.verdict, "holds") << probe.reason;
  for (const TaskComparison& c : v->comparisons) EXPECT_NE(c.split, "dev");
  EXPECT_EQ(Pattern(*v, "cross_vs_single").verdict, "holds");  // probe tasks are not pooled in
}

// The shift-k probe: the Transformer flat at 90%, aMLP falling 0.25 points per filler piece,
// gMLP `gmlp_per_k` points per piece, at k = 0, 1, 2, 4, 8, 16.
std::vector<ResultRow> ShiftProbeTable(double gmlp_per_k, double transformer_at_16 = 0.90) {
  std::vector<ResultRow> rows = PaperLikeTable(0.5);
  for (const int k : {0, 1, 2, 4, 8, 16}) {
    const std::string task = absl::StrCat("probe-shift-", k);
    AddRuns(&rows, "transformer", task, "probe", k == 16 ? transformer_at_16 : 0.90);
    AddRuns(&rows, "gmlp", task, "probe", 0.90 - 0.01 * gmlp_per_k * k);
    AddRuns(&rows, "amlp", task, "probe", 0.90 - 0.0025 * k);
    AddRuns(&rows, "", task, "probe", 0.50, "majority");
    AddRuns(&rows, "transformer", task, "probe", 0.50, "second_only");
  }
  return rows;
}

TEST(VerdictTest, ProbeSlopeIsTheFittedDropAcrossTheShifts) {
  EXPECT_EQ(ProbeShiftOf("probe-shift-0", "probe-shift-"), 0);
  EXPECT_EQ(ProbeShiftOf("probe-shift-16", "probe-shift-"), 16);
  for (const char* other : {"probe-shift-", "probe-shift-1x", "probe-shifted", "SST-2"}) {
    EXPECT_EQ(ProbeShiftOf(other, "probe-shift-"), -1) << other;
  }
  // gMLP falls 1 point per piece: 16 points from k = 0 to 16 against the flat Transformer, 12
  // against aMLP's 4. The data lie on lines, so the fit is exact.
  auto v = ComputeVerdicts(ShiftProbeTable(1.0));
  ASSERT_TRUE(v.ok()) << v.status();
  const PatternVerdict& slope = Pattern(*v, "probe_slope");
  EXPECT_NEAR(slope.estimate.estimate, -0.16, 1e-9);
  EXPECT_LT(slope.estimate.hi, 0);
  EXPECT_EQ(slope.verdict, "holds") << slope.reason;
  EXPECT_EQ(slope.tasks.size(), 6u);
  const PatternVerdict& amlp = Pattern(*v, "probe_slope_amlp");
  EXPECT_NEAR(amlp.estimate.estimate, -0.12, 1e-9);
  EXPECT_EQ(amlp.verdict, "holds") << amlp.reason;
  EXPECT_NE(FormatVerdicts(*v).find("probe_slope** (gMLP's probe accuracy falls"),
            std::string::npos);

  // gMLP as flat as the Transformer: no detectable slope; rising with k: against the paper.
  v = ComputeVerdicts(ShiftProbeTable(0.0));
  ASSERT_TRUE(v.ok());
  EXPECT_NEAR(Pattern(*v, "probe_slope").estimate.estimate, 0.0, 1e-9);
  EXPECT_EQ(Pattern(*v, "probe_slope").verdict, "not resolved");
  EXPECT_EQ(Pattern(*v, "probe_slope_amlp").verdict, "does not hold");  // aMLP falls, gMLP not
  v = ComputeVerdicts(ShiftProbeTable(-0.5));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Pattern(*v, "probe_slope").verdict, "does not hold");

  // A probe the Transformer cannot read at k = 16 is not calibrated: nothing is judged.
  v = ComputeVerdicts(ShiftProbeTable(1.0, /*transformer_at_16=*/0.501));
  ASSERT_TRUE(v.ok());
  for (const char* name : {"probe_slope", "probe_slope_amlp"}) {
    EXPECT_EQ(Pattern(*v, name).verdict, "cannot judge");
    EXPECT_NE(Pattern(*v, name).reason.find(
                  "floors at shift k = 16 (the probe is not calibrated; study/README.md has "
                  "the calibration runs"),
              std::string::npos)
        << Pattern(*v, name).reason;
  }

  // Missing runs are named; one shift is no slope; no shift tasks, no slope patterns.
  std::vector<ResultRow> rows = ShiftProbeTable(1.0);
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const ResultRow& r) {
                              return r.encoder == "amlp" && r.task == "probe-shift-4";
                            }),
             rows.end());
  v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Pattern(*v, "probe_slope").verdict, "holds");
  EXPECT_EQ(Pattern(*v, "probe_slope_amlp").reason, "no runs of amlp at k = 4");
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const ResultRow& r) {
                              return r.task.rfind("probe-shift-", 0) == 0 &&
                                     r.task != "probe-shift-8";
                            }),
             rows.end());
  v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Pattern(*v, "probe_slope").verdict, "cannot judge");
  EXPECT_NE(Pattern(*v, "probe_slope").reason.find("at least two shifts; has 1"),
            std::string::npos);
  v = ComputeVerdicts(PaperLikeTable(0.5));
  ASSERT_TRUE(v.ok());
  for (const PatternVerdict& p : v->patterns)
    EXPECT_EQ(p.pattern.find("probe_slope"), std::string::npos);
}

TEST(VerdictTest, OppositeGapDoesNotHold) {
  std::vector<ResultRow> rows;
  AddRuns(&rows, "transformer", "SST-2", "single", 0.80);
  AddRuns(&rows, "gmlp", "SST-2", "single", 0.72);
  AddRuns(&rows, "", "SST-2", "single", 0.51, "majority");
  AddRuns(&rows, "transformer", "SICK", "cross", 0.70);
  AddRuns(&rows, "gmlp", "SICK", "cross", 0.70);
  AddRuns(&rows, "", "SICK", "cross", 0.57, "majority");
  AddRuns(&rows, "transformer", "SICK", "cross", 0.50, "second_only");
  auto v = ComputeVerdicts(rows);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Pattern(*v, "cross_vs_single").verdict, "does not hold");
  EXPECT_FALSE(ComputeVerdicts({}).ok());
}

}  // namespace
}  // namespace gmlp::study
