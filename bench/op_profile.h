// Per-op self time of one call of a step function, from LibTorch's legacy profiler: what the
// benchmarks print to show where a training step's time goes.
#ifndef GMLP_BENCH_OP_PROFILE_H_
#define GMLP_BENCH_OP_PROFILE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gmlp::bench {

// Runs `step` once unprofiled (warm-up), then once under the profiler. Returns self CPU time in
// microseconds per op name (children's time subtracted), sorted descending. copy_ and fill_ are
// named after the op that made them ("aten::copy_ <- aten::addmm"), which tells avoidable copies
// from necessary ones.
std::vector<std::pair<std::string, double>> ProfileOps(const std::function<void()>& step);

// Prints the total, the GEMM / copy / fill shares and the top `top` ops under `title`.
void PrintOpProfile(const std::string& title,
                    const std::vector<std::pair<std::string, double>>& ops, int top = 18);

}  // namespace gmlp::bench

#endif  // GMLP_BENCH_OP_PROFILE_H_
