#include "bench/op_profile.h"

#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"

namespace gmlp::bench {

std::vector<std::pair<std::string, double>> ProfileOps(const std::function<void()>& step) {
  step();
  namespace prof = torch::autograd::profiler;
  prof::enableProfilerLegacy(prof::ProfilerConfig(prof::ProfilerState::CPU));
  step();
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();
  std::map<std::string, double> self_us;
  for (const auto& events : lists) {
    struct Open {
      const prof::LegacyEvent* push;
      double children_us;
    };
    std::vector<Open> stack;
    for (const auto& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        stack.push_back({&e, 0.0});
      } else if (e.kind() == prof::EventKind::PopRange && !stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        const double total = open.push->cpuElapsedUs(e);
        std::string name = open.push->name();
        // Copies and fills are attributed to the op that made them (addmm's bias broadcast,
        // a backward's zero buffer, ...), which is what tells avoidable ones apart.
        if ((name == "aten::copy_" || name == "aten::fill_") && !stack.empty()) {
          name += absl::StrCat(" <- ", stack.back().push->name());
        }
        self_us[name] += total - open.children_us;
        if (!stack.empty()) stack.back().children_us += total;
      }
    }
  }
  std::vector<std::pair<std::string, double>> sorted(self_us.begin(), self_us.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  return sorted;
}

void PrintOpProfile(const std::string& title,
                    const std::vector<std::pair<std::string, double>>& ops, int top) {
  double total = 0.0;
  for (const auto& [name, us] : ops) total += us;
  // Shares by op name; copy_/fill_ entries carry " <- parent", so match their prefix.
  auto share = [&](std::initializer_list<const char*> names) {
    double s = 0.0;
    for (const auto& [name, us] : ops) {
      const std::string base = name.substr(0, name.find(" <- "));
      for (const char* n : names) {
        if (base == n) s += us;
      }
    }
    return s / total;
  };
  std::printf("\n%s: %.1f ms of op self time in one step\n", title.c_str(), total / 1e3);
  std::printf(
      "  GEMM (addmm/mm/bmm): %.1f%%   copies (copy_/cat/clone/contiguous): %.1f%%   "
      "fills (fill_/zero_): %.1f%%\n",
      100 * share({"aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm"}),
      100 * share({"aten::copy_", "aten::cat", "aten::clone", "aten::_cat", "aten::contiguous",
                   "aten::stack"}),
      100 * share({"aten::fill_", "aten::zero_"}));
  int shown = 0;
  for (const auto& [name, us] : ops) {
    if (shown++ == top) break;
    std::printf("  %-56s %7.2f ms %5.1f%%\n", name.c_str(), us / 1e3, 100 * us / total);
  }
}

}  // namespace gmlp::bench
