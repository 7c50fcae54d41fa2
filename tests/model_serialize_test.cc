// SaveModule / LoadModule: round trips (whole MLM model, encoder under the "encoder." prefix)
// and the errors for missing files, corrupt files, missing tensors and shape mismatches.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/file_util.h"
#include "model/heads.h"
#include "model/serialize.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

using testing::RandomInput;
using testing::TinyConfig;

std::string TempDir() {
  std::string tmpl = ::testing::TempDir() + "model_serialize_XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

TEST(SerializeTest, MlmModelRoundTripAndEncoderPrefix) {
  const std::string dir = TempDir();
  const std::string path = JoinPath(dir, "model.pt");
  for (const std::string& arch : ArchNames()) {
    const EncoderConfig c = TinyConfig(arch);
    torch::manual_seed(61);
    MlmModel saved(c);
    ASSERT_TRUE(SaveModule(*saved, path).ok());
    torch::manual_seed(62);  // different initial weights
    MlmModel loaded(c);
    const absl::Status s = LoadModule(*loaded, path);
    ASSERT_TRUE(s.ok()) << s;
    auto a = saved->named_parameters();
    for (const auto& p : loaded->named_parameters()) {
      EXPECT_TRUE(torch::equal(p.value(), a[p.key()])) << arch << " " << p.key();
    }
    saved->eval();
    loaded->eval();
    const EncoderInput in = RandomInput(c, 10, {10, 7}, 63);
    const torch::Tensor masked = torch::tensor({0L, 3L, 12L}, torch::kLong);
    EXPECT_TRUE(torch::equal(saved->forward(in, masked), loaded->forward(in, masked)));

    // A bare encoder from the MLM model's file.
    torch::manual_seed(64);
    auto encoder = MakeEncoder(c);
    ASSERT_TRUE(LoadModule(*encoder, path, "encoder.").ok());
    encoder->eval();
    EXPECT_TRUE(torch::equal(encoder->forward(in), saved->encoder()->forward(in)));
    // The tied decoder follows the loaded embedding (it is the same tensor).
    EXPECT_TRUE(torch::equal(loaded->encoder()->token_embedding_weight(),
                             saved->encoder()->token_embedding_weight()));
  }
}

TEST(SerializeTest, ErrorsNameTheProblem) {
  const std::string dir = TempDir();
  const std::string path = JoinPath(dir, "gmlp.pt");
  auto gmlp_encoder = MakeEncoder(TinyConfig("gmlp"));
  ASSERT_TRUE(SaveModule(*gmlp_encoder, path).ok());

  auto missing_file = LoadModule(*gmlp_encoder, JoinPath(dir, "nope.pt"));
  EXPECT_EQ(missing_file.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing_file.message().find("nope.pt"), std::string::npos);

  // Another architecture: its first tensor is missing from the file.
  auto transformer = MakeEncoder(TinyConfig("transformer"));
  auto wrong_arch = LoadModule(*transformer, path);
  EXPECT_EQ(wrong_arch.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(wrong_arch.message().find("embeddings.position.weight"), std::string::npos)
      << wrong_arch;

  // Same names, another width.
  EncoderConfig wider = TinyConfig("gmlp");
  wider.d_model = 16;
  auto wide = MakeEncoder(wider);
  auto wrong_shape = LoadModule(*wide, path);
  EXPECT_EQ(wrong_shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_shape.message().find("embeddings.token.weight"), std::string::npos);

  // Wrong prefix.
  EXPECT_EQ(LoadModule(*gmlp_encoder, path, "encoder.").code(), absl::StatusCode::kNotFound);

  // A truncated file.
  const std::string corrupt = JoinPath(dir, "corrupt.pt");
  {
    auto bytes = ReadFile(path);
    ASSERT_TRUE(bytes.ok());
    std::ofstream(corrupt, std::ios::binary) << bytes->substr(0, bytes->size() / 2);
  }
  auto truncated = LoadModule(*gmlp_encoder, corrupt);
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(truncated.message().find("corrupt.pt"), std::string::npos);

  // An unwritable destination fails cleanly.
  EXPECT_FALSE(SaveModule(*gmlp_encoder, JoinPath(dir, "no/such/dir/x.pt")).ok());
}

}  // namespace
}  // namespace gmlp::model
