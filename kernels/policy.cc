#include "kernels/policy.h"

#include <atomic>

namespace gmlp::kernels {
namespace {
std::atomic<Policy> g_policy{Policy::kAuto};
}  // namespace

Policy CurrentPolicy() { return g_policy.load(std::memory_order_relaxed); }
void SetPolicy(Policy policy) { g_policy.store(policy, std::memory_order_relaxed); }

const char* PolicyName(Policy policy) { return policy == Policy::kAuto ? "auto" : "aten"; }

std::optional<Policy> ParsePolicy(std::string_view name) {
  if (name == "auto") return Policy::kAuto;
  if (name == "aten") return Policy::kAten;
  return std::nullopt;
}

}  // namespace gmlp::kernels
