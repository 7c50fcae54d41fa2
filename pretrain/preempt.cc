#include "pretrain/preempt.h"

#include <signal.h>

#include <atomic>

namespace gmlp::pretrain {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free flag");

void OnStopSignal(int signal) {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal);  // the first signal is the one reported
}

}  // namespace

void InstallStopSignalHandlers(std::initializer_list<int> signals) {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : signals) sigaction(signal, &action, nullptr);
}

int StopSignal() { return g_stop_signal.load(std::memory_order_relaxed); }

void SetStopSignalForTesting(int signal) { g_stop_signal.store(signal); }

}  // namespace gmlp::pretrain
