// model/provenance.h: what an output says made it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "model/provenance.h"

namespace gmlp::model {
namespace {

// Clears every instruction-set cap for the test's duration and restores the environment after.
class ProvenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* var : kInstructionSetCaps) {
      const char* value = std::getenv(var);
      saved_[var] = value ? std::optional<std::string>(value) : std::nullopt;
      ::unsetenv(var);
    }
  }
  void TearDown() override {
    for (const auto& [var, value] : saved_) {
      if (value) {
        ::setenv(var.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(var.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(ProvenanceTest, CpuDescriptionNamesCoresAndBf16) {
  const std::string cpu = CpuDescription();
  EXPECT_NE(cpu.find(" cores; "), std::string::npos) << cpu;
  EXPECT_TRUE(cpu.find("AVX-512 BF16") != std::string::npos ||
              cpu.find("AMX") != std::string::npos ||
              cpu.find("bf16 emulated") != std::string::npos)
      << cpu;
  EXPECT_EQ(cpu.find("capped"), std::string::npos) << cpu;
  EXPECT_EQ(cpu.back(), ')') << cpu;
}

TEST_F(ProvenanceTest, CpuDescriptionNamesInstructionSetCapsInTheirOrder) {
  ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  ::setenv("ATEN_CPU_CAPABILITY", "avx2", 1);
  ::setenv("ONEDNN_MAX_CPU_ISA", "", 1);  // empty: not a cap
  const std::string cpu = CpuDescription();
  const std::string caps =
      "; instruction sets capped by ATEN_CPU_CAPABILITY=avx2, OPENBLAS_CORETYPE=Haswell)";
  ASSERT_GE(cpu.size(), caps.size()) << cpu;
  EXPECT_EQ(cpu.substr(cpu.size() - caps.size()), caps) << cpu;
  // The provenance every output keeps carries it.
  EXPECT_NE(ProvenanceLine(Provenance()).find(caps), std::string::npos);
}

}  // namespace
}  // namespace gmlp::model
