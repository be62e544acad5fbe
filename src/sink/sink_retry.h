// Sink calls that wait out the sink's transient errors, for the snapshot coordinator and the
// streamer alike. The contract is sink.h's: a failed call changed nothing in the sink, and
// kUnavailable (a destination restarting, a lost connection, a locked or full disk) means
// "wait and call again with the SAME transaction"; any other code is definite.
#pragma once

#include <atomic>
#include <functional>
#include <string_view>

#include "util/status.h"

namespace sluice {

// Calls `call` until it succeeds, fails definitely, or *stop (may be null) becomes true,
// waiting 200 ms after the first failure and twice as long after each next one, up to 5 s.
// Every failure is logged as "sink: <what> failed (attempt N): <message>; retrying <object>
// in M ms<note>", e.g. object "the same transaction", note " (the stream position stays at
// f:4)". Returns OK, the definite error with "sink: <what>" as context, or kCancelled when a
// stop was requested while the sink was failing.
Status CallSinkRetrying(std::string_view what, std::string_view object, std::string_view note,
                        const std::atomic<bool>* stop, const std::function<Status()>& call);

}  // namespace sluice
