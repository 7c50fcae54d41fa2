// How many steps each encoder needs before it uses context, by sequence length: trains every
// encoder on the local-rule task (tests/local_rule.h: a masked token is its left neighbour + 1)
// and prints the first step at which its held-out loss is below half the context-free floor.
// Not a speed benchmark: it measures optimisation, in steps, and is deterministic.
//
// Why: in the study's long run the Transformer never left the context-free floor on real text
// while gMLP did. Attention starts uniform, so a position's nearest neighbour gets 1/n of it and
// the signal to attend there shrinks with n; the SGU's spatial weights connect positions
// directly. This program measures that on a task with nothing but a local rule to learn.
//
// Usage: context_bench [--lens=16,32,64,128] [--max_steps=2000] [--lr=2e-3] [--every=50]
//                      [--archs=transformer_preln,transformer,transformer_alibi,gmlp_split,amlp_split,mixer]
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/local_rule.h"
#include "tests/model_test_util.h"

namespace gmlp::model {
namespace {

struct Options {
  std::vector<int64_t> lens = {16, 32, 64, 128};
  int max_steps = 2000;
  double lr = 2e-3;
  int every = 50;
  std::vector<std::string> archs = {"transformer_preln", "transformer", "transformer_alibi",
                                    "gmlp_split",        "amlp_split",  "mixer"};
};

bool ParseFlag(const std::string& arg, Options& o) {
  auto value = [&](const char* name, std::string* out) {
    const std::string prefix = std::string("--") + name + "=";
    if (!absl::StartsWith(arg, prefix)) return false;
    *out = arg.substr(prefix.size());
    return true;
  };
  std::string v;
  if (value("lens", &v)) {
    o.lens.clear();
    for (absl::string_view s : absl::StrSplit(v, ',')) {
      int64_t n;
      if (!absl::SimpleAtoi(s, &n) || n < 2) return false;
      o.lens.push_back(n);
    }
    return true;
  }
  if (value("archs", &v)) {
    o.archs = absl::StrSplit(v, ',');
    return true;
  }
  if (value("max_steps", &v)) return absl::SimpleAtoi(v, &o.max_steps) && o.max_steps > 0;
  if (value("every", &v)) return absl::SimpleAtoi(v, &o.every) && o.every > 0;
  if (value("lr", &v)) return absl::SimpleAtod(v, &o.lr) && o.lr > 0;
  return false;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (!ParseFlag(argv[i], o)) {
      std::fprintf(stderr, "context_bench: bad flag %s (see the usage at the top of %s)\n", argv[i],
                   __FILE__);
      return 2;
    }
  }
  torch::set_num_threads(1);
  const std::vector<testing::NamedConfig> known = testing::AllTinyConfigs();
  std::vector<testing::NamedConfig> configs;
  for (const std::string& name : o.archs) {
    auto it = std::find_if(known.begin(), known.end(),
                           [&](const testing::NamedConfig& c) { return c.name == name; });
    if (it == known.end()) {
      std::fprintf(stderr, "context_bench: unknown encoder %s (names as in model_test_util.h)\n",
                   name.c_str());
      return 2;
    }
    configs.push_back(*it);
  }
  std::printf(
      "Steps until the held-out loss is below half the context-free floor "
      "(ln 28 = %.3f nats), lr %g constant, batch 32, checked every %d steps; "
      "'> N' = not within N steps (final loss in brackets)\n\n",
      testing::LocalRuleTask().floor(), o.lr, o.every);
  std::printf("| encoder |");
  for (int64_t n : o.lens) std::printf(" n = %lld |", static_cast<long long>(n));
  std::printf("\n|---|");
  for (size_t i = 0; i < o.lens.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (const testing::NamedConfig& c : configs) {
    std::printf("| %s |", c.name.c_str());
    std::fflush(stdout);
    for (int64_t n : o.lens) {
      testing::LocalRuleTask task;
      task.len = n;
      const double target = 0.5 * task.floor();
      const auto curve = testing::TrainOnLocalRule(testing::LocalRuleConfig(c.config, task), task,
                                                   o.max_steps, o.lr, o.every, target);
      if (curve.back().second < target) {
        std::printf(" %d |", curve.back().first);
      } else {
        std::printf(" > %d (%.2f) |", o.max_steps, curve.back().second);
      }
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace gmlp::model

int main(int argc, char** argv) { return gmlp::model::Main(argc, argv); }
