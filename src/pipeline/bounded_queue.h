// BoundedQueue<T>: a blocking FIFO between two threads, limited by item count and bytes.
//
// Push blocks while the queue is full (so backpressure reaches the producer, e.g. the
// socket reader); Pop blocks while it is empty. Close(status) ends the queue: Push then
// fails with that status, and Pop drains what is left and then returns it, so a consumer
// learns why the producer stopped (OK = clean end of stream). An item larger than the
// byte limit is still admitted when the queue is empty, so nothing can deadlock.
// Batched wake-ups (set_wake_batch, issue 8): by default every Push wakes a waiting consumer,
// which for a stream of small items (binlog events) costs a futex wake-up and a context
// switch per item, a quarter of the stream's CPU. With a batch of n and a linger time, Push
// wakes the consumer only once n items are queued, and a consumer that waits (wait > 0)
// with fewer ready takes them after at most `linger`: one wake-up per batch, at most
// `linger` of added latency. PopBatch takes every ready item under one lock.
// Thread safety: all methods may be called from any thread; one mutex guards the state.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

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
    if (items_.size() >= wake_batch_ || bytes_ >= max_bytes_ / 2) not_empty_.notify_one();
    return Status::Ok();
  }

  // See the header comment. n = 1 (the default): every Push wakes the consumer.
  void set_wake_batch(size_t n, std::chrono::milliseconds linger) {
    std::lock_guard lock(mu_);
    wake_batch_ = std::max<size_t>(n, 1);
    linger_ = linger;
  }

  // Takes up to `max_items` ready items (appended to *out), waiting as Pop does for the first.
  // Returns how many; 0 on time-out (*status OK) or once closed and drained (as Pop).
  size_t PopBatch(std::vector<T>* out, size_t max_items, std::chrono::milliseconds wait, Status* status,
                  bool* closed) {
    std::unique_lock lock(mu_);
    WaitReady(lock, wait);
    *closed = false;
    size_t n = 0;
    while (!items_.empty() && n < max_items) {
      bytes_ -= items_.front().second;
      out->push_back(std::move(items_.front().first));
      items_.pop_front();
      ++n;
    }
    if (n > 0) {
      not_full_.notify_one();
      *status = Status::Ok();
      return n;
    }
    *status = closed_ ? close_status_ : Status::Ok();
    *closed = closed_;
    return 0;
  }

  // Blocks up to `wait` for an item. Returns the item; nullopt on time-out (with *status
  // OK); or nullopt with *status set to the close status once closed and drained (OK
  // for a clean end).
  std::optional<T> Pop(std::chrono::milliseconds wait, Status* status, bool* closed) {
    std::unique_lock lock(mu_);
    WaitReady(lock, wait);
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
  using Clock = std::chrono::steady_clock;
  // Waits up to `wait` for an item; with batched wake-ups, then up to linger_ for a batch.
  void WaitReady(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds wait) {
    if (wake_batch_ <= 1 || wait.count() <= 0) {
      not_empty_.wait_for(lock, wait, [&] { return closed_ || !items_.empty(); });
      return;
    }
    // Push wakes us only for a batch: poll in linger_ steps meanwhile.
    const auto deadline = Clock::now() + wait;
    bool seen = false;
    while (!closed_ && items_.size() < wake_batch_) {
      if (!items_.empty()) {
        if (seen) return;  // waited linger_ with items ready: take them
        seen = true;
      }
      const auto now = Clock::now();
      if (items_.empty() && now >= deadline) return;
      auto step = std::chrono::duration_cast<Clock::duration>(linger_);
      if (items_.empty()) step = std::min<Clock::duration>(step, deadline - now);
      not_empty_.wait_for(lock, step, [&] { return closed_ || items_.size() >= wake_batch_; });
    }
  }

  const size_t max_items_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<std::pair<T, size_t>> items_;  // guarded by mu_
  size_t bytes_ = 0;                        // guarded by mu_
  bool closed_ = false;                     // guarded by mu_
  size_t wake_batch_ = 1;                   // guarded by mu_
  std::chrono::milliseconds linger_{1};     // guarded by mu_
  Status close_status_;                     // guarded by mu_
};

}  // namespace sluice
