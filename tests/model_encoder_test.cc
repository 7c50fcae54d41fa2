// Encoder behaviour: shapes, padding invariance for every encoder, determinism, the MLM and
// classification heads, and the SGU's initial identity (a plain gated FFN).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/autocast.h"
#include "model/encoder.h"
#include "model/gmlp.h"
#include "model/heads.h"
#include "model/layers.h"
#include "model/transformer.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::AllTinyConfigs;
using testing::NamedConfig;
using testing::Perturb;
using testing::Prefix;
using testing::RandomInput;
using testing::TinyConfig;

class EncoderKindTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(EncoderKindTest, ShapesAndForwardIsFinalNormOfFeatures) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(1);
  auto encoder = MakeEncoder(c);
  encoder->eval();
  const EncoderInput in = RandomInput(c, 11, {11, 7, 3}, 2);
  const torch::Tensor out = encoder->forward(in);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 11, c.d_model}));
  EXPECT_TRUE(torch::isfinite(out).all().item<bool>());
  const torch::Tensor again = encoder->final_norm(encoder->forward_features(in));
  EXPECT_TRUE(torch::allclose(out, again, 1e-5, 1e-6));
  // The full length is accepted, one more is not.
  EXPECT_EQ(encoder->forward(RandomInput(c, c.max_seq_len, {c.max_seq_len}, 3)).size(1),
            c.max_seq_len);
  EXPECT_THROW(encoder->forward(RandomInput(c, c.max_seq_len + 1, {4}, 3)), c10::Error);
  EXPECT_EQ(encoder->token_embedding_weight().sizes(),
            (std::vector<int64_t>{c.vocab_size, c.d_model}));
}

// Outputs at real positions do not depend on how much padding follows (0 or 50 positions, with
// random ids in the padding), nor on the other rows of the batch. Checked in double precision
// with the mixing weights perturbed far from their near-zero initialization.
TEST_P(EncoderKindTest, PaddingDoesNotLeak) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(1);
  auto encoder = MakeEncoder(c);
  encoder->to(torch::kDouble);
  Perturb(*encoder, 0.3, 4);
  encoder->eval();
  torch::NoGradGuard no_grad;
  const int64_t real = 9, pad = 50;
  // Row 0 is 9 real tokens; row 1 is 5 real tokens. Both are followed by 50 positions of padding.
  const EncoderInput padded = RandomInput(c, real + pad, {real, 5}, 5);
  const torch::Tensor out_padded = encoder->forward(padded);

  EncoderInput unpadded = Prefix(padded, real);
  unpadded.input_ids = unpadded.input_ids.narrow(0, 0, 1);
  unpadded.segment_ids = unpadded.segment_ids.narrow(0, 0, 1);
  unpadded.pad_mask = torch::Tensor();  // no padding at all
  const torch::Tensor out_unpadded = encoder->forward(unpadded);
  const torch::Tensor a = out_padded[0].narrow(0, 0, real);
  const torch::Tensor b = out_unpadded[0];
  EXPECT_TRUE(torch::allclose(a, b, 1e-9, 1e-10))
      << GetParam().name << ": max diff " << (a - b).abs().max().item<double>();

  // Row 1 alone with exactly its 5 tokens.
  EncoderInput short_row = Prefix(padded, 5);
  short_row.input_ids = short_row.input_ids.narrow(0, 1, 1);
  short_row.segment_ids = short_row.segment_ids.narrow(0, 1, 1);
  short_row.pad_mask = torch::Tensor();
  const torch::Tensor c5 = encoder->forward(short_row)[0];
  EXPECT_TRUE(torch::allclose(out_padded[1].narrow(0, 0, 5), c5, 1e-9, 1e-10));

  // Negative control: the same padded batch without its mask does change the real positions
  // (so the comparison above can fail).
  EncoderInput unmasked = padded;
  unmasked.pad_mask = torch::Tensor();
  const torch::Tensor leak = encoder->forward(unmasked)[0].narrow(0, 0, real);
  EXPECT_GT((leak - b).abs().max().item<double>(), 1e-6) << GetParam().name;
}

TEST_P(EncoderKindTest, SameSeedSameOutputs) {
  const EncoderConfig& c = GetParam().config;
  const EncoderInput in = RandomInput(c, 10, {10, 6}, 8);
  auto run = [&](uint64_t seed) {
    torch::manual_seed(seed);
    auto encoder = MakeEncoder(c);
    encoder->eval();
    torch::NoGradGuard no_grad;
    return encoder->forward(in).contiguous();
  };
  const torch::Tensor a = run(42), b = run(42), other = run(43);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, other));
}

TEST_P(EncoderKindTest, MlmModelEqualsHeadOnForwardRows) {
  EncoderConfig c = GetParam().config;
  torch::manual_seed(3);
  MlmModel model(c);
  model->eval();
  Perturb(*model, 0.1, 9);
  const int64_t B = 3, n = 12;
  const EncoderInput in = RandomInput(c, n, {12, 8, 5}, 10);
  const torch::Tensor masked = torch::tensor({0L, 5L, 13L, 19L, 24L, 28L}, torch::kLong);
  const torch::Tensor logits = model->forward(in, masked);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{6, c.vocab_size}));
  // Reference: the full forward, its rows at b*n+i, then dense/GELU/LN and the tied decoder
  // written out with the head's parameters.
  auto params = model->named_parameters();
  const torch::Tensor rows =
      model->encoder()->forward(in).reshape({B * n, c.d_model}).index_select(0, masked);
  torch::Tensor h = torch::gelu(
      torch::linear(rows, params["mlm_head.dense.weight"], params["mlm_head.dense.bias"]));
  h = torch::layer_norm(h, {c.d_model}, params["mlm_head.norm.weight"],
                        params["mlm_head.norm.bias"], c.layer_norm_eps);
  const torch::Tensor ref =
      torch::matmul(h, model->encoder()->token_embedding_weight().t()) + params["mlm_head.bias"];
  EXPECT_TRUE(torch::allclose(logits, ref, 1e-4, 1e-5)) << (logits - ref).abs().max().item<float>();
  // The decoder is tied: no separate (V, d) matrix in the head.
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("mlm_head.", 0) == 0) {
      EXPECT_NE(p.value().sizes(), (std::vector<int64_t>{c.vocab_size, c.d_model})) << p.key();
    }
  }
}

TEST_P(EncoderKindTest, ClassifierShapesAndClsOnlyNormalization) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(4);
  SequenceClassifier clf(MakeEncoder(c), 3);
  clf->eval();
  const EncoderInput in = RandomInput(c, 9, {9, 4}, 11);
  const torch::Tensor out = clf->forward(in);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 3}));
  auto params = clf->named_parameters();
  const torch::Tensor cls = clf->encoder()->forward(in).select(1, 0);
  const torch::Tensor ref =
      torch::linear(torch::tanh(torch::linear(cls, params["pooler.weight"], params["pooler.bias"])),
                    params["out.weight"], params["out.bias"]);
  EXPECT_TRUE(torch::allclose(out, ref, 1e-5, 1e-6));
  ASSERT_TRUE(params.contains("encoder.embeddings.token.weight"));
}

INSTANTIATE_TEST_SUITE_P(AllKinds, EncoderKindTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

// Paper Sec. 2.1: with W = 0 and b = 1 the SGU passes Z1 through, so the block is exactly a
// plain gated FFN x + V(GELU(U1 LN x) * 1). Each variant's identity, written with plain ops.
// The slopes of ALiBi's reference code (Press et al.), written out.
TEST(AlibiTest, SlopesFollowTheReference) {
  auto expect = [](int64_t heads, const std::vector<double>& want) {
    const std::vector<double> got = AlibiSlopes(heads);
    ASSERT_EQ(got.size(), want.size()) << heads;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << heads;
  };
  expect(1, {std::pow(2.0, -8)});
  expect(2, {std::pow(2.0, -4), std::pow(2.0, -8)});
  expect(3, {std::pow(2.0, -4), std::pow(2.0, -8), std::pow(2.0, -2)});
  std::vector<double> twelve;
  for (int i = 1; i <= 8; ++i) twelve.push_back(std::pow(2.0, -i));
  for (double e : {0.5, 1.5, 2.5, 3.5}) twelve.push_back(std::pow(2.0, -e));
  expect(12, twelve);
}

// ALiBi replaces the position table: the model has none, and it sees only distances, so a
// sequence and its reversal give mirrored outputs (learned positions do not).
TEST(AlibiTest, NoPositionTableAndReversalMirrorsOutputs) {
  EncoderConfig c = testing::TinyConfig("transformer");
  c.pre_ln = true;
  c.position = "alibi";
  torch::manual_seed(3);
  auto encoder = MakeEncoder(c);
  for (const auto& item : encoder->named_parameters()) {
    EXPECT_EQ(item.key().find("position"), std::string::npos) << item.key();
  }
  testing::Perturb(*encoder, 0.5, 4);
  encoder->eval();
  EncoderInput in;
  in.input_ids = torch::randint(0, c.vocab_size, {1, 12}, torch::kLong);
  const torch::Tensor a = encoder->forward(in);
  EncoderInput reversed;
  reversed.input_ids = in.input_ids.flip(1);
  const torch::Tensor b = encoder->forward(reversed);
  EXPECT_TRUE(torch::allclose(a, b.flip(1), 1e-5, 1e-6));
  c.position = "learned";
  torch::manual_seed(3);
  auto learned = MakeEncoder(c);
  testing::Perturb(*learned, 0.5, 4);
  learned->eval();
  EXPECT_FALSE(torch::allclose(learned->forward(in), learned->forward(reversed).flip(1), 1e-3));
}

TEST(SguInitTest, ZeroSpatialWeightGivesPlainGatedFfn) {
  for (const char* sgu : {"split", "multiplicative", "additive", "linear"}) {
    EncoderConfig c = TinyConfig("gmlp", sgu);
    torch::manual_seed(5);
    GmlpBlock block(c, /*attn_size=*/0);
    auto p = block->named_parameters();
    {
      torch::NoGradGuard no_grad;
      // The initial distribution: |W| <= eps / n_max and b = 1.
      EXPECT_LE(p["spatial_weight"].abs().max().item<float>(),
                c.sgu_init_eps / c.max_seq_len + 1e-12);
      EXPECT_GT(p["spatial_weight"].abs().max().item<float>(), 0.0f);
      EXPECT_TRUE(torch::equal(p["spatial_bias"], torch::ones({c.max_seq_len})));
      p["spatial_weight"].zero_();
    }
    const int64_t n = 7, B = 2;
    const torch::Tensor x_ND = torch::randn({n * B, c.d_model});
    SeqBatch batch;
    batch.n = n;
    batch.B = B;
    const torch::Tensor out = block->forward(Residual{x_ND, {}}, batch).Sum();
    const torch::Tensor h =
        torch::layer_norm(x_ND, {c.d_model}, p["norm.weight"], p["norm.bias"], c.layer_norm_eps);
    torch::Tensor s;
    if (std::string(sgu) == "split") {
      s = torch::gelu(torch::linear(h, p["in_z1.weight"], p["in_z1.bias"]));  // Z1 * 1
    } else {
      const torch::Tensor z = torch::gelu(torch::linear(h, p["in_z.weight"], p["in_z.bias"]));
      if (std::string(sgu) == "multiplicative") s = z;
      if (std::string(sgu) == "additive") s = z + 1.0;
      if (std::string(sgu) == "linear") s = torch::ones_like(z);
    }
    const torch::Tensor ref = x_ND + torch::linear(s, p["out.weight"], p["out.bias"]);
    EXPECT_TRUE(torch::allclose(out, ref, 1e-6, 1e-6))
        << sgu << " " << (out - ref).abs().max().item<float>();
  }
}

// Under CPU bf16 autocast the LayerNorms run (and return) fp32 while the GEMMs run in bf16, and
// the encoder agrees with its fp32 self to bf16 accuracy.
TEST(AutocastTest, Bf16AutocastRunsAndStaysClose) {
  for (const NamedConfig& nc : AllTinyConfigs()) {
    torch::manual_seed(6);
    auto encoder = MakeEncoder(nc.config);
    encoder->eval();
    torch::NoGradGuard no_grad;
    const EncoderInput in = RandomInput(nc.config, 16, {16, 10}, 12);
    const torch::Tensor ref = encoder->forward(in);
    torch::Tensor out;
    {
      kernels::AutocastScope autocast(true);
      out = encoder->forward(in);
    }
    EXPECT_EQ(out.scalar_type(), torch::kFloat) << nc.name;  // ends with a (fp32) LayerNorm
    const double err = (out.to(torch::kFloat) - ref).abs().max().item<double>();
    EXPECT_LT(err, 0.15) << nc.name;
  }
}

}  // namespace
}  // namespace gmlp::model
