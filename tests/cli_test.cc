// The flag registry (cli/flag_set.h), and every subcommand's `--help` against the defaults its
// config structs give a run: the help must show the value a run without the flag uses.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/flag_set.h"
#include "data/prepare.h"
#include "finetune/finetune.h"
#include "pretrain/train_config.h"
#include "study/config.h"
#include "study/probe.h"
#include "tests/cli_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::cli {
namespace {

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  return out;
}

TEST(FlagSetTest, ParsesEverySpellingAndRecordsWhatWasGiven) {
  int64_t steps = 10;
  double lr = 1e-3;
  bool resume = false, bf16 = true;
  std::string out = "runs";
  std::vector<uint64_t> seeds = {1};
  std::vector<double> grid = {1e-3, 3e-3}, none = {1.0};
  FlagSet flags("test", "usage");
  flags.Add("steps", &steps, "steps");
  flags.Add("lr", &lr, "lr");
  flags.Add("resume", &resume, "resume");
  flags.Add("bf16", &bf16, "bf16");
  flags.Add("out", &out, "out");
  flags.Add("seeds", &seeds, "seeds");
  flags.Add("grid", &grid, "grid");
  flags.Add("none", &none, "none");
  std::vector<std::string> args = {
      "test", "--steps",  "5",           "-lr=0.5",           "--resume",
      "pos",  "--nobf16", "--seeds=3,4", "--grid=2e-4, 0.01", "--none="};
  std::vector<char*> argv = Argv(args);
  auto parsed = flags.Parse(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->help);
  EXPECT_EQ(parsed->positional, std::vector<std::string>{"pos"});
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(lr, 0.5);
  EXPECT_TRUE(resume);
  EXPECT_FALSE(bf16);
  EXPECT_EQ(seeds, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(grid, (std::vector<double>{2e-4, 0.01}));
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(flags.Given("steps"));
  EXPECT_TRUE(flags.Given("bf16"));
  EXPECT_FALSE(flags.Given("out"));
  // Given flags win again over fields reset to other values (a preset).
  steps = 99;
  out = "preset";
  ASSERT_TRUE(flags.Reapply().ok());
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(out, "preset");
  // The help shows the defaults the fields had when added.
  const std::string help = flags.Help();
  EXPECT_NE(help.find("--lr (lr); default: 0.001;"), std::string::npos) << help;
  EXPECT_NE(help.find("--out (out); default: runs;"), std::string::npos) << help;
  EXPECT_NE(help.find("--grid (grid); default: 0.001,0.003;"), std::string::npos) << help;
  // A list of numbers takes nothing else.
  std::vector<std::string> bad = {"test", "--grid=1e-3,x"};
  std::vector<char*> bad_argv = Argv(bad);
  EXPECT_FALSE(flags.Parse(static_cast<int>(bad_argv.size()), bad_argv.data()).ok());
}

TEST(FlagSetTest, RejectsUnknownFlagsAndBadValues) {
  int64_t steps = 10;
  std::vector<uint64_t> seeds = {1};
  std::vector<double> grid;
  FlagSet flags("pretrain", "usage");
  flags.Add("steps", &steps, "steps");
  flags.Add("seeds", &seeds, "seeds");
  flags.Add("grid", &grid, "grid");
  // A list of numbers rejects any item that is not one; --seeds needs at least one (an empty
  // --grid is the empty list, FlagSetTest.ParsesEverySpellingAndRecordsWhatWasGiven).
  for (std::vector<std::string> args :
       std::vector<std::vector<std::string>>{{"pretrain", "--stpes=3"},
                                             {"pretrain", "--steps=x"},
                                             {"pretrain", "--nosteps"},
                                             {"pretrain", "--seeds="},
                                             {"pretrain", "--seeds=1,x"},
                                             {"pretrain", "--seeds=1,-2"},
                                             {"pretrain", "--grid=1e-3,abc"},
                                             {"pretrain", "--grid=0.001;0.003"}}) {
    std::vector<char*> argv = Argv(args);
    auto parsed = flags.Parse(static_cast<int>(argv.size()), argv.data());
    ASSERT_FALSE(parsed.ok()) << args[1];
    EXPECT_NE(parsed.status().message().find("gmlp pretrain --help"), std::string::npos);
  }
  std::vector<std::string> args = {"pretrain", "--help"};
  std::vector<char*> argv = Argv(args);
  auto parsed = flags.Parse(2, argv.data());
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->help);
}

using gmlp::testing::HelpDefaults;

// Every key of `fields` that is a flag shows the field's value as its default.
void ExpectDefaultsMatch(const std::map<std::string, std::string>& help,
                         const nlohmann::json& fields, const std::string& what) {
  int checked = 0;
  for (const auto& [key, v] : fields.items()) {
    auto it = help.find(key);
    if (it == help.end()) continue;
    ++checked;
    const std::string& shown = it->second;
    if (v.is_boolean()) {
      EXPECT_EQ(shown, v.get<bool>() ? "true" : "false") << what << " --" << key;
    } else if (v.is_number_float()) {
      double d = 0;
      ASSERT_TRUE(absl::SimpleAtod(shown, &d)) << what << " --" << key << "=" << shown;
      EXPECT_DOUBLE_EQ(d, v.get<double>()) << what << " --" << key;
    } else if (v.is_number()) {
      EXPECT_EQ(shown, v.dump()) << what << " --" << key;
    } else if (v.is_string()) {
      EXPECT_EQ(shown, v.get<std::string>()) << what << " --" << key;
    } else if (v.is_array()) {
      std::vector<std::string> items;
      for (const auto& x : v) items.push_back(x.is_string() ? x.get<std::string>() : x.dump());
      EXPECT_EQ(shown, absl::StrJoin(items, ",")) << what << " --" << key;
    }
  }
  EXPECT_GT(checked, 0) << what;
}

template <typename Config>
nlohmann::json FieldsJson(Config& config) {
  nlohmann::json j;
  Config::ForEachField(config,
                       [&j](const char* name, const auto& field, const char*) { j[name] = field; });
  return j;
}

TEST(SubcommandHelpTest, PretrainShowsTrainConfigDefaults) {
  const auto help = HelpDefaults("pretrain");
  pretrain::TrainConfig defaults;
  nlohmann::json fields = defaults.ToJson();
  // Derived from --out_dir ("" in the field: TensorboardDir).
  EXPECT_EQ(help.at("tensorboard_dir"), "<out_dir>/tb");
  fields.erase("tensorboard_dir");
  ExpectDefaultsMatch(help, fields, "pretrain");
  // The bug this guards against: finetune's --lr 0.0001 and --log_every 100 shown here.
  EXPECT_EQ(help.at("lr"), "0.001");
  EXPECT_EQ(help.at("log_every"), "10");
  EXPECT_EQ(help.count("task"), 0u);
  EXPECT_EQ(help.count("threads"), 1u);
}

TEST(SubcommandHelpTest, FinetuneShowsJobAndOptionDefaults) {
  const auto help = HelpDefaults("finetune");
  finetune::FinetuneJob job;
  nlohmann::json fields = FieldsJson(job);
  EXPECT_EQ(help.at("tensorboard_dir"), "<output>/tb");  // derived from --output
  fields.erase("tensorboard_dir");
  ExpectDefaultsMatch(help, fields, "finetune job");
  // 0 in the field: the encoder's max_seq_len, which the help names.
  EXPECT_EQ(job.options.max_len, 0);
  EXPECT_EQ(help.at("max_len"),
            "the encoder's max_seq_len (the seq_len it was pretrained at; from scratch, the "
            "preset's)");
  nlohmann::json options = FieldsJson(job.options);
  options.erase("max_len");
  ExpectDefaultsMatch(help, options, "finetune options");
  EXPECT_EQ(help.at("lr"), "0.0001");
  EXPECT_EQ(help.count("steps"), 0u);
}

TEST(SubcommandHelpTest, StudyShowsStudyConfigDefaults) {
  const auto help = HelpDefaults("study");
  study::StudyConfig c;
  nlohmann::json fields = FieldsJson(c);
  fields.erase("pretrain_bf16");
  fields.erase("pretrain_kernels");
  // Defaults that follow other flags (0 in the fields, StudyConfig::WithDerivedDefaults).
  EXPECT_EQ(c.probe.max_sentence_bytes, 0);
  EXPECT_EQ(help.at("probe_max_sentence_bytes"), "--max_len - 8 (120 at 128)");
  fields.erase("probe_max_sentence_bytes");
  ExpectDefaultsMatch(help, fields, "study");
  nlohmann::json ft = FieldsJson(c.finetune);
  EXPECT_EQ(c.finetune.max_len, 0);
  EXPECT_EQ(help.at("max_len"), "--seq_len (the shards' seq_len with --shards)");
  for (const char* k :
       {"clip_norm", "eval_batch_size", "log_every", "bf16", "kernels", "max_len"}) {
    ft.erase(k);
  }
  ExpectDefaultsMatch(help, ft, "study finetuning");
  EXPECT_EQ(help.at("lr"), "0.001");
  EXPECT_EQ(help.at("bf16"), c.pretraining.bf16 ? "true" : "false");
  EXPECT_EQ(help.at("kernels"), "auto");
  EXPECT_EQ(help.at("smoke"), "false");
}

// Every field of `fields` is a flag of `help`.
void ExpectAllAreFlags(const std::map<std::string, std::string>& help, const nlohmann::json& fields,
                       const std::string& what) {
  for (const auto& item : fields.items()) {
    EXPECT_EQ(help.count(item.key()), 1u) << what << ": no --" << item.key();
  }
}

TEST(SubcommandHelpTest, PrepareShowsPrepareOptionsDefaults) {
  const auto help = HelpDefaults("prepare");
  data::PrepareOptions o;
  nlohmann::json fields = FieldsJson(o);
  ExpectAllAreFlags(help, fields, "prepare");
  // Where from and to: the command's own defaults (the README's layout), not the library's.
  EXPECT_EQ(help.at("tokenizer"), "runs/tokenizer/spm.model");
  EXPECT_EQ(help.at("output"), "runs/shards");
  for (const char* k : {"input", "tokenizer", "output"}) fields.erase(k);
  ExpectDefaultsMatch(help, fields, "prepare");
  EXPECT_EQ(help.at("merge"), "false");
}

TEST(SubcommandHelpTest, TokenizerShowsTrainOptionsDefaults) {
  const auto help = HelpDefaults("tokenizer");
  tokenizer::TrainOptions o;
  nlohmann::json fields = FieldsJson(o);
  ExpectAllAreFlags(help, fields, "tokenizer");
  EXPECT_EQ(help.at("model_prefix"), "runs/tokenizer/spm");
  fields.erase("model_prefix");
  ExpectDefaultsMatch(help, fields, "tokenizer");
  EXPECT_EQ(help.at("output_format"), "id");
}

TEST(SubcommandHelpTest, ProbeShowsProbeOptionsDefaults) {
  const auto help = HelpDefaults("probe");
  study::ProbeOptions o;
  nlohmann::json fields = FieldsJson(o);
  ExpectAllAreFlags(help, fields, "probe");
  EXPECT_EQ(o.max_sentence_bytes, 0);
  EXPECT_EQ(help.at("max_sentence_bytes"), "--max_len - 8 (120 at --max_len=128)");
  EXPECT_EQ(o.Resolved().max_sentence_bytes, 120);
  fields.erase("max_sentence_bytes");
  ExpectDefaultsMatch(help, fields, "probe");
}

TEST(SubcommandHelpTest, PredictShowsItsOwnFlags) {
  const auto help = HelpDefaults("predict");
  EXPECT_EQ(help.at("input"), "-");
  EXPECT_EQ(help.at("model"), "");
  EXPECT_EQ(help.size(), 3u);  // input, model, threads
}

}  // namespace
}  // namespace gmlp::cli
