// BoundedQueue<T>: a blocking FIFO between two threads, limited by item count and bytes.
//
// Push blocks while the queue is full (so backpressure reaches the producer, e.g. the
// socket reader); Pop blocks while it is empty. Close(status) ends the queue: Push then
// fails with that status, and Pop drains what is left and then returns it, so a consumer
// learns why the producer stopped (OK = clean end of stream). An item larger than the
// byte limit is still admitted when the queue is empty, so nothing can deadlock.
// Thread safety: all methods may be called from any thread; one mutex guards the state.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "util/status.h"

namespace sluice {

template <typename T>
class BoundedQueue {
 public:
  BoundedQueue(size_t max_items, size_t max_bytes) : max_items_(max_items), max_bytes_(max_bytes) {}

  // Blocks while full. Returns the close status (non-OK, or Cancelled for a clean close)
  // if the queue was closed.
  Status Push(T item, size_t bytes) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] {
      return closed_ || items_.empty() ||
             (items_.size() < max_items_ && bytes_ + bytes <= max_bytes_);
    });
    if (closed_) return close_status_.ok() ? Status::Cancelled("queue closed") : close_status_;
    bytes_ += bytes;
    items_.emplace_back(std::move(item), bytes);
    not_empty_.notify_one();
    return Status::Ok();
  }

  // Blocks up to `wait` for an item. Returns the item; nullopt on time-out (with *status
  // OK); or nullopt with *status set to the close status once closed and drained (OK
  // for a clean end).
  std::optional<T> Pop(std::chrono::milliseconds wait, Status* status, bool* closed) {
    std::unique_lock lock(mu_);
    not_empty_.wait_for(lock, wait, [&] { return closed_ || !items_.empty(); });
    *closed = false;
    if (!items_.empty()) {
      auto [item, bytes] = std::move(items_.front());
      items_.pop_front();
      bytes_ -= bytes;
      not_full_.notify_one();
      *status = Status::Ok();
      return std::move(item);
    }
    *status = closed_ ? close_status_ : Status::Ok();
    *closed = closed_;
    return std::nullopt;
  }

  void Close(Status why) {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    close_status_ = std::move(why);
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }
  size_t bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  const size_t max_items_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<std::pair<T, size_t>> items_;  // guarded by mu_
  size_t bytes_ = 0;                        // guarded by mu_
  bool closed_ = false;                     // guarded by mu_
  Status close_status_;                     // guarded by mu_
};

}  // namespace sluice
