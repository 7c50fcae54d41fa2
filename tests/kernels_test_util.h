// Helpers shared by the kernel tests.
#ifndef GMLP_TESTS_KERNELS_TEST_UTIL_H_
#define GMLP_TESTS_KERNELS_TEST_UTIL_H_

#include <torch/torch.h>

#include <algorithm>
#include <utility>

namespace gmlp::kernels::testing {

// f() with one intra-op thread, then with max(2, the current number) (restored after): a kernel's
// results at one and at several threads, to compare bit for bit.
template <typename F>
auto AtOneAndManyThreads(F f) -> std::pair<decltype(f()), decltype(f())> {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(1);
  auto one = f();
  torch::set_num_threads(std::max(2, threads));
  auto many = f();
  torch::set_num_threads(threads);
  return {std::move(one), std::move(many)};
}

}  // namespace gmlp::kernels::testing

#endif  // GMLP_TESTS_KERNELS_TEST_UTIL_H_
