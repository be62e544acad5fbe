#include "sink/sink_retry.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "util/log.h"

namespace sluice {

Status CallSinkRetrying(std::string_view what, std::string_view object, std::string_view note,
                        const std::atomic<bool>* stop, const std::function<Status()>& call) {
  using Clock = std::chrono::steady_clock;
  const auto stopping = [stop] { return stop != nullptr && stop->load(); };
  auto backoff = std::chrono::milliseconds(200);
  auto first_failure = Clock::now();
  for (int attempt = 1;; ++attempt) {
    Status st = call();
    if (st.ok()) {
      if (attempt > 1)
        LogInfo("sink: {} succeeded after {} attempts ({:.1f} s)", what, attempt,
                std::chrono::duration<double>(Clock::now() - first_failure).count());
      return st;
    }
    if (st.code() == StatusCode::kInvalidArgument) {
      // A value or table the destination cannot hold (a NUL byte for PostgreSQL text, a BIT
      // too wide): a run-time stop (exit code 1), not the bad configuration that
      // kInvalidArgument means to the command line (exit code 2).
      return Status::FailedPrecondition(st.message()).WithContext(fmt::format("sink: {}", what));
    }
    if (st.code() != StatusCode::kUnavailable) return st.WithContext(fmt::format("sink: {}", what));
    if (stopping()) return Status::Cancelled("stop requested while the sink was failing");
    if (attempt == 1) first_failure = Clock::now();
    LogWarning("sink: {} failed (attempt {}): {}; retrying {} in {} ms{}", what, attempt, st.message(), object,
               backoff.count(), note);
    // Small steps, so that a stop request is seen promptly.
    const auto until = Clock::now() + backoff;
    while (Clock::now() < until && !stopping()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

}  // namespace sluice
