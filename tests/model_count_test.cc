// Closed-form parameter counts against the modules (every arch and option), preset families'
// balance, and the training-FLOPs formula against hand-computed values. Prints the preset table
// that model/README.md shows.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "absl/strings/str_format.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/flops.h"
#include "model/heads.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::AllTinyConfigs;
using testing::NamedConfig;

ParamCount CountModule(EncoderImpl& encoder) {
  ParamCount count;
  for (const auto& p : encoder.named_parameters()) {
    count.total += p.value().numel();
    if (p.key().rfind("embeddings.", 0) == 0) count.embedding += p.value().numel();
  }
  return count;
}

class CountTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(CountTest, FormulaMatchesModuleExactly) {
  EncoderConfig c = GetParam().config;
  // Distinct sizes so that a swapped term cannot cancel out.
  c.vocab_size = 101;
  c.type_vocab_size = 3;
  c.max_seq_len = 29;
  c.d_model = 12;
  c.n_layers = 3;
  c.d_ffn = 34;
  c.n_heads = 3;
  c.attn_size = 5;
  c.token_mlp_dim = 7;
  auto encoder = MakeEncoder(c);
  const ParamCount module = CountModule(*encoder);
  const ParamCount formula = CountParameters(c);
  EXPECT_EQ(formula.total, module.total) << GetParam().name;
  EXPECT_EQ(formula.embedding, module.embedding) << GetParam().name;
  EXPECT_EQ(formula.non_embedding(), module.total - module.embedding);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, CountTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

TEST(CountTest, PresetsMatchModules) {
  for (const std::string& arch : ArchNames()) {
    const std::string name = arch + "-tiny";
    auto c = Preset(name);
    ASSERT_TRUE(c.ok());
    auto encoder = MakeEncoder(*c);
    EXPECT_EQ(CountParameters(*c).total, CountModule(*encoder).total) << name;
  }
}

// Transformer, gMLP, aMLP and mixer presets of one size have non-embedding counts within 10%
// of each other (vocab 8192, n = 128). Prints the README's table.
TEST(PresetTest, FamiliesAreBalancedAndTableIsPrinted) {
  std::map<std::string, std::map<std::string, int64_t>> families;
  std::string table =
      "| preset | d_model | n_layers | d_ffn | other | total params | non-embedding | "
      "train GFLOP/token |\n|---|---|---|---|---|---|---|---|\n";
  for (const std::string& name : PresetNames()) {
    auto c = Preset(name);
    ASSERT_TRUE(c.ok());
    c->vocab_size = 8192;
    c->max_seq_len = 128;
    const ParamCount count = CountParameters(*c);
    const std::string size = name.substr(name.find('-') + 1);
    families[size][c->arch] = count.non_embedding();
    std::string other;
    if (c->arch == "transformer") other = absl::StrFormat("heads %d", c->n_heads);
    if (c->arch == "gmlp") other = "sgu split";
    if (c->arch == "amlp") other = absl::StrFormat("sgu split, attn %d", c->attn_size);
    if (c->arch == "mixer") other = absl::StrFormat("token_mlp %d", c->token_mlp_dim);
    table += absl::StrFormat("| %s | %d | %d | %d | %s | %.2fM | %.2fM | %.4f |\n", name,
                             c->d_model, c->n_layers, c->d_ffn, other, count.total / 1e6,
                             count.non_embedding() / 1e6, TrainingFlopsPerToken(*c, 128) / 1e9);
  }
  std::printf("%s", table.c_str());
  for (const std::string& arch : ArchNames()) {
    const std::string name = arch + "-base";
    auto c = Preset(name);
    ASSERT_TRUE(c.ok()) << name;
    const ParamCount count = CountParameters(*c);
    std::printf("%s at vocab %ld, n %ld: total %.2fM, non-embedding %.2fM\n", name.c_str(),
                c->vocab_size,
                c->max_seq_len, count.total / 1e6, count.non_embedding() / 1e6);
  }
  for (const auto& [size, by_arch] : families) {
    if (size == "base") continue;  // paper shapes, not balanced by us
    const double ref = static_cast<double>(by_arch.at("transformer"));
    for (const auto& [arch, count] : by_arch) {
      EXPECT_NEAR(count / ref, 1.0, 0.10) << size << " " << arch << " " << count;
    }
  }
}

// Hand-computed values for d = 4, f = 8, L = 2, V = 10, n = 6, masked fraction 0.5.
TEST(FlopsTest, FormulasByHand) {
  EncoderConfig c;
  c.vocab_size = 10;
  c.d_model = 4;
  c.d_ffn = 8;
  c.n_layers = 2;
  c.n_heads = 2;
  c.attn_size = 2;
  c.token_mlp_dim = 3;
  const double head = 0.5 * (2 * 16 + 2 * 4 * 10);  // dense + tied decoder, on half the rows
  c.arch = "transformer";
  // 8 d^2 + 4 n d + 4 d f = 128 + 96 + 128.
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(c, 6, 0.5), 3 * (2 * 352 + head));
  c.arch = "gmlp";
  // 2 d f + 2 n g + 2 g d with g = 4: 64 + 48 + 32.
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(c, 6, 0.5), 3 * (2 * 144 + head));
  c.sgu = "multiplicative";  // g = 8: 64 + 96 + 64
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(c, 6, 0.5), 3 * (2 * 224 + head));
  c.sgu = "split";
  c.arch = "amlp";
  // + 6 d a + 4 n a + 2 a g = 48 + 48 + 16.
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(c, 6, 0.5), 3 * (2 * (144 + 112) + head));
  c.arch = "mixer";
  // 4 t d + 4 d f = 48 + 128.
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(c, 6, 0.5), 3 * (2 * 176 + head));
}

// Dominant terms: at the presets the formula is close to the usual 6 x (non-embedding matmul
// parameters) estimate plus the sequence mixing, and grows with n only through mixing.
TEST(FlopsTest, SequenceMixingTermScalesWithLength) {
  auto t = Preset("transformer-small");
  ASSERT_TRUE(t.ok());
  const double slope = TrainingFlopsPerToken(*t, 256) - TrainingFlopsPerToken(*t, 128);
  EXPECT_DOUBLE_EQ(slope, 3.0 * t->n_layers * 4.0 * 128 * t->d_model);
  auto g = Preset("gmlp-small");
  ASSERT_TRUE(g.ok());
  const double g_slope = TrainingFlopsPerToken(*g, 256) - TrainingFlopsPerToken(*g, 128);
  EXPECT_DOUBLE_EQ(g_slope, 3.0 * g->n_layers * 2.0 * 128 * (g->d_ffn / 2));
  auto m = Preset("mixer-small");
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(TrainingFlopsPerToken(*m, 256), TrainingFlopsPerToken(*m, 128));
}

}  // namespace
}  // namespace gmlp::model
