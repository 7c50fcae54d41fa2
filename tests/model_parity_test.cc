// Numerical parity of every block kind (and of whole encoders) with the independent references
// each arch registers (tests/model_reference.h): plain tensor ops in the batch-major (B, n, d)
// layout, where the modules run sequence-major with fused GEMMs, so the two share no code path.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/arch.h"
#include "model/layers.h"
#include "model/stacked_encoder.h"
#include "tests/model_reference.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::AllTinyConfigs;
using testing::NamedConfig;
using testing::Perturb;
using testing::RandomInput;
using testing::FindReferenceBlock;
using testing::Params;
using testing::ReferenceBlock;
using testing::RefNorm;

// The reference block its arch's tests/model_reference_<arch>.cc registered.
torch::Tensor RefBlock(const torch::Tensor& x, const torch::Tensor& keep_Bn, const Params& p,
                       const std::string& pre, const EncoderConfig& c) {
  const ReferenceBlock block = FindReferenceBlock(c.arch);
  if (block == nullptr) {
    ADD_FAILURE() << "no reference block registered for arch " << c.arch
                  << " (tests/model_reference.h)";
    return x;
  }
  return block(x, keep_Bn, p, pre, c);
}

// The whole encoder: embeddings (token + segment [+ position, as the arch's row says]),
// LayerNorm, blocks, final LN (as the row says).
torch::Tensor RefEncoder(const EncoderInput& in, const Params& p, const EncoderConfig& c) {
  const int64_t n = in.input_ids.size(1);
  torch::Tensor x = p["embeddings.token.weight"]
                        .index_select(0, in.input_ids.reshape(-1))
                        .view({in.input_ids.size(0), n, -1}) +
                    p["embeddings.segment.weight"]
                        .index_select(0, in.segment_ids.reshape(-1))
                        .view({in.input_ids.size(0), n, -1});
  const BlockSpec& spec = FindArch(c.arch)->block;
  if (spec.position_embeddings(c)) x = x + p["embeddings.position.weight"].slice(0, 0, n);
  x = RefNorm(x, p, "embeddings.norm", c.layer_norm_eps);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    x = RefBlock(x, in.pad_mask, p, "blocks." + std::to_string(i) + ".", c);
  }
  if (spec.final_norm(c)) x = RefNorm(x, p, "final_norm", c.layer_norm_eps);
  return x;
}

class ParityTest : public ::testing::TestWithParam<NamedConfig> {};

TEST_P(ParityTest, OneBlockMatchesPlainOpsReference) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(41);
  const std::shared_ptr<EncoderBlockImpl> block = FindArch(c.arch)->block.make(c);
  block->to(torch::kDouble);
  Perturb(*block, 0.3, 42);
  block->eval();
  const int64_t B = 3, n = 10;
  const EncoderInput in = RandomInput(c, n, {10, 6, 1}, 43);
  const SeqBatch batch = MakeSeqBatch(in, c.max_seq_len, torch::kDouble);
  const torch::Tensor x_BnD = torch::randn({B, n, c.d_model}, torch::kDouble);
  const torch::Tensor x_ND = x_BnD.transpose(0, 1).reshape({n * B, c.d_model});
  // The block's input arrives with a residual add still pending, as it does in the stack.
  const torch::Tensor pending_ND = torch::randn_like(x_ND);
  const torch::Tensor out_ND = block->forward(Residual{x_ND - pending_ND, pending_ND}, batch).Sum();
  const torch::Tensor out = SeqMajorToBatchMajor(out_ND, n, B);
  const torch::Tensor ref = RefBlock(x_BnD, in.pad_mask, block->named_parameters(), "", c);
  // Padded positions hold garbage by design; compare the real ones.
  const torch::Tensor keep = in.pad_mask.unsqueeze(-1);
  const double err = ((out - ref) * keep).abs().max().item<double>();
  EXPECT_LT(err, 1e-10) << GetParam().name;
  EXPECT_GT(ref.abs().max().item<double>(), 0.1);
}

TEST_P(ParityTest, WholeEncoderMatchesPlainOpsReference) {
  const EncoderConfig& c = GetParam().config;
  torch::manual_seed(51);
  auto encoder = MakeEncoder(c);
  encoder->to(torch::kDouble);
  Perturb(*encoder, 0.3, 52);
  encoder->eval();
  const EncoderInput in = RandomInput(c, 12, {12, 9}, 53);
  const torch::Tensor out = encoder->forward(in);
  const torch::Tensor ref = RefEncoder(in, encoder->named_parameters(), c);
  const double err = ((out - ref) * in.pad_mask.unsqueeze(-1)).abs().max().item<double>();
  EXPECT_LT(err, 1e-10) << GetParam().name;
}

// A new arch of the table gets its reference, so the tests above cover it.
TEST(ParityTest, EveryArchOfTheTableRegisteredAReference) {
  for (const std::string& arch : ArchNames()) {
    EXPECT_NE(FindReferenceBlock(arch), nullptr)
        << arch << ": write tests/model_reference_" << arch << ".cc (see model_reference.h)";
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, ParityTest, ::testing::ValuesIn(AllTinyConfigs()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gmlp::model
