// libFuzzer target: the binlog event stream decoder (EventStream, DecodeEvent, DecodeRows, EventToJson). The body is sluice::fuzz::FuzzEventStream (fuzz/targets.h), shared with
// the regression test that replays tests/fuzz-regressions/event_stream/*.
// Seeds: fuzz/make-corpus.sh. Run: scripts/fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::FuzzEventStream(data, size);
  return 0;
}
