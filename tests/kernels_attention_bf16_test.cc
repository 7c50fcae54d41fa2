// kernels::cpu::TinyAttentionBf16 against the float64 composition on the same bf16 values (output
// and the gradient of q|k|v within bf16 rounding), with both of its GEMMs (AVX-512 BF16 and the
// portable loop), odd lengths and widths, padded keys; the same bits at any thread count, and
// real positions untouched by padding.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/attention_bf16.h"
#include "kernels/dropout.h"
#include "tests/kernels_test_util.h"

namespace gmlp::kernels::cpu {

// Test names and failure messages say which GEMM ran.
void PrintTo(AttentionGemm gemm, std::ostream* os) {
  *os << (gemm == AttentionGemm::kAuto ? "auto" : "portable");
}

namespace {

struct Result {
  torch::Tensor out, dqkv;
};

// Multi-head options: heads, an additive (H, n, n) score bias, dropout on the probabilities
// (drawn after torch::manual_seed(seed)).
struct Heads {
  int64_t H = 1;
  torch::Tensor score_bias_Hnn;
  double dropout = 0.0;
  uint64_t seed = 0;
};

// fused: the kernel on bf16 q|k|v. Otherwise softmax(q k^T / sqrt(k) + biases), dropout with
// cpu::Dropout's mask for the same seed, times v, in float64 on the same values, in the
// sequence-major layout, differentiated by autograd.
Result Attend(bool fused, const torch::Tensor& qkv0, int64_t n, int64_t B,
              const torch::Tensor& bias_B1N, const torch::Tensor& dout, const Heads& heads = {}) {
  const torch::Tensor qkv =
      qkv0.to(fused ? torch::kBFloat16 : torch::kDouble).clone().requires_grad_();
  const int64_t H = heads.H, k = qkv.size(1) / (3 * H);
  if (heads.dropout > 0) torch::manual_seed(heads.seed);
  torch::Tensor out;
  if (fused) {
    out = AttentionBf16(qkv, n, B, H, bias_B1N, heads.score_bias_Hnn, heads.dropout, true);
  } else {
    const auto parts = qkv.view({n, B, 3, H, k}).unbind(2);  // 3 x (n, B, H, k)
    const torch::Tensor q = parts[0].permute({1, 2, 0, 3}) / std::sqrt(static_cast<double>(k));
    torch::Tensor s = torch::matmul(q, parts[1].permute({1, 2, 3, 0}));  // (B, H, n, n)
    if (heads.score_bias_Hnn.defined()) s = s + heads.score_bias_Hnn.to(torch::kDouble);
    if (bias_B1N.defined()) s = s + bias_B1N.to(torch::kDouble).unsqueeze(1);
    torch::Tensor p = torch::softmax(s, -1);
    if (heads.dropout > 0) {
      // The mask Dropout draws for this seed: 1 / (1 - p) where kept, 0 elsewhere.
      const uint64_t seed = NextDropoutSeed();
      p = p * ApplyDropoutMask(torch::ones(p.sizes(), torch::kDouble), heads.dropout, seed);
    }
    out = torch::matmul(p, parts[2].permute({1, 2, 0, 3}))
              .permute({2, 0, 1, 3})
              .reshape({n * B, H * k});
  }
  (out.to(torch::kDouble) * dout.to(torch::kDouble)).sum().backward();
  return {out.detach().to(torch::kDouble), qkv.grad().to(torch::kDouble)};
}

// (B, 1, n): 0 at the first lengths[b] keys of sequence b, -1e9 after them (layers.h's mask).
torch::Tensor KeyBias(const std::vector<int64_t>& lengths, int64_t n) {
  torch::Tensor bias = torch::zeros({static_cast<int64_t>(lengths.size()), 1, n});
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < n) bias[b][0].narrow(0, lengths[b], n - lengths[b]).fill_(-1e9);
  }
  return bias;
}

// Every element within `rel` of the largest magnitude of the reference.
void ExpectNear(const torch::Tensor& got, const torch::Tensor& want, double rel, const char* what) {
  const double scale = want.abs().max().item<double>();
  const double err = (got - want).abs().max().item<double>();
  EXPECT_LE(err, rel * scale) << what << ": max error " << err << ", largest value " << scale;
}

class AttentionBf16Test : public ::testing::TestWithParam<AttentionGemm> {
 protected:
  void SetUp() override { SetAttentionGemmForTesting(GetParam()); }
  void TearDown() override { SetAttentionGemmForTesting(AttentionGemm::kAuto); }
};

TEST_P(AttentionBf16Test, MatchesFloat64CompositionOnTheSameValues) {
  torch::manual_seed(21);
  struct Shape {
    int64_t n, B, a;
    std::vector<int64_t> lengths;  // empty: no padding
  };
  // 128 x 64 as aMLP-tiny runs it; odd lengths and widths exercise every tail and pad.
  const std::vector<Shape> shapes = {{128, 2, 64, {}},      {128, 3, 64, {128, 77, 1}},
                                     {7, 3, 5, {}},         {7, 3, 5, {7, 4, 6}},
                                     {33, 2, 17, {20, 33}}, {50, 1, 48, {}}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "n " << s.n << " B " << s.B << " a " << s.a
                                      << (s.lengths.empty() ? "" : " padded"));
    const torch::Tensor qkv = (torch::randn({s.n * s.B, 3 * s.a}) * 1.5).to(torch::kBFloat16);
    const torch::Tensor dout = torch::randn({s.n * s.B, s.a}).to(torch::kBFloat16);
    const torch::Tensor bias = s.lengths.empty() ? torch::Tensor() : KeyBias(s.lengths, s.n);
    const Result f = Attend(true, qkv, s.n, s.B, bias, dout);
    const Result r = Attend(false, qkv, s.n, s.B, bias, dout);
    // P and O are rounded to bf16 (2^-9 relative each), dS too: within a few ulps of the largest
    // value (measured: 4.2e-3 and 5.5e-3 at most).
    ExpectNear(f.out, r.out, 8e-3, "output");
    for (int64_t part = 0; part < 3; ++part) {
      SCOPED_TRACE(part == 0 ? "dq" : part == 1 ? "dk" : "dv");
      ExpectNear(f.dqkv.narrow(1, part * s.a, s.a), r.dqkv.narrow(1, part * s.a, s.a), 1.2e-2,
                 "gradient");
    }
  }
}

// The Transformer's use: several heads, an ALiBi score bias, padding and dropout on the
// probabilities, against the float64 composition with cpu::Dropout's mask for the same seed.
TEST_P(AttentionBf16Test, HeadsScoreBiasAndDropoutMatchFloat64) {
  torch::manual_seed(25);
  const int64_t n = 37, B = 3, H = 2, k = 16;
  const torch::Tensor qkv = (torch::randn({n * B, 3 * H * k}) * 1.5).to(torch::kBFloat16);
  const torch::Tensor dout = torch::randn({n * B, H * k}).to(torch::kBFloat16);
  const torch::Tensor pos = torch::arange(n, torch::kFloat);
  Heads heads;
  heads.H = H;
  heads.score_bias_Hnn = -torch::tensor({0.25f, 0.0625f}).view({H, 1, 1}) *
                         (pos.view({1, n}) - pos.view({n, 1})).abs();
  for (const double dropout : {0.0, 0.1}) {
    SCOPED_TRACE(dropout);
    heads.dropout = dropout;
    heads.seed = 99;
    const torch::Tensor bias = KeyBias({37, 20, 5}, n);
    const Result f = Attend(true, qkv, n, B, bias, dout, heads);
    const Result r = Attend(false, qkv, n, B, bias, dout, heads);
    ExpectNear(f.out, r.out, 8e-3, "output");
    ExpectNear(f.dqkv, r.dqkv, 1.2e-2, "gradient");
    // Dropout changes the result (the mask is applied, and reproduced by the reference).
    if (dropout > 0) {
      heads.dropout = 0.0;
      const Result no_drop = Attend(true, qkv, n, B, bias, dout, heads);
      EXPECT_GT((no_drop.out - f.out).abs().max().item<double>(), 0.05);
    }
  }
}

TEST_P(AttentionBf16Test, SameBitsForAnyThreadCount) {
  torch::manual_seed(22);
  const int64_t n = 45, B = 5, a = 24;
  const torch::Tensor qkv = torch::randn({n * B, 3 * a}).to(torch::kBFloat16);
  const torch::Tensor dout = torch::randn({n * B, a}).to(torch::kBFloat16);
  const torch::Tensor bias = KeyBias({45, 30, 12, 45, 1}, n);
  const auto [one, many] =
      testing::AtOneAndManyThreads([&] { return Attend(true, qkv, n, B, bias, dout); });
  EXPECT_TRUE(one.out.equal(many.out));
  EXPECT_TRUE(one.dqkv.equal(many.dqkv));
}

// A sequence padded in a batch gives, at its real positions, the same bits as alone without
// padding (its padded rows' output gradients zero, as the encoders' masks make them).
TEST_P(AttentionBf16Test, PaddingDoesNotReachRealPositions) {
  torch::manual_seed(23);
  const int64_t n = 40, B = 3, a = 32;
  const std::vector<int64_t> lengths = {40, 23, 9};
  const torch::Tensor qkv = torch::randn({n * B, 3 * a}).to(torch::kBFloat16);
  torch::Tensor dout = torch::randn({n * B, a}).to(torch::kBFloat16);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = lengths[b]; i < n; ++i) dout[i * B + b].zero_();
  }
  const Result batch = Attend(true, qkv, n, B, KeyBias(lengths, n), dout);
  for (int64_t b = 0; b < B; ++b) {
    SCOPED_TRACE(b);
    const int64_t L = lengths[b];
    // Rows b, b + B, ... of the batch: sequence b's positions 0..L-1.
    const torch::Tensor rows = torch::arange(L) * B + b;
    const Result alone =
        Attend(true, qkv.index_select(0, rows), L, 1, torch::Tensor(), dout.index_select(0, rows));
    EXPECT_TRUE(batch.out.index_select(0, rows).equal(alone.out));
    EXPECT_TRUE(batch.dqkv.index_select(0, rows).equal(alone.dqkv));
  }
}

INSTANTIATE_TEST_SUITE_P(Gemms, AttentionBf16Test,
                         ::testing::Values(AttentionGemm::kAuto, AttentionGemm::kPortable),
                         [](const ::testing::TestParamInfo<AttentionGemm>& info) {
                           return std::string(info.param == AttentionGemm::kAuto ? "Auto"
                                                                                 : "Portable");
                         });

// Where the CPU has AVX-512 BF16, its GEMM and the portable one sum the same products in another
// order: the outputs agree to float rounding before the final bf16 rounding.
TEST(AttentionBf16GemmTest, Avx512Bf16AgreesWithPortable) {
  if (!AttentionUsesAvx512Bf16()) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  torch::manual_seed(24);
  const int64_t n = 128, B = 2, a = 64;
  const torch::Tensor qkv = torch::randn({n * B, 3 * a}).to(torch::kBFloat16);
  const torch::Tensor dout = torch::randn({n * B, a}).to(torch::kBFloat16);
  const Result avx = Attend(true, qkv, n, B, torch::Tensor(), dout);
  SetAttentionGemmForTesting(AttentionGemm::kPortable);
  const Result portable = Attend(true, qkv, n, B, torch::Tensor(), dout);
  SetAttentionGemmForTesting(AttentionGemm::kAuto);
  ExpectNear(avx.out, portable.out, 8e-3, "output");
  ExpectNear(avx.dqkv, portable.dqkv, 8e-3, "gradient");
}

}  // namespace
}  // namespace gmlp::kernels::cpu
