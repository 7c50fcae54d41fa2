// gmlp's own kernels split their work with at::parallel_for, whose OpenMP pragma is compiled into
// gmlp's code: without OpenMP flags it silently runs everything on the calling thread (as the
// kernels did until 2026-12-03). This checks that it spreads work over LibTorch's threads.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <set>
#include <thread>

namespace {

TEST(ParallelForTest, UsesSeveralThreads) {
  const int threads = torch::get_num_threads();
  torch::set_num_threads(2);
  std::mutex mu;
  std::set<std::thread::id> ids;
  // OpenMP gives each of the team's threads its own share of the range.
  at::parallel_for(0, 1000, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  torch::set_num_threads(threads);
  EXPECT_EQ(ids.size(), 2u) << "at::parallel_for ran on one thread: is gmlp compiled with OpenMP?";
}

}  // namespace
