// libFuzzer target: `sluice decode` in-process over mutated binlog files, every mode
// (events, --rows, --summary, --no-output, positions, several files, chunked reads). The
// body is sluice::fuzz::FuzzDecode (fuzz/decode_target.h), shared with the regression test
// that replays tests/fuzz-regressions/decode/*.
// Seeds: fuzz/make-corpus.sh. Run: scripts/fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>

#include "decode_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::FuzzDecode(data, size);
  return 0;
}
