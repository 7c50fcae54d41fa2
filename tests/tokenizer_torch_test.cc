// The point of the SentencePiece shim: train, load and encode in a process that links LibTorch
// (linking libsentencepiece directly would crash such a process before main).
#include <torch/torch.h>

#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace gmlp::tokenizer {
namespace {

TEST(TokenizerBesideTorch, TrainLoadEncodeAndRunTorchOps) {
  // Torch first, so that its protobuf and OpenMP are live before SentencePiece's are loaded.
  const torch::Tensor a = torch::arange(12, torch::kFloat32).reshape({3, 4});
  const float before = torch::mm(a, a.t()).sum().item<float>();

  const std::string dir = testing::MakeTempDir("tokenizer_torch_test");
  testing::WriteBytes(dir + "/c.txt", testing::GeneratedCorpus(3000));
  TrainOptions options;
  options.inputs = {dir + "/c.txt"};
  options.model_prefix = dir + "/m";
  options.vocab_size = 400;
  options.num_threads = 2;
  const absl::Status st = Train(options);
  ASSERT_TRUE(st.ok()) << st;
  auto tok = Tokenizer::Load(dir + "/m.model");
  ASSERT_TRUE(tok.ok()) << tok.status();

  const std::string text = "the anting ofer is at the re.";
  const std::vector<int32_t> ids = (*tok)->Encode(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ((*tok)->Decode(ids), text);
  const torch::Tensor t = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()));
  EXPECT_EQ(t.sum().item<int64_t>(), std::accumulate(ids.begin(), ids.end(), int64_t{0}));
  // Torch still computes the same after SentencePiece ran in its own namespace.
  EXPECT_EQ(torch::mm(a, a.t()).sum().item<float>(), before);
  const torch::Tensor emb = torch::nn::functional::one_hot(t, (*tok)->vocab_size());
  EXPECT_EQ(emb.size(1), 400);
  testing::RemoveTempDir(dir);
}

}  // namespace
}  // namespace gmlp::tokenizer
