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
