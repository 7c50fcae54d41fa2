#include "common/process.h"

#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "absl/strings/numbers.h"

namespace gmlp {

void KeepFreedMemoryInProcess() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

int AvailableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int DefaultThreadCount() {
  int local_ranks = 1;
  const char* env = std::getenv("LOCAL_WORLD_SIZE");
  if (env == nullptr || !absl::SimpleAtoi(env, &local_ranks) || local_ranks < 1) local_ranks = 1;
  return std::max(1, AvailableCpus() / local_ranks);
}

}  // namespace gmlp
