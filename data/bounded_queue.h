// A blocking FIFO with a capacity, shared by prepare (reader -> tokenizing workers) and the
// loader (prefetch thread -> trainer). The capacity is what bounds memory in both.
#ifndef GMLP_DATA_BOUNDED_QUEUE_H_
#define GMLP_DATA_BOUNDED_QUEUE_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

#include "absl/synchronization/mutex.h"

namespace gmlp::data {

template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

  // Blocks while full. Returns false (dropping `item`) once Close() has been called.
  bool Push(T item) {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPush));
    if (closed_) return false;
    items_.push_back(std::move(item));
    return true;
  }

  // Blocks while empty. Returns nullopt once the queue is closed and drained.
  std::optional<T> Pop() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &BoundedQueue::CanPop));
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    return item;
  }

  // Wakes every waiter; later pushes fail and pops drain what is left.
  void Close() {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }

  // Drops everything queued (the loader does this when it repositions).
  void Clear() {
    absl::MutexLock lock(&mu_);
    items_.clear();
  }

 private:
  bool CanPush() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closed_ || items_.size() < capacity_;
  }
  bool CanPop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !items_.empty(); }

  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<T> items_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace gmlp::data

#endif  // GMLP_DATA_BOUNDED_QUEUE_H_
