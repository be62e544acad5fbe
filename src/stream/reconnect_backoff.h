// ReconnectBackoff: the wait before the stream's next reconnect after a transient error
// (Streamer::Run, streamer.h).
//
// The wait starts at `first` and doubles, up to `max`, after every failed attempt that did
// not move the resume position. It goes back to `first` only when an attempt made progress:
// a sink commit moved the resume position (checkpoint stream_start/GTID), or the replication
// session stayed up at least `max` (a healthy stream, idle or not, that a network cut ended).
// Merely connecting is not progress: a sink that fails the same large transaction on every
// attempt (disk full with its parts open, which cannot be retried in place) reads that
// transaction again from the server each time, and must not do so at the first step's pace.
// Durations in milliseconds. Thread safety: one object per Run loop, not shared.
#pragma once

#include <algorithm>
#include <chrono>

namespace sluice {

class ReconnectBackoff {
 public:
  using ms = std::chrono::milliseconds;
  ReconnectBackoff(ms first, ms max) : first_(first), max_(std::max(first, max)), next_(first) {}

  // After an attempt that ended with a transient error: `moved`, a sink commit moved the
  // resume position during it; `connected_for`, how long its replication session was up
  // (zero when it did not connect). Returns the wait before the next attempt.
  ms AfterFailure(bool moved, ms connected_for) {
    if (moved || connected_for >= max_) {
      next_ = first_;
      attempt_ = 0;
    }
    ++attempt_;
    ms wait = next_;
    next_ = std::min(next_ * 2, max_);
    return wait;
  }

  // Failed attempts since the last progress, counting the last one (1 after progress).
  int attempt() const { return attempt_; }

 private:
  ms first_, max_, next_;
  int attempt_ = 0;
};

}  // namespace sluice
