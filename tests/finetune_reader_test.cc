// Task table, task specs and readers: each GLUE layout and quirk with a 5-line fixture in the
// exact layout of the real files, task specs for the other layouts, and malformed rows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "finetune/encode.h"
#include "finetune/finetune.h"
#include "finetune/reader.h"
#include "finetune/task.h"

namespace gmlp::finetune {
namespace {

class ReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gmlp_finetune_reader_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  void Write(const std::string& name, const std::string& text) {
    const std::string path = JoinPath(dir_, name);
    const size_t slash = path.find_last_of('/');
    ASSERT_TRUE(MakeDirs(path.substr(0, slash)).ok());
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  }

  SplitData Read(const TaskSpec& t, const SplitSpec& s) {
    auto r = ReadSplit(t, s, dir_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : SplitData();
  }

  TaskSpec Glue(const std::string& name) {
    auto t = GlueTask(name);
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(t->Validate().ok()) << t->Validate();
    return *t;
  }

  std::string dir_;
};

TEST_F(ReaderTest, GlueTableHasAllNineTasksWithOfficialMetrics) {
  const std::vector<std::string> names = GlueTaskNames();
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(Glue("CoLA").metrics, std::vector<std::string>({"mcc"}));
  EXPECT_EQ(Glue("sst-2").metrics, std::vector<std::string>({"accuracy"}));
  EXPECT_EQ(Glue("MRPC").metrics, std::vector<std::string>({"f1", "accuracy"}));
  EXPECT_EQ(Glue("QQP").metrics, std::vector<std::string>({"f1", "accuracy"}));
  EXPECT_EQ(Glue("STS-B").metrics, std::vector<std::string>({"pearson", "spearman"}));
  EXPECT_TRUE(Glue("STS-B").is_regression());
  EXPECT_EQ(Glue("MNLI").eval.size(), 2u);
  EXPECT_EQ(Glue("QNLI").labels.size(), 2u);
  EXPECT_EQ(Glue("RTE").labels[1], "not_entailment");
  EXPECT_EQ(Glue("WNLI").metrics, std::vector<std::string>({"accuracy"}));
  auto bad = GlueTask("MNLI-m");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("known: CoLA"), std::string::npos);
}

TEST_F(ReaderTest, InvalidUtf8RowsAreCountedAndSkippedOrRefusedWhenStrict) {
  Write("train.tsv", "sentence\tlabel\ngood film \t1\nbad \xC3\x28 bytes \t0\ndull film \t0\n");
  const TaskSpec t = Glue("SST-2");
  const SplitData d = Read(t, t.train);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.invalid_utf8_rows, 1);
  EXPECT_EQ(d.examples[1].text_a, "dull film");
  EXPECT_EQ(d.examples[1].line, 4);  // line numbers still count the skipped row
  ReadOptions strict;
  strict.strict_utf8 = true;
  auto refused = ReadSplit(t, t.train, dir_, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("train.tsv:3: invalid UTF-8"), std::string::npos)
      << refused.status();
}

// A file whose every row is invalid UTF-8 is not "empty": the error counts the skipped rows and
// names the first.
TEST_F(ReaderTest, AllRowsOfInvalidUtf8SaySoNamingTheFirst) {
  Write("train.tsv", "sentence\tlabel\nbad \xC3\x28 one \t1\nbad \xFF two \t0\n");
  const TaskSpec t = Glue("SST-2");
  auto refused = ReadSplit(t, t.train, dir_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "has no examples; 2 rows of invalid UTF-8 were skipped (the first at " + dir_ +
                "/train.tsv:2, byte 5): re-encode the file as UTF-8"),
            std::string::npos)
      << refused.status();
}

TEST_F(ReaderTest, Sst2TrailingSpaceBeforeTabAndBom) {
  Write("train.tsv",
        "\xEF\xBB\xBFsentence\tlabel\nhide new secretions from the parental units \t0\n"
        "contains no wit , only labored gags \t0\nthat loves its characters \t1\n");
  Write("test.tsv", "index\tsentence\n0\tuneasy mishmash of styles and genres .\n1\tit 's good\n");
  TaskSpec t = Glue("SST-2");
  SplitData d = Read(t, t.train);
  ASSERT_EQ(d.examples.size(), 3u);
  EXPECT_EQ(d.examples[0].text_a, "hide new secretions from the parental units");
  EXPECT_EQ(d.examples[0].label, 0);
  EXPECT_EQ(d.examples[2].label, 1);
  EXPECT_EQ(d.examples[2].line, 4);
  SplitData test = Read(t, t.test[0]);
  ASSERT_EQ(test.examples.size(), 2u);
  EXPECT_FALSE(test.labeled);
  EXPECT_EQ(test.examples[1].id, "1");
  EXPECT_EQ(test.examples[1].text_a, "it 's good");
}

TEST_F(ReaderTest, ColaNoHeaderAndNoFinalNewline) {
  Write("dev.tsv",
        "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
        "gj04\t0\t*\tThe more does Bill smoke, the more Susan hates him.\n"
        "clc95\t1\t\tSay \"cheese\".");  // a quote is a literal character
  TaskSpec t = Glue("CoLA");
  SplitData d = Read(t, t.eval[0]);
  ASSERT_EQ(d.examples.size(), 3u);
  EXPECT_EQ(d.examples[0].text_a, "The sailors rode the breeze clear of the rocks.");
  EXPECT_EQ(d.examples[1].label, 0);
  EXPECT_EQ(d.examples[2].text_a, "Say \"cheese\".");
  EXPECT_EQ(d.examples[2].label, 1);
}

TEST_F(ReaderTest, MrpcHeaderWithSpacesInNames) {
  Write("train.tsv",
        "\xEF\xBB\xBFQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t702876\t702977\tAmrozi accused his brother .\tReferring to him as \"the witness\" .\n"
        "0\t2108705\t2108831\tYucaipa owned Dominick 's .\tYucaipa bought Dominick 's .\n");
  TaskSpec t = Glue("MRPC");
  SplitData d = Read(t, t.train);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.examples[0].text_b, "Referring to him as \"the witness\" .");
  EXPECT_EQ(d.examples[0].label, 1);
  EXPECT_EQ(d.examples[1].label, 0);
}

TEST_F(ReaderTest, QqpSkipsShortRowsWithACount) {
  Write("dev.tsv",
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
        "201359\t303345\t303346\tWhy are Macs nice?\tWhy are Macs good?\t1\n"
        "1\t2\tbroken row\n"
        "263843\t69383\t380476\tHow do I cook?\tWhere is Rome?\t0\n");
  TaskSpec t = Glue("QQP");
  SplitData d = Read(t, t.eval[0]);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_EQ(d.skipped_rows, 1);
  EXPECT_EQ(d.examples[1].id, "263843");
}

TEST_F(ReaderTest, StsbRegressionScoresAndCrlf) {
  Write("train.tsv",
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\r\n"
        "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air "
        "plane is taking off.\t5.000\r\n"
        "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man is playing a flute.\tA man "
        "is playing a bamboo flute.\t3.800\r\n");
  TaskSpec t = Glue("STS-B");
  SplitData d = Read(t, t.train);
  ASSERT_EQ(d.examples.size(), 2u);
  EXPECT_DOUBLE_EQ(d.examples[0].score, 5.0);
  EXPECT_DOUBLE_EQ(d.examples[1].score, 3.8);
  EXPECT_EQ(d.examples[1].text_b, "A man is playing a bamboo flute.");
}

TEST_F(ReaderTest, MnliMatchedAndMismatchedLayouts) {
  const std::string head =
      "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
      "sentence1_parse\tsentence2_parse\tsentence1\tsentence2";
  Write("train.tsv", head + "\tlabel1\tgold_label\n" +
                         "0\t31193\t31193n\tgovernment\t( ( x ) )\t( y )\t(ROOT x)\t(ROOT y)\t"
                         "Conceptually cream skimming has two dimensions.\tProduct and geography "
                         "are what make it work.\tneutral\tneutral\n");
  const std::string dev_head = head + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n";
  Write("dev_matched.tsv",
        dev_head +
            "0\t63735\t63735n\tslate\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tThe new "
            "rights are nice enough\tEveryone really likes the newest "
            "benefits\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral\n");
  Write("dev_mismatched.tsv",
        dev_head +
            "0\t75290\t75290c\tletters\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tYour "
            "contribution helped.\tYour contribution did nothing.\tcontradiction\t"
            "contradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\n");
  Write("test_matched.tsv",
        head +
            "\n0\t31493\t31493\ttravel\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tHierbas, ans seco, "
            "ans dulce.\tHierbas is a name.\n");
  TaskSpec t = Glue("MNLI");
  EXPECT_EQ(Read(t, t.train).examples[0].label, 2);  // contradiction, entailment, neutral
  SplitData m = Read(t, t.eval[0]);
  ASSERT_EQ(m.examples.size(), 1u);
  EXPECT_EQ(m.name, "dev_matched");
  EXPECT_EQ(m.examples[0].label, 2);
  EXPECT_EQ(m.examples[0].text_a, "The new rights are nice enough");
  SplitData mm = Read(t, t.eval[1]);
  EXPECT_EQ(mm.name, "dev_mismatched");
  EXPECT_EQ(mm.examples[0].label, 0);
  SplitData test = Read(t, t.test[0]);
  EXPECT_EQ(test.examples[0].text_b, "Hierbas is a name.");
  EXPECT_EQ(t.test[0].submission, "MNLI-m.tsv");
  EXPECT_EQ(t.test[1].submission, "MNLI-mm.tsv");
}

TEST_F(ReaderTest, QnliRteWnliLayouts) {
  Write("qnli/dev.tsv",
        "index\tquestion\tsentence\tlabel\n0\tWhat came into force?\tThe law came into force "
        "in 2007.\tentailment\n1\tWho?\tNobody knows.\tnot_entailment\n");
  Write("rte/train.tsv",
        "index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in Iraq "
        "Yet.\tWeapons of Mass Destruction Found in Iraq.\tnot_entailment\n");
  Write("wnli/train.tsv",
        "index\tsentence1\tsentence2\tlabel\n0\tI stuck a pin through a carrot.\tThe carrot had "
        "a hole.\t1\n");
  auto read_in = [&](const std::string& task, const std::string& sub, bool eval) {
    TaskSpec t = Glue(task);
    auto r = ReadSplit(t, eval ? t.eval[0] : t.train, JoinPath(dir_, sub));
    EXPECT_TRUE(r.ok()) << r.status();
    return *r;
  };
  SplitData q = read_in("QNLI", "qnli", true);
  EXPECT_EQ(q.examples[0].text_a, "What came into force?");
  EXPECT_EQ(q.examples[1].label, 1);
  EXPECT_EQ(read_in("RTE", "rte", false).examples[0].label, 1);
  EXPECT_EQ(read_in("WNLI", "wnli", false).examples[0].label, 1);
}

// The hypothesis-only control: a pair task read as a single-sentence task over its second
// segment, and the held-out selection split put first.
TEST_F(ReaderTest, SecondSegmentOnlyAndSelectionFromTrain) {
  Write("rte/train.tsv",
        "index\tsentence1\tsentence2\tlabel\n0\tNo Weapons of Mass Destruction Found in Iraq "
        "Yet.\tWeapons of Mass Destruction Found in Iraq.\tnot_entailment\n");
  auto second = SecondSegmentOnly(Glue("RTE"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->is_pair());
  auto r = ReadSplit(*second, second->train, JoinPath(dir_, "rte"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->examples[0].text_a, "Weapons of Mass Destruction Found in Iraq.");
  EXPECT_EQ(r->examples[0].text_b, "");
  EXPECT_EQ(r->examples[0].label, 1);
  auto single = SecondSegmentOnly(Glue("SST-2"));
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("single-sentence"), std::string::npos);

  FinetuneJob job;
  job.task = "RTE";
  job.second_segment_only = true;
  job.select_from_train = 10;
  auto task = ResolveTask(job);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_FALSE(task->is_pair());
  ASSERT_EQ(task->eval.size(), 2u);
  EXPECT_EQ(task->eval[0].name, kTrainHeldoutSplit);
  EXPECT_EQ(task->eval[0].file, task->train.file);
  EXPECT_EQ(task->eval[1].name, "dev");

  // Only the named eval splits besides the selection one; no test predictions.
  job = FinetuneJob();
  job.task = "MNLI";
  job.eval_splits = {"dev_mismatched"};
  job.predict_test = false;
  task = ResolveTask(job);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_EQ(task->eval.size(), 2u);
  EXPECT_EQ(task->eval[0].name, "dev_matched");
  EXPECT_EQ(task->eval[1].name, "dev_mismatched");
  EXPECT_TRUE(task->test.empty());
  job.eval_splits = {"dev_typo"};
  task = ResolveTask(job);
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("dev_matched, dev_mismatched"), std::string::npos)
      << task.status();
}

TEST_F(ReaderTest, MalformedRowNamesFileAndLine) {
  Write("train.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\tonly one\n");
  TaskSpec t = Glue("RTE");
  auto r = ReadSplit(t, t.train, dir_);
  ASSERT_FALSE(r.ok());
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("train.tsv:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected at least 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 2"), std::string::npos) << msg;
}

TEST_F(ReaderTest, UnknownLabelNamesFileAndLine) {
  Write("dev.tsv", "sentence\tlabel\ngood \t1\nbad \t7\n");
  TaskSpec t = Glue("SST-2");
  auto r = ReadSplit(t, t.eval[0], dir_);
  ASSERT_FALSE(r.ok());
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("dev.tsv:3: label '7'"), std::string::npos) << msg;
}

TEST_F(ReaderTest, MissingColumnInHeaderIsClear) {
  Write("train.tsv", "text\tlabel\ngood\t1\n");
  TaskSpec t = Glue("SST-2");
  auto r = ReadSplit(t, t.train, dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no column 'sentence'"), std::string::npos);
}

TEST_F(ReaderTest, MissingFileNamesPath) {
  TaskSpec t = Glue("SST-2");
  auto r = ReadSplit(t, t.train, dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("train.tsv"), std::string::npos);
}

TEST_F(ReaderTest, TaskSpecJsonObjectLayoutAndCrossDatasetEval) {
  Write("mnli/train.json",
        "{\"0\": {\"text_a\": \"A\", \"text_b\": \"B\", \"label\": \"entailment\"},\n"
        " \"1\": {\"text_a\": \"C\", \"text_b\": \"D\", \"label\": \"neutral\"},\n"
        " \"10\": {\"text_a\": \"E\", \"text_b\": \"F\", \"label\": \"contradiction\"},\n"
        " \"2\": {\"text_a\": \"G\", \"text_b\": \"H\", \"label\": \"neutral\"}}");
  Write("xnli/test.tsv", "genre\tlabel\tsentence1_en\tsentence2_en\nslate\tneutral\tx\ty\n");
  const std::string spec = R"({
    "name": "MNLI-like", "labels": ["entailment", "neutral", "contradiction"],
    "metrics": ["accuracy"],
    "train": {"file": "mnli/train.json", "layout": "json_object",
              "sentence1": "text_a", "sentence2": "text_b", "label": "label"},
    "eval": [{"name": "xnli_en_test", "file": "xnli/test.tsv", "sentence1": "sentence1_en",
              "sentence2": "sentence2_en", "label": "label"}]
  })";
  Write("spec.json", spec);
  auto t = LoadTaskSpec(JoinPath(dir_, "spec.json"));
  ASSERT_TRUE(t.ok()) << t.status();
  SplitData d = Read(*t, t->train);
  ASSERT_EQ(d.examples.size(), 4u);
  EXPECT_EQ(d.examples[2].text_a, "G");  // numeric key order: 0 1 2 10
  EXPECT_EQ(d.examples[3].label, 2);
  EXPECT_EQ(Read(*t, t->eval[0]).examples[0].label, 1);
}

TEST_F(ReaderTest, TaskSpecSplitColumnJsonlAndDefaults) {
  Write("sick.txt",
        "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\r\n"
        "1\tA kid plays\tA boy plays\tNEUTRAL\tTRAIN\r\n"
        "2\tA dog runs\tA cat sleeps\tCONTRADICTION\tTEST\r\n"
        "3\tA man eats\tA man is eating\tENTAILMENT\tTRIAL");
  Write("extra.jsonl", "{\"p\": \"x\", \"h\": \"y\", \"gold\": \"Entailment\"}\n\n");
  const std::string spec = R"({
    "name": "SICK", "labels": ["entailment", "neutral", "contradiction"], "metrics": ["accuracy"],
    "sentence1": "sentence_A", "sentence2": "sentence_B", "label": "entailment_label",
    "index": "pair_ID", "split_column": "SemEval_set",
    "train": {"file": "sick.txt", "split_value": "TRAIN"},
    "eval": [{"file": "sick.txt", "split_value": "TRIAL"},
             {"name": "extra", "file": "extra.jsonl", "layout": "jsonl", "sentence1": "p",
              "sentence2": "h", "label": "gold", "index": "", "split_column": "",
              "split_value": ""}],
    "test": {"file": "sick.txt", "split_value": "TEST", "label": ""}
  })";
  auto t = TaskSpec::FromJson(nlohmann::json::parse(spec), "spec");
  ASSERT_TRUE(t.ok()) << t.status();
  SplitData train = Read(*t, t->train);
  ASSERT_EQ(train.examples.size(), 1u);
  EXPECT_EQ(train.examples[0].label, 1);
  EXPECT_EQ(train.examples[0].id, "1");
  SplitData dev = Read(*t, t->eval[0]);
  EXPECT_EQ(dev.name, "dev");
  ASSERT_EQ(dev.examples.size(), 1u);  // last line has no line ending
  EXPECT_EQ(dev.examples[0].text_b, "A man is eating");
  EXPECT_EQ(Read(*t, t->eval[1]).examples[0].label, 0);
  SplitData test = Read(*t, t->test[0]);
  EXPECT_EQ(test.examples[0].id, "2");
}

// A one-sentence task reading rows {"s": text, "l": label} from `file` in `layout`, for both
// splits.
absl::StatusOr<TaskSpec> JsonRowsTask(const std::string& layout, const std::string& file) {
  return TaskSpec::FromJson(nlohmann::json{{"name", "t"},
                                           {"layout", layout},
                                           {"labels", {"x", "y"}},
                                           {"metrics", {"accuracy"}},
                                           {"sentence1", "s"},
                                           {"label", "l"},
                                           {"train", {{"file", file}}},
                                           {"eval", {{"file", file}}}},
                            "spec");
}

// A number no double holds made nlohmann throw out_of_range, which escaped the readers' catch of
// parse_error (found by tests/fuzz/task_reader_fuzz): now one error naming the file (and line).
TEST_F(ReaderTest, NumberOverflowInJsonRowsIsAnErrorNamingTheFile) {
  Write("rows.jsonl", "{\"s\": \"a\", \"l\": \"x\"}\n{\"s\": \"b\", \"l\": 1e99999}\n");
  Write("rows.json", "{\"0\": {\"s\": \"a\", \"l\": 1e99999}}");
  for (const char* layout : {"jsonl", "json_object"}) {
    const std::string file = std::string(layout) == "jsonl" ? "rows.jsonl" : "rows.json";
    auto t = JsonRowsTask(layout, file);
    ASSERT_TRUE(t.ok()) << t.status();
    auto r = ReadSplit(*t, t->train, dir_);
    ASSERT_FALSE(r.ok()) << layout;
    const std::string where = JoinPath(dir_, file) + (file == "rows.jsonl" ? ":2" : "");
    EXPECT_NE(r.status().message().find(where + ": not"), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find("number overflow"), std::string::npos) << r.status();
  }
}

// The JSON parser takes a NUL for the end of the text: bytes after one are refused, naming the
// file (and line), in both JSON layouts (found by the session-24 mutation run).
TEST_F(ReaderTest, BytesAfterANulInJsonRowsAreRefused) {
  Write("nul.jsonl", std::string("{\"s\": \"a\", \"l\": \"x\"}\0garbage\n", 29));
  Write("nul.json", std::string("{\"0\": {\"s\": \"a\", \"l\": \"x\"}}\0\0garbage", 36));
  for (const char* layout : {"jsonl", "json_object"}) {
    const std::string file = std::string(layout) == "jsonl" ? "nul.jsonl" : "nul.json";
    auto t = JsonRowsTask(layout, file);
    ASSERT_TRUE(t.ok()) << t.status();
    auto r = ReadSplit(*t, t->train, dir_);
    ASSERT_FALSE(r.ok()) << layout;
    const std::string want =
        std::string(layout) == "jsonl"
            ? JoinPath(dir_, file) + ":1: bytes after the JSON object"
            : JoinPath(dir_, file) + ": not valid JSON (9 bytes after the value";
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status();
  }
}

TEST_F(ReaderTest, TaskSpecErrors) {
  auto bad_metric = TaskSpec::FromJson(
      nlohmann::json::parse(R"({"name": "x", "labels": ["a", "b"], "metrics": ["pearson"],
        "sentence1": "s", "label": "l", "train": {"file": "t"}, "eval": {"file": "d"}})"),
      "spec.json");
  ASSERT_FALSE(bad_metric.ok());
  EXPECT_NE(bad_metric.status().message().find("spec.json"), std::string::npos);
  auto unknown_key = TaskSpec::FromJson(nlohmann::json::parse(R"({"nmae": "x"})"), "s.json");
  ASSERT_FALSE(unknown_key.ok());
  EXPECT_NE(unknown_key.status().message().find("unknown key \"nmae\""), std::string::npos);
  auto no_eval = TaskSpec::FromJson(
      nlohmann::json::parse(R"({"name": "x", "labels": ["a", "b"], "metrics": ["accuracy"],
        "sentence1": "s", "label": "l", "train": {"file": "t"}})"),
      "s.json");
  EXPECT_FALSE(no_eval.ok());
}

// Mistakes inside a split object are refused like those at the top level, naming the JSON path:
// an unknown key, a count that is not a whole number >= 0, an output name that leaves --output.
TEST_F(ReaderTest, TaskSpecSplitErrorsNameTheJsonPath) {
  auto spec_with = [](const std::string& eval, const std::string& test) {
    return nlohmann::json::parse(absl::StrCat(
        R"({"name": "x", "labels": ["a", "b"], "metrics": ["accuracy"], "sentence1": "s",
            "label": "l", "train": {"file": "t"}, "eval": )",
        eval, R"(, "test": )", test, "}"));
  };
  const std::string ok_eval = R"([{"file": "d"}, {"file": "e", "max_examples": 0}])";
  const std::string ok_test = R"({"file": "u", "label": "", "submission": "sub/X.tsv"})";
  auto ok = TaskSpec::FromJson(spec_with(ok_eval, ok_test), "s.json");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->eval[1].max_examples, 0);

  auto refused = [&](const std::string& eval, const std::string& test, const std::string& says) {
    auto t = TaskSpec::FromJson(spec_with(eval, test), "s.json");
    ASSERT_FALSE(t.ok()) << eval << " " << test;
    EXPECT_NE(t.status().message().find(says), std::string::npos) << t.status();
  };
  refused(R"([{"file": "d"}, {"file": "e", "max_exmaples": 5}])", ok_test,
          "s.json: unknown key \"eval[1].max_exmaples\"");
  refused(R"([{"file": "d", "max_examples": -5}])", ok_test,
          "s.json: eval[0].max_examples is -5; give a whole number of rows >= 0");
  refused(R"({"file": "d", "max_examples": 1.5})", ok_test, "s.json: eval.max_examples is 1.5");
  refused(ok_eval, R"({"file": "u", "label": "", "submission": "../../escaped.tsv"})",
          "s.json: test.submission is \"../../escaped.tsv\", which names a file under --output");
  refused(ok_eval, R"({"file": "u", "label": "", "submission": "/tmp/x.tsv"})",
          "test.submission is \"/tmp/x.tsv\"");
  refused(R"([{"file": "d", "name": "a/../../b"}])", ok_test, "eval[0].name is \"a/../../b\"");
  refused(R"([{"file": "d", "header": "yes"}])", ok_test,
          "s.json: eval[0].header has \"yes\", of the wrong type");
  refused(R"([7])", ok_test, "s.json: eval[0] must be a JSON object");
}

TEST_F(ReaderTest, ShippedTaskSpecsParse) {
  const std::string dir = GMLP_SOURCE_DIR "/finetune/tasks";
  int parsed = 0;
  for (const std::string& name : ListDir(dir)) {
    if (!absl::EndsWith(name, ".json")) continue;
    auto t = LoadTaskSpec(JoinPath(dir, name));
    EXPECT_TRUE(t.ok()) << name << ": " << t.status();
    ++parsed;
  }
  EXPECT_GE(parsed, 4);
}

// The GLUE tasks are the spec files of finetune/tasks/glue/, compiled in: the built-in table is
// exactly those files (one per task, none missing from the build's list, none stale), and each
// names its folder under the data root.
TEST_F(ReaderTest, GlueTasksAreTheShippedSpecFiles) {
  const std::string dir = GMLP_SOURCE_DIR "/finetune/tasks/glue";
  std::vector<std::string> files;
  for (const std::string& name : ListDir(dir)) {
    if (absl::EndsWith(name, ".json")) files.push_back(name);
  }
  std::vector<std::string> names = GlueTaskNames();
  EXPECT_EQ(files.size(), names.size());
  for (const std::string& name : names) {
    auto file = LoadTaskSpec(JoinPath(dir, name + ".json"));
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(Glue(name).ToJson(), file->ToJson()) << name;
    EXPECT_EQ(file->data_dir, name == "RTE" ? "nli/RTE" : "glue/" + name);
  }
  // What the table held when it was C++ (before 2026-12-05; all nine tasks compared equal then),
  // spot-checked.
  const TaskSpec cola = Glue("CoLA");
  EXPECT_FALSE(cola.train.header);
  EXPECT_EQ(cola.train.sentence1, "3");
  EXPECT_EQ(cola.train.label, "1");
  EXPECT_TRUE(cola.test.at(0).header);
  EXPECT_EQ(cola.test.at(0).index, "index");
  EXPECT_TRUE(Glue("QQP").skip_malformed_rows);
  EXPECT_EQ(Glue("QQP").test.at(0).index, "id");
  EXPECT_EQ(Glue("MRPC").train.index, "");
  const TaskSpec mnli = Glue("MNLI");
  ASSERT_EQ(mnli.test.size(), 3u);
  EXPECT_TRUE(mnli.test[2].optional);
  EXPECT_EQ(mnli.test[2].submission, "AX.tsv");
}

// A spec's data_dir is a folder under --data_root (or absolute); --data_dir replaces it.
TEST(TaskDataDirTest, SpecFolderUnderTheRootAndTheFlagReplacesIt) {
  FinetuneJob job;
  job.data_root = "/data";
  TaskSpec task;
  EXPECT_EQ(TaskDataDir(job, task), "/data");
  task.data_dir = "glue/SST-2";
  EXPECT_EQ(TaskDataDir(job, task), "/data/glue/SST-2");
  task.data_dir = "/elsewhere/SST-2";
  EXPECT_EQ(TaskDataDir(job, task), "/elsewhere/SST-2");
  job.data_dir = "/mine";
  EXPECT_EQ(TaskDataDir(job, task), "/mine");
  auto bad = TaskSpec::FromJson(nlohmann::json::parse(R"({"name": "t", "data_dir": 3})"), "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("t.json"), std::string::npos) << bad.status();
}

TEST_F(ReaderTest, RealDataReadsWhenPresent) {
  const std::string data = GMLP_SOURCE_DIR "/../shared/data";
  if (!IsDirectory(data)) GTEST_SKIP() << "no shared data at " << data;
  struct Case {
    const char* task;
    const char* sub;
    size_t train, dev;
  };
  for (const Case& c :
       {Case{"SST-2", "glue/SST-2", 67349, 872}, Case{"CoLA", "glue/CoLA", 8551, 1043},
        Case{"STS-B", "glue/STS-B", 5749, 1500}, Case{"WNLI", "glue/WNLI", 635, 71},
        Case{"RTE", "nli/RTE", 2490, 277}}) {
    TaskSpec t = Glue(c.task);
    auto train = ReadSplit(t, t.train, JoinPath(data, c.sub));
    ASSERT_TRUE(train.ok()) << train.status();
    EXPECT_EQ(train->examples.size(), c.train) << c.task;
    auto dev = ReadSplit(t, t.eval[0], JoinPath(data, c.sub));
    ASSERT_TRUE(dev.ok()) << dev.status();
    EXPECT_EQ(dev->examples.size(), c.dev) << c.task;
    auto test = ReadSplit(t, t.test[0], JoinPath(data, c.sub));
    ASSERT_TRUE(test.ok()) << test.status();
  }
  auto sick = LoadTaskSpec(GMLP_SOURCE_DIR "/finetune/tasks/SICK.json");
  ASSERT_TRUE(sick.ok()) << sick.status();
  auto train = ReadSplit(*sick, sick->train, data);
  ASSERT_TRUE(train.ok()) << train.status();
  EXPECT_EQ(train->examples.size(), 4439u);
  auto trial = ReadSplit(*sick, sick->eval[0], data);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->examples.size(), 495u);
  auto like = LoadTaskSpec(GMLP_SOURCE_DIR "/finetune/tasks/MNLI-like.json");
  ASSERT_TRUE(like.ok()) << like.status();
  auto mtrain = ReadSplit(*like, like->train, data);
  ASSERT_TRUE(mtrain.ok()) << mtrain.status();
  EXPECT_EQ(mtrain->examples.size(), 8999u);
  for (const SplitSpec& s : like->eval) EXPECT_TRUE(ReadSplit(*like, s, data).ok()) << s.name;
}

TEST(EncodeTest, PairLayoutAndLongestFirstTruncation) {
  EncodedExample e = PackExample({10, 11, 12, 13, 14, 15}, {20, 21}, true, 8);
  // budget 5: a shrinks to 3 (longer side), then ties pop b? a=3 b=2 -> 5 fits.
  EXPECT_EQ(e.ids, std::vector<int32_t>({2, 10, 11, 12, 3, 20, 21, 3}));
  EXPECT_EQ(e.segments, std::vector<int32_t>({0, 0, 0, 0, 0, 1, 1, 1}));
  EncodedExample tie = PackExample({10, 11, 12}, {20, 21, 22}, true, 7);
  EXPECT_EQ(tie.ids, std::vector<int32_t>({2, 10, 11, 3, 20, 21, 3}));
  EncodedExample single = PackExample({10, 11, 12, 13}, {99}, false, 4);
  EXPECT_EQ(single.ids, std::vector<int32_t>({2, 10, 11, 3}));
  EXPECT_EQ(single.segments, std::vector<int32_t>({0, 0, 0, 0}));
}

TEST(EncodeTest, BatchPadsToLongest) {
  std::vector<EncodedExample> ex = {PackExample({7}, {}, false, 8),
                                    PackExample({7, 8, 9}, {}, false, 8)};
  ex[0].label = 1;
  PaddedBatch b = MakeBatch(ex, {1, 0}, 0, 2);
  EXPECT_EQ(b.batch, 2);
  EXPECT_EQ(b.len, 5);
  EXPECT_EQ(b.ids, std::vector<int64_t>({2, 7, 8, 9, 3, 2, 7, 3, 0, 0}));
  EXPECT_EQ(b.mask, std::vector<uint8_t>({1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
  EXPECT_EQ(b.labels, std::vector<int64_t>({-1, 1}));
}

}  // namespace
}  // namespace gmlp::finetune
