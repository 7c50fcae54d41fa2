// Weights out and in (issue 36): the safetensors format against PyPI's own reader and writer,
// `gmlp export` in gmlp's layout (a round trip through `--init` gives the held-out MLM loss bit
// for bit) and as Hugging Face BERT (transformers loads it with no missing, unexpected or
// mismatched key and gives gmlp's logits), and every bad input refused in one line naming the
// file and the tensor, with nothing written. The Python side runs in the torch 2.11 environment
// `bash scripts/python_env.sh` makes; those tests skip, naming why, where it is absent.
#include "export/export.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "common/safetensors.h"
#include "data/loader.h"
#include "finetune/saved_model.h"
#include "model/encoder.h"
#include "model/heads.h"
#include "model/safetensors.h"
#include "model/serialize.h"
#include "model/weights_folder.h"
#include "pretrain/checkpoint.h"
#include "pretrain/mlm_eval.h"
#include "pretrain/pretrained.h"
#include "tests/pretrain_test_util.h"
#include "tests/subprocess_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp {
namespace {

using pretrain::testing::FreshTempDir;
using testing::ExitCode;
using testing::kGmlpBinary;
using testing::StartProcess;
using testing::WaitStatus;

const std::string kSource = GMLP_SOURCE_DIR;
const std::string kData = kSource + "/../shared/data";

// The torch 2.11 environment's python; "" when absent.
std::string VenvPython() { return gmlp::testing::TorchVenvTool("python"); }

struct Output {
  int code = -1;
  std::string text;  // stdout and stderr
};

Output RunCommand(const std::vector<std::string>& argv, const std::string& log) {
  testing::ChildOptions options;
  options.log = log;
  const int status = WaitStatus(StartProcess(argv, options));
  auto text = ReadFile(log);
  return {ExitCode(status), text.ok() ? *text : ""};
}

Output Gmlp(std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), kGmlpBinary);
  return RunCommand(args, log);
}

// The last line of a command's output (a JSON line from the Python checks).
nlohmann::json LastJsonLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  return lines.empty() ? nlohmann::json() : nlohmann::json::parse(lines.back(), nullptr, false);
}

// One small real pipeline, made once: a SentencePiece tokenizer and shards from Moby-Dick, and a
// post-LN Transformer (BERT's layout) pretrained for 40 steps with a held-out evaluation.
class ExportTest : public ::testing::Test {
 protected:
  static constexpr int kRunThreads = 2;  // the pretraining runs' --threads

  static void SetUpTestSuite() {
    root_ = FreshTempDir("export");
    const std::string text = JoinPath(root_, "corpus.txt");
    auto moby = ReadFile(kData + "/corpus/moby-dick/moby_dick.txt");
    ASSERT_TRUE(moby.ok()) << moby.status();
    ASSERT_TRUE(WriteFileAtomic(text, moby->substr(0, 400000)).ok());
    const std::string log = JoinPath(root_, "setup.log");
    Output o = Gmlp({"tokenizer", "train", "--input=" + text, "--model_prefix=" + root_ + "/spm",
                     "--vocab_size=800", "--threads=2"},
                    log);
    ASSERT_EQ(o.code, 0) << o.text;
    o = Gmlp({"prepare", "--input=" + text, "--tokenizer=" + root_ + "/spm.model",
              "--output=" + root_ + "/shards", "--seq_len=32", "--valid_fraction=0.1"},
             log);
    ASSERT_EQ(o.code, 0) << o.text;
    run_ = JoinPath(root_, "run");
    o = Gmlp({"pretrain", "--shard_dir=" + root_ + "/shards", "--out_dir=" + run_,
              "--preset=transformer-tiny", "--model_overrides=d_model=32,n_layers=2,d_ffn=64",
              "--steps=40", "--micro_batch=16", "--global_batch=16", "--warmup_steps=5",
              "--lr=3e-3", "--eval_every=40", "--eval_batches=4", "--log_every=10",
              "--peak_gflops=100", absl::StrCat("--threads=", kRunThreads)},
             log);
    ASSERT_EQ(o.code, 0) << o.text;
    gmlp_run_ = JoinPath(root_, "gmlp_run");
    o = Gmlp({"pretrain", "--shard_dir=" + root_ + "/shards", "--out_dir=" + gmlp_run_,
              "--preset=gmlp-tiny", "--model_overrides=d_model=32,n_layers=1,d_ffn=64", "--steps=2",
              "--micro_batch=4", "--global_batch=4", "--warmup_steps=1", "--eval_every=0",
              "--peak_gflops=100", "--threads=2"},
             log);
    ASSERT_EQ(o.code, 0) << o.text;
  }

  void SetUp() override {
    if (run_.empty() || !PathExists(JoinPath(run_, "checkpoints"))) {
      GTEST_FAIL() << "the pipeline fixture failed (see the first test's output)";
    }
  }

  // The checkpoint's MlmModel, eval mode.
  static model::MlmModel LoadCheckpointModel() {
    auto dir = pretrain::ResolveCheckpoint(run_);
    EXPECT_TRUE(dir.ok()) << dir.status();
    auto pre = pretrain::LoadPretrainedEncoder(run_);
    EXPECT_TRUE(pre.ok()) << pre.status();
    model::MlmModel mlm(pre->config);
    EXPECT_TRUE(model::LoadModule(*mlm, JoinPath(*dir, pretrain::kModelFile)).ok());
    mlm->eval();
    return mlm;
  }

  // Held-out loss of `mlm` on the run's eval batches (what metrics.jsonl's eval line measured),
  // at the run's thread count: OpenBLAS's sgemm gives other last bits with another (measured on
  // an AVX2-only VM, 2026-12-06: torch::mm of (512 x 32) @ (32 x 64) differs by 4e-6 between 1
  // and 2 threads).
  static double HeldOutLoss(model::MlmModel mlm) {
    const int threads = torch::get_num_threads();
    torch::set_num_threads(kRunThreads);
    data::LoaderOptions lo;
    lo.shard_dir = root_ + "/shards";
    lo.split = "valid";
    lo.batch_size = 16;
    lo.shuffle = false;
    lo.prefetch = 0;
    lo.seed = 1;
    auto loader = data::MlmLoader::Open(lo);
    EXPECT_TRUE(loader.ok()) << loader.status();
    auto forward = [mlm](const model::EncoderInput& in, const torch::Tensor& masked) mutable {
      return mlm->forward(in, masked);
    };
    auto eval = pretrain::EvaluateMlm(forward, **loader, 4, torch::kCPU, /*bf16=*/false);
    torch::set_num_threads(threads);
    EXPECT_TRUE(eval.ok()) << eval.status();
    return eval->loss;
  }

  // A fixed padded batch: 3 rows, the second 5 tokens shorter, segments 0 then 1.
  static model::EncoderInput Batch(int64_t vocab, int64_t n = 24) {
    torch::manual_seed(7);
    model::EncoderInput in;
    in.input_ids = torch::randint(5, vocab, {3, n}, torch::kLong);
    in.segment_ids = (torch::arange(n) >= n / 2).to(torch::kLong).expand({3, n}).contiguous();
    in.pad_mask = torch::ones({3, n}, torch::kBool);
    in.pad_mask[1].narrow(0, n - 5, 5).fill_(false);
    in.input_ids.masked_fill_(in.pad_mask.logical_not(), 0);
    return in;
  }

  static std::string Export(const std::string& name, std::vector<std::string> extra,
                            const std::string& model = "") {
    const std::string out = JoinPath(root_, name);
    std::vector<std::string> args = {"export", "--model=" + (model.empty() ? run_ : model),
                                     "--output=" + out};
    args.insert(args.end(), extra.begin(), extra.end());
    const Output o = Gmlp(args, out + ".log");
    EXPECT_EQ(o.code, 0) << o.text;
    return out;
  }

  static std::string root_, run_, gmlp_run_;
};

std::string ExportTest::root_, ExportTest::run_, ExportTest::gmlp_run_;

TEST(SafetensorsTest, RoundTripsEveryDtypeShapeAndMetadata) {
  const std::string dir = FreshTempDir("st_roundtrip");
  const model::TensorList tensors = {
      {"f32", torch::randn({3, 5})},
      {"bf16", torch::randn({7}).to(torch::kBFloat16)},
      {"f16", torch::randn({2, 2}).to(torch::kHalf)},
      {"f64", torch::randn({1, 1, 2}, torch::kDouble)},
      {"i64", torch::arange(-3, 3)},
      {"i32", torch::arange(4, torch::kInt)},
      {"u8", torch::arange(9, torch::kByte)},
      {"bool", torch::tensor({true, false, true})},
      {"scalar", torch::tensor(2.5)},
      {"empty", torch::zeros({0, 4})},
      {"strided", torch::randn({4, 6}).t()},  // written contiguous
  };
  const std::string path = dir + "/t.safetensors";
  ASSERT_TRUE(model::WriteSafetensors(path, tensors, {{"k", "v"}}).ok());
  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  const uint64_t n = *reinterpret_cast<const uint64_t*>(bytes->data());
  EXPECT_EQ((8 + n) % 8, 0u) << "the data must start 8-byte aligned";
  auto file = model::ReadSafetensors(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->metadata.at("k"), "v");
  ASSERT_EQ(file->tensors.size(), tensors.size());
  for (const auto& [name, want] : tensors) {
    const torch::Tensor* got = file->Find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->scalar_type(), want.scalar_type()) << name;
    EXPECT_TRUE(torch::equal(*got, want)) << name;
  }
}

TEST(SafetensorsTest, PypiSafetensorsReadsOursAndWeReadItsFiles) {
  const std::string python = VenvPython();
  if (python.empty()) GTEST_SKIP() << "no torch 2.11 venv: run `bash scripts/python_env.sh`";
  const std::string dir = FreshTempDir("st_pypi");
  const std::string ours = dir + "/ours.safetensors";
  ASSERT_TRUE(model::WriteSafetensors(ours,
                                      {{"w", torch::arange(6, torch::kFloat).view({2, 3}) / 4},
                                       {"h", torch::tensor({0.5, -1.5}).to(torch::kBFloat16)},
                                       {"ids", torch::tensor({{3, 4, 5}}, torch::kLong)}},
                                      {{"gmlp", "yes"}})
                  .ok());
  Output o = RunCommand({python, kSource + "/tests/python/safetensors_check.py", "read", ours},
                        dir + "/read.log");
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json read = LastJsonLine(o.text);
  ASSERT_TRUE(read.is_object()) << o.text;
  EXPECT_EQ(read["w"]["dtype"], "float32");
  EXPECT_EQ(read["w"]["shape"], nlohmann::json({2, 3}));
  EXPECT_DOUBLE_EQ(read["w"]["sum"].get<double>(), 15.0 / 4);
  EXPECT_EQ(read["h"]["dtype"], "bfloat16");
  EXPECT_DOUBLE_EQ(read["h"]["sum"].get<double>(), -1.0);
  EXPECT_EQ(read["ids"]["dtype"], "int64");
  EXPECT_DOUBLE_EQ(read["ids"]["sum"].get<double>(), 12.0);
  EXPECT_EQ(read["__metadata__"]["gmlp"], "yes");

  const std::string theirs = dir + "/theirs.safetensors";
  o = RunCommand({python, kSource + "/tests/python/safetensors_check.py", "write", theirs},
                 dir + "/write.log");
  ASSERT_EQ(o.code, 0) << o.text;
  auto file = model::ReadSafetensors(theirs);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->metadata.at("written_by"), "safetensors");
  EXPECT_TRUE(
      torch::equal(*file->Find("a.f32"), torch::arange(12, torch::kFloat).view({3, 4}) / 8));
  EXPECT_TRUE(
      torch::equal(*file->Find("b.bf16"), torch::tensor({1.5, -2.25}).to(torch::kBFloat16)));
  EXPECT_TRUE(torch::equal(*file->Find("c.i64"), torch::tensor({{7, -9}}, torch::kLong)));
  EXPECT_EQ(file->Find("d.scalar")->dim(), 0);
  EXPECT_EQ(file->Find("d.scalar")->item<double>(), 3.0);
}

// Each kind of damage, one line naming the file (and the tensor when there is one).
TEST(SafetensorsTest, DamagedFilesAreRefusedNamingFileAndTensor) {
  std::vector<SafetensorsEntry> entries = {{"a", "F32", {2}, 0, 0}, {"b", "I64", {1}, 0, 0}};
  const std::string header = SafetensorsHeader(entries, {});
  const std::string good = header + std::string(16, '\1');
  ASSERT_TRUE(ParseSafetensors(good, "f.safetensors").ok());
  auto with_header = [&](const std::string& json) {
    std::string h = json;
    std::string out(8, '\0');
    uint64_t n = h.size();
    for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
    return out + h;
  };
  const struct {
    std::string bytes, expect;
  } cases[] = {
      {"abc", "only 3 bytes"},
      {good.substr(0, 20), "runs past the end"},
      {good.substr(0, good.size() - 1), "tensor 'b': data_offsets [8, 16] run past"},
      {good + "x", "trailing bytes"},
      {with_header(R"({"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})") + "abcd",
       "tensor 'a': unknown dtype \"Q7\""},
      {with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})") + "abcd",
       "tensor 'a': data_offsets [0, 4] hold 4 bytes; F32 of shape [2] needs 8"},
      {with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})") + "abcd",
       "tensor 'a': shape [-1] is not a list of sizes"},
      {with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})") + "abcdefgh",
       "leaving a hole"},
      {with_header(R"({"a":{"dtype":"F32","shape":[1]}})"),
       "exactly dtype, shape and data_offsets"},
      {with_header("[1,2]"), "not a JSON object"},
      {with_header(R"({"__metadata__":{"k":1}})"), "__metadata__ 'k' is not a string"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseSafetensors(c.bytes, "f.safetensors");
    ASSERT_FALSE(parsed.ok()) << c.expect;
    const std::string msg(parsed.status().message());
    EXPECT_EQ(msg.rfind("f.safetensors: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST_F(ExportTest, GmlpFolderRoundTripGivesTheHeldOutLossBitForBit) {
  const std::string out = Export("gmlp_fp32", {});
  for (const char* file : {"model.safetensors", "config.json", "tokenizer.model", "README.md"}) {
    EXPECT_TRUE(PathExists(JoinPath(out, file))) << file;
  }
  model::MlmModel original = LoadCheckpointModel();
  const double want = HeldOutLoss(original);
  // The run's own evaluation at its last step measured the same batches.
  double logged = -1;
  for (const nlohmann::json& j : testing::JsonRecords(run_ + "/metrics.jsonl")) {
    if (j.value("type", "") == "eval") logged = j["eval_loss"].get<double>();
  }
  EXPECT_EQ(logged, want);

  for (const std::string& path : {out, out + "/model.safetensors"}) {
    auto init = model::ReadInitWeights(path);
    ASSERT_TRUE(init.ok()) << init.status();
    EXPECT_EQ(init->kind, model::kKindMlm);
    EXPECT_EQ(init->config.ToJson(), original->encoder()->config().ToJson());
    model::MlmModel loaded(init->config);
    ASSERT_TRUE(model::LoadModuleFrom(*loaded, init->file).ok());
    loaded->eval();
    EXPECT_EQ(HeldOutLoss(loaded), want) << path;  // bit for bit
  }
  // The model card and config say what made the weights and what they scored.
  auto card = ReadFile(out + "/README.md");
  ASSERT_TRUE(card.ok());
  EXPECT_NE(card->find("held-out MLM loss"), std::string::npos) << *card;
  EXPECT_NE(card->find("pretraining steps | 40"), std::string::npos) << *card;
  auto config = ReadFile(out + "/config.json");
  ASSERT_TRUE(config.ok());
  const nlohmann::json cj = nlohmann::json::parse(*config);
  EXPECT_EQ(cj["gmlp_export"], 1);
  EXPECT_EQ(cj["kind"], "mlm");
  EXPECT_FALSE(cj["made_by"]["gmlp"].get<std::string>().empty());
  EXPECT_FALSE(cj["made_by"]["libtorch"].get<std::string>().empty());
  // So do the run's own outputs: metrics.jsonl's first line and the checkpoint's config.json.
  const auto records = testing::JsonRecords(run_ + "/metrics.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records[0]["type"], "run");
  for (const nlohmann::json& made_by :
       {records[0]["made_by"], nlohmann::json::parse(*ReadFile(run_ + "/config.json"))["made_by"],
        cj["made_by"]}) {
    ASSERT_TRUE(made_by.is_object()) << made_by;
    EXPECT_EQ(made_by["gmlp"].get<std::string>().rfind("0.1.0+", 0), 0u) << made_by;
    EXPECT_EQ(made_by["libtorch"].get<std::string>().substr(0, 2),
              std::to_string(TORCH_VERSION_MAJOR) + ".");
    EXPECT_NE(made_by["cpu"].get<std::string>().find(" cores; "), std::string::npos) << made_by;
    EXPECT_EQ(made_by["world_size"], 1);
    EXPECT_GE(made_by["threads"].get<int>(), 1);
  }
}

TEST_F(ExportTest, Bf16ExportHalvesTheFloatsAndStaysClose) {
  const std::string fp32 = Export("gmlp_fp32b", {});
  const std::string bf16 = Export("gmlp_bf16", {"--dtype=bf16"});
  auto a = FileSize(fp32 + "/model.safetensors"), b = FileSize(bf16 + "/model.safetensors");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(*b, *a * 0.55);
  auto init = model::ReadInitWeights(bf16);
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(init->file.tensors[0].second.scalar_type(), torch::kBFloat16);
  model::MlmModel loaded(init->config);
  ASSERT_TRUE(model::LoadModuleFrom(*loaded, init->file).ok());
  loaded->eval();
  const double want = HeldOutLoss(LoadCheckpointModel());
  EXPECT_NEAR(HeldOutLoss(loaded), want, 0.02 * want);
}

// `gmlp pretrain --init` continues from the export: its first steps' losses sit at the export's
// held-out loss, far below a fresh model's (ln 800 = 6.7 nats).
TEST_F(ExportTest, PretrainInitContinuesFromTheExport) {
  const std::string out = Export("gmlp_for_init", {});
  const std::string cont = JoinPath(root_, "continued");
  const Output o =
      Gmlp({"pretrain", "--shard_dir=" + root_ + "/shards", "--out_dir=" + cont, "--init=" + out,
            "--steps=5", "--micro_batch=16", "--global_batch=16", "--warmup_steps=1", "--lr=1e-4",
            "--eval_every=0", "--log_every=1", "--peak_gflops=100", "--threads=2"},
           cont + ".log");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("initialized from " + out), std::string::npos) << o.text;
  const double held_out = HeldOutLoss(LoadCheckpointModel());
  const auto losses = testing::TrainLosses(cont);
  ASSERT_EQ(losses.size(), 5u);
  EXPECT_LT(losses.begin()->second, held_out + 0.5) << "did not start from the export";
  // The checkpoint records where it started, and a resume with another --init is refused.
  const std::string other = Export("gmlp_for_init_other", {});
  std::vector<std::string> args = {"pretrain",          "--shard_dir=" + root_ + "/shards",
                                   "--out_dir=" + cont, "--init=" + other,
                                   "--steps=5",         "--micro_batch=16",
                                   "--global_batch=16", "--warmup_steps=1",
                                   "--lr=1e-4",         "--eval_every=0",
                                   "--log_every=1",     "--peak_gflops=100",
                                   "--threads=2"};
  const Output again = Gmlp(args, cont + ".again.log");
  EXPECT_NE(again.code, 0);
  EXPECT_NE(again.text.find("has init = "), std::string::npos) << again.text;
  // --init with --preset is refused: the export is the architecture.
  args[3] = "--init=" + out;
  args.push_back("--preset=gmlp-tiny");
  const Output both = Gmlp(args, cont + ".both.log");
  EXPECT_NE(both.code, 0);
  EXPECT_NE(both.text.find("drop --preset"), std::string::npos) << both.text;
}

// finetune's --init takes the export folder, a lone safetensors file and an HF folder, and each
// gives the checkpoint's encoder exactly.
TEST_F(ExportTest, FinetuneInitReadsEveryFormToTheSameEncoder) {
  const std::string gmlp_dir = Export("gmlp_for_ft", {});
  const std::string hf_dir = Export("hf_for_ft", {"--format=hf"});
  auto want = pretrain::LoadPretrainedEncoder(run_);
  ASSERT_TRUE(want.ok()) << want.status();
  const auto want_tensors = model::ModuleTensors(*want->encoder);
  for (const std::string& path : {gmlp_dir, gmlp_dir + "/model.safetensors", hf_dir}) {
    if (path == gmlp_dir + "/model.safetensors") {
      // A lone file has no tokenizer beside it; the folder's is what the check needs.
      auto init = model::ReadInitWeights(path);
      ASSERT_TRUE(init.ok()) << init.status();
      continue;
    }
    auto got = pretrain::LoadPretrainedEncoder(path);
    ASSERT_TRUE(got.ok()) << path << ": " << got.status();
    EXPECT_EQ(got->config.ToJson(), want->config.ToJson()) << path;
    const auto got_tensors = model::ModuleTensors(*got->encoder);
    ASSERT_EQ(got_tensors.size(), want_tensors.size());
    for (size_t i = 0; i < got_tensors.size(); ++i) {
      EXPECT_TRUE(torch::equal(got_tensors[i].second, want_tensors[i].second))
          << path << ": " << got_tensors[i].first;
    }
  }
}

TEST_F(ExportTest, HfBertLoadsInTransformersWithGmlpsLogits) {
  const std::string python = VenvPython();
  if (python.empty()) GTEST_SKIP() << "no torch 2.11 venv: run `bash scripts/python_env.sh`";
  const std::string out = Export("hf_mlm", {"--format=hf"});
  model::MlmModel mlm = LoadCheckpointModel();
  const int64_t vocab = mlm->encoder()->config().vocab_size;
  const model::EncoderInput in = Batch(vocab);
  torch::NoGradGuard no_grad;
  const int64_t B = in.input_ids.size(0), n = in.input_ids.size(1);
  const torch::Tensor logits = mlm->forward(in, torch::arange(B * n)).view({B, n, vocab});
  const std::string expected = out + ".expected.safetensors";
  ASSERT_TRUE(model::WriteSafetensors(expected, {{"input_ids", in.input_ids},
                                                 {"token_type_ids", in.segment_ids},
                                                 {"attention_mask", in.pad_mask.to(torch::kLong)},
                                                 {"logits", logits}})
                  .ok());
  const std::string text = "Call me Ishmael. Some years ago, never mind how long precisely!";
  const Output o =
      RunCommand({python, kSource + "/tests/python/hf_bert_check.py", out, expected, text},
                 out + ".check.log");
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json r = LastJsonLine(o.text);
  ASSERT_TRUE(r.is_object()) << o.text;
  EXPECT_EQ(r["class"], "BertForMaskedLM");
  // AutoTokenizer loads the folder's tokenizer and gives gmlp's ids: [CLS] text [SEP].
  auto tok = tokenizer::Tokenizer::Load(out + "/tokenizer.model");
  ASSERT_TRUE(tok.ok()) << tok.status();
  std::vector<int32_t> ids = {tokenizer::kClsId};
  ASSERT_TRUE((*tok)->Encode(text, &ids).ok());
  ids.push_back(tokenizer::kSepId);
  EXPECT_EQ(r["input_ids"], nlohmann::json(ids)) << o.text;
  EXPECT_EQ(r["token_type_ids"], nlohmann::json(std::vector<int>(ids.size(), 0)));
  EXPECT_EQ(r["missing"], nlohmann::json::array()) << o.text;
  EXPECT_EQ(r["unexpected"], nlohmann::json::array()) << o.text;
  EXPECT_EQ(r["mismatched"], nlohmann::json::array()) << o.text;
  EXPECT_TRUE(r["tied"].get<bool>()) << "the decoder must be the word embeddings";
  EXPECT_LT(r["max_abs_diff"].get<double>(), 1e-4) << o.text;
}

TEST_F(ExportTest, HfClassifierLoadsAsAutoModelForSequenceClassification) {
  const std::string python = VenvPython();
  if (python.empty()) GTEST_SKIP() << "no torch 2.11 venv: run `bash scripts/python_env.sh`";
  const std::string ft = JoinPath(root_, "ft_sst2");
  const Output f =
      Gmlp({"finetune", "--task=SST-2", "--data_root=" + kData, "--init=" + run_, "--output=" + ft,
            "--max_train_examples=64", "--max_eval_examples=32", "--epochs=1", "--batch_size=16",
            "--max_len=32", "--predict_test=false", "--threads=2"},
           ft + ".log");
  ASSERT_EQ(f.code, 0) << f.text;
  const std::string out = Export("hf_sst2", {"--format=hf"}, ft);
  auto saved = finetune::LoadFinetunedModel(ft);
  ASSERT_TRUE(saved.ok()) << saved.status();
  const model::EncoderInput in = Batch(saved->config.vocab_size);
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = saved->classifier->forward(in);
  const std::string expected = out + ".expected.safetensors";
  ASSERT_TRUE(model::WriteSafetensors(expected, {{"input_ids", in.input_ids},
                                                 {"token_type_ids", in.segment_ids},
                                                 {"attention_mask", in.pad_mask.to(torch::kLong)},
                                                 {"logits", logits}})
                  .ok());
  const Output o = RunCommand({python, kSource + "/tests/python/hf_bert_check.py", out, expected},
                              out + ".check.log");
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json r = LastJsonLine(o.text);
  ASSERT_TRUE(r.is_object()) << o.text;
  EXPECT_EQ(r["class"], "BertForSequenceClassification");
  EXPECT_EQ(r["missing"], nlohmann::json::array()) << o.text;
  EXPECT_EQ(r["unexpected"], nlohmann::json::array()) << o.text;
  EXPECT_EQ(r["mismatched"], nlohmann::json::array()) << o.text;
  EXPECT_LT(r["max_abs_diff"].get<double>(), 1e-4) << o.text;
  auto config = ReadFile(out + "/config.json");
  ASSERT_TRUE(config.ok());
  const nlohmann::json cj = nlohmann::json::parse(*config);
  EXPECT_EQ(cj["id2label"]["0"], "0");
  EXPECT_EQ(cj["problem_type"], "single_label_classification");
}

// Refusals: one line, a non-zero exit, nothing written at --output.
TEST_F(ExportTest, BadRequestsAndBadWeightsAreRefusedInOneLine) {
  auto expect_refused = [](const Output& o, const std::vector<std::string>& parts) {
    EXPECT_NE(o.code, 0) << o.text;
    std::vector<std::string> lines = absl::StrSplit(o.text, '\n', absl::SkipEmpty());
    ASSERT_FALSE(lines.empty());
    const std::string& last = lines.back();
    for (const std::string& p : parts) EXPECT_NE(last.find(p), std::string::npos) << o.text;
  };
  // --format=hf of a gMLP: names what it supports.
  const std::string& gmlp_run = gmlp_run_;
  const std::string refused = JoinPath(root_, "refused");
  Output o = Gmlp({"export", "--model=" + gmlp_run, "--output=" + refused, "--format=hf"},
                  refused + ".log");
  expect_refused(o,
                 {"--format=hf exports BERT", "post-LN Transformer", "arch gmlp", "--format=gmlp"});
  EXPECT_FALSE(PathExists(refused));
  o = Gmlp({"export", "--model=" + run_, "--output=" + refused, "--dtype=fp8"}, refused + ".log");
  expect_refused(o, {"--dtype=fp8 is not one of fp32, bf16"});
  EXPECT_FALSE(PathExists(refused));

  // Damaged exports given to finetune --init: the file and the tensor, no output.
  const std::string good = Export("gmlp_for_damage", {});
  auto file = model::ReadSafetensors(good + "/model.safetensors");
  ASSERT_TRUE(file.ok());
  auto variant = [&](const std::string& name, const model::TensorList& tensors) {
    const std::string dir = JoinPath(root_, name);
    (void)RemoveTree(dir);
    EXPECT_TRUE(MakeDirs(dir).ok());
    for (const char* f : {"config.json", "tokenizer.model"}) {
      EXPECT_TRUE(CopyFile(JoinPath(good, f), JoinPath(dir, f)).ok());
    }
    EXPECT_TRUE(
        model::WriteSafetensors(JoinPath(dir, "model.safetensors"), tensors, file->metadata).ok());
    return dir;
  };
  model::TensorList missing = file->tensors;
  missing.erase(missing.begin() + 2);
  model::TensorList extra = file->tensors;
  extra.emplace_back("encoder.blocks.0.surplus", torch::zeros({2}));
  model::TensorList reshaped = file->tensors;
  for (auto& [name, t] : reshaped) {
    if (name == "encoder.blocks.1.ffn_in.weight") t = torch::zeros({65, 32});
  }
  const struct {
    std::string dir;
    std::vector<std::string> expect;
  } cases[] = {
      {variant("dmg_missing", missing), {"model.safetensors", "no tensor", file->tensors[2].first}},
      {variant("dmg_extra", extra), {"model.safetensors", "unexpected tensor", "surplus"}},
      {variant("dmg_shape", reshaped),
       {"model.safetensors", "encoder.blocks.1.ffn_in.weight", "[65, 32]", "[64, 32]"}},
  };
  for (const auto& c : cases) {
    const std::string ft = c.dir + "_ft";
    o = Gmlp({"finetune", "--task=SST-2", "--data_root=" + kData, "--init=" + c.dir,
              "--output=" + ft, "--max_train_examples=8", "--epochs=1", "--threads=1"},
             ft + ".log");
    expect_refused(o, c.expect);
    EXPECT_FALSE(PathExists(JoinPath(ft, "results.json"))) << c.dir;
  }
  // A truncated file.
  const std::string truncated = variant("dmg_truncated", file->tensors);
  auto bytes = ReadFile(truncated + "/model.safetensors");
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(
      WriteFileAtomic(truncated + "/model.safetensors", bytes->substr(0, bytes->size() / 2)).ok());
  o = Gmlp({"finetune", "--task=SST-2", "--data_root=" + kData, "--init=" + truncated,
            "--output=" + truncated + "_ft", "--threads=1"},
           truncated + "_ft.log");
  expect_refused(
      o, {truncated + "/model.safetensors: not a valid safetensors file", "tensor '", "run past"});
}

// --reinit: the pretrained run's architecture and tokenizer with its weights drawn afresh. At a
// vanishing lr the finetuned encoder is the seed's draw (what MakeEncoder gives after seeding),
// not the checkpoint, which a run without --reinit keeps; the same seed gives the same model.
TEST_F(ExportTest, ReinitFinetunesTheArchitectureFromFreshWeights) {
  auto finetune = [&](const std::string& name, bool reinit) {
    const std::string ft = JoinPath(root_, name);
    std::vector<std::string> args = {"finetune",
                                     "--task=SST-2",
                                     "--data_root=" + kData,
                                     "--init=" + run_,
                                     "--output=" + ft,
                                     "--max_train_examples=16",
                                     "--epochs=1",
                                     "--lr=1e-12",
                                     "--weight_decay=0",
                                     "--predict_test=false",
                                     "--threads=1"};
    if (reinit) args.push_back("--reinit");
    const Output o = Gmlp(args, ft + ".log");
    EXPECT_EQ(o.code, 0) << o.text;
    return ft;
  };
  const std::string a = finetune("reinit_a", true);
  const std::string b = finetune("reinit_b", true);
  const std::string kept = finetune("reinit_none", false);
  // The encoder's tensors of a saved classifier, by name ("encoder." prefix dropped).
  auto encoder_of = [](const std::string& ft) {
    std::map<std::string, torch::Tensor> out;
    auto m = finetune::LoadFinetunedModel(ft + "/model");
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return out;
    for (const auto& p : m->classifier->named_parameters()) {
      if (absl::StartsWith(p.key(), "encoder.")) out[p.key().substr(8)] = p.value().detach();
    }
    return out;
  };
  auto max_diff = [](const std::map<std::string, torch::Tensor>& x,
                     const std::map<std::string, torch::Tensor>& y) {
    EXPECT_EQ(x.size(), y.size());
    double worst = 0;
    for (const auto& [name, t] : x) {
      auto it = y.find(name);
      EXPECT_NE(it, y.end()) << name;
      if (it == y.end()) continue;
      worst = std::max(worst, (t - it->second).abs().max().item<double>());
    }
    return worst;
  };
  const auto enc_a = encoder_of(a), enc_b = encoder_of(b), enc_kept = encoder_of(kept);
  ASSERT_FALSE(enc_a.empty());
  std::map<std::string, torch::Tensor> checkpoint, fresh;
  model::MlmModel original = LoadCheckpointModel();
  for (const auto& p : original->encoder()->named_parameters()) checkpoint[p.key()] = p.value();
  torch::manual_seed(1);  // the finetuning seed, as each seed's run seeds torch
  const auto drawn = model::MakeEncoder(original->encoder()->config());
  for (const auto& p : drawn->named_parameters()) fresh[p.key()] = p.value();

  EXPECT_EQ(max_diff(enc_a, enc_b), 0.0) << "the same seed, the same model";
  EXPECT_LT(max_diff(enc_a, fresh), 1e-6) << "the seed's fresh draw";
  EXPECT_GT(max_diff(enc_a, checkpoint), 1e-2) << "not the pretrained weights";
  EXPECT_LT(max_diff(enc_kept, checkpoint), 1e-6) << "without --reinit, the pretrained weights";
  for (const auto& [ft, reinit] : {std::pair<std::string, bool>{a, true}, {kept, false}}) {
    auto results = ReadFile(ft + "/results.json");
    ASSERT_TRUE(results.ok()) << ft;
    const nlohmann::json j = nlohmann::json::parse(*results);
    EXPECT_EQ(j["reinit"], reinit) << ft;
    EXPECT_EQ(j["from_scratch"], reinit) << ft;
  }
  // It needs an architecture to take.
  const Output refused = Gmlp({"finetune", "--task=SST-2", "--data_root=" + kData, "--reinit",
                               "--output=" + JoinPath(root_, "reinit_alone"), "--threads=1"},
                              JoinPath(root_, "reinit_alone.log"));
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.text.find("--reinit takes the architecture of --init"), std::string::npos)
      << refused.text;
}

// The README's weights section, run as written: its shell lines from a directory where build/,
// python/ and the runs it names are the test's, then its Python blocks with the venv's python.
TEST_F(ExportTest, ReadmeWeightsSectionRunsAsWritten) {
  const std::string python = VenvPython();
  if (python.empty()) GTEST_SKIP() << "no torch 2.11 venv: run `bash scripts/python_env.sh`";
  auto readme = ReadFile(kSource + "/README.md");
  ASSERT_TRUE(readme.ok());
  const size_t begin = readme->find("<!-- readme-weights:");
  const size_t end = readme->find("<!-- readme-weights end -->");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string section = readme->substr(begin, end - begin);
  const std::string work = JoinPath(root_, "readme");
  (void)RemoveTree(work);
  ASSERT_TRUE(MakeDirs(work + "/runs").ok());
  const std::pair<std::string, std::string> links[] = {{GMLP_BINARY_DIR, "build"},
                                                       {kSource + "/python", "python"},
                                                       {gmlp_run_, "runs/gmlp-tiny"},
                                                       {run_, "runs/transformer-tiny"}};
  for (const auto& [target, name] : links) {
    ASSERT_EQ(::symlink(target.c_str(), JoinPath(work, name).c_str()), 0) << name;
  }
  const std::string venv = Dirname(Dirname(python));
  int blocks = 0;
  for (size_t at = section.find("```"); at != std::string::npos;
       at = section.find("```", section.find("```", at + 3) + 3)) {
    const size_t eol = section.find('\n', at);
    const std::string lang = section.substr(at + 3, eol - at - 3);
    const std::string body = section.substr(eol + 1, section.find("```", eol) - eol - 1);
    const std::string log = JoinPath(work, absl::StrCat("block", blocks++, ".log"));
    Output o;
    if (lang == "sh") {
      o = RunCommand(
          {"/bin/bash", "-c",
           absl::StrCat("set -e; cd ", work, "; ",
                        absl::StrReplaceAll(body, {{"/var/cache/gmlp/torch-2.11.0", venv}}))},
          log);
    } else {
      ASSERT_EQ(lang, "python");
      const std::string script = JoinPath(work, absl::StrCat("block", blocks, ".py"));
      ASSERT_TRUE(
          WriteFileAtomic(script, body + "print(\"logits\", tuple(out.logits.shape))\n").ok());
      o = RunCommand(
          {"/bin/bash", "-c", absl::StrCat("cd ", work, " && exec ", python, " ", script)}, log);
      EXPECT_NE(o.text.find("logits (1, "), std::string::npos) << o.text;
    }
    EXPECT_EQ(o.code, 0) << lang << " block:\n" << body << "\n" << o.text;
  }
  EXPECT_EQ(blocks, 4);
  EXPECT_TRUE(PathExists(work + "/exports/gmlp-tiny/model.safetensors"));
  EXPECT_TRUE(PathExists(work + "/exports/bert-tiny/tokenizer.json"));
}

}  // namespace
}  // namespace gmlp
