// The kernel policy (ops.h): which of gmlp's CPU kernels and ATen the ops run. Torch-free, so the
// parsers of --kernels (pretrain/train_config.cc, study/config.cc) build without LibTorch, as the
// fuzz targets do.
//
// The policy is process-wide: kAuto (the default) takes a kernel wherever one covers the
// operands (kernels/README.md lists where), kAten runs ATen's ops as written everywhere, so a run
// can be measured or checked against ATen without rebuilding (`--kernels=auto|aten` on the
// training subcommands; the run's config records it).
#ifndef GMLP_KERNELS_POLICY_H_
#define GMLP_KERNELS_POLICY_H_

#include <optional>
#include <string_view>

namespace gmlp::kernels {

enum class Policy { kAuto, kAten };

Policy CurrentPolicy();
void SetPolicy(Policy policy);
// "auto" or "aten", as --kernels spells them.
const char* PolicyName(Policy policy);
std::optional<Policy> ParsePolicy(std::string_view name);

// Whether the CPU does bf16 arithmetic natively (AVX-512 BF16 or AMX, as /proc/cpuinfo lists
// them). Elsewhere oneDNN emulates bf16 matmuls 20-90x slower than fp32 (measured on an AVX2-only
// VM, bench/RESULTS.md).
bool CpuHasNativeBf16();
// Whether bf16 autocast pays off here: a visible CUDA device, or CpuHasNativeBf16(). Defaults
// that turn bf16 on read this instead of assuming. Defined with LibTorch (ops.cc); declared here
// so that configs whose defaults read it (study/config.h) stay torch-free.
bool Bf16IsFast();

// Sets the policy for a scope (tests, benchmarks), restoring the previous one after.
class PolicyScope {
 public:
  explicit PolicyScope(Policy policy) : previous_(CurrentPolicy()) { SetPolicy(policy); }
  ~PolicyScope() { SetPolicy(previous_); }
  PolicyScope(const PolicyScope&) = delete;
  PolicyScope& operator=(const PolicyScope&) = delete;

 private:
  Policy previous_;
};

}  // namespace gmlp::kernels

#endif  // GMLP_KERNELS_POLICY_H_
