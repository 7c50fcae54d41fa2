#include "kernels/policy.h"

#include <atomic>
#include <fstream>
#include <string>

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

bool CpuHasNativeBf16() {
  static const bool native = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("flags", 0) != 0) continue;
      return line.find(" avx512_bf16") != std::string::npos ||
             line.find(" amx_bf16") != std::string::npos;
    }
    return false;
  }();
  return native;
}

}  // namespace gmlp::kernels
