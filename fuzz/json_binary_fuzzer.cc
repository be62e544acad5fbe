// libFuzzer target: the MySQL binary JSON decoder (binlog::JsonBinaryToText). The body is sluice::fuzz::FuzzJsonBinary (fuzz/targets.h), shared with
// the regression test that replays tests/fuzz-regressions/json_binary/*.
// Seeds: fuzz/make-corpus.sh. Run: scripts/fuzz.sh SECONDS.
#include <cstddef>
#include <cstdint>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::fuzz::FuzzJsonBinary(data, size);
  return 0;
}
